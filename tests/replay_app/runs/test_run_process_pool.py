"""The embedded worker with child processes (ctxlab.serving.embedded_pool, replay_app.runs.pooled):
runs queued through the real worker execute in a child, store what a run in this process
stores, send progress to the run's websocket, stop on cancel, and fail cleanly when their
child is killed."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import child_pause
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from replay_testdata import agent_chat, import_transcript
from waiting import receive_until, wait_until

from ctxlab.serving import embedded_pool
from replay_app.models import Run, RunEvent, RunFinding, RunOffload, RunStatus, RunStep, RunSummary
from replay_app.runs import executor, pooled, services
from replay_app.runs.executor import run_execute as run_execute_here
from replay_app.runs.progress import run_group_name
from replay_app.runs.services import RunSpec

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
TERMINAL = {RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED}


@pytest.fixture(scope="module")
def _pool(_embedded_worker_session: Any) -> Iterator[embedded_pool.ProcessPool]:
    pool = embedded_pool.start(2)
    assert pool is not None
    yield pool
    embedded_pool.stop()


@pytest.fixture
def process_worker(
    celery_worker_embedded: Any, _pool: embedded_pool.ProcessPool, monkeypatch: Any
) -> embedded_pool.ProcessPool:
    """The real embedded worker, its runs in child processes. The executor in *this*
    process raises: a run that finishes did so in a child."""

    def not_here(**kwargs: Any) -> Run:
        raise AssertionError("run executed in the web process, not in a child")

    monkeypatch.setattr(executor, "run_execute", not_here)
    return _pool


def _corpus_transcript(user: Any) -> Any:
    path = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"
    return import_transcript(user, path.read_bytes(), name=path.name)


def _long_transcript(user: Any) -> Any:
    # ~2,000 messages of distinct tool output: several seconds of replay and batches.
    return import_transcript(user, agent_chat(turns=1000, size=3000, seed=7), name="long.json")


def _settled(run: Run) -> bool:
    """Terminal, and a done run's analysis landed too (``finished_at``: analysis_state)."""
    return run.status in TERMINAL and run.finished_at is not None


def _wait(run: Run, done: Any = _settled) -> Run:
    def reached() -> bool:
        run.refresh_from_db()
        return bool(done(run))

    wait_until(
        reached, f"run {run.pk} to reach its awaited state",
        seen=lambda: f"{run.status} {run.steps_done}/{run.steps_total}", interval=0.05,
    )  # fmt: skip
    return run


def _rows(run: Run) -> dict[str, Any]:
    """Everything a run stored, without ids and times (compared across two runs)."""
    skip = {"id", "run_id", "created_at", "updated_at"}
    tables = {}
    for model in (RunStep, RunEvent, RunSummary, RunFinding, RunOffload):
        rows = model.objects.filter(run=run).order_by("pk").values()
        tables[model.__name__] = [{k: v for k, v in r.items() if k not in skip} for r in rows]
    return {"tables": tables, "metrics": run.metrics, "steps": run.steps_done}


def _queued(user: Any, transcript: Any, **spec: Any) -> Run:
    return services.run_create(
        owner=user, transcript=transcript, spec=RunSpec(**spec), enqueue=False
    )


def test_run_in_a_child_stores_what_a_run_here_stores(process_worker: Any, user: Any) -> None:
    transcript = _corpus_transcript(user)
    spec = {"strategy": "picoclaw"}
    here = run_execute_here(run=_queued(user, transcript, **spec))
    assert here.status == RunStatus.DONE, here.error

    child = _queued(user, transcript, **spec)
    services.run_enqueue(child)
    child = _wait(child)

    assert child.status == RunStatus.DONE, child.error
    assert process_worker.pids() and os.getpid() not in process_worker.pids()
    expected, got = _rows(here), _rows(child)
    assert got["tables"]["RunEvent"] and got["tables"]["RunSummary"]  # it compacted, with summaries
    assert got == expected


def test_two_runs_at_once_use_two_children(process_worker: Any, user: Any) -> None:
    transcript = _corpus_transcript(user)
    runs = [_queued(user, transcript, strategy=s) for s in ("picoclaw", "baseagent")]
    for run in runs:
        services.run_enqueue(run)
    runs = [_wait(run) for run in runs]
    assert [r.status for r in runs] == [RunStatus.DONE] * 2, [r.error for r in runs]
    assert len(process_worker.pids()) == 2


def _drain(channel: str) -> list[dict[str, Any]]:
    """The progress messages on ``channel`` up to the run's final one, read once the run is
    stored as over (its final message follows that by a moment: received when it comes)."""

    def final(message: dict[str, Any]) -> bool:
        return message["type"] == "run.progress" and message["data"]["status"] in TERMINAL

    async def drain() -> list[dict[str, Any]]:
        return await receive_until(get_channel_layer(), channel, final, "the run's final status")

    return async_to_sync(drain)()


