"""Issue 15, "Memory stays bounded": ``manage.py serve`` (a real process) refuses an
anonymous request body before reading it, refuses a logged-in one as soon as it crosses
the limit, still takes an upload under the limit, and a killed upload leaves no temporary
file. The 200 MB figures are ``manage.py bench --only uploads``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import WAIT_SECONDS, wait_until

from ctxlab.benchmarks.uploads import MB, login, post, start_server

LIMIT = 2 * MB


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    base = tmp_path_factory.mktemp("bounded")
    data, tmp = base / "data", base / "tmp"
    data.mkdir()
    tmp.mkdir()
    process, port = start_server(data, tmp, limit=LIMIT)
    try:
        yield port, tmp
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_anonymous_body_refused_before_it_is_read(server: tuple[int, Path]) -> None:
    port, _ = server
    for path in ("/healthz", "/transcripts/upload/", "/no/such/url/"):
        status, _ = post(port, path, LIMIT // 2)
        assert status == 401, path
    status, _ = post(port, "/healthz", 20 * LIMIT)  # over the limit: that answer comes first
    assert status == 413


def test_logged_in_body_refused_once_over_the_limit(server: tuple[int, Path]) -> None:
    port, _ = server
    status, _ = post(port, "/transcripts/upload/", 40 * MB, cookie=login(port))
    assert status == 413


def test_upload_under_the_limit_still_imports(server: tuple[int, Path]) -> None:
    port, _ = server
    status, _ = post(port, "/transcripts/upload/", LIMIT // 2, cookie=login(port))
    assert status in (200, 400)  # an answer from the upload view, not a refusal
    assert status not in (401, 413)


def test_killed_upload_leaves_no_temp_file(server: tuple[int, Path]) -> None:
    port, tmp = server

    def temp_files() -> list[Path]:  # the page processes' sockets are not upload files
        return sorted(p for p in tmp.rglob("*") if "ctxlab-pages-" not in str(p))

    before = temp_files()
    status, _ = post(port, "/transcripts/upload/", LIMIT - MB // 2, cookie=login(port),
                     stop_after=MB)  # fmt: skip
    assert status is None
    # the server notices the cut connection and removes what it spooled
    wait_until(lambda: temp_files() == before, f"the temp files to be back to {before}",
               seen=temp_files)  # fmt: skip


def test_served_with_debug_off_static_and_friendly_404(server: tuple[int, Path]) -> None:
    """``start_server`` runs ``manage.py serve`` as ``make run`` does (DJANGO_DEBUG=0)."""
    import http.client

    port, _ = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
    conn.request("GET", "/static/css/ctxlab.css")
    static = conn.getresponse()
    static.read()
    assert static.status == 200
    assert static.getheader("Content-Security-Policy") and static.getheader("X-Frame-Options")
    conn.request("GET", "/no/such/page/", headers={"Cookie": login(port)})
    missing = conn.getresponse()
    body = missing.read().decode()
    assert missing.status == 404 and "Not found" in body and "Traceback" not in body
    assert "URLconf" not in body  # not Django's technical 404


def test_server_stops_on_sigterm(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    tmp.mkdir()
    process, port = start_server(data, tmp, limit=LIMIT)
    try:
        assert post(port, "/healthz", 10)[0] == 403  # serving (CSRF refuses the POST)
        process.terminate()
        assert process.wait(timeout=WAIT_SECONDS) is not None
    finally:
        if process.poll() is None:
            process.kill()
