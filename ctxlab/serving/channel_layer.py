"""The Redis channel layer (distributed mode): channels_redis with its blocking receive well
inside the socket's read timeout.

channels_redis receives with ``BZPOPMIN`` blocking up to ``brpop_timeout`` seconds (5 by
default) on the server, and redis-py reads each reply with the pool's ``socket_timeout`` (5 s
by default in redis-py 8). With the two equal, an idle channel's empty answer raced the
client's timeout, and on a loaded machine lost it: ``layer.receive`` raised redis'
``TimeoutError`` (both distributed tests failed so under load). A longer socket timeout (30 s)
removed the race but changed what the 5 s timeout had also bounded: every read of the
layer, so a refused socket's receive left to be cancelled at a test loop's close kept the
distributed leg waiting. Here the block is shortened instead and the socket timeout stays
what it was: the server answers an idle receive after ``BLOCK_SECONDS`` (1 s), 4 s before
the client would give up, and every other read keeps its 5 s bound. An idle receiver costs
one ``BZPOPMIN`` a second.
"""

from __future__ import annotations

import asyncio

from channels_redis.core import RedisChannelLayer as _RedisChannelLayer  # type: ignore[import-untyped]

from ctxlab.envconfig import CHANNEL_LAYER_SOCKET_TIMEOUT

BLOCK_SECONDS = 1
assert CHANNEL_LAYER_SOCKET_TIMEOUT - BLOCK_SECONDS >= 3  # what a loaded machine may delay


class RedisChannelLayer(_RedisChannelLayer):  # type: ignore[misc]
    """channels_redis' layer whose ``BZPOPMIN`` blocks ``BLOCK_SECONDS``."""

    brpop_timeout = BLOCK_SECONDS

    async def _brpop_with_clean(self, index: int, channel: str, timeout: float) -> object:
        # A cancellation redis-py swallows (one that arrives while a connection is being
        # re-established is retried away) would leave receive_single looping on empty
        # BZPOPMINs for ever: a closed websocket's consumer then never ends, and an event
        # loop closing over it waits for ever. The task still counts the request
        # (Task.cancelling), so it is honoured here, between two blocking reads; nothing
        # is lost, a popped message stays in the backup queue for the next receive.
        _honour_cancellation()
        member = await super()._brpop_with_clean(index, channel, timeout)
        _honour_cancellation()
        return member


def _honour_cancellation() -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
