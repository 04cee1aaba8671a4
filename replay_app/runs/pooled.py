"""Where a queued run executes: in a child process of the embedded worker's pool, or here.

With the embedded worker running on processes (``ctxlab.serving.embedded_pool``), the task's thread
hands the run to a child, which executes it exactly as a thread would
(``executor.run_execute``: claim, replay, fenced batch writes, analysis, heartbeat, cancel
at the next batch; the child has its own database connection) and sends its progress back;
this thread forwards that progress to the channel layer, which only this process can reach.
If the child dies mid-run, the run fails with the reason in words and the child is
replaced.

Runs that call Claude (summaries, exact counts) stay in the task's thread: they mostly wait
on the network, which does not hold the interpreter lock, and their metered budget and
client are set up here. Without a pool (a prefork Celery worker, eager tasks, the CLI),
every run executes in the calling thread.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import connections
from django.utils import timezone

from ctxlab.serving import embedded_pool
from replay_app.costs import llm
from replay_app.models import Run, RunStatus
from replay_app.runs import executor
from replay_app.runs.progress import ProgressSink, RunProgressData, run_state

log = logging.getLogger(__name__)


def in_child_ok(run: Run) -> bool:
    """Whether the run can execute in a child process (it calls no network service)."""
    return run.summarizer not in llm.PROVIDERS and not run.exact_counts


def execute(run: Run, *, on_progress: ProgressSink | None = None) -> Run:
    """Execute a queued run in a pool child when there is a pool, else in this thread.
    Like ``run_execute``, never raises for a failing run: the outcome is on the run."""
    pool = embedded_pool.current()
    if pool is None or not in_child_ok(run):
        return executor.run_execute(run=run, on_progress=on_progress)
    attempt = run.attempts

    def forward(data: RunProgressData) -> None:
        if on_progress is not None:
            on_progress(data)

    try:
        pool.call(CHILD_TARGET, run.pk, on_message=forward)
    except embedded_pool.PoolClosed:  # stopped meanwhile (tests, bench): nothing ran yet
        return executor.run_execute(run=run, on_progress=on_progress)
    except (embedded_pool.ChildExited, embedded_pool.ChildError) as exc:
        _fail(run, attempt, exc, on_progress)
    run.refresh_from_db()
    return run


def execute_in_child(run_id: int, *, send: Any) -> str:
    """The child's side: the executor's own call, progress sent back to the parent."""
    try:
        run = Run.objects.filter(pk=run_id).select_related("transcript").first()
        if run is None:
            return "missing"
        return str(executor.run_execute(run=run, on_progress=send).status)
    finally:
        connections.close_all()  # no idle connection held between runs (a test DB is dropped)


CHILD_TARGET = f"{__name__}:{execute_in_child.__name__}"


def _fail(run: Run, attempt: int, exc: Exception, on_progress: ProgressSink | None) -> None:
    log.error("run %s: %s", run.pk, exc)
    remote = getattr(exc, "remote_traceback", "")
    Run.objects.filter(
        pk=run.pk, attempts=attempt, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
    ).update(
        status=RunStatus.FAILED,
        finished_at=timezone.now(),
        error=str(exc)[:2000],
        traceback=str(remote)[-8000:],
    )
    run.refresh_from_db()
    if on_progress is not None:
        on_progress(run_state(run))
