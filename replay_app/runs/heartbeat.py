"""A running run's heartbeat, kept fresh by a thread while its executor works.

The executor stamps ``heartbeat_at`` with each stored batch, but a single step (a Claude
summary) or the end-of-run analysis of a long transcript can take minutes without one (the
analysis runs after the run is marked done: ``analysis_state``, stamped here too);
with this pulse every ``CTXLAB_RUN_HEARTBEAT_SECONDS`` the reaper can declare a run dead
after ``CTXLAB_RUN_STALE_SECONDS`` (under a minute) without failing live ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

log = logging.getLogger(__name__)


def interval() -> float:
    return float(getattr(settings, "CTXLAB_RUN_HEARTBEAT_SECONDS", 15))


@contextmanager
def pulse(run_id: int, attempt: int) -> Iterator[None]:
    """Stamp the run's heartbeat every ``interval()`` seconds until the block ends.

    Not inside a transaction (a test's): the pulse's own connection could not see the run
    and would wait on the transaction's write lock."""
    if connection.in_atomic_block:
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(
        target=_beat, args=(run_id, attempt, stop), name=f"run-{run_id}-heartbeat", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _beat(run_id: int, attempt: int, stop: threading.Event) -> None:
    from django.db.models import Q

    from replay_app.models import Run, RunStatus

    # running, or done and still analysing (``analysis_state``: no finished_at yet)
    alive = Q(status=RunStatus.RUNNING) | Q(status=RunStatus.DONE, finished_at=None)

    try:
        while not stop.wait(interval()):
            try:
                Run.objects.filter(alive, pk=run_id, attempts=attempt).update(
                    heartbeat_at=timezone.now()
                )
            except Exception:  # a missed beat is not worth a failed run
                log.warning("heartbeat of run %s failed", run_id, exc_info=True)
    finally:
        connections.close_all()
