"""Survival by category (ctxlab.engine.evaluate.survival) for stored runs and for the original agent.

- A replay's table is computed by the worker at run end, in the same pass as its retention
  analysis (``finished``), and stored in ``RunAnalysis.survival`` for the run's attempt.
  Older runs (or tables of an older version) are computed once from the stored rows on
  first view and stored (``run_survival``).
- The transcript's own recorded compactions (the compare page's "original" pseudo-run)
  are computed once per transcript and stored in ``OriginalSurvival``
  (``original_survival``); None when the transcript recorded no compaction.

Survival is derived data: a failure is logged and the pages show the table as missing,
never a failed run.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError

from ctxlab.engine.core.heap import existing_heap_frozen
from ctxlab.engine.core.model import Message
from ctxlab.engine.core.records import Event, ReplayResult, StepRecord, StepTokens, Zones
from ctxlab.engine.evaluate import extract, lost, survival
from ctxlab.engine.evaluate.lost import Retention
from sessions_app.facts import transcript_facts
from sessions_app.models import Transcript

from ..models import (
    OriginalSurvival,
    Run,
    RunAnalysis,
    RunEvent,
    RunStatus,
    RunStep,
    RunSummary,
)
from . import analysis_state, textstore

log = logging.getLogger(__name__)

_NO_ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 0, None)


def current(data: Any) -> bool:
    """Whether a stored table was computed by this survival and extractor version."""
    return (
        isinstance(data, dict)
        and data.get("version") == survival.VERSION
        and data.get("extractor") == extract.VERSION
    )


# The originals' facts of the last transcripts analysed in this process, by (id, revision):
# the runs of a comparison or a sweep share them (each run keeps its own modified versions).
_INDEXES: OrderedDict[tuple[int, str], lost.FactIndex] = OrderedDict()
_INDEXES_KEEP = 2
_INDEXES_LOCK = threading.Lock()


def fact_index(transcript: Transcript, originals: Sequence[Message]) -> lost.FactIndex:
    """A fact index over ``originals`` (the transcript's messages) whose original facts
    are the ones stored at import (``sessions_app.facts``), shared with the other runs
    over the same transcript in this process."""
    key = (transcript.pk, transcript.revision)
    with _INDEXES_LOCK:
        shared = _INDEXES.get(key) if transcript.revision else None
        if shared is not None:
            _INDEXES.move_to_end(key)
    if shared is None or len(shared.originals) != len(originals):
        shared = lost.FactIndex(originals, known=transcript_facts(transcript, originals))
        if transcript.revision:
            with _INDEXES_LOCK:
                _INDEXES[key] = shared
                while len(_INDEXES) > _INDEXES_KEEP:
                    _INDEXES.popitem(last=False)
    return lost.FactIndex(originals, shared=shared)


def clear_fact_indexes() -> None:
    """Forget the shared fact indexes (benchmarks start cold)."""
    with _INDEXES_LOCK:
        _INDEXES.clear()


def finished(
    run: Run, result: ReplayResult, originals: Sequence[Message]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(retention, survival) of a replay that just finished, from one pass over its
    in-memory result; (None, None) when the analysis fails (logged)."""
    try:
        index = fact_index(run.transcript, originals)
        with existing_heap_frozen():  # as the replay: full collections skip the input
            retention, table = survival.analyse_replay(result, originals, fact_index=index)
        return retention.as_dict(), table.as_dict()
    except Exception:
        log.exception("run %s: survival analysis failed (pages compute it on demand)", run.pk)
        return None, None


def store(run: Run, attempt: int, table: dict[str, Any]) -> bool:
    """Store ``table`` for ``attempt`` while that attempt is the run's finished one."""
    return RunAnalysis.store(run, attempt, "survival", table)


def run_survival(run: Run) -> dict[str, Any] | None:
    """The run's survival table: stored for its current attempt, else computed from the
    stored rows (and stored when the run is finished). None for an unfinished run, and
    for one its worker is still analysing (``analysis_state.pending``: stored shortly)."""
    if run.status != RunStatus.DONE or analysis_state.pending(run):
        return None
    stored = (
        RunAnalysis.objects.filter(run_id=run.pk, attempts=run.attempts)
        .values_list("survival", flat=True)
        .first()
    )
    if current(stored):
        return stored
    try:
        _, table = _from_rows(run)
    except Exception:
        log.exception("run %s: survival analysis failed", run.pk)
        return None
    data = table.as_dict()
    store(run, run.attempts, data)
    return data


def _from_rows(run: Run) -> tuple[Retention, survival.RunSurvival]:
    originals = run.transcript.to_conversation().messages
    index = fact_index(run.transcript, originals)
    steps = [
        StepRecord(index, source, StepTokens(0, 0), _NO_ZONES, tuple(map(tuple, ctx)), summary)
        for index, source, ctx, summary in RunStep.objects.filter(run=run)
        .order_by("index")
        .values_list("index", "source_index", "context", "summary_seq")
    ]
    events: list[Event] = textstore.engine_events(
        run.transcript_id, list(RunEvent.objects.filter(run=run).order_by("seq"))
    )
    outputs = dict(RunSummary.objects.filter(run=run).values_list("seq", "output"))
    return survival.analyse_replay_parts(steps, events, outputs, originals, fact_index=index)


def original_survival(transcript: Transcript) -> dict[str, Any] | None:
    """The survival table of the transcript's own recorded compactions (None without any)."""
    stored = (
        OriginalSurvival.objects.filter(transcript_id=transcript.pk)
        .values_list("survival", flat=True)
        .first()
    )
    if current(stored):
        return stored if stored.get("compactions_count") else None  # type: ignore[union-attr]
    conversation = transcript.to_conversation()
    try:
        data = survival.analyse_original(conversation).as_dict()
    except Exception:
        log.exception("transcript %s: original survival analysis failed", transcript.pk)
        return None
    try:
        OriginalSurvival.objects.update_or_create(
            transcript_id=transcript.pk, defaults={"survival": data}
        )
    except DatabaseError:
        log.exception("transcript %s: could not store its original survival", transcript.pk)
    return data if data.get("compactions_count") else None
