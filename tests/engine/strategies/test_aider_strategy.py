"""Aider ChatSummary: table tests from history.py / models.py, the cases of Aider's own
tests/basic/test_history.py ported, and a replay of a real Aider chat from the corpus."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.records import Fate
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies.aider import (
    SUMMARIZE,
    SUMMARY_PREFIX,
    AiderStrategy,
    Item,
    history_budget,
)
from ctxlab.engine.summarize.offline import FailingSummarizer
from tests.engine.builders import assistant, conv, system, user

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CHAT = "aider/aider-example-complex-change.md"


class FailFirst:
    """Fails the first ``n`` calls, then answers "Summary from model 2"."""

    name = "fail-first"

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.calls.append(request)
        if len(self.calls) <= self.n:
            return SummaryResponse(text="", error="model failed")
        return SummaryResponse(text="Summary from model 2")


class WordCounted(AiderStrategy):
    """Aider's test setup: token_count = words of the content; summarize_all mocked."""

    def count_list(self, items: list[Item]) -> int:
        return sum(i.tokens for i in items)

    def summarize_all(self, ctx: Any, items: list[Item]) -> list[Item]:
        self.summarised = getattr(self, "summarised", []) + [items]
        return [Item("user", "Summary", 1, covers=tuple(i.index for i in items))]


def words(role: str, content: str, index: int = -1) -> Item:
    return Item(role, content, len(content.split()), index=index)


def chat(turns: int, size: int = 60) -> Any:
    """system + ``turns`` user/assistant exchanges + a last question: turns + 1 requests."""
    msgs = [system()]
    for k in range(turns):
        msgs += [user(f"question {k} " + "word " * size), assistant(f"answer {k} " + "ok " * size)]
    msgs += [user("last question"), assistant("last answer")]
    return conv(*msgs)


# -- registration, budget, prompt --------------------------------------------------------------


def test_registered_with_origins() -> None:
    assert "aider" in LIBRARY and "aider" not in PRESETS
    for p in STRATEGIES["aider"].PARAMS:
        assert p.origin and p.help, p.name


@pytest.mark.parametrize(
    ("max_input", "budget"),
    [(0, 1024), (4096, 1024), (16384, 1024), (20000, 1250.0), (32768, 2048.0),
     (100_000, 6250.0), (131_072, 8192), (200_000, 8192), (1_000_000, 8192)],
)  # fmt: skip
def test_max_chat_history_tokens_is_clamped_sixteenth(max_input: int, budget: float) -> None:
    assert history_budget(max_input) == budget
    if max_input:
        assert AiderStrategy({"max_input_tokens": max_input}).max_tokens == budget


def test_explicit_budget_wins() -> None:
    assert AiderStrategy({"max_chat_history_tokens": 3000}).max_tokens == 3000


def test_prompt_and_prefix_are_byte_exact() -> None:
    # sha256 of aider/prompts.py `summarize` @ 5dc9490b, computed by executing that file.
    digest = hashlib.sha256(SUMMARIZE.encode()).hexdigest()
    assert digest == "63ecc7db04db723bec106b21d97199a946040384ce95ba9870dadf5168463138"
    assert SUMMARIZE.startswith(
        "*Briefly* summarize this partial conversation about programming.\n"
    )
    assert SUMMARIZE.endswith('Start the summary with "I asked you...".\n')
    assert "Phrase the summary with the USER in first person" in SUMMARIZE
    assert SUMMARY_PREFIX == "I spoke to you previously about a number of things.\n"


# -- ported: tests/basic/test_history.py (token_count = words, max_tokens=100) -----------------


def test_ported_too_big() -> None:
    s = WordCounted({"max_chat_history_tokens": 100})
    assert not s.too_big([words("user", "This is a short message"),
                          words("assistant", "This is also a short message")])  # fmt: skip
    assert s.too_big([words("user", " ".join(["word"] * 101))])


def test_ported_summarize_two_hundred_messages() -> None:
    s = WordCounted({"max_chat_history_tokens": 100})
    items = []
    for i in range(100):
        items += [
            words("user", f"Message {i}", 2 * i),
            words("assistant", f"Response {i}", 2 * i + 1),
        ]
    result = s.summarize_real(None, items, 0, set())  # type: ignore[arg-type]
    assert 0 < len(result) < len(items)
    assert result[0].content == "Summary"
    # Tail: newest messages whose running total stays under 50 (2 words each) -> 24,
    # the head ends on an assistant message; summary + tail = 49 < 100: no recursion.
    assert [i.index for i in result[1:]] == list(range(176, 200))
    assert len(s.summarised) == 1 and len(s.summarised[0]) == 176


def test_ported_fallback_to_second_model() -> None:
    summarizer = FailFirst(1)
    res = run(chat(12), "aider", params={"max_chat_history_tokens": 1024}, summarizer=summarizer)
    first = res.summaries[0], res.summaries[1]
    assert first[0].error and not first[1].error
    assert first[0].input == first[1].input  # the same messages, the next model
    assert [e.kind for e in res.events][:2] == ["summary_failed", "summarise"]
    summary_event = res.events[1]
    assert summary_event.summary_id == first[1].id


