"""Every call from suites into the replay lab, in one place (when replay_app's layout
moves, only this module follows it). A suite's run is an ordinary replay run, created with
``run_create`` (not queued by replay_app) and executed by ``run_execute``, the very path the
run form uses; the suite task queues and retries it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from replay_app.models import Run, RunAnalysis, RunStatus, StrategyConfig
from replay_app.runs import services as replay_services
from replay_app.runs.executor import run_execute
from replay_app.runs.progress import ChannelProgress
from sessions_app.models import Transcript

__all__ = [
    "Run",
    "RunStatus",
    "StrategyConfig",
    "create_run",
    "execute_run",
    "requeue_run",
    "stale_seconds",
    "SUMMARIZERS",
]

SUMMARIZERS = ("offline", "recorded")  # Claude summaries cost money: one run at a time
TERMINAL = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


def stale_seconds() -> int:
    return replay_services.stale_seconds()


def create_run(
    *, owner: Any, transcript: Transcript, config: Mapping[str, Any], summarizer: str
) -> Run:
    saved = None
    if config.get("config_id"):
        saved = StrategyConfig.objects.get(pk=config["config_id"], owner=owner)
    spec = replay_services.RunSpec(
        strategy="" if saved else str(config["strategy"]),
        params=dict(config.get("params") or {}),
        config=saved,
        label=str(config["label"]),
        window=config.get("window"),
    )
    return replay_services.run_create(
        owner=owner, transcript=transcript, spec=spec, summarizer=summarizer, enqueue=False
    )


def execute_run(run: Run, *, live: bool = True) -> Run:
    """Replay a queued run in this process (the run page gets its live progress too)."""
    return run_execute(run=run, on_progress=ChannelProgress() if live else None)


def requeue_run(run: Run) -> bool:
    """A failed, cancelled or dead-worker run back to queued as a new attempt (its rows from
    the earlier attempt deleted); False when it changed meanwhile (someone else has it)."""
    with transaction.atomic():
        claimed = Run.objects.filter(
            pk=run.pk, attempts=run.attempts, status=run.status, heartbeat_at=run.heartbeat_at
        ).update(
            status=RunStatus.QUEUED,
            attempts=run.attempts + 1,
            cancel_requested=False,
            steps_done=0,
            events_count=0,
            error="",
            traceback="",
            started_at=None,
            finished_at=None,
            heartbeat_at=None,
            metrics={},
            task_id=str(uuid.uuid4()),
        )
        if not claimed:
            return False
        for related in ("steps", "events", "summaries", "findings", "offloads"):
            getattr(run, related).all().delete()
        RunAnalysis.objects.filter(run=run).delete()
    run.refresh_from_db()
    return True


def heartbeat_stale(run: Run) -> bool:
    beat = run.heartbeat_at or run.started_at
    return beat is None or (timezone.now() - beat).total_seconds() > stale_seconds()


def cancel_queued(run_ids: list[int]) -> int:
    """Queued runs -> cancelled now; running ones stop at their next batch."""
    now = timezone.now()
    count = Run.objects.filter(pk__in=run_ids, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELLED, cancel_requested=True, finished_at=now, error="cancelled"
    )
    Run.objects.filter(pk__in=run_ids, status=RunStatus.RUNNING).update(cancel_requested=True)
    return count


def retention_of(run: Run) -> dict[str, Any]:
    """The run's stored retention analysis (``retention``, ``facts_lost``), if any."""
    analysis = getattr(run, "analysis", None)
    data = getattr(analysis, "retention", None) or {}
    out: dict[str, Any] = {}
    if isinstance(data.get("retention"), int | float):
        out["retention"] = data["retention"]
    if isinstance(data.get("lost"), int):
        out["facts_lost"] = data["lost"]
    return out
