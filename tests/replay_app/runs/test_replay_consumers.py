"""Websocket progress: catch-up on connect, live group_send, owner only."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from waiting import Communicator

from ctxlab.asgi import application
from replay_app.models import Run, RunGroup
from replay_app.runs import executor, services
from replay_app.runs.progress import ChannelProgress, run_group_name
from replay_app.runs.services import RunSpec

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _queued(user: Any, transcript: Any) -> Run:
    return services.run_create(
        owner=user, transcript=transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )


def _login_cookie(user: Any) -> bytes:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def _ws(path: str, user: Any | None) -> Communicator:
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if user is not None:
        headers.append((b"cookie", _login_cookie(user)))
    return Communicator(application, path, headers=headers)


@pytest.mark.anyio
async def test_run_consumer_sends_catch_up_state_on_connect(user: Any, small_transcript: Any):
    run = await database_sync_to_async(_queued)(user, small_transcript)
    comm = await database_sync_to_async(_ws)(f"/ws/runs/{run.pk}/", user)
    connected, _ = await comm.connect()
    assert connected
    html = await comm.receive_from()
    assert f'id="run-{run.pk}-progress"' in html and 'hx-swap-oob="true"' in html
    assert 'data-status="queued"' in html
    await comm.disconnect()


@pytest.mark.anyio
async def test_run_consumer_renders_group_send_progress(user: Any, small_transcript: Any):
    run = await database_sync_to_async(_queued)(user, small_transcript)
    comm = await database_sync_to_async(_ws)(f"/ws/runs/{run.pk}/", user)
    assert (await comm.connect())[0]
    await comm.receive_from()  # catch-up
    layer = get_channel_layer()
    data = {
        "run_id": run.pk,
        "group_id": None,
        "status": "running",
        "steps_done": 5,
        "steps_total": 10,
        "percent": 50,
        "events_count": 1,
        "error": "",
        "latest_events": [
            {
                "seq": 0,
                "step": 3,
                "kind": "offload",
                "tokens_before": 900,
                "tokens_after": 400,
                "messages": 1,
            }
        ],
    }
    await layer.group_send(run_group_name(run.pk), {"type": "run.progress", "data": data})
    html = await comm.receive_from()
    assert 'data-percent="50"' in html and "5/10 steps" in html
    assert f'id="run-{run.pk}-latest"' in html and "900 → 400" in html
    await comm.disconnect()


@pytest.mark.anyio
async def test_run_consumer_receives_executor_progress(user: Any, transcript: Any):
    run = await database_sync_to_async(_queued)(user, transcript)
    comm = await database_sync_to_async(_ws)(f"/ws/runs/{run.pk}/", user)
    assert (await comm.connect())[0]
    await comm.receive_from()

    def execute() -> Run:
        return executor.run_execute(
            run=Run.objects.get(pk=run.pk),
            on_progress=ChannelProgress(max_per_second=1000),
            batch_steps=10,
        )

    await database_sync_to_async(execute)()
    seen = [await comm.receive_from()]
    while 'data-status="done"' not in seen[-1]:  # every fragment up to the final one
        seen.append(await comm.receive_from())
    assert await comm.receive_nothing(timeout=1)  # and nothing after it
    assert any('data-status="running"' in h for h in seen)
    # every step replayed, the run says it is finishing (metrics, analysis) before done
    finishing = [h for h in seen if 'data-status="running" data-percent="100"' in h]
    assert finishing and 'data-role="finishing"' in finishing[-1]
    assert 'data-status="done"' in seen[-1] and 'id="results-link"' in seen[-1]
    await comm.disconnect()


@pytest.mark.parametrize("who", ["anonymous", "other-user"])
@pytest.mark.anyio
async def test_run_consumer_rejects_non_owner(
    user: Any, other_user: Any, small_transcript: Any, who: str
):
    run = await database_sync_to_async(_queued)(user, small_transcript)
    visitor = None if who == "anonymous" else other_user
    comm = await database_sync_to_async(_ws)(f"/ws/runs/{run.pk}/", visitor)
    connected, code = await comm.connect()
    assert not connected
    assert code == (4401 if visitor is None else 4404)


@pytest.mark.anyio
async def test_group_consumer_catch_up_and_finished_status(
    user: Any, other_user: Any, small_transcript: Any
):
    def make() -> RunGroup:
        group = services.group_create(
            owner=user,
            transcript=small_transcript,
            specs=services.preset_specs()[:2],
            enqueue=False,
        )
        for run in group.runs.all():
            executor.run_execute(run=run)
        return group

    group = await database_sync_to_async(make)()
    comm = await database_sync_to_async(_ws)(f"/ws/runs/groups/{group.pk}/", user)
    assert (await comm.connect())[0]
    first, second, status = [await comm.receive_from() for _ in range(3)]
    assert 'data-status="done"' in first and 'data-status="done"' in second
    assert 'data-finished="true"' in status and 'id="group-results-link"' in status
    await comm.disconnect()
    stranger = await database_sync_to_async(_ws)(f"/ws/runs/groups/{group.pk}/", other_user)
    assert not (await stranger.connect())[0]


def test_channel_progress_throttles_same_status(monkeypatch: pytest.MonkeyPatch):
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr("replay_app.runs.progress.send_run_progress", sent.append)
    now = [0.0]
    sink = ChannelProgress(max_per_second=10, clock=lambda: now[0])
    base = {"run_id": 1, "status": "running"}
    for t in (0.0, 0.01, 0.05, 0.11, 0.12):
        now[0] = t
        sink({**base, "steps_done": int(t * 100)})  # type: ignore[arg-type]
    now[0] = 0.13
    sink({**base, "status": "done"})  # type: ignore[arg-type]
    assert [(m["status"], m.get("steps_done")) for m in sent] == [
        ("running", 0),
        ("running", 11),
        ("done", None),
    ]
