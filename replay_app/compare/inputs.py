"""What the compare page derives from one run alone, built once when the run finishes.

A finished run never changes, so its compare inputs are built by the worker right after its
rows are written (``finished``) and stored with its analysis (``RunAnalysis.compare``):

- ``curve``: the chart's curves thinned to what a chart can show (per bucket of steps the
  lowest and highest point of each line: the envelope is the full curve's) and its event
  markers;
- ``compactions``: the run's compaction steps (``pieces.Compaction``);
- ``matrix``: the final fate of every message in ``pieces.bucket_size`` buckets;
- ``survival``: the head of its survival table (``survival_table.head``: figures, the
  first ``COMPARE_SHOWN`` compactions, findings and drifts);
- ``lost``: the retention figures and the first ``pieces.LOST_EVENTS`` compactions with
  their first ``LOST_FACTS`` lost facts (the page's "What was lost"; the JSON twin and the
  run's lost page read the whole analysis).

The compare page then only joins stored pieces (``for_runs``: one query for every run). An
older run without them (or with an older ``VERSION``) has them built from its stored rows
on first view, and stored: never rebuilt per view. A run that is not finished has them
built per view, never stored.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ctxlab.engine.core.fatelog import FateLog
from ctxlab.serving.abandon import raise_if_abandoned
from replay_app.compare import pieces, survival_table
from replay_app.display import thinning
from replay_app.models import Run, RunAnalysis, RunEvent, RunStatus, RunStep
from replay_app.runs import analysis_state
from replay_app.runs import survival as run_survival
from replay_app.steps import lost_analysis

log = logging.getLogger(__name__)

VERSION = 5  # 4: lost facts by lost.kept_by_summary (one rule with survival); 5: one
# compaction per compaction event, numbered by catalogue.compaction_ordinals
CHART_BUCKETS = 300  # steps are thinned to the extremes of this many buckets per line
LOST_FACTS = 10  # lost facts listed per compaction on the compare page (all on the run's)

# What the page reads of each event row, in this order (``_event_rows``).
_EVENT_COLUMNS = (
    "seq", "step", "kind", "messages", "tokens_before", "tokens_after", "detail", "changes",
    "summary_seq",
)  # fmt: skip

BUILT = Counter[str]()  # runs whose inputs were built, by where ("worker", "view"): tests


def thin(count: int, *lines: Sequence[int | None], buckets: int = CHART_BUCKETS) -> list[int]:
    """Positions to keep of ``count`` points shared by ``lines``: each line's
    ``thinning.keep_indexes`` (its lowest and highest point in every bucket, the first and
    last point, its gaps' edges), joined so that every line is drawn at every kept step."""
    if count <= 2 * buckets:
        return list(range(count))
    keep: set[int] = set()
    for line in lines:
        keep.update(thinning.keep_indexes(line, buckets=buckets))
    return sorted(keep)


def _event_rows(run: Run) -> list[tuple[Any, ...]]:
    rows = RunEvent.objects.filter(run=run).order_by("seq").values_list(*_EVENT_COLUMNS)
    return list(rows.iterator(chunk_size=500))


def _memory_rows(result: Any) -> tuple[list[tuple[Any, ...]], list[tuple[int, int, int]]]:
    """The event rows (``_EVENT_COLUMNS``) and step token rows of a replay in memory, as
    the stored rows read them back (``RunEvent.from_event``, ``StepRows.row``): ``detail``
    through JSON as its column keeps it; ``changes`` with the ``index`` and ``fate`` that
    this module reads of them."""
    events = [
        (
            e.id,
            e.step,
            e.kind,
            list(e.messages),
            e.tokens_before,
            e.tokens_after,
            json.loads(json.dumps(dict(e.detail))),
            [{"index": c.index, "fate": c.fate.value} for c in e.changes],
            e.summary_id,
        )
        for e in result.events
    ]
    steps = [(s.index, s.tokens.strategy, s.tokens.reference) for s in result.steps]
    return events, steps


def _curve(
    run: Run,
    events: Sequence[tuple[Any, ...]],
    step_rows: Sequence[tuple[int, int, int]] | None = None,
) -> dict[str, Any]:
    """``run_curve.curve``'s lines (thinned) and markers, from the rows read here (or
    ``step_rows``: the replay's in memory)."""
    rows = (
        list(step_rows)
        if step_rows is not None
        else list(
            RunStep.objects.filter(run=run)
            .order_by("index")
            .values_list("index", "tokens_strategy", "tokens_reference")
        )
    )
    steps = [r[0] for r in rows]
    strategy = [r[1] for r in rows]
    reference = [r[2] for r in rows]
    zones: dict[str, Any] = {}
    if rows:
        last = RunStep.objects.filter(run=run, index=steps[-1]).values_list("zones", flat=True)
        zones = last[0] or {}
    threshold = run.metrics.get("threshold") if run.metrics else None
    keep = thin(len(steps), reference, strategy)
    return {
        "steps": [steps[k] for k in keep],
        "reference": [reference[k] for k in keep],
        "strategy": [strategy[k] for k in keep],
        "points": len(steps),
        "window": zones.get("window") or None,
        "threshold": threshold if threshold is not None else zones.get("threshold"),
        # seq, step, kind, tokens before, after, messages touched (``EventPoint``)
        "events": [[e[0], e[1], e[2], e[4], e[5], len(e[3])] for e in events],
    }


def _fate_log(events: Sequence[tuple[Any, ...]]) -> FateLog:
    return FateLog.from_stored((seq, step, changes) for seq, step, *_, changes, _ in events)


def _lost_head(retention: dict[str, Any]) -> dict[str, Any]:
    events = retention.get("events") or []
    head = [
        {**e, "lost": list(e.get("lost") or ())[:LOST_FACTS]} for e in events[:pieces.LOST_EVENTS]
    ]  # fmt: skip
    return {**{k: v for k, v in retention.items() if k != "events"}, "events": head,
            "events_total": len(events)}  # fmt: skip


def build(
    run: Run,
    retention: dict[str, Any] | None = None,
    survival: dict[str, Any] | None = None,
    result: Any = None,
) -> dict[str, Any]:
    """The run's compare inputs from its stored rows (``retention`` and ``survival``: its
    analyses, when the caller has them; else the stored ones, computed if missing;
    ``result``: the finished replay in memory, read instead of its stored event and step
    rows, which hold the same values)."""
    step_rows = None
    if result is not None:
        events, step_rows = _memory_rows(result)
    else:
        events = _event_rows(run)
    messages = run.transcript.message_count
    size = pieces.bucket_size(messages)
    final = {i: fate for i, (fate, _) in _fate_log(events).fates_at(10**12).items()}
    if retention is None:
        retention = lost_analysis.retention(run)
    else:
        retention = lost_analysis.in_display_order(retention)
    return {
        "version": VERSION,
        "curve": _curve(run, events, step_rows),
        "compactions": [c.as_row() for c in pieces.compactions_from_rows(events)],
        "matrix": {
            "messages": messages,
            "size": size,
            "cells": [c.as_row() for c in pieces.matrix_cells(final, messages, size)],
        },
        "lost": _lost_head(retention),
        "survival": survival_table.head(
            survival if survival is not None else run_survival.run_survival(run),
            survival_table.COMPARE_SHOWN,
        ),
    }


def current(data: Any) -> bool:
    return isinstance(data, dict) and data.get("version") == VERSION


def store(run: Run, attempt: int, data: dict[str, Any]) -> bool:
    """Store ``data`` for ``attempt`` while that attempt is the run's finished one. A
    database error is logged: the pieces are derived data, a page builds them again."""
    data = {**data, "attempts": attempt}  # a retried run's row may keep an older attempt's
    return RunAnalysis.store(run, attempt, "compare", data)


def finished(
    run: Run, retention: dict[str, Any] | None, survival: dict[str, Any] | None, job: Any
) -> dict[str, Any] | None:
    """The worker's call once the run's rows are written, before it is marked done: its
    compare inputs (returned for the caller to store with the done status), its offline
    probe set (the compare page's probe section) from ``job`` (the finished ``Replay``, in
    memory) and the transcript's own survival row (once per transcript). A failure is
    logged, never the run's: a page builds them on first view (as it does when the run's
    analysis failed: ``retention`` None)."""
    if retention is None:
        return None
    try:
        data = build(run, retention, survival, job.result)
        BUILT["worker"] += 1
    except Exception:
        log.exception("run %s: compare inputs failed (the compare page builds them)", run.pk)
        return None
    try:
        from judge_app import services as probes

        result = job.result
        replay = probes.StoredReplay(
            job.conversation.messages,
            result.steps,
            result.events,
            {s.id: s.output for s in result.summaries},
        )
        if probes.current_set(run) is None:
            probes.generate(run, replay)
        run_survival.original_survival(run.transcript)
    except Exception:
        log.exception("run %s: probes failed (the compare page generates them)", run.pk)
    return data


def for_runs(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Each run's stored compare inputs (one query), built and stored for a finished run
    that lacks them; built per call for an unfinished one."""
    rows = RunAnalysis.objects.filter(run_id__in=[r.pk for r in runs]).values_list(
        "run_id", "attempts", "compare"
    )
    stored: dict[int, tuple[int | None, dict[str, Any]]] = {
        run_id: (attempts, data if isinstance(data, dict) else {})
        for run_id, attempts, data in rows
    }
    out: list[dict[str, Any]] = []
    for run in runs:
        attempts, data = stored.get(run.pk, (None, {}))
        # (a run its worker is still analysing has its pieces stored in a moment: built
        # per view meanwhile, its analysis shown as pending, and not stored)
        done = run.status == RunStatus.DONE and not analysis_state.pending(run)
        ours = attempts == run.attempts and data.get("attempts") == run.attempts
        if not (done and ours and current(data)):
            raise_if_abandoned()  # the viewer went away: build nothing more for nobody
            data = build(run)
            BUILT["view"] += 1
            if done:
                store(run, run.attempts, data)
        out.append(data)
    return out
