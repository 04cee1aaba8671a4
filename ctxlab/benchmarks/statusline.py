"""``bench --only statusline``: ``ctxlab statusline`` on a 5 MB Claude Code session.

The session is made of the vendored Claude Code session with its compaction boundaries
left out, repeated to 5 MB: no boundary, so the whole file is the span the next
compaction would take (the status line's worst case). Claude Code's statusline JSON (the
documented fields) is piped to ``python -m ctxlab statusline`` as Claude Code runs it: a
fresh interpreter each time, its start included.

Lines: ``statusline_ms`` (median wall time of ``RUNS`` runs, the goal < 100 ms),
``statusline_cpu_ms`` (the median of the same runs' CPU time: on a loaded machine the wall
time waits for a core), ``statusline_inprocess_ms`` (``status_of`` alone, warm).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "data" / "agreement" / "entireio-cli" / "76" / "62d755ef9f" / "2"
SIZE = 5 * 1024 * 1024
RUNS = 9


def big_session(path: Path, size: int = SIZE) -> Path:
    """The vendored session without its boundaries, repeated to ``size`` bytes."""
    lines = [
        line
        for line in (SOURCE / "full.jsonl").read_bytes().splitlines()
        if b'_boundary"' not in line
    ]
    written = 0
    with path.open("wb") as handle:
        while written < size:
            for line in lines:
                handle.write(line + b"\n")
                written += len(line) + 1
    return path


def payload(transcript: Path) -> dict[str, Any]:
    """The statusline JSON as Claude Code documents it."""
    return {
        "hook_event_name": "Status",
        "session_id": "bench",
        "transcript_path": str(transcript),
        "cwd": str(ROOT),
        "model": {"id": "claude-opus-4-5", "display_name": "Opus"},
        "workspace": {"current_dir": str(ROOT), "project_dir": str(ROOT)},
        "version": "2.1.14",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.0, "total_duration_ms": 0},
        "context_window": {"context_window_size": 200_000},
    }


def run(out: TextIO) -> list[dict[str, Any]]:
    from ctxlab.engine.statusline import status_of

    with tempfile.TemporaryDirectory() as tmp:
        session = big_session(Path(tmp) / "session.jsonl")
        data = json.dumps(payload(session)).encode()
        walls, cpus = [], []
        line = ""
        for _ in range(RUNS):
            before = os.times()
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "ctxlab", "statusline"],
                input=data,
                capture_output=True,
                check=True,
                cwd=ROOT,
            )
            walls.append(1000 * (time.perf_counter() - start))
            after = os.times()
            cpus.append(
                1000 * (after.children_user - before.children_user)
                + 1000 * (after.children_system - before.children_system)
            )
            line = done.stdout.decode().strip()
        inprocess = []
        for _ in range(RUNS):
            start = time.perf_counter()
            status_of(session, payload(session))
            inprocess.append(1000 * (time.perf_counter() - start))
        mb = session.stat().st_size / 1024 / 1024
    out.write(f"statusline on a {mb:.1f} MB session ({RUNS} runs): {line}\n")
    out.write(f"  load average {os.getloadavg()[0]:.1f}\n")
    return [
        {"line": f"statusline_ms={statistics.median(walls):.0f}"},
        {"line": f"statusline_cpu_ms={statistics.median(cpus):.0f}"},
        {"line": f"statusline_inprocess_ms={statistics.median(inprocess):.0f}"},
    ]
