"""Issue 32.6: a websocket to a path no app serves is refused cleanly, anonymous or not,
and known paths still route."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from waiting import Communicator

from ctxlab.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/ws/nope/", "/", "/ws/runs/abc/", "/admin/"])
async def test_unknown_websocket_path_is_refused_without_error(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    comm = Communicator(application, path, headers=HEADERS)
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()
    assert "Traceback" not in caplog.text and "No route found" not in caplog.text


@pytest.mark.anyio
async def test_known_websocket_path_still_routes(user: Any, small_transcript: Any) -> None:
    from channels.db import database_sync_to_async
    from django.test import Client

    from replay_app.runs import services
    from replay_app.runs.services import RunSpec

    run = await database_sync_to_async(services.run_create)(
        owner=user, transcript=small_transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )

    def cookie() -> bytes:
        client = Client()
        client.force_login(user)
        return f"sessionid={client.cookies['sessionid'].value}".encode()

    headers = [*HEADERS, (b"cookie", await database_sync_to_async(cookie)())]
    comm = Communicator(application, f"/ws/runs/{run.pk}/", headers=headers)
    connected, _ = await comm.connect()
    assert connected
    await comm.disconnect()
