"""The web memory benchmark's machinery on a small scale: runs stored in a throwaway data
directory, a real server, every page view answered, RSS read after each pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ctxlab.benchmarks import web_memory
from ctxlab.benchmarks.uploads import start_server

pytestmark = pytest.mark.slow


def test_page_views_over_stored_runs(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    tmp.mkdir()
    made = web_memory.prepare(data, tmp, runs=2, messages=300)
    assert len(made) == 2 and made[0]["transcript"] == made[1]["transcript"]
    assert all(item["steps"] > 0 for item in made)
    server, port = start_server(data, tmp)
    try:
        seen = web_memory.view_pages(port, server.pid, made, views=16)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    assert seen["statuses"] == {200: 16}
    assert len(seen["after_pass_mb"]) == 2 and all(mb > 50 for mb in seen["after_pass_mb"])
