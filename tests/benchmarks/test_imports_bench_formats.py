"""``bench --only imports`` measures each format with a real sample (``imports.SCALED``):
the sample grown to about 4 MB is still that format, imports whole, and gives MB/s and
peak memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.benchmarks import imports
from ctxlab.engine import importers


@pytest.mark.parametrize("fmt", sorted(imports.SCALED))
def test_each_scaled_sample_is_its_format_and_measured(fmt: str) -> None:
    relative, grow = imports.SCALED[fmt]
    path = imports.DATA / relative
    sample = importers.parse(path.read_bytes(), name=path.name).conversations
    data = grow(path.read_bytes())
    assert len(data) >= imports.SCALED_BYTES
    assert importers.detect(data, path.name) == fmt
    row = imports.measure(fmt, path, data)
    assert row["ok"], row
    assert row["bytes"] == len(data) and row["mb_per_s"] > 0 and row["peak_mb"] > 0
    assert row["messages"] > sum(len(c.messages) for c in sample)


def test_opencode_is_covered() -> None:
    assert "opencode" in imports.SCALED


def test_the_new_formats_are_covered() -> None:
    assert {"copilot-cli", "openhands-v1", "opencode", "cline", "pi-session"} <= set(imports.SCALED)


def test_an_entire_branch_is_measured_from_a_git_repository(tmp_path: Path) -> None:
    row = imports.measure_entire(tmp_path)
    assert row["format"] == "entire" and row["ok"], row
    assert row["bytes"] >= imports.SCALED_BYTES
    rounds = -(-imports.SCALED_BYTES // sum(
        (imports.CORPUS / r).stat().st_size for r in imports.ENTIRE_SESSIONS
    ))  # fmt: skip
    assert row["conversations"] == rounds * len(imports.ENTIRE_SESSIONS)
    assert row["messages"] > 0 and row["mb_per_s"] > 0
