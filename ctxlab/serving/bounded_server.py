"""Daphne with bounded memory for request bodies (what ``manage.py serve`` runs).

Stock Daphne reads a whole request body before the application sees it, then puts every
8 KiB chunk of it into the application's queue at once: a 200 MB upload sat in memory
(~700 MB peak for a 59 MiB one), anonymous or not, before Django's size check could run.
Here, per request:

* the body goes to an anonymous temporary file (Twisted's own, deleted when closed, so a
  killed upload leaves nothing behind);
* a body larger than ``CTXLAB_MAX_REQUEST_BYTES`` is refused with 413 as soon as its
  declared length (or the bytes received) cross the limit;
* a body larger than ``ANONYMOUS_BODY_BYTES`` (or of unknown length) is read only once the
  session cookie is known to belong to a logged-in user: the connection is paused while a
  worker thread checks, and an anonymous request gets 401 before its body is read;
* the application receives the body one chunk at a time, read from the file when it asks
  (``_LazyBodyQueue``), so memory holds one chunk, not the body; Twisted's own parsing of
  form bodies (the whole body in memory) is off.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from functools import partial
from typing import Any

from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from django.conf import settings
from twisted.internet import threads

log = logging.getLogger(__name__)

# Login and password forms, htmx posts: far below this. Anything bigger needs a session.
ANONYMOUS_BODY_BYTES = 64 * 1024


def request_limit() -> int:
    return int(settings.CTXLAB_MAX_REQUEST_BYTES)


def session_is_authenticated(session_key: str) -> bool:
    """Whether ``session_key`` names a live session of an existing, active user."""
    from django.contrib.auth import SESSION_KEY, get_user_model
    from django.db import close_old_connections

    close_old_connections()
    try:
        engine = __import__(settings.SESSION_ENGINE, fromlist=["SessionStore"])
        user_id = engine.SessionStore(session_key).get(SESSION_KEY)
        if user_id is None:
            return False
        model = get_user_model()
        return bool(model._default_manager.filter(pk=user_id, is_active=True).exists())
    except Exception:  # a broken session store must not let a body through
        log.exception("session check failed")
        return False
    finally:
        close_old_connections()


class BoundedWebRequest(WebRequest):
    _refused = False
    _received = 0
    # Twisted parses a POSTed form body into ``request.args`` before Daphne sees the
    # request: the whole body read into memory and a multipart one through the ``email``
    # parser (a 190 MiB upload took the process to 2.5 GB). Daphne never reads ``args``;
    # Django parses the body itself, a chunk at a time. (Twisted sets it per request.)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parsePOSTFormSubmission = False

    def gotLength(self, length: int | None) -> None:  # noqa: N802 (Twisted's name)
        super().gotLength(length)
        self._received = 0
        if length is not None and length > request_limit():
            self._refuse(413, self._too_large(length))
            return
        if length is not None and length <= ANONYMOUS_BODY_BYTES:
            return
        cookie = self.received_cookies.get(settings.SESSION_COOKIE_NAME.encode())
        if not cookie:
            self._refuse(401, "log in first: a request body this large needs a session\n")
            return
        # Read nothing more until a thread has looked the session up (the ORM must not run
        # on the event loop).
        transport = self.channel.transport
        transport.pauseProducing()
        checked = threads.deferToThread(
            session_is_authenticated, cookie.decode("latin-1", "replace")
        )
        checked.addCallback(self._session_checked, transport)
        checked.addErrback(lambda failure: self._session_checked(False, transport))

    def _session_checked(self, ok: bool, transport: Any) -> None:
        if self._refused or self.channel is None:
            return
        if not ok:
            self._refuse(401, "log in first: a request body this large needs a session\n")
            return
        transport.resumeProducing()

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802 (Twisted's name)
        if self._refused:
            return
        self._received += len(data)
        if self._received > request_limit():
            self._refuse(413, self._too_large(self._received, at_least=True))
            return
        super().handleContentChunk(data)

    def allContentReceived(self) -> None:  # noqa: N802 (Twisted's name)
        if not self._refused:
            super().allContentReceived()

    def _too_large(self, size: int, *, at_least: bool = False) -> str:
        limit = request_limit()
        return (
            f"request body {'over ' if at_least else ''}{size:,} bytes: the limit is "
            f"{limit:,} bytes (CTXLAB_MAX_REQUEST_BYTES)\n"
        )

    def _refuse(self, status: int, message: str) -> None:
        """Answer and close the connection without reading the rest of the body."""
        self._refused = True
        reason = {401: b"Unauthorized", 413: b"Content Too Large"}[status]
        body = message.encode()
        transport = self.channel.transport if self.channel is not None else None
        if transport is None:
            return
        transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, reason, len(body), body)
        )
        transport.loseConnection()
        if self.content is not None:
            self.content.close()


class _LazyBodyQueue(asyncio.Queue):  # type: ignore[type-arg]
    """The application's input queue; body chunks are kept as file offsets, read when the
    application asks for the next one."""

    def __init__(self) -> None:
        super().__init__()
        self.request: Any = None
        self._chunks: collections.deque[tuple[int, int, bool]] = collections.deque()
        self._offset = 0

    def put_nowait(self, item: Any) -> None:
        if self.request is not None and item.get("type") == "http.request":
            size = len(item.get("body", b""))
            self._chunks.append((self._offset, size, bool(item.get("more_body"))))
            self._offset += size
            return
        super().put_nowait(item)

    async def get(self) -> Any:
        if self._chunks and self.empty():
            offset, size, more = self._chunks.popleft()
            content: Any = getattr(self.request, "content", None)
            try:
                content.seek(offset)
                body = content.read(size)
            except (AttributeError, ValueError):  # closed: the client went away
                self._chunks.clear()
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": body, "more_body": more}
        return await super().get()


class BoundedServer(Server):
    """Daphne's server with ``BoundedWebRequest`` and ``_LazyBodyQueue``; at start, the
    temporary upload files a stopped server left are removed."""

    def run(self) -> None:
        from sessions_app.uploads import sweep_temp_files

        sweep_temp_files()
        super().run()

    @property
    def http_factory(self) -> HTTPFactory:
        return self._bounded_factory

    @http_factory.setter
    def http_factory(self, factory: HTTPFactory) -> None:
        # Server.run() builds a stock HTTPFactory; ours differs only in the request class.
        self._bounded_factory = _BoundedHTTPFactory(self)

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        if not isinstance(protocol, BoundedWebRequest):
            return super().create_application(protocol, scope)
        assert "application_instance" not in self.connections[protocol]
        queue = _LazyBodyQueue()
        queue.request = protocol
        scope.setdefault("asgi", {"version": "3.0"})
        instance = self.application(
            scope=scope, receive=queue.get, send=partial(self.handle_reply, protocol)
        )
        if protocol not in self.connections:
            return None
        self.connections[protocol]["application_instance"] = asyncio.ensure_future(
            instance, loop=asyncio.get_event_loop()
        )
        return queue


def _refuse_long_line(protocol: Any, line: bytes) -> None:
    """Twisted drops the connection when a request or header line passes its
    ``MAX_LENGTH`` (16 KiB); a client deserves a status: 414 for the request line (a long
    query string), 431 for a header line."""
    if getattr(protocol, "_HTTPChannel__first_line", 1):  # no request line read yet
        head, body = b"414 URI Too Long", b"request line over 16 KiB: shorten the URL\n"
    else:
        head, body = b"431 Request Header Fields Too Large", b"a header line over 16 KiB\n"
    protocol.transport.write(
        b"HTTP/1.1 " + head + b"\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    protocol.transport.loseConnection()


class _BoundedHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 (Twisted's name)
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = BoundedWebRequest
        # The factory's protocol is Twisted's HTTP/1-or-2 wrapper; the line parser is the
        # HTTP/1.1 channel inside it.
        channel = getattr(protocol, "_channel", protocol)
        channel.lineLengthExceeded = partial(_refuse_long_line, channel)
        return protocol
