"""``engine_cli_start_s`` (``bench real``) times the engine CLI as an installed copy starts:
its bytecode written and read, the median of several runs after an untimed one."""

from __future__ import annotations

import pytest

from ctxlab.benchmarks import _child, real


def test_a_timed_child_reads_and_writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("CTXLAB_SOMETHING", "kept")
    env = _child.installed_env(EXTRA="x")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["CTXLAB_SOMETHING"] == "kept" and env["EXTRA"] == "x"


def test_cli_start_is_the_median_of_its_runs() -> None:
    cpu, wall, readings = real.cli_start()
    assert len(readings) == real.CLI_RUNS
    assert min(readings) <= cpu <= max(readings) and cpu > 0
    assert wall > 0
