"""The shared question set of a probe comparison, scored in the background.

Scoring a comparison's shared set the first time reads the transcript and every run's
stored records: seconds on a long transcript. A web request therefore only reads what is
stored (``shared.shared_data(compute=False)``); while something is missing it queues one
Celery task per set of runs (``score_shared_probes``, state in ``SharedScoring``) and the
page shows a pending section that polls (htmx) until the scores are there. The page and
its JSON twin read the same dict: ``pending`` (with ``job``: status and runs scored so
far) until it is ready, ``error`` when the task failed.

A run's own probe set is made the same way when it is missing or outdated (a run finished
before ``services.GENERATOR`` changed): ``own_sets_job`` queues ``generate_probe_sets``
under its own ``SharedScoring`` row (key ``own:<ids>`` for a run page, ``suite:<id>`` for a
suite) and the page polls or says the scores are being brought up to date. The shared
task makes the runs' own sets first, so a comparison needs one task, not two.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from replay_app.models import Run, RunStatus

from . import services, shared
from .models import SharedScoring

log = logging.getLogger(__name__)

POLL_SECONDS = 1
STALE_MINUTES = 10  # a task queued or running this long is taken as lost: queued again
OWN_PREFIX = "own:"
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
    data = _read(runs)
    if not data.get("pending") and not data.get("own_pending"):
        return data
    key = runs_key([r.pk for r in runs])
    row = SharedScoring.objects.filter(runs=key).first()
    if poll and row is not None and row.status == SharedScoring.Status.DONE:
        data.pop("own_pending", None)
        data.update(pending=False, error=CHANGED)
        return data
    if row is None or _should_start(row, retry_failed):
        done = sum(1 for r in runs if r.status == RunStatus.DONE)
        row = _start(key, score_shared_probes_task(), ([r.pk for r in runs],), done)
        data = _read(runs)  # an eager task has finished already
        if not data.get("pending") and not data.get("own_pending"):
            return data
        row = SharedScoring.objects.filter(runs=key).first() or row
    data["job"] = _job(row)
    if row.status == SharedScoring.Status.FAILED:
        data.pop("own_pending", None)
        data.update(pending=False, error=row.message or "Scoring the shared questions failed.")
    return data


def _read(runs: Sequence[Run]) -> dict[str, Any]:
    """The stored shared set, with ``own_pending`` True when a finished run's own set is
    missing or outdated (also for runs of different transcripts, which share no set)."""
    data = shared.shared_data(runs, compute=False)
    if services.stale_runs(r.pk for r in runs):
        data["own_pending"] = True
    return data


def own_sets_job(
    run_ids: Sequence[int], *, key: str | None = None, poll: bool = False,
    retry_failed: bool = False,
) -> dict[str, Any] | None:  # fmt: skip
    """None when every finished run of ``run_ids`` has its current probe set; else the
    state of the task making the missing ones (queued here when none is at work):
    ``status``, ``done_runs``, ``total_runs``, ``poll_seconds``, and ``error`` when it
    failed or (``poll``) finished while a set is still missing. The request never makes a
    set itself: on a 5,000-message transcript that is seconds per run."""
    stale = services.stale_runs(run_ids)
    if not stale:
        return None
    key = key or OWN_PREFIX + runs_key(stale)
    row = SharedScoring.objects.filter(runs=key).first()
    if poll and row is not None and row.status == SharedScoring.Status.DONE:
        return {**_job(row), "error": CHANGED}
    if row is None or _should_start(row, retry_failed):
        row = _start(key, generate_probe_sets_task(), (stale, key), len(stale))
        if not services.stale_runs(stale):  # an eager task has finished already
            return None
        row = SharedScoring.objects.filter(runs=key).first() or row
    job = _job(row)
    if row.status == SharedScoring.Status.FAILED:
        job["error"] = row.message or "Making the probes failed."
    return job


def _job(row: SharedScoring) -> dict[str, Any]:
    return {
        "status": row.status,
        "done_runs": row.done_runs,
        "total_runs": row.total_runs,
        "poll_seconds": POLL_SECONDS,
    }


def score_shared_probes_task() -> Any:
    from .tasks import score_shared_probes

    return score_shared_probes


def generate_probe_sets_task() -> Any:
    from .tasks import generate_probe_sets

    return generate_probe_sets


def _should_start(row: SharedScoring, retry_failed: bool) -> bool:
    if row.status == SharedScoring.Status.DONE:
        return True  # done, yet something is missing: a run finished or was retried since
    if row.status == SharedScoring.Status.FAILED:
        return retry_failed
    started = row.requested_at
    return started is None or timezone.now() - started > timedelta(minutes=STALE_MINUTES)


def _start(key: str, task: Any, args: tuple[Any, ...], total: int) -> SharedScoring:
    """The row set to queued and ``task`` sent with ``args`` (``total``: runs to do)."""
    task_id = uuid.uuid4().hex  # stored before the task is sent: a worker may finish first
    fields = {
        "status": SharedScoring.Status.QUEUED, "message": "", "done_runs": 0,
        "total_runs": total, "task_id": task_id, "requested_at": timezone.now(),
        "finished_at": None,
    }  # fmt: skip
    try:
        row, _ = SharedScoring.objects.update_or_create(runs=key, defaults=fields)
    except IntegrityError:  # another request created it at the same moment: its task runs
        return SharedScoring.objects.get(runs=key)
    task.apply_async(args, task_id=task_id)
    return row


def score(run_ids: Sequence[int]) -> str:
    """The task's body: score and store every missing piece of the set, telling the row
    how many runs are done; a failure is stored on the row (the page says it), not raised.
    The runs' own sets are made first where they are outdated (also when the runs replay
    different transcripts and have no shared set)."""

    def work(runs: list[Run], progress: Callable[[int], None]) -> None:
        for run in runs:
            services.probe_set(run)
        shared.shared_data(runs, compute=True, progress=progress)

    return _run_job(run_ids, runs_key(run_ids), work, "Scoring the shared questions failed")


def generate_sets(run_ids: Sequence[int], key: str) -> str:
    """The ``generate_probe_sets`` task's body: each run's current probe set made where it
    is missing or outdated, the row told after each run."""

    def work(runs: list[Run], progress: Callable[[int], None]) -> None:
        for done, run in enumerate(runs, 1):
            services.probe_set(run)
            progress(done)

    return _run_job(run_ids, key, work, "Making the probes failed")


def _run_job(
    run_ids: Sequence[int], key: str, work: Callable[[list[Run], Callable[[int], None]], None],
    failed: str,
) -> str:  # fmt: skip
    rows = SharedScoring.objects.filter(runs=key)
    rows.update(status=SharedScoring.Status.RUNNING)

    def progress(done: int) -> None:
        rows.update(done_runs=done)

    try:
        found = {r.pk: r for r in Run.objects.select_related("transcript").filter(pk__in=run_ids)}
        work([found[pk] for pk in run_ids if pk in found], progress)
    except Exception as exc:  # derived data: the runs themselves are never touched
        log.exception("probes of runs %s (%s): failed", list(run_ids), key)
        rows.update(
            status=SharedScoring.Status.FAILED,
            message=f"{failed}: {type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        return "failed"
    rows.update(status=SharedScoring.Status.DONE, finished_at=timezone.now())
    return "done"
