"""``bench --only imports`` measures each format with a real sample (``imports.SCALED``):
the sample grown to about 4 MB is still that format, imports whole, and gives MB/s and
peak memory."""

from __future__ import annotations

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
