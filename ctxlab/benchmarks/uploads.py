"""Upload memory benchmark: a real ``manage.py serve`` process, its RSS sampled from /proc.

In a throwaway data directory (SQLite, temp files), with a local account:

* ``anonymous``: a 200 MB POST to ``/healthz`` without a session (refused before its body
  is read);
* ``over_limit``: a logged-in 240 MB upload with the 200 MB limit (refused with 413 as soon
  as the limit is crossed);
* ``upload_200mb``: a logged-in 200 MB upload under the limit (plain text lines); the
  growth while its bytes stream in (target: < 150 MB) and, separately, the peak including
  what the server then does with them (``upload_200mb_import_rss_growth_mb``, target 3x
  the file + 100 MB). Such a file is now refused from its first 256 KiB, so
  this no longer measures an import (``import_memory`` does, in process);
* ``junk_190mb``: a logged-in 190 MiB upload that is no transcript, three times: refused
  from its first bytes; peak (target 3x the file + 100 MB) and RSS after each, against the
  baseline (target: within 50 MB);
* ``killed``: an upload cut off halfway; temporary files left behind in the server's
  TMPDIR (target: 0).

Result lines: ``upload_rss_growth_mb=…`` (the 200 MB upload's transfer), ``upload_anonymous_
rss_growth_mb=…``, ``upload_over_limit_rss_growth_mb=…``, ``upload_killed_temp_files=…``,
``upload_junk_190mb_peak_mb=…``, ``upload_junk_190mb_after_mb=…``, ``uploads_ok=…``.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, TextIO

MB = 1024 * 1024
LIMIT = 200 * MB
TARGET_GROWTH_MB = 150.0
ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "bench", "bench-uploads-pw"


def _rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+)", status)
    return int(match.group(1)) if match else 0


class _Sampler:
    """Peak RSS of a process, sampled every 20 ms from a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> _Sampler:
        self.start = self.peak = _rss_kb(self.pid)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_kb(self.pid))
            time.sleep(0.02)

    def mark(self) -> float:
        """Growth so far, MB."""
        return (max(self.peak, _rss_kb(self.pid)) - self.start) / 1024

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(data: Path, tmp: Path, limit: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        CTXLAB_DATA_DIR=str(data),
        CTXLAB_MAX_UPLOAD_BYTES=str(limit),
        CTXLAB_USER=USER,
        CTXLAB_PASSWORD=PASSWORD,
        TMPDIR=str(tmp),
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="bench-" + "k" * 50,
    )
    return env


SERVER_START_SECONDS = 300


def start_server(
    data: Path, tmp: Path, *, limit: int = LIMIT
) -> tuple[subprocess.Popen[bytes], int]:
    """``manage.py serve`` on a free port with its own data and temp directories."""
    env = _env(data, tmp, limit)
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (["migrate", "--noinput", "-v", "0"], ["ensure_local_user"]):
        subprocess.run([*manage, *command], env=env, check=True, capture_output=True)
    port = _free_port()
    server = subprocess.Popen(
        [*manage, "serve", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Generous: tests start servers on loaded CI machines; only a server that never
    # listens costs the whole wait, and one that exits ends it at once.
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server, port
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"manage.py serve exited with {server.returncode}") from None
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"manage.py serve did not start within {SERVER_START_SECONDS} s")


