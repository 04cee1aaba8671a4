"""Issue 32, items 2 and 4, on a real ``manage.py serve``: a junk upload is refused from
its first bytes; a client that goes away mid-import, or a server killed mid-import, leaves
no temporary upload on disk or held open; a restarted server sweeps what an older one
left. (What a 190 MiB upload costs in memory: ``manage.py bench --only uploads``.)"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import WAIT_SECONDS, wait_until

from ctxlab.benchmarks.uploads import MB, login, start_server

LIMIT = 40 * MB


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, Path]]:
    base = tmp_path_factory.mktemp("leftovers")
    data, tmp = base / "data", base / "tmp"
    data.mkdir()
    tmp.mkdir()
    process, port = start_server(data, tmp, limit=LIMIT)
    try:
        yield port, process.pid, data / "tmp"
    finally:
        _stop(process)


def chat_jsonl(size: int) -> bytes:
    """An OpenAI chat JSONL file of about ``size`` bytes (a transcript: imported whole)."""
    line = json.dumps({"role": "user", "content": "x" * 2000}) + "\n"
    reply = json.dumps({"role": "assistant", "content": "y" * 2000}) + "\n"
    return ((line + reply) * (size // (len(line) + len(reply)) + 1)).encode()


def send_upload(
    port: int, cookie: str, name: str, content: bytes, *, wait_answer: bool = True
) -> tuple[socket.socket, str]:
    """POST ``content`` as one file of the upload form; the socket and (when awaited) the
    answer's first bytes."""
    boundary = "ctxlabtest"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    csrf = re.search(r"csrftoken=([^;]+)", cookie)
    assert csrf
    head = (
        f"POST /transcripts/upload/?format=json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(body)}\r\nCookie: {cookie}\r\nX-CSRFToken: {csrf.group(1)}\r\n"
        f"Referer: http://127.0.0.1:{port}/transcripts/\r\nConnection: close\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS)
    sock.sendall(head.encode() + body)
    answer = b""
    if wait_answer:
        while chunk := sock.recv(65536):
            answer += chunk
        sock.close()
    return sock, answer.decode("utf-8", "replace")


def upload_files(pid: int, folder: Path) -> list[str]:
    """Temporary uploads on disk in ``folder``, and those the server still holds open
    (a deleted file keeps its disk space while a descriptor points at it)."""
    on_disk = [p.name for p in folder.glob("ctxlab-upload-*")] if folder.is_dir() else []
    held = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if str(folder) in target and "ctxlab-upload-" in target:
            held.append(target)
    return on_disk + held


def test_junk_refused_from_its_first_bytes_and_nothing_left(
    server: tuple[int, int, Path],
) -> None:
    port, pid, folder = server
    junk = b"not a transcript, just some bytes\n" * (12 * MB // 34)
    _, answer = send_upload(port, login(port), "junk.jsonl", junk)
    result = json.loads(answer.split("\r\n\r\n", 1)[1])["results"][0]
    assert result["error"].startswith(
        "junk.jsonl, line 1, byte 0: plain text in no known transcript format"
    )
    assert result["upload"] is None
    assert upload_files(pid, folder) == []


def test_client_gone_mid_import_leaves_nothing(server: tuple[int, int, Path]) -> None:
    port, pid, folder = server
    cookie = login(port)
    sock, _ = send_upload(port, cookie, "chat.jsonl", chat_jsonl(30 * MB), wait_answer=False)
    # The whole body is sent: the server spools it and starts importing; then we go away.
    wait_until(lambda: upload_files(pid, folder), "the server to hold the spooled upload")
    sock.close()
    wait_until(
        lambda: upload_files(pid, folder) == [],
        "the temporary upload to be closed and gone",
        seen=lambda: upload_files(pid, folder),
    )


def test_killed_mid_import_leaves_nothing_and_restart_sweeps(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    tmp.mkdir()
    folder = data / "tmp"
    process, port = start_server(data, tmp, limit=LIMIT)
    try:
        sock, _ = send_upload(
            port, login(port), "chat.jsonl", chat_jsonl(30 * MB), wait_answer=False
        )
        wait_until(lambda: upload_files(process.pid, folder), "the spooled upload")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=WAIT_SECONDS)
        sock.close()
    finally:
        _stop(process)
    assert list(folder.glob("ctxlab-upload-*")) == []  # unnamed: nothing to leave behind
    # What a server killed between creating and unlinking one (or an older version) left:
    dead, alive = process.pid, os.getpid()
    (folder / f"ctxlab-upload-{dead}-a1b2c3").write_bytes(b"x" * 1000)
    (folder / f"ctxlab-upload-{alive}-d4e5f6").write_bytes(b"still being written")
    (folder / "notes.txt").write_text("not ours to remove")
    restarted, _ = start_server(data, tmp, limit=LIMIT)  # listening: the sweep has run
    try:
        assert sorted(p.name for p in folder.iterdir()) == [
            f"ctxlab-upload-{alive}-d4e5f6",
            "notes.txt",
        ]
    finally:
        _stop(restarted)
