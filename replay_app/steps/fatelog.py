"""A stored run's fate log (``ctxlab.engine.core.fatelog``): read from its events' changes, no
message bodies, built once per finished run and cached; the events' words (``event_words``)
are read in the same pass and cached beside it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxlab.engine.core.fatelog import NOT_KEPT, FateLog
from replay_app.memo import cached
from replay_app.models import Run, RunEvent
from replay_app.steps.event_words import Collector, EventWords

FATES = NOT_KEPT  # the fates the pages list and count (restored is a change, not a fate)


def fate_log(run: Run) -> FateLog:
    return cached(run, "fatelog", lambda: _fate_log(run))


def event_words(run: Run) -> dict[int, EventWords]:
    """Every fate-setting event of the run by seq (kept while the run stays finished; built
    with the fate log, or on its own when the fate log came from elsewhere)."""
    return cached(run, "event-words", lambda: _event_words(run))


COLUMNS = ("seq", "step", "kind", "detail", "changes", "tokens_before")


def _fate_log(run: Run) -> FateLog:
    collector = Collector()

    def rows() -> Iterator[tuple[int, int, Any]]:
        stored = RunEvent.objects.filter(run=run).order_by("seq").values_list(*COLUMNS)
        for seq, step, kind, detail, changes, before in stored.iterator(chunk_size=500):
            collector.add(seq, kind, detail, changes, before)
            yield seq, step, changes

    log = FateLog.from_stored(rows())
    cached(run, "event-words", lambda: collector.words)  # unpacked once for both
    return log


def _event_words(run: Run) -> dict[int, EventWords]:
    collector = Collector()
    stored = RunEvent.objects.filter(run=run).order_by("seq").values_list(*COLUMNS)
    for seq, _, kind, detail, changes, before in stored.iterator(chunk_size=500):
        collector.add(seq, kind, detail, changes, before)
    return collector.words
