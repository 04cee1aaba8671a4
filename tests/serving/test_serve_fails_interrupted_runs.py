"""Issue 32.5: a run left "running" by a server that died is failed (with Retry) when the
server starts again, at once, not when its heartbeat goes stale or a list is opened."""

from __future__ import annotations

import os
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ctxlab.benchmarks import web_memory
from ctxlab.benchmarks.uploads import start_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "sqlite").startswith("sqlite")
        or not os.environ.get("CELERY_BROKER_URL", "memory://").startswith("memory://"),
        reason="reads the embedded default's SQLite file; needs the embedded worker",
    ),
]
CEILING = float(os.environ.get("CTXLAB_TEST_WAIT_SECONDS", "300"))


def _status(db: Path, run: int) -> tuple[str, str]:
    with sqlite3.connect(db) as con:
        status, error = con.execute(
            "SELECT status, error FROM replay_app_run WHERE id = ?", (run,)
        ).fetchone()
    return str(status), str(error)


def test_serve_fails_a_run_its_dead_predecessor_left_running(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    tmp.mkdir()
    run = web_memory.prepare(data, tmp, runs=2, messages=40)[0]["run"]
    db = data / "db.sqlite3"
    beat = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")  # a heartbeat just now
    with sqlite3.connect(db) as con:  # as a server killed in the middle of the run
        con.execute(
            "UPDATE replay_app_run SET status = 'running', finished_at = NULL, error = '', "
            "heartbeat_at = ? WHERE id = ?",
            (beat, run),
        )
    server, _port = start_server(data, tmp)
    try:
        deadline = time.monotonic() + CEILING
        while _status(db, run)[0] == "running" and time.monotonic() < deadline:
            time.sleep(0.2)  # polling the condition; the ceiling only bounds a failure
        status, error = _status(db, run)
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert status == "failed", f"still {status!r} after the server started"
    assert "worker stopped" in error
