"""Strands Agents' SlidingWindowConversationManager (strands-agents/sdk-python @ 1232230,
v1.40.0).

Ported from the original's tests (``tests/strands/agent/test_conversation_manager.py``) as
tables over the same Strands messages: ``test_apply_management`` (its ten cases),
``test_sliding_window_forces_user_message_start``,
``test_sliding_window_happy_path_preserves_window_size``, the untrimmable-history pair
(``..._raises_context_window_overflow_exception``, ``..._without_error_does_not_raise``),
``test_sliding_window_tool_heavy_conversation_falls_back_to_tool_pair_boundary``,
``test_sliding_window_prefers_plain_user_message_over_tool_pair_fallback``, and the
truncation tests (``..._with_tool_results_truncated``, ``test_already_truncated_text_not_
truncated_again``, ``test_short_text_in_tool_result_not_truncated``,
``test_boundary_text_in_tool_result_not_truncated``,
``test_image_blocks_inside_tool_result_replaced_with_placeholder``); then the manager in a
replay, and every corpus transcript replayed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, call, conv, cycle, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import _strands_rules as sr
from ctxlab.engine.strategies import strands_sliding_window as sw
from ctxlab.engine.summarize.offline import OfflineSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SKIP = {"MANIFEST.tsv", "NOTICE.md", "README.md"}
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name not in SKIP
)


@dataclass(frozen=True)
class M:
    """A Strands message as the rules read it."""

    role: str
    tool_use: bool
    tool_result: bool


def flags(messages: list[dict[str, Any]]) -> list[M]:
    return [
        M(m["role"], any("toolUse" in c for c in m["content"]),
          any("toolResult" in c for c in m["content"]))
        for m in messages
    ]  # fmt: skip


def u(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def a(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": text}]}


def use(tid: str = "123") -> dict[str, Any]:
    return {"role": "assistant",
            "content": [{"toolUse": {"toolUseId": tid, "name": "tool1", "input": {}}}]}  # fmt: skip


def res(tid: str = "123") -> dict[str, Any]:
    return {"role": "user",
            "content": [{"toolResult": {"toolUseId": tid, "content": [], "status": "success"}}]}  # fmt: skip


def apply_management(messages: list[dict[str, Any]], window_size: int) -> list[dict[str, Any]]:
    """``apply_management`` on Strands messages, through the ported rule."""
    if len(messages) <= window_size:
        return messages
    k = sr.trim_point(flags(messages), window_size)
    return messages if k is None else messages[k:]


# test_apply_management's cases, in its order (window_size, messages, expected).
APPLY_MANAGEMENT = [
    (3, [u("Hello"), a("Hi there")], [u("Hello"), a("Hi there")]),
    (2, [res()], [res()]),
    (2, [u("Hello")], [u("Hello")]),
    (3, [use()], [use()]),
    (3, [res(), use()], [res(), use()]),
    (3, [u("First"), a("First response"), u("Use a tool"), use()], [u("Use a tool"), use()]),
    (2, [u("First message"), a("First response"), u("Second message"), a("Second response")],
     [u("Second message"), a("Second response")]),
    (2, [u("Hello"), use(), res(), a("Done"), u("Next")], [u("Next")]),
    (3, [u("First message"), use(), res(), a("Response after tool use"), u("Follow up")],
     [u("Follow up")]),
    (4, [u("First message"), use(), res(), use("456"), res("456"), a("Final response"),
         u("Another question")], [u("Another question")]),
]  # fmt: skip


@pytest.mark.parametrize(("window_size", "messages", "expected"), APPLY_MANAGEMENT)
def test_apply_management(
    window_size: int, messages: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    assert apply_management(messages, window_size) == expected


@pytest.mark.parametrize(
    ("window_size", "messages", "first", "length"),
    [
        # test_sliding_window_forces_user_message_start
        (3, [u("Hello"), a("Hi"), u("How are you?"), a("Good"), u("Great")], "How are you?", 3),
        # test_sliding_window_happy_path_preserves_window_size
        (4, [u("First"), a("First response"), u("Second"), a("Second response"), u("Third"),
             a("Third response")], "Second", 4),
        # test_sliding_window_prefers_plain_user_message_over_tool_pair_fallback
        (2, [u("First"), use("1"), res("1"), a("Response"), u("Plain user message"),
             a("Final response")], "Plain user message", 2),
    ],
)  # fmt: skip
def test_trim_starts_on_a_user_message(
    window_size: int, messages: list[dict[str, Any]], first: str, length: int
) -> None:
    kept = apply_management(messages, window_size)
    assert len(kept) == length
    assert kept[0] == u(first)


def test_untrimmable_history_has_no_trim_point() -> None:
    # ..._raises_context_window_overflow_exception / ..._without_error_does_not_raise
    assert sr.trim_point(flags([use("456"), res("789")]), 1) is None


def test_tool_heavy_conversation_falls_back_to_the_tool_pair_boundary() -> None:
    messages = [u("Review this PR"), use("1"), res("1"), use("2"), res("2"), use("3"), res("3"),
                a("Here is my review")]  # fmt: skip
    k = sr.trim_point(flags(messages), 4)
    assert k == 5
    assert messages[k:] == [use("3"), res("3"), a("Here is my review")]


LARGE = "A" * 300 + "B" * 300 + "C" * 300


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        (LARGE, True),  # ..._with_tool_results_truncated
        ("x" * 400, False),  # test_boundary_text_in_tool_result_not_truncated
        ("short result", False),  # test_short_text_in_tool_result_not_truncated
        ("A" * 200 + "...\n\n... [truncated: 500 chars removed] ...\n\n..." + "C" * 200, False),
    ],
)
def test_tool_result_truncation(text: str, cut: bool) -> None:
    out = sr.truncate_text(text)
    assert (out is not None) is cut
    if out is not None:
        assert out.startswith("A" * 200) and out.endswith("C" * 200)
        assert f"... [truncated: {len(text) - 400} chars removed] ..." in out
        assert out == f"{'A' * 200}...\n\n... [truncated: 500 chars removed] ...\n\n...{'C' * 200}"


def test_image_in_a_tool_result_becomes_a_placeholder() -> None:
    image = Block(BlockKind.MEDIA, media_type="image/png", size=1234)
    text = Block(BlockKind.TEXT, text="caption")
    msg = Message(Role.USER, (Block(BlockKind.TOOL_RESULT, tool_id="t", text="caption",
                                    parts=(text, image)),))  # fmt: skip
    out = sr.truncate_results(msg)
    assert out is not None
    parts = out.blocks[0].parts
    assert [p.text for p in parts] == ["caption", "[image: png, 1234 bytes]"]
    assert sr.truncate_results(out) is None  # nothing left to change


# -- the estimator -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("message", "tokens"),
    [
        (user("abcd"), 1),
        (user("abcde"), 2),  # ceil(5 / 4)
        (user("é" * 8), 2),  # characters, not bytes
        (call("t1", "bash", cmd="ls"), 1 + 7),  # ceil(4 / 4) + ceil(13 / 2): {"cmd": "ls"}
        (tool_result("t1", "x" * 9), 3),
        (assistant("", thinking="y" * 8), 2),
    ],
)
def test_estimator_is_the_count_tokens_heuristic(message: Message, tokens: int) -> None:
    assert sw.StrandsSlidingWindowStrategy().count_message(message) == tokens


# -- in a replay ---------------------------------------------------------------------------
def test_window_applied_when_the_next_invocation_starts() -> None:
    # 5 turns of 4 messages; window 6: at each new user prompt over 6 messages the oldest go.
    result = run(conv(system(), *cycle(5, size=100)), "strands_sliding_window",
                 params={"window_size": 6})  # fmt: skip
    drops = [e for e in result.events if e.kind == "drop"]
    assert drops
    first = drops[0]
    # Before turn 2's prompt: 8 messages -> trim index 2 is a tool call, 3 a tool result,
    # 4 the user prompt "task 1": messages 1..4 (source 1 is the first user) dropped.
    assert [c.index for c in first.changes] == [1, 2, 3, 4]
    assert all(c.fate is Fate.DROPPED for c in first.changes)
    last = result.steps[-1]
    # the last request: the window (6) and the turn since its prompt (3 at most)
    assert last.context_len <= 6 + 3


def test_overflow_truncates_the_oldest_tool_result_first_then_trims() -> None:
    msgs = [system(), user("go"), call("t1", cmd="cat a"), tool_result("t1", "z" * 4000),
            assistant("ok"), user("next"), call("t2", cmd="cat b"),
            tool_result("t2", "w" * 4000), assistant("done")]  # fmt: skip
    params = {"context_window_limit": 1000}
    result = run(conv(*msgs), "strands_sliding_window", params=params)
    kinds = [e.kind for e in result.events]
    assert kinds[0] == "truncate"
    cut = result.events[0].changes[0]
    assert cut.index == 3 and cut.fate is Fate.TRUNCATED
    off = run(conv(*msgs), "strands_sliding_window",
              params={**params, "should_truncate_results": False})  # fmt: skip
    assert "truncate" not in [e.kind for e in off.events]
    assert "drop" in [e.kind for e in off.events]


def test_window_size_zero_clears_the_history() -> None:
    result = run(conv(system(), *cycle(2, size=50)), "strands_sliding_window",
                 params={"window_size": 0})  # fmt: skip
    drop = next(e for e in result.events if e.kind == "drop")
    assert [c.index for c in drop.changes] == [1, 2, 3, 4]


def test_per_turn_and_proactive_compression() -> None:
    msgs = [system(), *cycle(3, size=50)]
    per_turn = run(conv(*msgs), "strands_sliding_window",
                   params={"window_size": 2, "per_turn": 1})  # fmt: skip
    plain = run(conv(*msgs), "strands_sliding_window", params={"window_size": 2})
    assert len([e for e in per_turn.events if e.kind == "drop"]) > len(
        [e for e in plain.events if e.kind == "drop"]
    )
    proactive = run(conv(*msgs), "strands_sliding_window",
                    params={"proactive_compression": 0.05, "context_window_limit": 1000})  # fmt: skip
    assert any(e.detail.get("trigger") == "proactive" for e in proactive.events)
    with pytest.raises(ValueError, match="proactive_compression"):
        sw.StrandsSlidingWindowStrategy({"proactive_compression": 1.5})
    with pytest.raises(ValueError, match="window_size"):
        sw.StrandsSlidingWindowStrategy({"window_size": -1})


def test_registered_and_in_the_library() -> None:
    assert STRATEGIES["strands_sliding_window"] is sw.StrandsSlidingWindowStrategy
    assert "strands_sliding_window" in LIBRARY
    spec = {p.name: p for p in sw.StrandsSlidingWindowStrategy.PARAMS}
    assert spec["window_size"].default == 40
    assert spec["should_truncate_results"].default is True
    assert spec["context_window_limit"].default == 200_000
    assert sr.DEFAULT_COMPRESSION_THRESHOLD == 0.7


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_transcript_replays(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for params in ({}, {"window_size": 6, "context_window_limit": 3000}):
        result = run(conversation, "strands_sliding_window", params=params,
                     summarizer=OfflineSummarizer())  # fmt: skip
        assert {e.kind for e in result.events} <= {"drop", "truncate", "compact_failed",
                                                   "compact_skipped"}  # fmt: skip
