"""Distributed suites: TWO separate ``celery worker`` processes on Redis + PostgreSQL execute
a suite of 6 transcripts × 4 configurations; one of them is SIGKILLed while it executes a
run. The suite still completes: the killed worker's unacknowledged tasks are redelivered
(acks_late, Redis visibility timeout), its dead run gets a new attempt once its heartbeat
is stale, and every run is done exactly once (one run per pair, no duplicated rows).

Its own pytest process in the distributed leg of .ci/run (``CTXLAB_SUITE_DISTRIBUTED=1``):
an embedded worker started by another test in the same process would take tasks too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection, transaction
from suite_testdata import import_chat
from waiting import WAIT_SECONDS, receive_until, wait_until

from replay_app.models import Run, RunStatus, RunStep
from suites_app import configs, services
from suites_app.configs import Base
from suites_app.progress import suite_group_name

REQUIRED = ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL")
pytestmark = [
    pytest.mark.db_backend,
    pytest.mark.skipif(
        os.environ.get("CTXLAB_SUITE_DISTRIBUTED") != "1"
        or not all(os.environ.get(v) for v in REQUIRED)
        or not os.environ.get("CELERY_BROKER_URL", "").startswith("redis")
        or not os.environ.get("CHANNEL_LAYER_URL", "").startswith("redis"),
        reason="needs CTXLAB_SUITE_DISTRIBUTED=1, DATABASE_URL, CELERY_BROKER_URL=redis://..., "
        "CHANNEL_LAYER_URL=redis://... (the distributed leg of .ci/run)",
    ),
    pytest.mark.django_db(transaction=True),
]
# Short enough for CI; the visibility timeout longer than a run takes here (a live run is
# not redelivered), the stale time long against the heartbeat (a live run is never taken over).
WORKER_ENV = {
    "CTXLAB_RUN_HEARTBEAT_SECONDS": "1",
    "CTXLAB_RUN_STALE_SECONDS": "6",
    "CTXLAB_BROKER_VISIBILITY_TIMEOUT": "30",
}


def _test_database_url() -> str:
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


def _start_worker(name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, **WORKER_ENV, "DATABASE_URL": _test_database_url()}
    celery = Path(sys.executable).with_name("celery")
    return subprocess.Popen(
        [str(celery), "-A", "ctxlab.celery", "worker", "--loglevel=WARNING", "--pool=threads",
         "--concurrency=2", "-n", name, "--without-mingle", "--without-gossip"],
        cwd=settings.BASE_DIR, env=env,
    )  # fmt: skip


@pytest.fixture
def two_workers(transactional_db: None) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    from ctxlab.celery import app

    tag = uuid.uuid4().hex[:6]
    procs = {f"suite-{x}-{tag}@localhost": None for x in "ab"}
    workers = {name: _start_worker(name) for name in procs}
    try:
        for name, proc in workers.items():

            def answers(name: str = name, proc: subprocess.Popen[bytes] = proc) -> bool:
                assert proc.poll() is None, f"{name} exited with {proc.returncode}"
                return bool(app.control.ping(destination=[name], timeout=0.5))

            wait_until(answers, f"{name} to answer a ping")
        yield workers
    finally:
        for proc in workers.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in workers.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _progress_until_finished(channel: str) -> list[Any]:
    """Suite progress messages received over the channel layer up to the final one (the
    item recorded last always pushes ``finished``, items.item_execute). One event loop:
    channels_redis binds its receive queue to the first."""
    got = await receive_until(
        get_channel_layer(), channel, lambda m: m["data"]["finished"],
        "the suite's final progress message (finished) over the Redis channel layer",
    )  # fmt: skip
    return [m["data"] for m in got]


def _active_items(worker: str) -> list[int]:
    from ctxlab.celery import app

    # The reply returns as soon as the one worker answers; a loaded machine may take seconds.
    active = app.control.inspect(destination=[worker], timeout=10.0).active() or {}
    return [
        int(task["args"][0])
        for task in active.get(worker, [])
        if task.get("name") == "suites_app.execute_item" and task.get("args")
    ]


def test_two_workers_one_killed_every_run_done_once(
    two_workers: dict[str, subprocess.Popen[bytes]], user: Any
) -> None:
    from django_celery_results.models import TaskResult

    from ctxlab.celery import app

    assert connection.vendor == "postgresql"
    app.conf.task_always_eager = False
    victim, survivor = list(two_workers)
    transcripts = [import_chat(user, seed=s, turns=20, size=4000) for s in range(1, 7)]
    grid = configs.grid_configs(
        Base("qwenpaw"), {"max_input_length": "12000,40000", "compact_threshold_ratio": "0.5,0.8"}
    )
    suite = services.suite_create(
        owner=user, name="distributed", transcripts=transcripts, configs=grid,
        grid_keys=["max_input_length", "compact_threshold_ratio"], enqueue=False,
    )  # fmt: skip
    assert suite.items.count() == 24
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(suite_group_name(suite.pk), channel)

    def lock_runs_not_done() -> list[int]:
        """Row-lock every run of the suite not yet done until the transaction ends: every
        write of a run (claim, batch, heartbeat, finish) updates its row first, so none is
        claimed, written or finished meanwhile; the workers wait on the lock."""
        pending = Run.objects.select_for_update(of=("self",)).filter(suite_item__suite=suite)
        return list(
            pending.exclude(status=RunStatus.DONE).order_by("pk").values_list("pk", flat=True)
        )

    # The suite is frozen before it is queued, and between two checks the lock is released
    # only for the workers already waiting on it (each takes its one write, then our lock is
    # granted again): the suite advances a few writes per check, never past the moment the
    # victim, having finished an item, holds a claimed run, however fast the replays are.
    started = time.monotonic()
    with transaction.atomic():
        lock_runs_not_done()
        services.suite_enqueue(suite)  # queued on Redis at once; the claims wait on the lock

    killed_items: list[int] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while not killed_items:
        assert time.monotonic() < deadline, "the victim never had a finished and an active item"
        with transaction.atomic():
            assert lock_runs_not_done(), "the suite finished before the kill"
            finished_by_victim = TaskResult.objects.filter(
                worker=victim, task_name="suites_app.execute_item", status="SUCCESS"
            ).count()
            active = _active_items(victim) if finished_by_victim else []
            running = list(
                Run.objects.filter(suite_item__pk__in=active, status=RunStatus.RUNNING)
                .values_list("pk", flat=True)
            )  # fmt: skip
            if running:  # claimed by the victim and still running: its heartbeat dies with it
                two_workers[victim].send_signal(signal.SIGKILL)
                two_workers[victim].wait(WAIT_SECONDS)
                killed_items, killed_runs = active, running
                killed_at = time.monotonic() - started

    seen = async_to_sync(_progress_until_finished)(channel)
    assert services.suite_state(suite)["finished"], services.suite_state(suite)
    elapsed = time.monotonic() - started

    runs = list(Run.objects.filter(suite_item__suite=suite))
    assert len(runs) == Run.objects.count() == 24  # one run per pair: no duplicates
    for run in runs:
        assert run.status == RunStatus.DONE, (run.pk, run.status, run.error)
        assert RunStep.objects.filter(run=run).count() == run.steps_total > 0

    def workers() -> set[str | None]:
        return set(
            TaskResult.objects.filter(
                task_name="suites_app.execute_item", status="SUCCESS"
            ).values_list("worker", flat=True)
        )

    # Both executed runs. A task's result row is written after the task returned, so just
    # after its final progress message: wait for it rather than assume it is there.
    wait_until(lambda: workers() == {victim, survivor}, "both workers' results", seen=workers)
    # The dead runs: each has a new attempt, unless the victim's last write (the done
    # update) was already waiting on the test's lock: the database commits a statement
    # whose client died once the lock is released, so that run ended done at attempt 1.
    for r in Run.objects.filter(pk__in=killed_runs):
        done_by_last_write = r.attempts == 1 and r.steps_done == r.steps_total
        assert r.attempts >= 2 or done_by_last_write, (killed_items, r.pk, r.attempts)
    assert suite.items.filter(status="done").count() == 24
    assert all(item.summary.get("steps") for item in suite.items.all())
    # Live progress reached this process over the Redis channel layer, the last one final.
    assert seen and seen[-1]["finished"] and seen[-1]["done"] == 24
    print(f"suite of 24 runs on 2 workers, one SIGKILLed at {killed_at:.1f} s: {elapsed:.1f} s")
