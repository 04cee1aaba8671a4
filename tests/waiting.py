"""One rule for every test that waits on something (a worker, a channel layer, a websocket,
a server, the database): poll the awaited condition, never sleep for a fixed time.

``WAIT_SECONDS`` is the overall limit, the same everywhere (the browser tests use it too,
tests/browser/conftest.py). It is generous on purpose: CI runs on a loaded 2-core machine,
where a Celery task or a websocket message can take tens of seconds. The limit only matters
when the condition never comes; the failure then says what was awaited and what was seen
last. How long things take is measured by ``manage.py bench``, not by tests.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from channels.testing import WebsocketCommunicator

T = TypeVar("T")

WAIT_SECONDS = float(os.environ.get("CTXLAB_TEST_WAIT_SECONDS", "300"))
POLL_SECONDS = 0.1
REFUSED_WAIT = 5.0  # a refused socket's consumer: ended by the disconnect, else cancelled


def wait_until(
    check: Callable[[], T],
    awaited: str,
    *,
    seen: Callable[[], object] | None = None,
    timeout: float = WAIT_SECONDS,
    interval: float = POLL_SECONDS,
) -> T:
    """``check()`` again and again until it returns something true, which is returned.

    Fails after ``timeout`` seconds with ``awaited`` and the last thing seen (``seen()`` when
    given, else the last value ``check()`` returned)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            last = seen() if seen is not None else value
            raise AssertionError(f"waited {timeout:.0f} s for {awaited}; last seen: {last!r}")
        time.sleep(interval)


def join(thread: Any, awaited: str, timeout: float = WAIT_SECONDS) -> None:
    """Join a thread (or process), failing if it is still alive after the limit."""
    thread.join(timeout)
    assert not thread.is_alive(), f"waited {timeout:.0f} s for {awaited}; still running"


async def receive_until(
    layer: Any,
    channel: str,
    done: Callable[[dict[str, Any]], bool],
    awaited: str,
    timeout: float = WAIT_SECONDS,
    poll: float = 0.5,
) -> list[dict[str, Any]]:
    """The messages arriving on a channel-layer ``channel`` up to and including the first
    for which ``done(message)`` is true.

    Each receive waits at most ``poll`` seconds and the next one follows: the in-memory
    layer's queue, filled from a worker thread, does not wake this loop by itself, and
    channels_redis' receive is cancel-safe. Only the overall ``timeout`` fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    got: list[dict[str, Any]] = []
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            last = got[-3:]
            raise AssertionError(
                f"waited {timeout:.0f} s for {awaited}; {len(got)} messages, last: {last!r}"
            )
        try:
            message = await asyncio.wait_for(layer.receive(channel), min(poll, remaining))
        except TimeoutError:
            continue
        got.append(message)
        if done(message):
            return got


class Communicator(WebsocketCommunicator):
    """channels' test communicator, waiting up to ``WAIT_SECONDS`` instead of 1 s.

    A consumer that fails or closes ends the wait at once; only a message that never comes
    costs the whole limit.

    Every socket ends inside its test, as a server ends it: a refused handshake is followed
    by the ``websocket.disconnect`` Daphne sends after a close, and a connected socket left
    open fails its test (``open_sockets``, checked by tests/conftest.py). A consumer left
    running holds a channel-layer receive that would otherwise only be cancelled when the
    event loop closes: on the Redis layer that is where a run hung (issue 32)."""

    _open: ClassVar[set[Communicator]] = set()

    async def connect(self, timeout: float = WAIT_SECONDS) -> Any:
        connected, code = await super().connect(timeout)
        if connected:
            Communicator._open.add(self)
        else:
            # The consumer ends on the disconnect; if it has not within the wait, the wait
            # cancels it, here, in its test's loop (REFUSED_WAIT bounds a refused test).
            await self.disconnect(timeout=REFUSED_WAIT)
        return connected, code

    async def receive_from(self, timeout: float = WAIT_SECONDS) -> Any:
        return await super().receive_from(timeout)

    async def receive_json_from(self, timeout: float = WAIT_SECONDS) -> Any:
        return await super().receive_json_from(timeout)

    async def disconnect(self, code: int = 1000, timeout: float = WAIT_SECONDS) -> None:
        Communicator._open.discard(self)
        await super().disconnect(code, timeout)

    @classmethod
    def open_sockets(cls) -> list[str]:
        """Paths of the sockets connected and not yet disconnected (forgotten: emptied)."""
        paths = sorted(str(c.scope.get("path")) for c in cls._open)
        cls._open.clear()
        return paths

    # ``wait`` (let the consumer end) keeps channels' 1 s: its timeout fails nothing, it
    # only stops waiting, and a refused socket's consumer never ends by itself (with the
    # shared limit every such test sat out the whole 300 s).
