"""LangChain trim_messages: the port (cases after langchain-core's own trim tests, written
anew with their dummy counter) and the pre-model-hook strategy as a request view."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import assistant, call, conv, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.records import Fate
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS
from ctxlab.engine.strategies import _langchain_tokens as lc

L = lc.LcMessage
SESSION = Path(__file__).resolve().parents[2] / "data" / "corpus" / "claude-code"
SESSION = SESSION / "agentcmd-full-session.jsonl"

# langchain-core's trim tests: every string content is 4 tokens, every list block 4, plus
# 3 + 3 per message -> a string message is 10 tokens, the two-block AI message 14.
FOUR = "This is a 4 token text. The full message is 10 tokens."
MESSAGES = [
    L("system", FOUR),
    L("human", FOUR),
    L(
        "ai",
        (
            {"type": "text", "text": "This is the FIRST 4 token block."},
            {"type": "text", "text": "This is the SECOND 4 token block."},
        ),
    ),  # fmt: skip
    L("human", FOUR),
    L("ai", FOUR),
]


def dummy(messages) -> int:  # type: ignore[no-untyped-def]
    total = 0
    for m in messages:
        n = 1 if isinstance(m.content, str) else len(m.content)
        total += 3 + 4 * n + 3
    return total


def names(messages: list[lc.LcMessage]) -> list[str]:
    out = []
    for m in messages:
        text = m.content if isinstance(m.content, str) else m.text
        out.append(f"{m.type}:{text[:17]}")
    return out


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # first 30: system, human, and the AI's first block (partial) -> 10 + 10 + 10
        (
            {"strategy": "first", "max_tokens": 30, "allow_partial": True},
            [0, 1, "ai:This is the FIRST"],
        ),  # fmt: skip
        ({"strategy": "first", "max_tokens": 30}, [0, 1]),
        ({"strategy": "first", "max_tokens": 30, "end_on": "human"}, [0, 1]),
        ({"strategy": "first", "max_tokens": 20, "end_on": "system"}, [0]),
        # last 30 with the system message: 10 + human 10 + ai 10
        ({"strategy": "last", "max_tokens": 30, "include_system": True}, [0, 3, 4]),
        ({"strategy": "last", "max_tokens": 30}, [3, 4]),  # 14 + 10 + 10 > 30
        # partial: the AI message's SECOND block fits (10 + 10 + 10)
        (
            {"strategy": "last", "max_tokens": 30, "allow_partial": True},
            ["ai:This is the SECON", 3, 4],
        ),  # fmt: skip
        (
            {"strategy": "last", "max_tokens": 40, "allow_partial": True, "start_on": "human"},
            [3, 4],
        ),  # fmt: skip
        ({"strategy": "last", "max_tokens": 100, "end_on": "human"}, [0, 1, 2, 3]),
        (
            {"strategy": "last", "max_tokens": 100, "include_system": True, "start_on": "human"},
            [0, 1, 2, 3, 4],
        ),  # fmt: skip
        ({"strategy": "last", "max_tokens": 0}, []),
    ],
)
def test_trim_messages_cases(kwargs: dict[str, object], expected: list[object]) -> None:
    got = lc.trim_messages(MESSAGES, token_counter=dummy, **kwargs)  # type: ignore[arg-type]
    want = [names([MESSAGES[e]])[0] if isinstance(e, int) else e for e in expected]
    assert names(got) == want


def test_trim_messages_partial_text_keeps_whole_lines_from_the_end() -> None:
    msgs = [L("human", "line one\nline two\nline three")]

    def chars(messages) -> int:  # type: ignore[no-untyped-def]
        return sum(len(m.text) for m in messages)

    got = lc.trim_messages(msgs, max_tokens=20, token_counter=chars, allow_partial=True)
    assert [m.content for m in got] == ["line two\nline three"]
    first = lc.trim_messages(msgs, max_tokens=20, token_counter=chars, allow_partial=True,
                             strategy="first")  # fmt: skip
    assert [m.content for m in first] == ["line one\nline two\n"]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"strategy": "first", "start_on": "human"}, "start_on"),
        ({"strategy": "first", "include_system": True}, "include_system"),
        ({"strategy": "middle"}, "Unrecognized"),
    ],  # fmt: skip
)
def test_trim_messages_argument_errors(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        lc.trim_messages(MESSAGES, max_tokens=10, token_counter=dummy, **kwargs)  # type: ignore[arg-type]


def test_get_buffer_string() -> None:
    msgs = [L("human", "hi"), L("ai", "yo"), L("tool", "ok", tool_call_id="t"), L("system", "s")]
    assert lc.get_buffer_string(msgs) == "Human: hi\nAI: yo\nTool: ok\nSystem: s"


# -- the strategy ----------------------------------------------------------------------------


def fates(event) -> dict[int, Fate]:  # type: ignore[no-untyped-def]
    return {c.index: c.fate for c in event.changes}


def test_strategy_first_with_start_on_is_refused_and_types_are_checked() -> None:
    with pytest.raises(ValueError, match="only valid with strategy='last'"):
        run(conv(user("q"), assistant("a")), "langchain_trim", params={"strategy": "first"})
    with pytest.raises(ValueError, match="unknown message type"):
        run(conv(user("q"), assistant("a")), "langchain_trim", params={"end_on": ["bot"]})


def test_empty_conversation() -> None:
    assert not run(conv(), "langchain_trim").steps


def test_request_view_drops_and_restores_with_end_on() -> None:
    """end_on=human cuts a trailing call + result from one request; the next request
    ends on a new human message and the window covers them again."""
    msgs = [system("S"), user("q0"), call("t1"), tool_result("t1", "r"), assistant("done"),
            user("q1"), assistant("ok")]  # fmt: skip
    result = run(conv(*msgs), "langchain_trim", params={"max_tokens": 1000, "end_on": ["human"]})
    kinds = [(result.steps[e.step].source_index, e.kind, fates(e)) for e in result.events]
    assert kinds == [
        (4, "trim", {2: Fate.DROPPED, 3: Fate.DROPPED}),
        (6, "restore_request", {2: Fate.RESTORED, 3: Fate.RESTORED}),
    ]
    assert result.steps[-1].context_indexes == [0, 1, 2, 3, 4, 5]


def test_start_on_human_drops_a_whole_tool_loop_that_does_not_fit() -> None:
    msgs = [system("S"), user("q"), call("t1"), tool_result("t1", "x" * 400), call("t2"),
            tool_result("t2", "y" * 40), assistant("fin")]  # fmt: skip
    # before the last call: H q (6), AI t1, T (400 + ...), AI t2, T: 150 tokens hold only
    # the last call and result, which do not start on a human message -> nothing is sent
    result = run(conv(*msgs), "langchain_trim", params={"max_tokens": 150})
    assert result.steps[-1].context_indexes == [0]
    assert any(f.kind == "latest_user_dropped" for f in result.findings)
    # without start_on the window starts on the first result: an orphan (its call is out)
    anyone = run(conv(*msgs), "langchain_trim", params={"max_tokens": 150, "start_on": None})
    assert anyone.steps[-1].context_indexes == [0, 3, 4, 5]
    broken = [f for f in anyone.findings if f.kind == "tool_pair_broken"]
    assert broken and broken[-1].detail["tool_ids"] == ["t1"]


def test_allow_partial_shows_part_of_a_message_as_pruned() -> None:
    long = "\n".join(f"row {k:03d}" for k in range(40))  # 40 lines of 8 chars (+ newline)
    msgs = [system("S"), user(long), assistant("a")]
    result = run(conv(*msgs), "langchain_trim", params={"max_tokens": 20, "allow_partial": True})
    (event,) = result.events
    assert event.kind == "trim_partial" and fates(event) == {1: Fate.PRUNED}
    shown = event.changes[0].message
    assert shown is not None and shown.text.endswith("row 039")
    # 8 rows: 7 * 8 + 7 = 63 chars + "user" 4 = 67 -> 17 + 3 = 20 tokens; 9 rows: 22
    assert shown.text.count("\n") == 7


def test_orphan_tool_result_is_trimmed_like_any_message() -> None:
    msgs = [system("S"), user("q"), tool_result("ghost", "lost"), assistant("a"), user("q2"),
            assistant("b")]  # fmt: skip
    result = run(conv(*msgs), "langchain_trim", params={"max_tokens": 8})
    # 8 tokens hold "q2" (2 + 4 chars -> 2 + 3 = 5) only
    assert result.steps[-1].context_indexes == [0, 4]


def test_system_prompt_in_state_counts_against_max_tokens() -> None:
    msgs = [system("S" * 40), user("q0"), assistant("a0"), user("q1"), assistant("a1")]
    outside = run(conv(*msgs), "langchain_trim", params={"max_tokens": 14})
    inside = run(conv(*msgs), "langchain_trim",
                 params={"max_tokens": 14, "system_prompt_in_state": True})  # fmt: skip
    # q0 / a0 / q1 are 5-6 tokens: 14 keeps q0 a0 q1 (5+6... no: q0 5, a0 6 -> 16 > 14)
    assert outside.steps[-1].context_indexes == [0, 3]
    assert inside.steps[-1].context_indexes == [0]  # the 15-token system alone exceeds 14
    with pytest.raises(ValueError, match="not modelled"):
        run(conv(*msgs), "langchain_trim",
            params={"system_prompt_in_state": True, "include_system": False})  # fmt: skip


def test_registered_in_library_not_presets_and_native_config() -> None:
    assert "langchain_trim" in LIBRARY and "langchain_trim" not in PRESETS
    config = native_config("langchain_trim", {"max_tokens": 2000})
    assert config.content["max_tokens"] == 2000
    assert 'end_on=("human", "tool"),' in config.text and "include_system=True," in config.text
    assert config.text.startswith("from langchain_core.messages.utils import")


def test_golden_claude_code_session_start_on_human_empties_the_request() -> None:
    """agentcmd-full-session with max_tokens 2000: up to the call at source 9 everything
    fits (1673 tokens); at source 11 the suffix within 2000 tokens is the 7830-char tool
    results of message 10 alone, which does not start on a human message, so the request
    holds no message at all from then on (the only human messages are 0 and 4)."""
    conversation = cli.load_file(SESSION)
    result = run(conversation, "langchain_trim", params={"max_tokens": 2000})
    contexts = {s.source_index: s.context_indexes for s in result.steps}
    assert contexts[9] == list(range(9))
    assert result.steps[4].tokens.strategy == 1673
    assert all(contexts[s] == [] for s in (11, 13, 15, 17, 19))
    (first, *rest) = result.events
    assert result.steps[first.step].source_index == 11
    assert sorted(fates(first)) == list(range(11))
    assert [sorted(fates(e)) for e in rest] == [[11, 12], [13, 14], [15, 16], [17, 18]]
