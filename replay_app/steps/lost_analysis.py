"""Summaries and what was lost: the retention analysis of a run, stored per attempt."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from ctxlab.engine.core.records import Event, StepRecord, StepTokens, Zones
from ctxlab.engine.evaluate import lost
from ctxlab.engine.evaluate.extract import KINDS
from ctxlab.engine.evaluate.extract import VERSION as EXTRACTOR_VERSION
from ctxlab.engine.evaluate.lost import (
    CompactionLoss,
    FactIndex,
    LostFact,
    Retention,
    analyse_parts,
)
from replay_app.memo import cached
from replay_app.models import Run, RunAnalysis, RunStatus, RunStep
from replay_app.runs import analysis_state, textstore

log = logging.getLogger(__name__)

# --- summaries and what was lost --------------------------------------------------------


def summaries(run: Run) -> list[dict[str, Any]]:
    """Each summary call with its output (inputs are loaded on demand: they can be large)."""
    return [
        {
            "seq": seq,
            "step": step,
            "output": output,
            "input_tokens": i_tok,
            "output_tokens": o_tok,
            "usage_estimated": estimated,
            "error": error,
            "summarizer": summarizer,
            "messages": len(messages),
        }
        for seq, step, output, i_tok, o_tok, estimated, error, summarizer, messages in run.summaries.order_by(
            "seq"
        ).values_list(
            "seq",
            "step",
            "output",
            "input_tokens",
            "output_tokens",
            "usage_estimated",
            "error",
            "summarizer",
            "messages",
        )
    ]


FactIndexSource = FactIndex | Callable[[], FactIndex] | None


def retention(run: Run, *, fact_index: FactIndexSource = None) -> dict[str, Any]:
    """``lost.analyse`` over the stored run, memoised for finished runs: the analysis stored
    for the run's current attempt (the worker stores it at run end), else computed from the
    stored rows and, for a finished run, stored (so an older run pays once); while its
    worker is still analysing it, ``pending_retention()``. ``fact_index``
    (an index or a function building one, called only when computing) lets a caller
    analysing several runs of one transcript extract its facts once."""
    return cached(run, "retention", lambda: _stored_or_computed(run, fact_index))


def pending_retention() -> dict[str, Any]:
    """What ``retention`` answers while the run's worker is still analysing it
    (``analysis_state.pending``): no figures, ``pending`` true."""
    return {**Retention(0, 0, ()).as_dict(), "retention": None, "pending": True}


def _stored_or_computed(run: Run, fact_index: FactIndexSource) -> dict[str, Any]:
    if analysis_state.pending(run):
        return pending_retention()  # stored by the worker in a moment: not a second copy
    stored = stored_retention(run)
    if stored is not None:
        return stored
    data = _retention(run, fact_index() if callable(fact_index) else fact_index)
    if run.status == RunStatus.DONE:
        store_retention(run, run.attempts, data)
    return data


def stored_retention(run: Run) -> dict[str, Any] | None:
    """The analysis stored for the run's current attempt, if the run is finished."""
    if run.status != RunStatus.DONE:
        return None
    found = (
        RunAnalysis.objects.filter(run_id=run.pk, attempts=run.attempts)
        .values_list("retention", flat=True)
        .first()
    )
    if (
        found is None
        or found.get("extractor") != EXTRACTOR_VERSION
        or found.get("rule") != lost.RULE_VERSION
    ):
        return None  # none yet, or by an older extractor or survival rule: computed again
    return in_display_order(found)


def store_retention(run: Run, attempt: int, data: dict[str, Any]) -> bool:
    """Store ``data`` as the analysis of ``attempt`` while that attempt is the run's finished
    one (a later attempt's analysis is never overwritten by an earlier one). Never raises
    for a database error: the analysis is derived data, the pages can compute it again."""
    return RunAnalysis.store(run, attempt, "retention", data)


# as_dict's key order: PostgreSQL's jsonb reorders object keys, and the pages list
# lost_by_kind in this order.
_RETENTION_KEYS = tuple(Retention(0, 0, ()).as_dict())
_EVENT_KEYS = tuple(CompactionLoss(0, 0, "", 0, 0, 0, ()).as_dict())
_LOST_KEYS = tuple(f.name for f in dataclasses.fields(LostFact))


def _ordered(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {k: data[k] for k in keys if k in data}
    out.update((k, v) for k, v in data.items() if k not in out)
    return out


def in_display_order(data: dict[str, Any]) -> dict[str, Any]:
    """A stored analysis with its keys back in ``as_dict`` order (a no-op on SQLite)."""
    events = []
    for event in data.get("events", ()):
        event = _ordered(event, _EVENT_KEYS)
        event["lost"] = [_ordered(f, _LOST_KEYS) for f in event.get("lost", ())]
        event["lost_by_kind"] = _ordered(event.get("lost_by_kind", {}), KINDS)
        events.append(event)
    return {**_ordered(data, _RETENTION_KEYS), "events": events}


def _retention(run: Run, fact_index: FactIndex | None) -> dict[str, Any]:
    if fact_index is None:
        fact_index = FactIndex(run.transcript.to_conversation().messages)
    steps = [
        StepRecord(
            index,
            source,
            StepTokens(0, 0),
            _NO_ZONES,
            tuple((int(a), int(b)) for a, b in ctx),
            summary,
        )
        for index, source, ctx, summary in RunStep.objects.filter(run=run)
        .order_by("index")
        .values_list("index", "source_index", "context", "summary_seq")
    ]
    events: list[Event] = textstore.run_events(run)  # modified messages read back in one go
    outputs = dict(run.summaries.values_list("seq", "output"))
    return analyse_parts(
        steps, events, outputs, fact_index.originals, fact_index=fact_index
    ).as_dict()


_NO_ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 0, None)
