"""ReMe's own context_check tests (agentscope-ai/ReMe tests/light/test_context_check.py
@ c911ec7) ported as a table test against CoPaw's check_context port (facts carried over,
tests written anew). That test file was written for a later ReMe than the 0.3.0.6b3 CoPaw
0.0.7 pins, and two of its invariants do not hold for 0.3.0.6b3 (checked in the wheel's
as_msg_handler.py): a total EQUAL to the threshold already splits (``total < threshold``
keeps everything), and the kept set may be non-contiguous (a kept result pulls in its far
tool_use). Those two are asserted as 0.3.0.6b3 behaves; every other invariant (reserve,
order, count, tool pairs) and every case's own assertion is kept."""

from __future__ import annotations

import pytest
from builders import assistant, call, conv, tool_result, user

from ctxlab.engine.core.context import ReplayContext
from ctxlab.engine.core.model import BlockKind, Message
from ctxlab.engine.strategies.copaw import CoPaw
from ctxlab.engine.summarize.offline import OfflineSummarizer
from ctxlab.engine.tokens.reference import reference_tokens


def check(
    messages: list[Message], threshold: int, reserve: int
) -> tuple[list[int], list[int], int]:
    """CoPaw's ``_check_context`` over ``messages`` (bytes//4 counter): (compact, keep,
    total tokens)."""
    strategy = CoPaw({"token_counter": "bytes4"})
    c = conv(*messages)
    ctx = ReplayContext(c, strategy, reference=reference_tokens(c), summarizer=OfflineSummarizer())
    strategy.prepare(ctx.view)
    for i in range(len(messages)):
        ctx.append(i)
        strategy.after_append(ctx.view, i)
    compact, keep, _ = strategy._check_context(ctx.view, threshold, reserve)
    return compact, keep, ctx.history_tokens


def invariants(messages: list[Message], compact: list[int], keep: list[int], total: int,
               threshold: int, reserve: int, ctx_tokens: dict[int, int]) -> None:  # fmt: skip
    if total < threshold:  # 0.3.0.6b3: strictly below keeps everything
        assert compact == [] and keep == list(range(len(messages)))
    kept_tokens = sum(ctx_tokens[i] for i in keep)
    assert kept_tokens <= reserve or not keep
    assert compact == sorted(compact) and keep == sorted(keep)
    assert sorted(compact + keep) == list(range(len(messages)))
    uses = {
        b.tool_id: i
        for i, m in enumerate(messages)
        for b in m.blocks
        if b.kind is BlockKind.TOOL_USE
    }
    for i in keep:  # a kept result keeps its tool_use
        for b in messages[i].blocks:
            if b.kind is BlockKind.TOOL_RESULT and b.tool_id in uses:
                assert uses[b.tool_id] in keep


def tok(m: Message) -> int:
    return CoPaw({"token_counter": "bytes4"}).count_message(m)


