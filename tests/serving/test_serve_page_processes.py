"""Issue 16, "Pages under concurrency": ``manage.py serve`` (a real process, as ``make
run`` serves) answers GETs from its page processes, everything else (POSTs, websockets,
the embedded worker) itself; a page process that dies is replaced and meanwhile the front
answers. Figures under load are ``manage.py bench --only pages``."""

from __future__ import annotations

import base64
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from waiting import WAIT_SECONDS, join, wait_until

from ctxlab.benchmarks import web_memory
from ctxlab.benchmarks.uploads import ROOT, _env, login, start_server

pytestmark = pytest.mark.slow


def _children(pid: int) -> list[int]:
    # Every thread's children: the front restarts page processes from a watcher thread.
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue  # the thread ended meanwhile
    return [int(p) for p in found if b"ctxlab.serving.page_pool" in _cmdline(int(p))]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _socket_of(pid: int) -> Path | None:
    args = [a.decode() for a in _cmdline(pid).split(b"\0")]
    return next((Path(a) for a in args if a.endswith(".sock")), None)


def _page_processes(pid: int, count: int) -> list[int]:
    def listening() -> list[int]:
        found = _children(pid)
        sockets = [_socket_of(p) for p in found]
        ready = len(found) >= count and all(s is not None and s.exists() for s in sockets)
        return found if ready else []

    return wait_until(
        listening, f"{count} page processes listening on their sockets",
        seen=lambda: {p: _socket_of(p) for p in _children(pid)}, interval=0.2,
    )  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    base = tmp_path_factory.mktemp("pages")
    data, tmp = base / "data", base / "tmp"
    data.mkdir()
    tmp.mkdir()
    made = web_memory.prepare(data, tmp, runs=2, messages=200)
    previous = os.environ.get("CTXLAB_PAGE_PROCESSES")
    os.environ["CTXLAB_PAGE_PROCESSES"] = "2"  # on any machine
    try:
        process, port = start_server(data, tmp)
    finally:
        if previous is None:
            del os.environ["CTXLAB_PAGE_PROCESSES"]
        else:
            os.environ["CTXLAB_PAGE_PROCESSES"] = previous
    try:
        pages = _page_processes(process.pid, 2)
        yield SimpleNamespace(
            pid=process.pid, port=port, made=made, pages=pages, data=data, tmp=tmp,
            cookie=login(port),
        )  # fmt: skip
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _queued_connections(pid: int) -> int:
    """Connections to the page processes' sockets that no process has closed: a stopped page
    process cannot accept, so a GET forwarded to it waits in its socket's queue (listed in
    ``/proc/net/unix`` under the socket's path, without the listener's flag)."""
    paths = {str(p) for p in map(_socket_of, _children(pid)) if p is not None}
    rows = (line.split() for line in Path("/proc/net/unix").read_text().splitlines()[1:])
    return sum(1 for row in rows if len(row) == 8 and row[7] in paths and row[3] != "00010000")


def _get(port: int, url: str, cookie: str, timeout: float = WAIT_SECONDS) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", url, headers={"Cookie": cookie})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_pages_answered_with_their_headers(served: SimpleNamespace) -> None:
    run = served.made[0]["run"]
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=WAIT_SECONDS)
    conn.request("GET", f"/runs/{run}/", headers={"Cookie": served.cookie})
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200
    assert f"run {run}".encode() in body
    assert response.getheader("Content-Security-Policy")
    assert int(response.getheader("Content-Length") or 0) == len(body)
    conn.request("HEAD", "/static/css/ctxlab.css")
    head = conn.getresponse()
    assert head.status == 200 and head.read() == b""
    assert int(head.getheader("Content-Length") or 0) > 0
    conn.close()
    status, _ = _get(served.port, f"/runs/{run}/", "")  # anonymous: the login redirect
    assert status == 302


