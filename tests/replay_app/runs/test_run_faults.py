"""Issue 15, runs and faults: queued runs of a restarted embedded worker are failed with a
retry, a killed worker's run is failed within a minute, a live run's heartbeat keeps it
alive through long silent phases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client, override_settings
from django.utils import timezone
from replay_testdata import agent_chat, import_transcript
from waiting import wait_until

from replay_app.models import RETRYABLE_STATUSES, Run, RunStatus
from replay_app.runs import reaping, services
from replay_app.runs.heartbeat import pulse
from replay_app.runs.services import RunSpec
from replay_app.runs.tasks import _reap_on_worker_start


def _queued(user: Any) -> Run:
    transcript = import_transcript(user, agent_chat(turns=4, size=400), name="f.json")
    return services.run_create(
        owner=user, transcript=transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )


@pytest.mark.django_db
@override_settings(CELERY_BROKER_URL="memory://")
def test_embedded_worker_start_fails_lost_queued_runs_with_retry(user: Any) -> None:
    run = _queued(user)
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=5))
    _reap_on_worker_start()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.status in RETRYABLE_STATUSES
    assert "in-memory queue was lost" in run.error
    services.run_retry(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 2


@pytest.mark.django_db
@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:6390/0")
def test_worker_start_leaves_queued_runs_to_a_persistent_broker(user: Any) -> None:
    # Redis keeps (and redelivers) its queue across restarts: a queued run there is not lost.
    run = _queued(user)
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=5))
    _reap_on_worker_start()
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED


@pytest.mark.django_db
def test_killed_worker_run_failed_within_a_minute(client: Client, user: Any) -> None:
    run = _queued(user)
    silent_since = timezone.now() - timedelta(seconds=reaping.stale_seconds() + 1)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=silent_since)
    assert reaping.stale_seconds() < 60
    client.force_login(user)
    client.get("/runs/")  # the runs list (and group pages, worker start) reap dead runs
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "worker stopped" in run.error


@pytest.mark.django_db(transaction=True)
@override_settings(CTXLAB_RUN_HEARTBEAT_SECONDS=0.05)
def test_heartbeat_pulses_while_the_executor_is_silent(user: Any) -> None:
    run = _queued(user)
    old = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=old)
    with pulse(run.pk, run.attempts):  # a long summary call: no batch stored meanwhile
        wait_until(
            lambda: Run.objects.get(pk=run.pk).heartbeat_at > old + timedelta(minutes=4),
            "a heartbeat from the pulse while the executor is silent",
            seen=lambda: Run.objects.get(pk=run.pk).heartbeat_at,
            interval=0.05,
        )
    run.refresh_from_db()
    assert run.heartbeat_at > old + timedelta(minutes=4)
    assert reaping.runs_reap_stale() == 0
