"""A stored run's fate log (``ctxlab.engine.core.fatelog``): read from its events' changes, no
message bodies, built once per finished run and cached."""

from __future__ import annotations

from ctxlab.engine.core.fatelog import NOT_KEPT, FateLog
from replay_app.memo import cached
from replay_app.models import Run, RunEvent

FATES = NOT_KEPT  # the fates the pages list and count (restored is a change, not a fate)


def fate_log(run: Run) -> FateLog:
    return cached(run, "fatelog", lambda: _fate_log(run))


def _fate_log(run: Run) -> FateLog:
    rows = RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "step", "changes")
    return FateLog.from_stored(rows.iterator(chunk_size=500))
