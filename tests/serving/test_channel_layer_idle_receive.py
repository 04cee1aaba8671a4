"""The Redis channel layer (distributed mode): a receive on an idle channel waits as long as
its caller wants, without raising, and a message sent afterwards still arrives. With
channels_redis' defaults (BZPOPMIN blocking 5 s, redis-py reading with a 5 s timeout) the
idle receive raised redis' TimeoutError after 5 s, loaded machine or not.

Runs when CHANNEL_LAYER_URL is a redis:// URL (``make test-distributed``)."""

from __future__ import annotations

import asyncio
import os

import pytest
from django.utils.module_loading import import_string
from waiting import WAIT_SECONDS

from ctxlab.envconfig import channel_layers_from_url

URL = os.environ.get("CHANNEL_LAYER_URL", "")
pytestmark = pytest.mark.skipif(
    not URL.startswith("redis"), reason="needs CHANNEL_LAYER_URL=redis://... (distributed leg)"
)


@pytest.mark.anyio
async def test_an_idle_receive_waits_longer_than_the_read_timeout_without_raising() -> None:
    config = channel_layers_from_url(URL)["default"]
    layer = import_string(config["BACKEND"])(**config["CONFIG"])
    channel = await layer.new_channel()
    waited = 7.0  # past one read timeout (5 s, redis-py's default and ctxlab's setting)
    with pytest.raises(TimeoutError) as raised:
        await asyncio.wait_for(layer.receive(channel), waited)
    assert type(raised.value) is TimeoutError, raised.value  # asyncio's, not redis'
    await layer.send(channel, {"type": "check", "n": 1})
    assert await asyncio.wait_for(layer.receive(channel), waited) == {"type": "check", "n": 1}


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_refused_sockets_consumer_ends_when_the_socket_closes() -> None:
    """A refused socket's consumer ends on the disconnect, by itself. Its channel-layer
    receive is cancelled on the way out; redis-py swallowed that cancellation (the consumer
    then looped on empty BZPOPMINs for ever, and a test loop closing over it hung: issue 32).
    Measured before the fix: not ended after 3 s, every time; after: about one block."""
    from channels.testing import WebsocketCommunicator

    from ctxlab.asgi import application

    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    comm = WebsocketCommunicator(application, "/ws/runs/1/", headers=headers)
    connected, _ = await comm.connect(WAIT_SECONDS)
    assert not connected
    await comm.send_input({"type": "websocket.disconnect", "code": 1000})
    # Shielded: the wait must not be what ends the consumer (a timeout here fails the test).
    await asyncio.wait_for(asyncio.shield(comm.future), WAIT_SECONDS)
    assert comm.future.done() and not comm.future.cancelled()
