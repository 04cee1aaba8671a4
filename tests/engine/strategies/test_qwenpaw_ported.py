"""QwenPaw's own pruning tests (agentscope-ai/QwenPaw
tests/unit/agents/context/test_prune_tool_result.py @ 18e3ff2) ported against the qwenpaw
strategy (facts carried over, tests written anew). That file tests a later QwenPaw with an
``absolute_max_bytes`` cap that 1.1.9 does not have (its ``_prune_tool_result`` takes
recent_n / old_max_bytes / recent_max_bytes only), so the cases are ported as 1.1.9 runs
them: absolute caps left out, each case's recent/old limit and slack kept. The file's
config-field tests (TestToolResultPruningConfigAbsoluteMax) have no 1.1.9 counterpart.
QwenPaw's test_light_context_manager.py tests fallback confirmation modes added after
1.1.9: not ported."""

from __future__ import annotations

import pytest
from builders import assistant, call, conv, tool_result, user

from ctxlab.engine.core.model import Message
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.replay import run


def final_text(res: ReplayResult, index: int, original: str) -> str:
    """The tool output at ``index`` as the last event left it (the original if none)."""
    text = original
    for event in res.events:
        for change in event.changes:
            if change.index == index and change.message is not None:
                text = change.message.blocks[0].text
    return text


# (name, messages, index of the result checked, its original text, check on the result)
CASES = [
    # test_recent_capped_by_absolute_max / test_absolute_lower_than_recent, as 1.1.9:
    # a recent result is capped at recent_max_bytes (50 000) plus the notice
    ("recent_capped_by_recent_max",
     [user("go"), call("id-1", "test_tool"), tool_result("id-1", "A" * 200000), assistant("x")],
     2, "A" * 200000, lambda t: 10000 < len(t.encode()) <= 50000 + 500),
    # test_old_capped_by_smaller_of_old_and_absolute: a user message breaks the recent
    # chain, the old result is cut to old_max_bytes (3000) + slack
    ("old_capped_by_old_max",
     [user("go"), call("id-1", "test_tool"), tool_result("id-1", "B" * 200000),
      user("question"), call("id-2", "test_tool"), tool_result("id-2", "small"), assistant("x")],
     2, "B" * 200000, lambda t: len(t.encode()) <= 3000 + 600),
    # test_small_output_unchanged
    ("small_output_unchanged",
     [user("go"), call("id-1", "test_tool"), tool_result("id-1", "hello world"), assistant("x")],
     2, "hello world", lambda t: t == "hello world"),
    # test_default_absolute_max_allows_recent_max: 40 KB < recent_max passes through
    ("recent_under_recent_max_unchanged",
     [user("go"), call("id-1", "test_tool"), tool_result("id-1", "E" * 40000), assistant("x")],
     2, "E" * 40000, lambda t: t == "E" * 40000),
]  # fmt: skip


@pytest.mark.parametrize(
    ("messages", "index", "original", "check"),
    [pytest.param(m, i, o, c, id=n) for n, m, i, o, c in CASES],
)
def test_prune_tool_result(
    messages: list[Message], index: int, original: str, check: object
) -> None:
    res = run(conv(*messages), "qwenpaw", params={"max_input_length": 10_000_000})
    assert check(final_text(res, index, original))  # type: ignore[operator]
