from __future__ import annotations

import pytest
from builders import conv, cycle, system

from ctxlab.engine.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.custom import Custom


def test_custom_composes_truncate_drop_and_summarise() -> None:
    stages = [
        {"stage": "truncate_tool_results", "max_bytes": 200, "keep_recent": 2},
        {"stage": "drop_oldest_turns", "keep_turns": 6},
        {"stage": "summarise", "keep_tokens": 300},
    ]
    result = run(conv(system("S"), *cycle(40, 1500)), Custom({"window": 2048, "stages": stages}))
    kinds = set(result.metrics["events"])
    assert {"truncate", "drop"} <= kinds
    offloaded = [c for e in result.events for c in e.changes if c.fate is Fate.OFFLOADED]
    assert offloaded and offloaded[0].offload_path in result.offloads
    assert max(s.tokens.strategy for s in result.steps) < 2048


def test_custom_summarise_only() -> None:
    result = run(
        conv(system("S"), *cycle(30, 600)),
        Custom({"window": 2048, "stages": [{"stage": "summarise", "keep_tokens": 300}]}),
    )
    assert result.summaries and "## Goal" in result.summaries[0].output


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ([{"stage": "nope"}], "unknown stage"),
        ([{"stage": "summarise", "x": 1}], "has no option 'x'"),
    ],
    ids=["unknown-stage", "unknown-option"],
)
def test_custom_rejects_bad_stages(stages: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Custom({"stages": stages})
