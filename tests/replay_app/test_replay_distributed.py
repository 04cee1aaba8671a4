"""Distributed mode: a real ``celery -A ctxlab.celery worker`` process executes a comparison
of the five presets (PostgreSQL + Redis broker), and progress reaches this process over the
Redis channel layer.

Runs only when DATABASE_URL (postgres), CELERY_BROKER_URL (redis) and CHANNEL_LAYER_URL
(redis) are set: ``make test-distributed`` (the distributed leg of .ci/run).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from django.db import connection
from replay_testdata import agent_chat, import_transcript
from waiting import receive_until, wait_until

from replay_app.models import Run, RunStatus, RunStep
from replay_app.runs import services
from replay_app.runs.progress import run_group_name

REQUIRED = ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL")
pytestmark = [
    pytest.mark.db_backend,
    pytest.mark.skipif(
        not all(os.environ.get(v) for v in REQUIRED)
        or not os.environ.get("CELERY_BROKER_URL", "").startswith("redis")
        or not os.environ.get("CHANNEL_LAYER_URL", "").startswith("redis"),
        reason="distributed mode needs DATABASE_URL, CELERY_BROKER_URL=redis://..., "
        "CHANNEL_LAYER_URL=redis://... (make test-distributed)",
    ),
    pytest.mark.django_db(transaction=True),
]
TERMINAL = {"done", "failed", "cancelled"}


def _test_database_url() -> str:
    # The worker must use the test database pytest-django created, not the configured one.
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


@pytest.fixture
def celery_worker_process(transactional_db: None) -> Iterator[str]:
    from ctxlab.celery import app

    name = f"dist-{uuid.uuid4().hex[:8]}@localhost"
    env = {**os.environ, "DATABASE_URL": _test_database_url()}
    celery = Path(sys.executable).with_name("celery")
    proc = subprocess.Popen(
        [str(celery), "-A", "ctxlab.celery", "worker", "--loglevel=WARNING", "--concurrency=2",
         "-n", name, "--without-mingle", "--without-gossip"],
        cwd=settings.BASE_DIR, env=env,
    )  # fmt: skip
    try:

        def answers() -> bool:
            assert proc.poll() is None, f"celery worker exited with {proc.returncode}"
            return bool(app.control.ping(destination=[name], timeout=0.5))

        wait_until(answers, f"celery worker {name} to answer a ping")
        yield name
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _collect(channel: str, run_ids: set[int]) -> list[dict[str, Any]]:
    """Progress messages until every run sent its final status."""
    finished: set[int] = set()

    def all_finished(message: dict[str, Any]) -> bool:
        if message["data"]["status"] in TERMINAL:
            finished.add(message["data"]["run_id"])
        return finished == run_ids

    got = await receive_until(
        get_channel_layer(), channel, all_finished,
        f"a final status from each of runs {sorted(run_ids)} over the Redis channel layer",
    )  # fmt: skip
    return [m["data"] for m in got]


def test_comparison_runs_on_separate_worker_with_redis_progress(
    celery_worker_process: str, user: Any
) -> None:
    from django_celery_results.models import TaskResult

    from ctxlab.celery import app

    assert connection.vendor == "postgresql"
    app.conf.task_always_eager = False  # the suite's eager default; restored by its fixture
    transcript = import_transcript(user, agent_chat(turns=40, size=6000))
    group = services.group_create(
        owner=user, transcript=transcript, specs=services.preset_specs(), enqueue=False
    )
    runs = list(group.runs.order_by("pk"))
    layer = get_channel_layer()
    assert isinstance(layer, RedisChannelLayer)
    channel = async_to_sync(layer.new_channel)()
    for run in runs:
        async_to_sync(layer.group_add)(run_group_name(run.pk), channel)
    for run in runs:
        services.run_enqueue(run)  # autocommit: queued at once

    seen = async_to_sync(_collect)(channel, {r.pk for r in runs})

    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.DONE, (run.label, run.status, run.error)
        assert RunStep.objects.filter(run=run).count() == run.steps_total > 0
        # The result row is written once the task returned, after its last progress message.
        result = wait_until(
            lambda run=run: TaskResult.objects.filter(
                task_id=run.task_id, status="SUCCESS"
            ).first(),
            f"the task result of run {run.label}",
            seen=lambda run=run: list(TaskResult.objects.filter(task_id=run.task_id).values()),
        )
        assert result.worker == celery_worker_process  # executed by the separate process
        statuses = [d["status"] for d in seen if d["run_id"] == run.pk]
        assert "running" in statuses and statuses[-1] == "done", (run.label, statuses)
    assert Run.objects.filter(status=RunStatus.DONE).count() == 5