def test_gets_go_to_page_processes_posts_stay_in_front(served: SimpleNamespace) -> None:
    """With the page processes stopped, a GET waits for them while a POST is answered by
    the front's own Django."""
    for pid in served.pages:
        os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(TimeoutError):
            _get(served.port, "/runs/", served.cookie, timeout=2)
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        conn.request("POST", "/healthz", body=b"{}", headers={"Cookie": served.cookie})
        assert conn.getresponse().status == 403  # the front's Django: no CSRF token
        conn.close()
    finally:
        for pid in served.pages:
            os.kill(pid, signal.SIGCONT)
    status, _ = _get(served.port, "/runs/", served.cookie)
    assert status == 200


def test_dead_page_process_is_replaced_and_front_answers_meanwhile(
    served: SimpleNamespace,
) -> None:
    """Killed while they hold a GET (stopped first, so the GET is theirs): the front
    answers that GET itself, and the next ones until the replacements listen."""
    for pid in served.pages:
        os.kill(pid, signal.SIGSTOP)
    pending: list[tuple[int, bytes]] = []
    waiting = threading.Thread(
        target=lambda: pending.append(_get(served.port, "/runs/", served.cookie))
    )
    held = _queued_connections(served.pid)
    waiting.start()
    wait_until(
        lambda: _queued_connections(served.pid) > held,
        "the GET queued on a stopped page process's socket",
        seen=lambda: _queued_connections(served.pid),
    )  # fmt: skip
    assert not pending
    for pid in served.pages:
        os.kill(pid, signal.SIGKILL)
    join(waiting, "the GET held by the killed page processes")
    assert pending and pending[0][0] == 200 and b"run" in pending[0][1]
    status, body = _get(served.port, "/runs/", served.cookie)
    assert status == 200 and b"run" in body
    replaced = _page_processes(served.pid, 2)
    assert not set(replaced) & set(served.pages)
    served.pages = replaced
    status, _ = _get(served.port, f"/runs/{served.made[1]['run']}/", served.cookie)
    assert status == 200


def _ws_connect(port: int, path: str, cookie: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head[:200]
    return sock


def _ws_text(sock: socket.socket) -> str:
    """One unmasked text frame from the server."""

    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "websocket closed"
            data += chunk
        return data

    first, second = exactly(2)
    length = second & 0x7F
    if length == 126:
        length = int.from_bytes(exactly(2), "big")
    elif length == 127:
        length = int.from_bytes(exactly(8), "big")
    payload = exactly(length)
    assert first & 0x0F == 1, f"opcode {first & 0x0F}"
    return payload.decode()


def _fail_run(data: Path, tmp: Path, run: int) -> None:
    env = _env(data, tmp, 1024 * 1024)
    env.update(DJANGO_SETTINGS_MODULE="ctxlab.settings", PYTHONPATH=str(ROOT))
    code = (
        "import django; django.setup(); from replay_app.models import Run; "
        f"Run.objects.filter(pk={run}).update(status='failed', error='for the test')"
    )
    subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True)


# With a Redis broker (the distributed leg) the front starts no embedded worker: the retried
# run's task would go to whichever worker shares that broker (the test session's own).
@pytest.mark.skipif(
    not os.environ.get("CELERY_BROKER_URL", "memory://").startswith("memory://"),
    reason="the front's embedded worker runs only with the in-memory broker",
)
def test_websocket_gets_progress_from_the_front_worker(served: SimpleNamespace) -> None:
    """A retried run executes in the front's embedded worker; its progress reaches a
    websocket opened through the same port (in-memory channel layer, one process)."""
    run = served.made[1]["run"]
    _fail_run(served.data, served.tmp, run)
    sock = _ws_connect(served.port, f"/ws/runs/{run}/", served.cookie)
    try:
        assert "failed" in _ws_text(sock)  # the catch-up state
        csrf = re.search(r"csrftoken=([^;]+)", served.cookie)
        assert csrf
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=WAIT_SECONDS)
        conn.request(
            "POST",
            f"/runs/{run}/retry/",
            body="",
            headers={
                "Cookie": served.cookie,
                "X-CSRFToken": csrf.group(1),
                "Referer": f"http://127.0.0.1:{served.port}/runs/{run}/",
            },
        )
        assert conn.getresponse().status == 302
        seen = ""
        deadline = time.monotonic() + WAIT_SECONDS
        while "done" not in seen and time.monotonic() < deadline:
            seen = _ws_text(sock)
        assert "done" in seen
    finally:
        sock.close()
