"""PicoClaw's own tests (sipeed/picoclaw @ cf67dd3, pkg/agent/*_test.go) ported as table
tests against ctxlab's port (facts carried over, tests written anew). The strategy's
docstring lists which cases are covered."""

from __future__ import annotations

import pytest

from ctxlab.engine.strategies import _picoclaw_budget as pb
from ctxlab.engine.strategies._picoclaw_budget import PicoMsg, PicoToolCall


def m(role: str, content: str = "") -> PicoMsg:
    return PicoMsg(role, content)


def tools(*ids: str) -> PicoMsg:  # context_test.go assistantWithTools
    return PicoMsg("assistant", tool_calls=tuple(PicoToolCall(i, "", "") for i in ids))


def res(call_id: str) -> PicoMsg:  # context_test.go toolResult
    return PicoMsg("tool", "result", tool_call_id=call_id)


U, A, T = "user", "assistant", "tool"

# context_test.go: TestSanitizeHistoryForProvider_* (name, history, expected roles[, ids])
SANITIZE = [
    ("EmptyHistory", [], []),
    ("SingleToolCall", [m(U, "hello"), tools("A"), res("A"), m(A, "done")], [U, A, T, A]),
    ("MultiToolCalls", [m(U), tools("A", "B"), res("A"), res("B"), m(A)], [U, A, T, T, A]),
    ("AssistantToolCallAfterPlainAssistant", [m(U), m(A, "thinking"), tools("A"), res("A")],
     [U, A]),
    ("OrphanedLeadingTool", [res("A"), m(U)], [U]),
    ("ToolAfterUserDropped", [m(U), res("A")], [U]),
    ("ToolAfterAssistantNoToolCalls", [m(U), m(A, "hi"), res("A")], [U, A]),
    ("AssistantToolCallAtStart", [tools("A"), res("A"), m(U)], [U]),
    ("MultiToolCallsThenNewRound",
     [m(U), tools("A", "B"), res("A"), res("B"), m(A), m(U), tools("C"), res("C"), m(A)],
     [U, A, T, T, A, U, A, T, A]),
    ("ConsecutiveMultiToolRounds",
     [m(U), tools("A", "B"), res("A"), res("B"), tools("C", "D"), res("C"), res("D"), m(A)],
     [U, A, T, T, A, T, T, A]),
    ("PlainConversation", [m(U), m(A), m(U), m(A)], [U, A, U, A]),
    ("IncompleteToolResults", [m(U), tools("A", "B"), res("A"), m(U), m(A)], [U, U, A]),
    ("MissingAllToolResults", [m(U), tools("A"), m(U), m(A)], [U, U, A]),
    ("DropsAssistantWithEmptyToolCallID", [m(U), tools(""), res(""), m(A)], [U, A]),
    ("PartialToolResultsInMiddle",
     [m(U), tools("A"), res("A"), m(A), m(U), tools("B", "C"), res("B"), m(U), tools("D"),
      res("D"), m(A)],
     [U, A, T, A, U, U, A, T, A]),
]  # fmt: skip


@pytest.mark.parametrize(("history", "roles"), [pytest.param(h, r, id=n) for n, h, r in SANITIZE])
def test_sanitize_history_for_provider(history: list[PicoMsg], roles: list[str]) -> None:
    assert [x.role for x in pb.sanitize_history(history)] == roles


def test_sanitize_duplicate_tool_results_keep_the_first_of_each_id() -> None:
    history = [m(U), tools("A", "B"), res("A"), res("B"), res("A"), res("B"), m(A)]
    out = pb.sanitize_history(history)
    assert [x.role for x in out] == [U, A, T, T, A]
    assert [out[2].tool_call_id, out[3].tool_call_id] == ["A", "B"]


def test_sanitize_reused_tool_call_id_across_rounds_keeps_both() -> None:
    history = [m(U), tools("call_0"), res("call_0"), m(A), m(U), tools("call_0"),
               res("call_0"), m(A)]  # fmt: skip
    out = pb.sanitize_history(history)
    assert [x.role for x in out] == [U, A, T, A, U, A, T, A]
    assert out[2].tool_call_id == out[6].tool_call_id == "call_0"


