"""A pause for a run executing in a pool child, so a test acts on it mid-run (cancels it,
kills its child) without racing a replay that may finish first.

``TARGET`` is the pool's child target with one change: after the first batch is stored (its
progress message has ``steps_done > 0``) the child waits until the test calls ``resume``.
The pool, the child, the executor and the database are the real ones. The gate is a file
named by the parent's pid and the run's id, so concurrent test sessions never share one.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from waiting import WAIT_SECONDS

from replay_app.runs import pooled

GATES = Path(tempfile.gettempdir()) / "ctxlab-child-pause"


def _gate(parent_pid: int, run_id: int) -> Path:
    return GATES / f"{parent_pid}-{run_id}"


def resume(run_id: int) -> None:
    """Let the paused child of run ``run_id`` (started by this process's pool) go on."""
    GATES.mkdir(parents=True, exist_ok=True)
    _gate(os.getpid(), run_id).touch()


def execute_paused(run_id: int, *, send: Any) -> str:
    gate = _gate(os.getppid(), run_id)
    paused = False

    def send_then_wait(data: dict[str, Any]) -> None:
        nonlocal paused
        send(data)
        if paused or not data.get("steps_done"):
            return
        paused = True
        deadline = time.monotonic() + WAIT_SECONDS  # a test that never resumes still ends
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)

    try:
        return pooled.execute_in_child(run_id, send=send_then_wait)
    finally:
        gate.unlink(missing_ok=True)


TARGET = f"{__name__}:{execute_paused.__name__}"
