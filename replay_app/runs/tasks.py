"""Celery tasks of the replay lab: load ids, call one service, nothing else."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.utils import timezone

from replay_app.models import Run
from replay_app.runs import pooled, reaping
from replay_app.runs.progress import ChannelProgress

log = logging.getLogger(__name__)


@shared_task(name="replay_app.execute_run", acks_late=True)
def execute_run(run_id: int) -> str:
    """Execute one queued run; the outcome (done/failed/cancelled) is stored on the run."""
    run = Run.objects.filter(pk=run_id).select_related("transcript").first()
    if run is None:
        return "missing"
    run = pooled.execute(run, on_progress=ChannelProgress())  # a child process, if any
    return str(run.status)


@worker_ready.connect
def _reap_on_worker_start(**kwargs: Any) -> None:
    # A worker that starts means any earlier one may have died mid-run: fail its stale runs.
    try:
        started = timezone.now()
        if settings.CELERY_BROKER_URL.startswith("memory://"):
            # The embedded worker is the only one: a run still "running" or "queued" from
            # before this start belonged to a process that is gone, however recent its
            # last heartbeat (waiting for it to go stale left its page "running" for
            # minutes after a restart).
            count = reaping.runs_reap_stale(max_age=0, now=started)
            count += reaping.runs_reap_lost_queued(before=started)
        else:  # other workers may be alive and running theirs: only silent ones are dead
            count = reaping.runs_reap_stale()
        if count:
            log.warning("marked %d stale or lost run(s) as failed", count)
    except Exception:  # never keep a worker from starting
        log.exception("stale-run reaper failed at worker start")