# -- context_budget_test.go (msgUser / msgAssistant / msgAssistantTC / msgTool) -------------


def tc(*ids: str) -> PicoMsg:
    calls = tuple(PicoToolCall(i, f"tool_{i}", '{"key":"value"}') for i in ids)
    return PicoMsg("assistant", tool_calls=calls)


def tool(call_id: str, content: str) -> PicoMsg:
    return PicoMsg("tool", content, tool_call_id=call_id)


# TestIsSafeBoundary
SAFE = [
    ("empty history, index 0", [], 0, True),
    ("single user message, index 0", [m(U, "hi")], 0, True),
    ("single user message, index 1 (end)", [m(U, "hi")], 1, True),
    ("at user message", [m(A, "hello"), m(U, "how are you"), m(A, "fine")], 1, True),
    ("at assistant without tool calls", [m(U), m(A, "response"), m(U, "follow up")], 1, False),
    ("at assistant with tool calls", [m(U), tc("tc1"), tool("tc1", "result"), m(A)], 1, False),
    ("at tool result", [m(U), tc("tc1"), tool("tc1", "done"), m(A)], 2, False),
    ("negative index", [m(U, "hello")], -1, True),
    ("index beyond length", [m(U, "hello")], 5, True),
]


@pytest.mark.parametrize(
    ("history", "index", "want"), [pytest.param(h, i, w, id=n) for n, h, i, w in SAFE]
)
def test_is_safe_boundary(history: list[PicoMsg], index: int, want: bool) -> None:
    assert pb.is_safe_boundary(history, index) is want


_CHAIN = [m(U, "q1"), m(A, "a1"), m(U, "q2"), tc("tc1", "tc2"), tool("tc1", "r1"),
          tool("tc2", "r2"), m(A, "summary"), m(U, "q3")]  # fmt: skip
