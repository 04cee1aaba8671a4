"""anthropic_edits' incremental request view (only the items between the old and the new cut
change; a pair answered out of order is re-indexed from where it lands) gives the same replay
as rebuilding the view from nothing before every request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_perf_golden import digest

from ctxlab.engine import synth
from ctxlab.engine.core.model import BlockKind, Conversation
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.anthropic_edits import AnthropicEditsStrategy

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

PARAMS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "low-trigger": {"trigger": 30_000, "keep": 1},
    "tool-uses-trigger": {"trigger_type": "tool_uses", "trigger": 5, "keep": 2,
                          "clear_tool_inputs": True},
    "excluded-at-least": {"trigger": 20_000, "clear_at_least": 5_000,
                          "keep_counts_excluded": False, "exclude_tools": ["Bash", "Read"]},
}  # fmt: skip


@pytest.fixture(scope="module")
def joined() -> Conversation:
    return synth.bench_conversation(CORPUS, messages=1_000, seed=1)


class RebuildEveryRequest(AnthropicEditsStrategy):
    """The oracle: the view rebuilt from nothing before every request."""

    def before_call(self, ctx: Any) -> None:
        ctx.state.resync = True
        super().before_call(ctx)


def _answered_out_of_order(conversation: Conversation) -> int:
    order: dict[str, tuple[int, int]] = {}
    last = (-1, -1)
    late = 0
    for i, message in enumerate(conversation.messages):
        for pos, block in enumerate(message.blocks):
            if block.kind is BlockKind.TOOL_USE:
                order.setdefault(block.tool_id, (i, pos))
            elif block.kind is BlockKind.TOOL_RESULT and block.tool_id in order:
                late += order[block.tool_id] < last
                last = max(last, order[block.tool_id])
    return late


def test_the_transcript_answers_parallel_calls_out_of_order(joined: Conversation) -> None:
    assert _answered_out_of_order(joined) >= 5


@pytest.mark.parametrize("name", list(PARAMS))
def test_incremental_view_replays_like_a_rebuild(joined: Conversation, name: str) -> None:
    params = PARAMS[name]
    fast = run(joined, "anthropic_edits", params=params)
    oracle = run(joined, RebuildEveryRequest(params))
    assert digest(fast) == digest(oracle)
    assert fast.events, "the case clears something"
