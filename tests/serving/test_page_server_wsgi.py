"""``ctxlab.serving.page_server``: a page process's WSGI server on a unix socket, as the front's
proxy talks to it (HTTP/1.0 heads with ``X-Forwarded-*``, answers read to EOF). The whole
path through ``manage.py serve`` is in test_serve_page_processes.py."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import WAIT_SECONDS, join

from ctxlab.serving import page_server
from ctxlab.serving.page_pool import parse_response_head, request_head


def _environ_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ["PATH_INFO"] == "/wait":  # answers once /release was answered
        RELEASE.wait(WAIT_SECONDS)
    if environ["PATH_INFO"] == "/release":
        RELEASE.set()
    shown = {k: v for k, v in environ.items() if isinstance(v, str)}
    body = json.dumps(shown).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])  # fmt: skip
    return [body[:10], body[10:]]  # two chunks: both reach the front


RELEASE = threading.Event()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    path = str(tmp_path / "page.sock")
    server = page_server.PageServer(path, _environ_app, threads=4)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
        join(thread, "the page server to shut down")


def _ask(path: str, scope: dict[str, Any]) -> tuple[int, dict[bytes, bytes], bytes]:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(WAIT_SECONDS)
        conn.connect(path)
        conn.sendall(request_head(scope))
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, headers = parse_response_head(head + b"\r\n\r\n")
    return status, dict(headers), body


def _scope(method: str, path: str, query: bytes = b"") -> dict[str, Any]:
    return {
        "type": "http", "method": method, "path": path, "raw_path": path.encode(),
        "query_string": query, "scheme": "https", "client": ("203.0.113.9", 5555),
        "server": ("127.0.0.1", 8443),
        "headers": [(b"host", b"ctxlab.example:8443"), (b"cookie", b"sessionid=abc"),
                    (b"x-forwarded-for", b"10.0.0.1"), (b"accept", b"text/html"),
                    (b"accept", b"application/json")],
    }  # fmt: skip


def test_environ_from_the_front_head(served: str) -> None:
    status, headers, body = _ask(served, _scope("GET", "/runs/3/caf%C3%A9", b"step=4&x=%20"))
    assert status == 200 and headers[b"content-type"] == b"application/json"
    environ = json.loads(body)
    assert int(headers[b"content-length"]) == len(body)
    assert environ["REQUEST_METHOD"] == "GET"
    assert environ["PATH_INFO"].encode("latin-1").decode() == "/runs/3/café"  # PEP 3333
    assert environ["QUERY_STRING"] == "step=4&x=%20"
    # the client's own X-Forwarded-For is dropped: the front's values are the only ones
    assert environ["REMOTE_ADDR"] == "203.0.113.9"
    assert environ["wsgi.url_scheme"] == "https"
    assert environ["SERVER_PORT"] == "8443"
    assert environ["SERVER_NAME"] == "ctxlab.example"
    assert environ["HTTP_COOKIE"] == "sessionid=abc"
    assert environ["HTTP_ACCEPT"] == "text/html,application/json"


def test_head_answers_headers_only(served: str) -> None:
    status, headers, body = _ask(served, _scope("HEAD", "/x"))
    assert status == 200 and body == b""
    assert int(headers[b"content-length"]) > 0


def test_a_slow_request_does_not_hold_the_others(served: str) -> None:
    RELEASE.clear()
    answers: list[int] = []
    slow = threading.Thread(target=lambda: answers.append(_ask(served, _scope("GET", "/wait"))[0]))
    slow.start()
    assert _ask(served, _scope("GET", "/release"))[0] == 200  # another thread answers it
    join(slow, "the slow request's answer")
    assert answers == [200]


def test_parse_head_reads_name_value_pairs() -> None:
    method, target, headers = page_server.parse_head(
        b"GET /a?b=1 HTTP/1.0\r\nHost: h\r\nX-Odd:  spaced value \r\nnocolon\r\n"
    )
    assert (method, target) == ("GET", "/a?b=1")
    assert headers == [("Host", "h"), ("X-Odd", "spaced value")]


def test_a_burst_of_connections_waits_in_the_backlog(tmp_path: Path) -> None:
    """20 clients put ~10 requests on each page process at once, and its accept loop waits
    for the GIL: connects past socketserver's backlog of 5 failed, and the front then
    answered those GETs itself. Nothing accepts here, so every connect is the backlog's."""
    path = str(tmp_path / "page.sock")
    server = page_server.PageServer(path, _environ_app, threads=1)  # listening, not accepting
    clients = []
    try:
        for _ in range(40):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            client.connect(path)  # BlockingIOError (EAGAIN) past a full backlog
            clients.append(client)
        assert len(clients) == 40
    finally:
        for client in clients:
            client.close()
        server.server_close()
