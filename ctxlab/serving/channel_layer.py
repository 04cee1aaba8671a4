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

from channels_redis.core import RedisChannelLayer as _RedisChannelLayer  # type: ignore[import-untyped]

from ctxlab.envconfig import CHANNEL_LAYER_SOCKET_TIMEOUT

BLOCK_SECONDS = 1
assert CHANNEL_LAYER_SOCKET_TIMEOUT - BLOCK_SECONDS >= 3  # what a loaded machine may delay


class RedisChannelLayer(_RedisChannelLayer):  # type: ignore[misc]
    """channels_redis' layer whose ``BZPOPMIN`` blocks ``BLOCK_SECONDS``."""

    brpop_timeout = BLOCK_SECONDS