def login(port: int) -> str:
    """A logged-in ``Cookie`` header value."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SERVER_START_SECONDS)
    conn.request("GET", "/accounts/login/")
    response = conn.getresponse()
    page = response.read().decode()
    csrf = re.search(r"csrftoken=([^;]+)", response.getheader("Set-Cookie") or "")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf and token, "no CSRF token on the login page"
    body = f"username={USER}&password={PASSWORD}&csrfmiddlewaretoken={token.group(1)}"
    conn.request(
        "POST",
        "/accounts/login/",
        body=body,
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf.group(1)}",
            "Referer": f"http://127.0.0.1:{port}/accounts/login/",
        },
    )
    response = conn.getresponse()
    response.read()
    session = re.search(r"sessionid=([^;]+)", response.getheader("Set-Cookie") or "")
    assert session, f"login failed ({response.status})"
    conn.close()
    return f"csrftoken={csrf.group(1)}; sessionid={session.group(1)}"


def _multipart(size: int, boundary: str) -> tuple[list[bytes], bytes, int]:
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
        f'filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n'
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return [head], tail, len(head) + size + len(tail)


def _chunks(size: int) -> Iterator[bytes]:
    block = (b"not a transcript, just bytes " * (MB // 29 + 1))[: MB - 1] + b"\n"
    sent = 0
    while sent < size:
        piece = block[: min(len(block), size - sent)]
        sent += len(piece)
        yield piece


def post(
    port: int,
    path: str,
    size: int,
    *,
    cookie: str = "",
    stop_after: int | None = None,
    on_sent: Any = None,
) -> tuple[int | None, float]:
    """POST a ``size``-byte multipart body; (status or None if cut, seconds to send)."""
    boundary = "ctxlabbench"
    head, tail, total = _multipart(size, boundary)
    sock = socket.create_connection(("127.0.0.1", port), timeout=300)
    headers = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Content-Type: multipart/form-data; boundary={boundary}",
        f"Content-Length: {total}",
        "HX-Request: true",
        f"Referer: http://127.0.0.1:{port}/transcripts/",
    ]
    if cookie:
        headers.append(f"Cookie: {cookie}")
        csrf = re.search(r"csrftoken=([^;]+)", cookie)
        if csrf:
            headers.append(f"X-CSRFToken: {csrf.group(1)}")
    start = time.perf_counter()
    status: int | None = None
    try:
        sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + head[0])
        sent = 0
        for piece in _chunks(size):
            sock.sendall(piece)
            sent += len(piece)
            if stop_after is not None and sent >= stop_after:
                sock.close()
                return None, time.perf_counter() - start
        sock.sendall(tail)
    except OSError:
        pass  # the server refused and closed: read its answer below
    seconds = time.perf_counter() - start
    if on_sent is not None:
        on_sent()
    try:
        first = sock.recv(64).decode("latin-1")
        match = re.match(r"HTTP/1\.[01] (\d{3})", first)
        status = int(match.group(1)) if match else None
    except OSError:
        status = None
    finally:
        sock.close()
    return status, seconds


JUNK_MB = 190
JUNK_ROUNDS = 3


def junk_uploads(port: int, pid: int, cookie: str, out: TextIO) -> list[dict[str, Any]]:
    """A logged-in 190 MiB upload that is no transcript (text lines), three times.
    Its peak (target: 3x the file + 100 MB) and the RSS after each, against the baseline
    before the first (target: back to it, within ``JUNK_SETTLE_MB``)."""
    time.sleep(0.5)
    baseline = _rss_kb(pid) / 1024
    rows: list[dict[str, Any]] = []
    target = 3 * JUNK_MB + 100
    for round_ in range(1, JUNK_ROUNDS + 1):
        with _Sampler(pid) as rss:
            status, seconds = post(port, "/transcripts/upload/", JUNK_MB * MB, cookie=cookie)
            time.sleep(0.5)
            peak = rss.peak / 1024 - baseline
        after = _rss_kb(pid) / 1024 - baseline
        ok = status == 200 and peak <= target and after <= JUNK_SETTLE_MB
        out.write(
            f"  junk_{JUNK_MB}mb #{round_}: HTTP {status} in {seconds:.1f} s, peak "
            f"+{peak:.0f} MB (target {target}), +{after:.0f} MB after{'' if ok else ': FAIL'}\n"
        )
        rows.append({"name": f"junk_{JUNK_MB}mb_{round_}", "peak_mb": round(peak, 1),
                     "after_mb": round(after, 1), "ok": ok})  # fmt: skip
    return rows


JUNK_SETTLE_MB = 50.0


def _record(into: list[float], rss: _Sampler) -> None:
    into.append(rss.mark())


def _temp_files(tmp: Path) -> int:
    return sum(1 for _ in tmp.rglob("*"))


def run(out: TextIO) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-uploads-") as base:
        data, tmp = Path(base) / "data", Path(base) / "tmp"
        data.mkdir()
        tmp.mkdir()
        server, port = start_server(data, tmp)
        try:
            cookie = login(port)
            cases = [
                ("anonymous", "/healthz", 200 * MB, "", 401),
                ("over_limit", "/transcripts/upload/", 240 * MB, cookie, 413),
                ("upload_200mb", "/transcripts/upload/", LIMIT - 64 * 1024, cookie, None),
            ]
            growth: dict[str, float] = {}
            after: dict[str, float] = {}
            for name, path, size, auth, expected in cases:
                with _Sampler(server.pid) as rss:
                    sent: list[float] = []
                    status, seconds = post(
                        port, path, size, cookie=auth, on_sent=partial(_record, sent, rss)
                    )
                    transfer = sent[0] if sent else rss.mark()
                    time.sleep(0.5)
                    total = rss.mark()
                growth[name], after[name] = transfer, total
                ok = status == (expected or status) and transfer < TARGET_GROWTH_MB
                out.write(
                    f"  {name}: {size / MB:.0f} MB -> HTTP {status} in {seconds:.1f} s, "
                    f"RSS +{transfer:.0f} MB while sending, +{total:.0f} MB after\n"
                )
                rows.append(
                    {
                        "name": name,
                        "mb": round(size / MB),
                        "status": status,
                        "rss_growth_mb": round(transfer, 1),
                        "rss_growth_after_mb": round(total, 1),
                        "ok": ok,
                    }
                )
            junk = junk_uploads(port, server.pid, cookie, out)
            rows += junk
            before = _temp_files(tmp)
            post(port, "/transcripts/upload/", 100 * MB, cookie=cookie, stop_after=50 * MB)
            time.sleep(1.0)
            left = _temp_files(tmp) - before
            out.write(f"  killed: upload cut at 50 of 100 MB -> {left} temp file(s) left\n")
            rows.append({"name": "killed", "temp_files_left": left, "ok": left == 0})
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    rows += [
        {"line": f"upload_rss_growth_mb={growth['upload_200mb']:.1f}"},
        # What importing those 200 MB then costs (target: <= 3x the file + 100 MB).
        {"line": f"upload_200mb_import_rss_growth_mb={after['upload_200mb']:.1f}"},
        {"line": f"upload_anonymous_rss_growth_mb={growth['anonymous']:.1f}"},
        {"line": f"upload_over_limit_rss_growth_mb={growth['over_limit']:.1f}"},
        {"line": f"upload_killed_temp_files={rows[-1]['temp_files_left']}"},
        {"line": f"upload_junk_190mb_peak_mb={max(r['peak_mb'] for r in junk):.1f}"},
        {"line": f"upload_junk_190mb_after_mb={junk[-1]['after_mb']:.1f}"},
        {"line": f"uploads_ok={all(r.get('ok') for r in rows if 'ok' in r)}"},
    ]
    return rows
