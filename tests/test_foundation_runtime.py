"""Celery, Channels and the ASGI app actually work in-process (or on the configured services)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.routing import ProtocolTypeRouter
from django_celery_results.models import TaskResult
from waiting import WAIT_SECONDS, Communicator

from ctxlab.celery import app as celery_app
from ctxlab.celery import ping
from ctxlab.serving.embedded import embedded_broker


@pytest.mark.django_db
def test_tasks_run_eagerly_by_default() -> None:
    result = ping.delay("eager")
    assert celery_app.conf.task_always_eager is True
    assert result.get() == "eager"


def test_embedded_worker_executes_task(celery_worker_embedded: Any) -> None:
    assert celery_app.conf.task_always_eager is False
    result = ping.delay("from-worker")
    assert result.get(timeout=WAIT_SECONDS, interval=0.02) == "from-worker"
    row = TaskResult.objects.get(task_id=result.id)
    assert row.status == "SUCCESS"
    assert row.task_name == "ctxlab.ping"


def test_embedded_worker_runs_tasks_concurrently(celery_worker_embedded: Any) -> None:
    results = [ping.delay(str(i)) for i in range(20)]
    assert [r.get(timeout=WAIT_SECONDS, interval=0.02) for r in results] == [
        str(i) for i in range(20)
    ]


@pytest.mark.parametrize(
    ("url", "expected"),
    [("memory://", True), ("memory://localhost/", True), ("redis://127.0.0.1:6390/0", False)],
    ids=["memory", "memory-host", "redis"],
)
def test_embedded_broker(url: str, expected: bool) -> None:
    assert embedded_broker(url) is expected


def test_channel_layer_round_trip() -> None:
    layer = get_channel_layer()
    assert layer is not None

    async def round_trip() -> dict[str, Any]:
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "ctxlab.test", "n": 7})
        return await layer.receive(channel)

    assert async_to_sync(round_trip)() == {"type": "ctxlab.test", "n": 7}


def test_channel_layer_group_send_reaches_member() -> None:
    layer = get_channel_layer()

    async def group_round_trip() -> dict[str, Any]:
        channel = await layer.new_channel()
        await layer.group_add("ctxlab-test-group", channel)
        await layer.group_send("ctxlab-test-group", {"type": "ctxlab.group", "ok": True})
        message = await layer.receive(channel)
        await layer.group_discard("ctxlab-test-group", channel)
        return message

    assert async_to_sync(group_round_trip)() == {"type": "ctxlab.group", "ok": True}


def test_asgi_application_routes_http_and_websocket() -> None:
    from ctxlab.asgi import application

    assert isinstance(application, ProtocolTypeRouter)
    assert set(application.application_mapping) == {"http", "websocket"}


@pytest.mark.django_db(transaction=True)
def test_asgi_websocket_foreign_origin_is_refused() -> None:
    from ctxlab.asgi import application

    async def connect() -> bool:
        communicator = Communicator(
            application, "/ws/anything/", headers=[(b"origin", b"http://evil.example")]
        )
        connected, _ = await communicator.connect()
        await communicator.wait()
        return connected

    assert async_to_sync(connect)() is False
