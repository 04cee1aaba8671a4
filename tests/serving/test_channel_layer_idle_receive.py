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
