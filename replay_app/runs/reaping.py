"""Runs whose worker is gone: a running run whose heartbeat stopped, and (with an in-memory
broker) queued runs from before this process started, are marked failed. Called at worker
start (``tasks``) and on the run pages' loads."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from replay_app.models import Run, RunStatus
from replay_app.runs.progress import _notify


def stale_seconds() -> int:
    """A running run whose heartbeat is older than this is considered dead."""
    return int(getattr(settings, "CTXLAB_RUN_STALE_SECONDS", 45))


def runs_reap_stale(*, max_age: float | None = None, now: Any = None) -> int:
    """Mark running runs whose heartbeat stopped as failed ("worker stopped")."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_seconds() if max_age is None else max_age)
    stale = list(
        Run.objects.filter(status=RunStatus.RUNNING, heartbeat_at__lt=cutoff).values_list(
            "pk", "heartbeat_at"
        )
    )
    count = 0
    for pk, heartbeat in stale:
        count += Run.objects.filter(pk=pk, status=RunStatus.RUNNING, heartbeat_at=heartbeat).update(
            status=RunStatus.FAILED,
            finished_at=now,
            error=f"worker stopped: no progress since {heartbeat:%Y-%m-%d %H:%M:%S} UTC",
        )
    for run in Run.objects.filter(pk__in=[pk for pk, _ in stale], status=RunStatus.FAILED):
        _notify(run)
    return count


def runs_reap_lost_queued(*, before: Any) -> int:
    """With an in-memory broker, queued tasks die with the process that queued them:
    runs queued before this process started will never run."""
    return Run.objects.filter(status=RunStatus.QUEUED, created_at__lt=before).update(
        status=RunStatus.FAILED,
        finished_at=timezone.now(),
        error="worker restarted before the run started (the in-memory queue was lost)",
    )
