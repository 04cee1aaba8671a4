"""``manage.py serve`` (a real process, as ``make run`` serves) announces its embedded
worker the way ``celery worker`` does, so the runs a stopped server left queued in its
in-memory broker are failed with the reason instead of waiting forever (and unfinished
suites resume: the same signal)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from waiting import wait_until

from ctxlab.benchmarks import web_memory
from ctxlab.benchmarks.uploads import start_server

# The embedded default only: with DATABASE_URL / CELERY_BROKER_URL set (the distributed
# leg) the server writes to PostgreSQL and starts no embedded worker.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "sqlite").startswith("sqlite")
        or not os.environ.get("CELERY_BROKER_URL", "memory://").startswith("memory://"),
        reason="reads the embedded default's SQLite file; needs the embedded worker",
    ),
]


def _status(db: Path, run: int) -> tuple[str, str]:
    with sqlite3.connect(db) as con:
        row = con.execute("SELECT status, error FROM replay_app_run WHERE id = ?", (run,))
        status, error = row.fetchone()
    return str(status), str(error)


def test_serve_fails_runs_left_queued_by_a_stopped_server(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    tmp.mkdir()
    run = web_memory.prepare(data, tmp, runs=2, messages=40)[0]["run"]  # one transcript
    db = data / "db.sqlite3"
    with sqlite3.connect(db) as con:  # as a server stopped before its worker took the run
        con.execute(
            "UPDATE replay_app_run SET status = 'queued', finished_at = NULL, error = '' "
            "WHERE id = ?",
            (run,),
        )
    assert _status(db, run)[0] == "queued"
    server, _port = start_server(data, tmp)
    try:
        wait_until(
            lambda: _status(db, run)[0] != "queued", "the started server to settle the queued run",
            seen=lambda: _status(db, run), interval=0.2,
        )  # fmt: skip
        status, error = _status(db, run)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert status == "failed"
    assert "in-memory queue was lost" in error