# TestFindSafeBoundary
FIND = [
    ("empty history", [], 0, 0),
    ("target at 0", [m(U, "hi")], 0, 0),
    ("target beyond length", [m(U, "hi")], 5, 1),
    ("target already at user message", [m(U), m(A), m(U), m(A)], 2, 2),
    ("target at assistant, scan backward finds user", [m(U), m(A), m(U), m(A), m(U)], 3, 2),
    ("target inside tool sequence, scan backward finds user", _CHAIN, 4, 2),
    ("target inside tool sequence, backward finds user before chain", _CHAIN, 5, 2),
    ("no backward user, scan forward finds one",
     [tc("tc1"), tool("tc1", "r1"), m(A, "a1"), m(U, "q1")], 1, 3),
    ("multi-step tool chain preserves atomicity",
     [m(U), m(A), m(U), tc("tc1"), tool("tc1", "r1"), tc("tc2"), tool("tc2", "r2"), m(A),
      m(U), m(A)], 5, 2),
    ("all non-user messages returns target unchanged", [m(A), m(A), m(A)], 1, 1),
    # TestFindSafeBoundary_SingleTurnReturnsZero
    ("single turn returns zero", [m(U), tc("tc1"), tool("tc1", "result"), m(A)], 2, 0),
    # TestFindSafeBoundary_BackwardScanSkipsToolSequence (target in the middle of results)
    ("backward scan skips tool sequence",
     [m(U), m(A), m(U, "trigger"), tc("t1", "t2", "t3"), tool("t1", "r1"), tool("t2", "r2"),
      tool("t3", "r3"), tc("t4"), tool("t4", "r4"), m(A), m(U, "next")], 6, 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("history", "target", "want"), [pytest.param(h, t, w, id=n) for n, h, t, w in FIND]
)
def test_find_safe_boundary(history: list[PicoMsg], target: int, want: int) -> None:
    assert pb.find_safe_boundary(history, target) == want


# TestEstimateMessageTokens and its _ToolCallsContribute / _MultibyteContent /
# _LargeArguments / _ReasoningContent / _MediaItems / _SystemParts siblings: the original
# asserts lower bounds and orderings; the exact chars*2/5 value is checked beside them.
def _est(msg: PicoMsg) -> int:
    return pb.estimate_message_tokens(msg)


@pytest.mark.parametrize(
    ("msg", "exact"),
    [
        pytest.param(m(U, "Hello, world!"), (13 + 12) * 2 // 5, id="plain user message"),
        pytest.param(m(U), 12 * 2 // 5, id="empty message still has overhead"),
        pytest.param(
            tc("tc_123"),
            (6 + 8 + len("tool_tc_123") + len('{"key":"value"}') + 12) * 2 // 5,
            id="assistant with tool calls",
        ),
        pytest.param(
            tool("call_abc", "Here is the search result with lots of content"),
            (47 + 8 + 12) * 2 // 5,
            id="tool result with ID",
        ),
    ],
)
def test_estimate_message_tokens_table(msg: PicoMsg, exact: int) -> None:
    assert _est(msg) >= 1
    assert _est(msg) == exact


def test_estimate_message_tokens_orderings() -> None:
    call = PicoToolCall(
        "call_1", "web_search", '{"query":"picoclaw agent framework","max_results":5}'
    )
    assert _est(PicoMsg(A, "thinking", tool_calls=(call,))) > _est(m(A, "thinking"))
    assert _est(m(U, "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber stra\u00dfe")) > 0
    large = PicoToolCall("call_large", "write_file", '{"content":"%s"}' % ("x" * 5000))
    assert _est(PicoMsg(A, tool_calls=(large,))) >= 2000
    reasoning = PicoMsg(A, "result", reasoning="thinking step " * 200)
    assert _est(reasoning) > _est(m(A, "result"))
    media = PicoMsg(U, "describe this", media=2)
    assert _est(media) - _est(m(U, "describe this")) == 256 * 2  # not through chars*2/5
    parts = PicoMsg("system", "instructions",
                    system_parts=("some more system context", "even more cached blocks"))  # fmt: skip
    assert _est(parts) > _est(PicoMsg("system", "instructions"))


# -- context_manager_test.go (legacy manager, through its pure parts) -------------------------

# TestLegacyCompact_Overflow / _ProactiveReason (same history, either reason),
# _TooShortToCompress, _SingleTurnKeepsLastUserMessage (two messages: no compression)
COMPRESS = [
    ("Overflow", [m(U, "msg 1"), m(A, "resp 1"), m(U, "msg 2"), m(A, "resp 2"), m(U, "msg 3")],
     ["msg 2", "resp 2", "msg 3"]),
    ("TooShortToCompress", [m(U, "only one")], None),
    ("SingleTurnKeepsLastUserMessage", [m(U, "first question"), m(A, "first answer")], None),
]  # fmt: skip


@pytest.mark.parametrize(("history", "kept"), [pytest.param(h, k, id=n) for n, h, k in COMPRESS])
def test_legacy_compact_overflow(history: list[PicoMsg], kept: list[str] | None) -> None:
    comp = pb.force_compression(history, "")
    if kept is None:  # the session is left as it was
        assert comp is None
        return
    assert comp is not None
    assert [x.content for x in comp.kept] == kept and len(comp.kept) < len(history)
    assert "Emergency compression" in comp.summary


# TestLegacyCompact_PostTurn_BelowThreshold (defaults) / _ExceedsMessageThreshold
# (SummarizeMessageThreshold 2, ContextWindow 8000, 6 messages)
POST_TURN = [
    ("BelowThreshold", [m(U, "hi"), m(A, "hello")], {"context_window": 4 * 32_768}, False),
    ("ExceedsMessageThreshold",
     [m(U, "q1"), m(A, "a1"), m(U, "q2"), m(A, "a2"), m(U, "q3"), m(A, "a3")],
     {"context_window": 8000, "message_threshold": 2, "token_percent": 75}, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("history", "kw", "fire"), [pytest.param(h, k, f, id=n) for n, h, k, f in POST_TURN]
)
def test_legacy_post_turn_summarize_threshold(
    history: list[PicoMsg], kw: dict[str, int], fire: bool
) -> None:
    assert pb.should_summarize(history, **kw)[0] is fire
