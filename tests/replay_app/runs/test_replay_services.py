"""Runs through the service layer: execute, storage shape, cancel, failure, reap, retry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from ctxlab.engine.replay import run as engine_run
from replay_app.models import (
    Run,
    RunEvent,
    RunFinding,
    RunOffload,
    RunStatus,
    RunStep,
    RunSummary,
)
from replay_app.runs import executor, reaping, services, textstore
from replay_app.runs.services import RunSpec

pytestmark = pytest.mark.django_db


def _queued(user: Any, transcript: Any, strategy: str = "qwenpaw", **params: Any) -> Run:
    return services.run_create(
        owner=user,
        transcript=transcript,
        spec=RunSpec(strategy=strategy, params=params),
        enqueue=False,
    )


@pytest.mark.parametrize("strategy", ["qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent"])
def test_run_execute_stores_what_the_engine_produced(user: Any, transcript: Any, strategy: str):
    run = _queued(user, transcript, strategy)
    run = executor.run_execute(run=run, batch_steps=7)
    expected = engine_run(transcript.to_conversation(), strategy)
    assert run.status == RunStatus.DONE, run.error
    assert run.steps_done == run.steps_total == len(expected.steps)
    assert RunStep.objects.filter(run=run).count() == len(expected.steps)
    assert RunEvent.objects.filter(run=run).count() == len(expected.events) == run.events_count
    assert RunSummary.objects.filter(run=run).count() == len(expected.summaries)
    assert RunFinding.objects.filter(run=run).count() == len(expected.findings)
    assert RunOffload.objects.filter(run=run).count() == len(expected.offloads)
    assert run.metrics["compactions"] == expected.metrics["compactions"]
    assert run.metrics["peak_reference"] == expected.metrics["peak_reference"]
    stored = textstore.replay_result(run)
    assert [s.context for s in stored.steps] == [s.context for s in expected.steps]
    assert stored.events == expected.events  # fates incl. modified messages round-trip


def test_run_storage_grows_with_steps_plus_events_not_context(user: Any, transcript: Any):
    run = executor.run_execute(run=_queued(user, transcript, "cowagent"))
    steps = list(RunStep.objects.filter(run=run))
    assert len(steps) == run.steps_total
    # every step stores ranges, not message lists: far fewer pairs than messages in context
    pairs = sum(len(s.context) for s in steps)
    messages = sum(s.context_len for s in steps)
    assert pairs * 4 < messages
    rows = RunStep.objects.filter(run=run).count() + RunEvent.objects.filter(run=run).count()
    assert rows == run.steps_total + run.events_count


def test_run_execute_cancel_requested_stops_at_next_batch(user: Any, transcript: Any):
    run = _queued(user, transcript)
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    run = executor.run_execute(run=run, batch_steps=10)
    assert run.status == RunStatus.CANCELLED
    assert run.steps_done == 10


def test_run_cancel_queued_run_never_starts(user: Any, transcript: Any):
    run = services.run_cancel(run=_queued(user, transcript))
    assert run.status == RunStatus.CANCELLED
    run = executor.run_execute(run=run)
    assert run.status == RunStatus.CANCELLED
    assert not RunStep.objects.filter(run=run).exists()


def test_run_execute_failure_records_readable_error(
    user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
):
    def boom(self: Any, ctx: Any) -> None:
        raise RuntimeError("strategy exploded at step 3")

    from ctxlab.engine.strategies.qwenpaw import STRATEGY

    monkeypatch.setattr(STRATEGY, "before_call", boom)
    run = executor.run_execute(run=_queued(user, transcript))
    assert run.status == RunStatus.FAILED
    assert run.error == "RuntimeError: strategy exploded at step 3"
    assert "Traceback" in run.traceback and "boom" in run.traceback


def test_runs_reap_stale_marks_dead_running_run_failed(user: Any, transcript: Any):
    run = _queued(user, transcript)
    old = timezone.now() - timedelta(minutes=10)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=old)
    fresh = _queued(user, transcript)
    Run.objects.filter(pk=fresh.pk).update(status=RunStatus.RUNNING, heartbeat_at=timezone.now())
    assert reaping.runs_reap_stale(max_age=60) == 1
    run.refresh_from_db()
    fresh.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("worker stopped")
    assert fresh.status == RunStatus.RUNNING


def test_run_retry_requeues_new_attempt_and_replaces_rows(user: Any, transcript: Any):
    run = _queued(user, transcript)
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    run = executor.run_execute(run=run, batch_steps=10)
    assert RunStep.objects.filter(run=run).count() == 10
    run = services.run_retry(run=run)
    assert run.status == RunStatus.QUEUED and run.attempts == 2
    assert not RunStep.objects.filter(run=run).exists()
    run = executor.run_execute(run=run)
    assert run.status == RunStatus.DONE
    assert RunStep.objects.filter(run=run).count() == run.steps_total


def test_run_retry_refuses_done_run(user: Any, small_transcript: Any):
    run = executor.run_execute(run=_queued(user, small_transcript))
    with pytest.raises(ValueError, match="only failed or cancelled"):
        services.run_retry(run=run)


def test_run_execute_stale_attempt_never_writes(user: Any, transcript: Any):
    run = _queued(user, transcript)
    Run.objects.filter(pk=run.pk).update(attempts=5)  # retried meanwhile
    run_stale = Run.objects.get(pk=run.pk)
    run_stale.attempts = 1
    result = executor.run_execute(run=run_stale)
    assert result.status == RunStatus.QUEUED
    assert not RunStep.objects.filter(run=run).exists()


def test_run_create_rejects_bad_params(user: Any, transcript: Any):
    with pytest.raises(ValueError, match="compact_threshold_ratio"):
        _queued(user, transcript, compact_threshold_ratio=5)


def test_run_task_eager_executes(
    user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    with django_capture_on_commit_callbacks(execute=True):
        group = services.group_create(
            owner=user, transcript=small_transcript, specs=services.preset_specs()
        )
    statuses = sorted(group.runs.values_list("strategy", "status"))
    assert statuses == sorted(
        (p, "done") for p in ("qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent")
    )
