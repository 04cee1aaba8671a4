"""A page process's HTTP server: Django's WSGI handler on a unix socket, answered by a
pool of long-lived threads.

The front (``ctxlab.serving.page_pool.PageProxy``) forwards only GET and HEAD requests, as
HTTP/1.0 heads without a body, and reads each answer to EOF. Daphne cost a page process
~5.5 ms of CPU per request before Django saw it (Twisted's parser, the ASGI handler's
hops between the event loop and the view's thread): as much as a warm run page itself,
and 20 concurrent clients on 2 cores leave a few ms per request. Here a request is one
read of its head, one environ, Django's synchronous handler in the thread that read it,
and one write per body chunk.

Trusted input only: the front wrote the head and its ``X-Forwarded-*`` headers (nothing
else can reach the socket, see ``ctxlab.serving.page_pool``).
"""

from __future__ import annotations

import gc
import io
import logging
import queue
import socket
import socketserver
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.util import FileWrapper

log = logging.getLogger(__name__)

HEAD_LIMIT = 1024 * 1024  # the front's request heads: cookies and a few headers
READ_CHUNK = 64 * 1024
# Requests answered at once: the GIL runs one, so more threads only interleave them (20
# clients on 2 cores: run-page p95 213-214 ms with 4, 255-334 ms with 16); a slow view
# (a comparison built for the first time) holds one, and the front prefers the other
# page process meanwhile.
THREADS = 4
CONNECTION_SECONDS = 600
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def parse_head(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    """(method, target, headers) of a request head ending with a blank line."""
    request_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    headers = []
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers.append((name.strip(), value.strip()))
    return method, target, headers


def environ_for(method: str, target: str, headers: list[tuple[str, str]]) -> dict[str, Any]:
    """The WSGI environ of a forwarded request (PEP 3333; the client address, scheme and
    port come from the front's ``X-Forwarded-*`` headers)."""
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": urllib.parse.unquote(path, "latin-1"),
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/1.0",
        "wsgi.version": (1, 0),
        "wsgi.input": io.BytesIO(b""),  # GET and HEAD: the front forwards no body
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.file_wrapper": FileWrapper,
    }
    for name, value in headers:
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[key] = value
            continue
        key = "HTTP_" + key
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    environ["REMOTE_ADDR"] = environ.get("HTTP_X_FORWARDED_FOR", "")
    environ["wsgi.url_scheme"] = environ.get("HTTP_X_FORWARDED_PROTO", "http")
    environ["SERVER_PORT"] = environ.get("HTTP_X_FORWARDED_PORT", "80")
    environ["SERVER_NAME"] = environ.get("HTTP_HOST", "localhost").rsplit(":", 1)[0]
    return environ


class _Handler(socketserver.BaseRequestHandler):
    server: PageServer

    def handle(self) -> None:
        connection: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = connection.recv(READ_CHUNK)
            if not chunk or len(head) > HEAD_LIMIT:
                return  # the front went away (or wrote nonsense): nobody to answer
            head += chunk
        method, target, headers = parse_head(head.partition(b"\r\n\r\n")[0])
        environ = environ_for(method, target, headers)
        answer: list[bytes] = []

        def start_response(status: str, response_headers: list[tuple[str, str]], _exc_info: Any = None) -> Callable[[bytes], None]:  # fmt: skip
            lines = [f"HTTP/1.0 {status}", *(f"{k}: {v}" for k, v in response_headers)]
            answer[:] = [("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")]
            return connection.sendall

        result = self.server.app(environ, start_response)
        try:
            head_sent = False
            for data in result:
                body = data if method != "HEAD" else b""
                # the head with the first chunk: one write, one read for the front
                connection.sendall(body if head_sent else answer[0] + body)
                head_sent = True
            if not head_sent:
                connection.sendall(answer[0])
        except OSError:
            pass  # the front (its client) went away mid-answer: the rest goes nowhere
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django's request_finished (database connections kept or closed by age)


class PageServer(socketserver.UnixStreamServer):
    """Accepts on the socket; ``threads`` long-lived threads answer (each keeps its own
    database connection across requests: opening one cost ~1.3 ms per page view)."""

    # socketserver listens with a backlog of 5: with 20 clients, ~10 requests per page
    # process arrive at once while its answering threads hold the GIL, and a connect
    # past the backlog failed (EAGAIN), so the front answered ~5% of the GETs itself
    # through Daphne and its own Django (the slowest 5%: the p95).
    request_queue_size = 1024

    def __init__(self, path: str, app: WSGIApp, threads: int = THREADS) -> None:
        self.app = app
        self._pending: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()
        super().__init__(path, _Handler)
        for index in range(threads):
            name = f"ctxlab-page-{index}"
            threading.Thread(target=self._answer, name=name, daemon=True).start()

    def process_request(self, request: Any, _client_address: Any) -> None:  # socketserver's
        self._pending.put(request)

    def _answer(self) -> None:
        while True:
            request = self._pending.get()
            try:
                self.finish_request(request, "")
            except Exception:  # noqa: BLE001 (one broken request must not end the thread)
                log.exception("page request failed")
            finally:
                self.shutdown_request(request)


def keep_database_connections(seconds: int = CONNECTION_SECONDS) -> None:
    """Page threads keep their database connection between requests (``CONN_MAX_AGE``);
    Django still closes one that errored or outlived ``seconds``."""
    from django.db import connections

    for alias in connections:
        connections.settings[alias]["CONN_MAX_AGE"] = seconds


def warm_request(app: WSGIApp, path: str) -> int:
    """Answer one anonymous GET of ``path`` in-process, before listening: what a first
    request pays once (middleware, sessions, CSRF, static file names, the base template)
    is paid here. Returns the status."""
    status: list[str] = []

    def start_response(line: str, _headers: Any, _exc_info: Any = None) -> Callable[[bytes], None]:  # fmt: skip
        status.append(line)
        return lambda _data: None

    environ = environ_for("GET", path, [("Host", "localhost"), ("X-Forwarded-For", "127.0.0.1")])
    result = app(environ, start_response)
    try:
        for _chunk in result:
            pass
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return int(status[0].split()[0]) if status else 0


def freeze_heap() -> None:
    """Move everything alive now out of the garbage collector's sight (``gc.freeze``).

    A served process holds ~165,000 tracked objects after its warm-up (modules, URL
    patterns, compiled templates): each full collection walked them all, 70-110 ms with
    the interpreter lock held, every few page views. Frozen objects are still freed when
    their count drops; only cycles among them would stay, and nothing here makes them."""
    gc.collect()
    gc.freeze()


def serve(path: str, app: WSGIApp) -> None:
    """Answer forwarded requests on the unix socket ``path`` until the process ends."""
    with PageServer(path, app) as server:
        server.serve_forever(poll_interval=1.0)