# -- table tests of summarize_real -------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "budget", "depth", "result_len"),
    [(4, 10, 0, 1),    # len(messages) <= min_split: summarise all
     (5, 10, 0, 1),    # no tail fits under half (5); split 5 moves back to 4 <= min_split
     (12, 1000, 1, 1),  # depth > 0 and everything fits the tail: split 0 -> summarise all
     (12, 1000, 0, 12),  # depth 0 under the budget: unchanged
     (12, 40, 0, 5)],  # tail 3 (18 < 20), split 9 -> 8 (head ends on assistant): 1 + 4
)  # fmt: skip
def test_split_table(n: int, budget: int, depth: int, result_len: int) -> None:
    s = WordCounted({"max_chat_history_tokens": budget})
    roles = ["user", "assistant"]
    items = [words(roles[i % 2], "a b c d e f", i) for i in range(n)]
    result = s.summarize_real(None, items, depth, set())  # type: ignore[arg-type]
    assert len(result) == result_len


def test_head_ends_on_an_assistant_message() -> None:
    s = WordCounted({"max_chat_history_tokens": 20})
    # 10 messages of 3 words, half = 10: the tail takes 3 (9 < 10), split 7 follows a
    # user message (6) -> moves back to 6, after the assistant message 5.
    roles = ["user", "assistant"] * 3 + ["user", "user", "assistant", "user"]
    items = [words(r, "x y z", i) for i, r in enumerate(roles)]
    result = s.summarize_real(None, items, 0, set())  # type: ignore[arg-type]
    head = s.summarised[0]
    assert [i.index for i in head] == [0, 1, 2, 3, 4, 5] and head[-1].role == "assistant"
    assert [i.index for i in result[1:]] == [6, 7, 8, 9]


def test_head_past_the_weak_models_limit_is_dropped() -> None:
    s = WordCounted({"max_chat_history_tokens": 100, "weak_max_input_tokens": 512 + 30})
    items = [words(["user", "assistant"][i % 2], "w " * 10, i) for i in range(20)]
    dropped: set[int] = set()
    s.summarize_real(None, items, 0, dropped)  # type: ignore[arg-type]
    sent = [i.index for i in s.summarised[0]]
    assert sent == [0, 1, 2]  # 30 words fit, the 4th message passes 30
    assert dropped and min(dropped) == 3


def test_recursion_stops_after_depth_three() -> None:
    class Big(WordCounted):
        def summarize_all(self, ctx: Any, items: list[Item]) -> list[Item]:
            self.summarised = getattr(self, "summarised", []) + [items]
            return [Item("user", "S " * 200, 200)]  # never fits: recurse

    s = Big({"max_chat_history_tokens": 100})
    items = [words(["user", "assistant"][i % 2], "w w", i) for i in range(60)]
    s.summarize_real(None, items, 0, set())  # type: ignore[arg-type]
    # depths 0..3 split (if the head is long enough), depth 4 summarises all
    assert 2 <= len(s.summarised) <= 5


# -- replay --------------------------------------------------------------------------------------


def test_under_budget_nothing_happens() -> None:
    res = run(chat(3, size=10), "aider")
    assert not res.events and not res.summaries


def test_summary_lands_before_the_next_request_with_prefix() -> None:
    res = run(chat(12), "aider", params={"max_chat_history_tokens": 1024})
    event = next(e for e in res.events if e.kind == "summarise")
    assert event.tokens_after < event.tokens_before
    assert all(c.fate in (Fate.SUMMARISED, Fate.DROPPED) for c in event.changes)
    record = res.summaries[event.summary_id]
    assert record.input.startswith("[system]\n" + SUMMARIZE)
    assert "# USER\nquestion 0" in record.input and "# ASSISTANT\nanswer 0" in record.input
    # Every request after the first summary stays near the budget (done <= ~1024 + turn).
    assert max(s.tokens.strategy for s in res.steps[event.step :]) < 1024 + 600


def test_all_models_failing_drops_the_done_history() -> None:
    res = run(chat(12), "aider", params={"max_chat_history_tokens": 1024},
              summarizer=FailingSummarizer("error"))  # fmt: skip
    kinds = [e.kind for e in res.events]
    assert kinds[:3] == ["summary_failed", "summary_failed", "drop"]
    drop = res.events[2]
    assert drop.changes and all(c.fate is Fate.DROPPED for c in drop.changes)
    kept = run(chat(12), "aider", summarizer=FailingSummarizer("error"),
               params={"max_chat_history_tokens": 1024, "failure_drops_history": False})  # fmt: skip
    assert "drop" not in [e.kind for e in kept.events]


def test_real_aider_chat() -> None:
    conversation = importers.parse((CORPUS / CHAT).read_bytes(), name=CHAT).conversations[0]
    full = run(conversation, "aider")
    small = run(conversation, "aider", params={"max_chat_history_tokens": 1024})
    assert not full.events  # 200K model: 8192 budget, the chat stays under it
    assert [e.kind for e in small.events].count("summarise") >= 2
    assert small.steps[-1].tokens.strategy < full.steps[-1].tokens.strategy
    for record in small.summaries:
        assert "# USER\n" in record.input


def test_native_config_is_aider_conf_yml() -> None:
    from ctxlab.engine.native_config import native_config

    assert native_config("aider").content == {}
    native = native_config("aider", {"max_chat_history_tokens": 2000})
    assert native.filename == ".aider.conf.yml"
    assert native.text == "max-chat-history-tokens: 2000\n" and native.unexpressed == ()
