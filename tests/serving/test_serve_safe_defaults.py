"""Issue 32.7: ``manage.py serve`` with no DJANGO_DEBUG / DJANGO_SECRET_KEY in the
environment serves with DEBUG off and a random key kept in the data directory (the safe
default belongs to the serving command, not only to ``make run``)."""

from __future__ import annotations

import http.client
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "sqlite").startswith("sqlite")
        or not os.environ.get("CELERY_BROKER_URL", "memory://").startswith("memory://"),
        reason="serves the embedded default from its own SQLite file",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, server: subprocess.Popen[bytes], ceiling: float = 180) -> None:
    """Until the server accepts connections (it exits early: fail at once, with why)."""
    deadline = time.monotonic() + ceiling
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"serve exited with {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"serve did not accept connections on {port} within {ceiling} s")


def test_serve_without_environment_runs_with_debug_off_and_its_own_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_DEBUG", "DJANGO_SECRET_KEY"}}
    env.update(CTXLAB_DATA_DIR=str(tmp_path), CTXLAB_PAGE_PROCESSES="0")
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True)
    port = _free_port()
    server = subprocess.Popen(
        [*manage, "serve", f"127.0.0.1:{port}", "--page-processes", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_port(port, server)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/no-such-page-here/")
        response = conn.getresponse()
        body = response.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert response.status == 404
    assert "Using the URLconf" not in body and "DEBUG = True" not in body  # no debug page
    key_file = tmp_path / "secret_key"
    assert key_file.is_file() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert len(key) >= 50 and "django-insecure" not in key
