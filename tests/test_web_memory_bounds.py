"""Issue 15, "the web process's memory must not grow without bound": the memo of finished
runs' derived values is bounded by the bytes it holds (weighed with ``approx_size``), not
only by its number of entries; ``approx_size`` follows what a value really keeps alive."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from ctxlab.engine.core.fatelog import FateLog
from ctxlab.engine.core.sizeof import approx_size


def _traced(make: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        value = make()
        return value, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


SHAPES = {
    "fate-log": lambda: FateLog.build(
        [i // 5 for i in range(100_000)],
        list(range(100_000)),
        [i % 20_000 for i in range(100_000)],
        [i % 4 for i in range(100_000)],
    ),  # fmt: skip
    "curve-points": lambda: {
        "x": list(range(20_000)),
        "y": [i * 1.5 for i in range(20_000)],
        "labels": [f"step {i}: kept" for i in range(20_000)],
    },  # fmt: skip
    "html": lambda: "<div>" + "x" * 5_000_000 + "</div>",
    "rows": lambda: [
        {"index": i, "text": f"message {i} " * 20, "fate": "kept"} for i in range(20_000)
    ],  # fmt: skip
}


@pytest.mark.parametrize("make", SHAPES.values(), ids=SHAPES.keys())
def test_approx_size_follows_what_the_value_keeps_alive(make: Any) -> None:
    value, traced = _traced(make)
    estimate = approx_size(value)
    # Shared and cached small objects make it an over-estimate at worst; never a big miss.
    assert traced * 0.5 <= estimate <= traced * 3, (estimate, traced)


def test_memo_is_bounded_by_bytes_not_only_entries(settings: Any) -> None:
    from replay_app import memo
    from replay_app.models import RunStatus

    settings.CTXLAB_MEMO_MB = 8
    memo.MEMO.clear()
    finished = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        for pk in range(100):  # 100 MB of derived values through a 256-entry memo
            run = SimpleNamespace(pk=pk, status=RunStatus.DONE, finished_at=finished)
            value = memo.cached(run, "curve-html", lambda: "x" * 1024 * 1024)  # type: ignore[arg-type]
            assert len(value) == 1024 * 1024
        held = sum(approx_size(v) for v in memo.MEMO.items.values())
        assert held <= 8 * 1024 * 1024, held
        # the newest values are the ones kept
        assert "curve-html:99:" in next(reversed(memo.MEMO.items))
    finally:
        memo.MEMO.clear()
