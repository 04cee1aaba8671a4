"""The shared question set of a probe comparison, scored in the background.

Scoring a comparison's shared set the first time reads the transcript and every run's
stored records: seconds on a long transcript. A web request therefore only reads what is
stored (``shared.shared_data(compute=False)``); while something is missing it queues one
Celery task per set of runs (``score_shared_probes``, state in ``SharedScoring``) and the
page shows a pending section that polls (htmx) until the scores are there. The page and
its JSON twin read the same dict: ``pending`` (with ``job``: status and runs scored so
far) until it is ready, ``error`` when the task failed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from replay_app.models import Run, RunStatus

from . import shared
from .models import SharedScoring

log = logging.getLogger(__name__)

POLL_SECONDS = 1
STALE_MINUTES = 10  # a task queued or running this long is taken as lost: queued again
CHANGED = "The runs changed while their shared questions were scored (one was retried or finished)."


def runs_key(ids: Sequence[int]) -> str:
    return ",".join(str(pk) for pk in sorted(set(ids)))


def shared_view(
    runs: Sequence[Run], *, poll: bool = False, retry_failed: bool = False
) -> dict[str, Any]:
    """The shared set's page data; queues its scoring when something is missing and no
    task is at work on it. ``retry_failed``: also after a failure (a page the reader
    loaded). ``poll``: the pending section asking again; a task that finished while its
    scores are still missing (a run was retried meanwhile) is then said, not queued again
    at every poll."""
    data = shared.shared_data(runs, compute=False)
    if not data.get("pending"):
        return data
    key = runs_key([r.pk for r in runs])
    row = SharedScoring.objects.filter(runs=key).first()
    if poll and row is not None and row.status == SharedScoring.Status.DONE:
        data.update(pending=False, error=CHANGED)
        return data
    if row is None or _should_start(row, retry_failed):
        row = _start(runs, key)
        data = shared.shared_data(runs, compute=False)  # an eager task has finished already
        if not data.get("pending"):
            return data
        row = SharedScoring.objects.filter(runs=key).first() or row
    data["job"] = {
        "status": row.status,
        "done_runs": row.done_runs,
        "total_runs": row.total_runs,
        "poll_seconds": POLL_SECONDS,
    }
    if row.status == SharedScoring.Status.FAILED:
        data.update(pending=False, error=row.message or "Scoring the shared questions failed.")
    return data


def _should_start(row: SharedScoring, retry_failed: bool) -> bool:
    if row.status == SharedScoring.Status.DONE:
        return True  # done, yet something is missing: a run finished or was retried since
    if row.status == SharedScoring.Status.FAILED:
        return retry_failed
    started = row.requested_at
    return started is None or timezone.now() - started > timedelta(minutes=STALE_MINUTES)


def _start(runs: Sequence[Run], key: str) -> SharedScoring:
    from .tasks import score_shared_probes

    task_id = uuid.uuid4().hex  # stored before the task is sent: a worker may finish first
    fields = {
        "status": SharedScoring.Status.QUEUED, "message": "", "done_runs": 0,
        "total_runs": sum(1 for r in runs if r.status == RunStatus.DONE),
        "task_id": task_id, "requested_at": timezone.now(), "finished_at": None,
    }  # fmt: skip
    try:
        row, _ = SharedScoring.objects.update_or_create(runs=key, defaults=fields)
    except IntegrityError:  # another request created it at the same moment: its task runs
        return SharedScoring.objects.get(runs=key)
    score_shared_probes.apply_async(([r.pk for r in runs],), task_id=task_id)
    return row


def score(run_ids: Sequence[int]) -> str:
    """The task's body: score and store every missing piece of the set, telling the row
    how many runs are done; a failure is stored on the row (the page says it), not raised."""
    key = runs_key(run_ids)
    rows = SharedScoring.objects.filter(runs=key)
    rows.update(status=SharedScoring.Status.RUNNING)

    def progress(done: int) -> None:
        rows.update(done_runs=done)

    try:
        found = {r.pk: r for r in Run.objects.select_related("transcript").filter(pk__in=run_ids)}
        runs = [found[pk] for pk in run_ids if pk in found]
        shared.shared_data(runs, compute=True, progress=progress)
    except Exception as exc:  # derived data: the runs themselves are never touched
        log.exception("shared probes of runs %s: scoring failed", key)
        rows.update(
            status=SharedScoring.Status.FAILED,
            message=f"Scoring the shared questions failed: {type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        return "failed"
    rows.update(status=SharedScoring.Status.DONE, finished_at=timezone.now())
    return "done"