def test_progress_from_the_child_reaches_the_channel_layer(process_worker: Any, user: Any) -> None:
    transcript = _long_transcript(user)
    run = _queued(user, transcript, strategy="picoclaw")
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(run_group_name(run.pk), channel)
    services.run_enqueue(run)
    run = _wait(run)
    assert run.status == RunStatus.DONE, run.error
    data = [m["data"] for m in _drain(channel) if m["type"] == "run.progress"]
    steps = [d["steps_done"] for d in data if d["status"] == RunStatus.RUNNING]
    assert [s for s in steps if 0 < s < run.steps_total], steps  # batches stream while it runs
    assert steps == sorted(steps)
    assert data[-1]["status"] == RunStatus.DONE and data[-1]["steps_done"] == run.steps_total


@pytest.fixture
def paused_after_first_batch(process_worker: Any, monkeypatch: Any) -> None:
    """Runs pause in their child once their first batch is stored, until
    ``child_pause.resume``: a test acts mid-run however fast the replay is."""
    monkeypatch.setattr(pooled, "CHILD_TARGET", child_pause.TARGET)


def _running_paused(user: Any, transcript: Any) -> Run:
    run = _queued(user, transcript, strategy="qwenpaw")
    services.run_enqueue(run)
    run = _wait(run, lambda r: r.status == RunStatus.RUNNING and r.steps_done > 0)
    # the next batch is at most BATCH_STEPS further on: the run is still far from its end
    assert run.steps_done + executor.BATCH_STEPS < run.steps_total
    return run


@pytest.mark.usefixtures("paused_after_first_batch")
def test_cancel_stops_a_run_in_a_child(user: Any) -> None:
    run = _running_paused(user, _long_transcript(user))
    services.run_cancel(run=run)
    child_pause.resume(run.pk)
    run = _wait(run)
    assert run.status == RunStatus.CANCELLED and run.error == "cancelled"
    assert 0 < run.steps_done < run.steps_total
    assert RunStep.objects.filter(run=run).count() == run.steps_done


@pytest.mark.usefixtures("paused_after_first_batch")
def test_killed_child_fails_its_run_and_is_replaced(process_worker: Any, user: Any) -> None:
    transcript = _long_transcript(user)
    run = _running_paused(user, transcript)
    killed = process_worker.busy_pids()
    assert len(killed) == 1
    os.kill(killed[0], signal.SIGKILL)
    run = _wait(run)
    assert run.status == RunStatus.FAILED
    assert "worker process stopped unexpectedly" in run.error and "SIGKILL" in run.error
    assert run.finished_at is not None

    again = _queued(user, transcript, strategy="picoclaw")
    child_pause.resume(again.pk)  # no pause for this one
    services.run_enqueue(again)
    again = _wait(again)
    assert again.status == RunStatus.DONE, again.error
    assert killed[0] not in process_worker.pids()


@pytest.mark.django_db
def test_runs_calling_claude_stay_in_the_thread(user: Any) -> None:
    transcript = _corpus_transcript(user)
    assert pooled.in_child_ok(_queued(user, transcript, strategy="qwenpaw"))
    claude = _queued(user, transcript, strategy="qwenpaw")
    claude.summarizer = "anthropic"
    assert not pooled.in_child_ok(claude)
    claude.summarizer, claude.exact_counts = "offline", True
    assert not pooled.in_child_ok(claude)


def test_child_exit_is_described_in_words() -> None:
    assert "SIGKILL" in embedded_pool.describe_exit(-signal.SIGKILL)
    assert "memory" in embedded_pool.describe_exit(-signal.SIGKILL)
    assert embedded_pool.describe_exit(3) == "exit code 3"


@pytest.mark.django_db(transaction=True)
def test_pool_keeps_its_child_reports_errors_and_retires_big_ones() -> None:
    pool = embedded_pool.ProcessPool(1)
    try:
        assert pool.call(pooled.CHILD_TARGET, -1) == "missing"  # no such run
        (pid,) = pool.pids()
        with pytest.raises(embedded_pool.ChildError, match="expected a number") as raised:
            pool.call(pooled.CHILD_TARGET, "not-a-run-id")
        assert "Traceback" in raised.value.remote_traceback
        assert pool.call(pooled.CHILD_TARGET, -1) == "missing"
        assert pool.pids() == [pid]  # an error in the call leaves the child running
    finally:
        pool.shutdown()
    with pytest.raises(embedded_pool.PoolClosed):
        pool.call(pooled.CHILD_TARGET, -1)

    small = embedded_pool.ProcessPool(1, retire_rss_mb=0)  # every child is "too big"
    try:
        assert small.call(pooled.CHILD_TARGET, -1) == "missing"
        assert small.pids() == []  # retired once its call answered
        assert small.call(pooled.CHILD_TARGET, -1) == "missing"  # a new child took over
    finally:
        small.shutdown()
