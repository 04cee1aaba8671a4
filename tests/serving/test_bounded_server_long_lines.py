"""Issue 32.7: a request line or a header line over Twisted's 16 KiB line limit gets a
status (414 / 431) from ``manage.py serve``, not a dropped connection; normal requests on
the same server are unaffected."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import pytest

from ctxlab.benchmarks.uploads import start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    base = tmp_path_factory.mktemp("lines")
    data, tmp = base / "data", base / "tmp"
    data.mkdir()
    tmp.mkdir()
    process, port = start_server(data, tmp)
    try:
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def _answer(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=120) as conn:
        conn.sendall(head)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_long_query_string_is_answered_414(port: int) -> None:
    answer = _answer(port, b"GET /?q=" + b"x" * 20_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 414 ")
    assert b"shorten the URL" in answer


def test_long_header_line_is_answered_431(port: int) -> None:
    head = b"GET /accounts/login/ HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"y" * 20_000
    answer = _answer(port, head + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_ordinary_request_still_served(port: int) -> None:
    answer = _answer(port, b"GET /accounts/login/?next=/ HTTP/1.0\r\nHost: localhost\r\n\r\n")
    assert answer.split(b" ", 2)[1] == b"200"