# (name, messages, threshold, reserve, expectation on (compact, keep) beyond the invariants)
CASES = [
    ("empty_messages", [], 1000, 500, lambda c, k: c == [] and k == []),
    ("below_threshold_returns_all", [user("Hello"), assistant("Hi there!"), user("How are you?")],
     10000, 5000, lambda c, k: c == [] and k == [0, 1, 2]),
    ("above_threshold_triggers_compaction",
     [user("First message " * 100), assistant("Second message " * 100),
      user("Third message " * 100), assistant("Fourth message " * 100)], 100, 200,
     lambda c, k: len(c) > 0),
    ("message_order_preserved",
     [user("First " * 50), assistant("Second " * 50), user("Third " * 50),
      assistant("Fourth " * 50), user("Fifth " * 10)], 100, 150, lambda c, k: True),
    ("single_message_below_threshold", [user("Short message")], 1000, 500,
     lambda c, k: c == [] and k == [0]),
    ("single_message_above_threshold", [user("Very long message " * 1000)], 10, 5,
     lambda c, k: c == [0] and k == []),
    ("reserve_zero", [user("Hello"), assistant("Hi there!")], 1, 0,
     lambda c, k: c == [0, 1] and k == []),
    ("threshold_zero", [user("A")], 0, 1000, lambda c, k: c == [] or k == [0]),
    ("reserve_larger_than_threshold",
     [user("Message one " * 20), assistant("Message two " * 20)], 50, 10000,
     lambda c, k: len(c) + len(k) == 2),
    ("tool_use_result_paired",
     [user("Please run the tool " * 50), call("call_001", "test_tool", arg="value"),
      tool_result("call_001", "Tool output"), assistant("The tool returned results")], 50, 1000,
     lambda c, k: True),
    ("tool_use_without_result",
     [user("Run the tool"), call("call_orphan", "orphan_tool", arg="value"),
      assistant("Something happened")], 10, 1000, lambda c, k: len(c) + len(k) == 3),
    ("tool_result_without_use",
     [user("Here's a result"), tool_result("call_orphan", "Some output"), assistant("Got it")],
     10, 1000, lambda c, k: len(c) + len(k) == 3),
    ("multiple_tool_pairs",
     [user("Start task " * 50), call("call_001", "tool_a", a=1), tool_result("call_001", "Result A"),
      call("call_002", "tool_b", b=2), tool_result("call_002", "Result B"),
      call("call_003", "tool_c", c=3), tool_result("call_003", "Result C"), assistant("All done")],
     50, 500, lambda c, k: True),
    ("tool_dependency_causes_extra_inclusion",
     [user("Start " * 100), call("call_dep", "dep_tool", data="x" * 200), user("Middle " * 100),
      tool_result("call_dep", "Result"), assistant("End")], 100, 500, lambda c, k: True),
    ("tool_dependency_exceeds_reserve",
     [user("First"), call("call_big", "big_tool", data="x" * 2000),
      tool_result("call_big", "Small result"), assistant("Last message")], 10, 100,
     lambda c, k: 2 not in k or 1 in k),
    ("message_with_empty_content", [user(""), assistant("Response")], 1000, 500,
     lambda c, k: len(c) + len(k) == 2),
    ("message_with_whitespace_only", [user("   \n\t  "), assistant("Response")], 1000, 500,
     lambda c, k: len(c) + len(k) == 2),
    ("very_long_single_message", [user("x" * 100000)], 100, 1000,
     lambda c, k: len(c) + len(k) == 1),
    ("many_small_messages", [user(f"Msg {i}") for i in range(100)], 100, 200,
     lambda c, k: len(c) + len(k) == 100 and len(k) > 0),
    ("unicode_content",
     [user("你好世界！🎉 Emoji and 中文"), assistant("مرحبا العالم 🌍 Arabic and more"),
      user("日本語テスト 🇯🇵")], 1000, 500, lambda c, k: len(c) + len(k) == 3),
    ("special_characters_content",
     [user("Special chars: <>&\"'`~!@#$%^&*()[]{}|\\"), assistant("More: \n\r\t\0 nulls")],
     1000, 500, lambda c, k: len(c) + len(k) == 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("messages", "threshold", "reserve", "expect"),
    [pytest.param(m, t, r, e, id=n) for n, m, t, r, e in CASES],
)
def test_context_check(
    messages: list[Message], threshold: int, reserve: int, expect: object
) -> None:
    compact, keep, total = check(messages, threshold, reserve)
    assert expect(compact, keep)  # type: ignore[operator]
    invariants(messages, compact, keep, total, threshold, reserve,
               {i: tok(m) for i, m in enumerate(messages)})  # fmt: skip


def test_exact_threshold_boundary_splits_in_0_3_0_6b3() -> None:
    """test_exact_threshold_boundary expects no split at total == threshold (a later
    ReMe's ``<=``); 0.3.0.6b3 compares ``total < threshold``, so the one message is checked
    against the reserve (equal to it here) and kept: nothing is compacted either way."""
    msg = user("Test message")
    exact = tok(msg)
    compact, keep, total = check([msg], exact, exact)
    assert total == exact and compact == [] and keep == [0]


def test_kept_set_may_be_non_contiguous_in_0_3_0_6b3() -> None:
    """The later test file's partition invariant (every compacted index below every kept
    one) does not hold for 0.3.0.6b3: a kept result pulls in its far tool_use."""
    msgs = [
        user("go"),
        call("far", "ls"),
        user("n" * 3040),
        tool_result("far", "r" * 40),
        assistant("x"),
    ]
    compact, keep, _ = check(msgs, 700, 102)
    assert keep == [1, 3, 4] and compact == [0, 2]
