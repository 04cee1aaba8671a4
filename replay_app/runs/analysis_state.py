"""Whether a finished run's analysis is still being computed by its worker.

The worker marks a run ``done`` as soon as its rows, metrics and ledger are written; the
analysis (retention, survival), the compare inputs and the probe set follow in the same
task, from the replay still in memory, and are stored with the run's ``finished_at``
(``executor._analyse``). Between the two the run is ``done`` without ``finished_at``:

- ``pending(run)`` is the one rule the pages read: such a run whose worker is alive
  (``heartbeat_at`` fresher than ``reaping.stale_seconds``, stamped by
  ``heartbeat.pulse`` meanwhile). The pages that show the analysis say "analysing…"
  instead of computing a second copy from the rows, and nothing of the run is memoised
  (``memo`` keys need ``finished_at``).
- A run whose worker stopped in between is settled by the first look at it
  (``finished_at`` = its last heartbeat): the pages then compute what is missing from the
  stored rows on first view, as for a run whose analysis failed.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from replay_app.models import Run, RunStatus


def pending(run: Run) -> bool:
    """Whether the worker is still analysing ``run`` (done, no ``finished_at``, alive)."""
    if run.status != RunStatus.DONE or run.finished_at is not None:
        return False
    from replay_app.runs.reaping import stale_seconds  # (reaping reads progress, which...)

    beat = run.heartbeat_at
    if beat is not None and timezone.now() - beat < timedelta(seconds=stale_seconds()):
        return True
    settle(run)
    return False


def settled(run: Run) -> bool:
    """Whether every figure of ``run`` is in (neither queued, running nor analysing): what
    a table of several runs waits for before it reads as final."""
    return not run.is_active and not pending(run)


def settle(run: Run) -> None:
    """Give a done run whose analysing worker stopped its ``finished_at`` (its last sign of
    life), so that it reads like any finished run."""
    at = run.heartbeat_at or timezone.now()
    Run.objects.filter(
        pk=run.pk, attempts=run.attempts, status=RunStatus.DONE, finished_at=None
    ).update(finished_at=at)
    run.finished_at = at
