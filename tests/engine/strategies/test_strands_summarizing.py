"""Strands Agents' SummarizingConversationManager (strands-agents/sdk-python @ 1232230,
v1.40.0).

Ported from the original's tests (``tests/strands/agent/test_summarizing_conversation_manager.py``)
as tables over the same Strands messages: ``test_init_default_values``,
``test_init_clamps_summary_ratio``, ``test_reduce_context_raises_when_no_agent``,
``test_reduce_context_with_summarization``, ``test_reduce_context_too_few_messages_raises_exception``,
``test_reduce_context_insufficient_messages_for_summarization``,
``test_adjust_split_point_for_tool_pairs`` and the other ``test_adjust_split_point_*`` cases,
``test_reduce_context_tool_pair_adjustment_works_with_forward_search``,
``test_summarizing_conversation_manager_properly_records_removed_message_count`` (the counts
of two reductions in a row), ``test_default_path_passes_correct_system_prompt`` /
``..._uses_custom_system_prompt`` (the request); then the prompt byte for byte, the manager
in replays and every corpus transcript replayed."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builders import EchoSummarizer, conv, cycle, system

from ctxlab.engine import cli
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import _strands_rules as sr
from ctxlab.engine.strategies import strands_summarizing as ss
from ctxlab.engine.summarize.offline import FailingSummarizer, OfflineSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SKIP = {"MANIFEST.tsv", "NOTICE.md", "README.md"}
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name not in SKIP
)
# sha256 of DEFAULT_SUMMARIZATION_PROMPT as strands-agents 1.40.0 imports it (926 characters).
PROMPT_SHA256 = "9e4e2ba60b665c0f08b7aa3d14aa4cefb4301f60efeceb3c5f249d2a9ac23ce3"
PROMPT_HEAD = (
    "You are a conversation summarizer. Provide a concise summary of the conversation history."
    "\n\nFormat Requirements:\n- You MUST create a structured and concise summary in "
    "bullet-point format.\n"
)
PROMPT_TAIL = (
    "Example format:\n\n## Conversation Summary\n* Topic 1: Key information\n"
    "* Topic 2: Key information\n*\n## Tools Executed\n* Tool X: Result Y"
)


@dataclass(frozen=True)
class M:
    role: str
    tool_use: bool
    tool_result: bool


T = M("user", False, False)  # plain text, user
R = M("assistant", False, False)  # plain text, assistant
USE = M("assistant", True, False)
RES = M("user", False, True)


@pytest.mark.parametrize(
    ("messages", "ratio", "preserve", "count"),
    [
        ([T, R, T, R, T, R], 0.5, 2, 3),  # test_reduce_context_with_summarization: 1 + 3 left
        ([USE, RES, T], 0.5, 1, 2),  # ..._tool_pair_adjustment_works_with_forward_search
        ([T, R, T, R, T, R, T, R], 0.5, 1, 4),  # ..._records_removed_message_count, first
        ([T, T, R, T, R], 0.5, 1, 2),  # ... second: the summary and one more (5 - 2 + 1 = 4)
        ([T, R] * 10, 0.3, 10, 6),  # the defaults: int(20 * 0.3)
        ([T, R] * 6, 0.3, 10, 2),  # never the last preserve_recent_messages
    ],
)
def test_summarize_count(messages: list[M], ratio: float, preserve: int, count: int) -> None:
    assert sr.summarize_count(messages, ratio, preserve) == count


@pytest.mark.parametrize(
    ("messages", "ratio", "preserve"),
    [
        ([], 0.3, 10),  # test_reduce_context_raises_when_no_agent
        ([T, R, T], 0.1, 5),  # test_reduce_context_too_few_messages_raises_exception
        ([T, R, T], 0.5, 3),  # test_reduce_context_insufficient_messages_for_summarization
    ],
)
def test_insufficient_messages(messages: list[M], ratio: float, preserve: int) -> None:
    with pytest.raises(sr.NoSplit, match="insufficient messages for summarization"):
        sr.summarize_count(messages, ratio, preserve)


TOOL_PAIR = [T, USE, RES, R]


@pytest.mark.parametrize(
    ("messages", "split", "want"),
    [
        (TOOL_PAIR, 2, 3),  # test_adjust_split_point_for_tool_pairs
        (TOOL_PAIR, 3, 3),
        (TOOL_PAIR, 1, 1),
        ([T, R], 2, 2),  # ..._equals_message_length
        ([T, R, T], 1, 1),  # ..._no_tool_result_at_split
        ([T, R, RES, USE], 2, 3),  # ..._tool_result_moves_to_end
        ([T, R, RES, USE], 2, 3),
        ([T, R, RES, USE], 2, 3),
    ],
)
def test_adjust_split_point(messages: list[M], split: int, want: int) -> None:
    assert sr.adjust_split_point(messages, split) == want


@pytest.mark.parametrize(
    ("messages", "split", "error"),
    [
        ([T, R], 5, "Split point exceeds message array length"),
        ([T, RES], 1, "Unable to trim conversation context!"),  # ..._without_tool_use
        ([T, USE, T, RES], 3, "Unable to trim conversation context!"),  # ..._no_forward_position
    ],
)
def test_adjust_split_point_raises(messages: list[M], split: int, error: str) -> None:
    with pytest.raises(sr.NoSplit, match=error):
        sr.adjust_split_point(messages, split)


@pytest.mark.parametrize(("given", "used"), [(0.05, 0.1), (0.95, 0.8), (0.3, 0.3)])
def test_summary_ratio_is_clamped(given: float, used: float) -> None:
    assert ss.StrandsSummarizingStrategy({"summary_ratio": given}).summary_ratio == used


def test_prompt_is_byte_exact() -> None:
    prompt = ss.DEFAULT_SUMMARIZATION_PROMPT
    assert hashlib.sha256(prompt.encode()).hexdigest() == PROMPT_SHA256
    assert prompt.startswith(PROMPT_HEAD) and prompt.endswith(PROMPT_TAIL)
    assert ss.SUMMARIZE_REQUEST == "Please summarize this conversation."


# -- in a replay -----------------------------------------------------------------------------
SMALL: dict[str, Any] = {"context_window_limit": 1000, "preserve_recent_messages": 4}


def test_overflow_summarises_the_oldest_and_sends_the_original_request() -> None:
    echo = EchoSummarizer("SUMMARY")
    result = run(conv(system(), *cycle(6, size=1000)), "strands_summarizing", params=SMALL,
                 summarizer=echo)  # fmt: skip
    events = [e for e in result.events if e.kind == "summarise"]
    assert events
    first = echo.requests[0]
    assert first.system == ss.DEFAULT_SUMMARIZATION_PROMPT
    assert first.messages[-1].role == "user"
    assert first.messages[-1].text == "Please summarize this conversation."
    # The oldest 30 % (int(n * 0.3)) of the messages, moved past a tool result.
    assert all(c.fate is Fate.SUMMARISED for c in events[0].changes)
    assert events[0].changes[0].index == 1
    # The next reduction summarises the previous summary with the oldest messages.
    assert len(echo.requests) > 1
    assert echo.requests[1].messages[0].text == "SUMMARY"


def test_custom_prompt_replaces_the_default() -> None:
    echo = EchoSummarizer()
    run(conv(system(), *cycle(6, size=1000)), "strands_summarizing",
        params={**SMALL, "summarization_system_prompt": "Be brief."}, summarizer=echo)  # fmt: skip
    assert echo.requests and echo.requests[0].system == "Be brief."


def test_summary_failure_on_overflow_fails_the_call() -> None:
    result = run(conv(system(), *cycle(6, size=1000)), "strands_summarizing", params=SMALL,
                 summarizer=FailingSummarizer("raise"))  # fmt: skip
    kinds = [e.kind for e in result.events]
    assert "summary_failed" in kinds and "compact_failed" in kinds
    assert "summarise" not in kinds


def test_proactive_compression_summarises_below_the_limit() -> None:
    params = {"context_window_limit": 100_000, "proactive_compression": 0.005,
              "preserve_recent_messages": 2}  # fmt: skip
    result = run(conv(system(), *cycle(4, size=400)), "strands_summarizing", params=params,
                 summarizer=EchoSummarizer())  # fmt: skip
    assert any(e.kind == "summarise" and e.detail["trigger"] == "proactive"
               for e in result.events)  # fmt: skip
    assert not any(e.kind == "summarise" for e in run(
        conv(system(), *cycle(4, size=400)), "strands_summarizing",
        params={"context_window_limit": 100_000}, summarizer=EchoSummarizer()).events)  # fmt: skip


def test_registered_and_in_the_library() -> None:
    assert STRATEGIES["strands_summarizing"] is ss.StrandsSummarizingStrategy
    assert "strands_summarizing" in LIBRARY
    spec = {p.name: p for p in ss.StrandsSummarizingStrategy.PARAMS}
    assert spec["summary_ratio"].default == 0.3
    assert spec["preserve_recent_messages"].default == 10
    assert spec["proactive_compression"].default == 0.0


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_transcript_replays(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for params in ({}, {"context_window_limit": 3000}, {"proactive_compression": 0.02}):
        for summarizer in (OfflineSummarizer(), FailingSummarizer("raise")):
            result = run(conversation, "strands_summarizing", params=params,
                         summarizer=summarizer)  # fmt: skip
            assert {e.kind for e in result.events} <= {
                "summarise", "summary_failed", "compact_failed", "compact_skipped"}  # fmt: skip
