"""Crush auto-summarise (charmbracelet/crush @ 37f36e93, internal/agent/agent.go).

The original has no test of the threshold (``agent_test.go`` records provider sessions);
its rule is a table here, both sides of the 200,000 window. The summary prompt and the
queued prompt are pinned byte for byte; replays check what is summarised and when."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from builders import EchoSummarizer, assistant, call, conv, events_of, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Message
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import crush as cr
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
PROMPT_HEAD = (
    "You are summarizing a conversation to preserve context for continuing work later.\n\n"
    "**Critical**: This summary will be the ONLY context available when the conversation "
    "resumes. Assume all previous messages will be lost. Be thorough.\n\n"
    "**Required sections**:\n\n## Current State\n\n"
)
PROMPT_TAIL = (
    "**Length**: No limit. Err on the side of too much detail rather than too little. "
    "Critical context is worth the tokens.\n"
)


def test_registered() -> None:
    assert STRATEGIES["crush"] is cr.CrushStrategy and "crush" in LIBRARY
    assert cr.CrushStrategy.WINDOW == "context_window"
    params = {p.name: p.default for p in cr.CrushStrategy.PARAMS}
    assert params == {"context_window": 200_000, "disable_auto_summarize": False}


def test_prompts_byte_exact() -> None:
    assert cr.SUMMARY_PROMPT.startswith(PROMPT_HEAD) and cr.SUMMARY_PROMPT.endswith(PROMPT_TAIL)
    # sha256 of templates/summary.md at the pinned commit (git show ... | sha256sum)
    digest = hashlib.sha256(cr.SUMMARY_PROMPT.encode()).hexdigest()
    assert digest == "58a9daa183a36c734214deffaa2ea30cd3e5f8d224ac7c95fe6fba2dff5544ad"
    for heading in ("## Current State", "## Files & Changes", "## Technical Context",
                    "## Strategy & Approach", "## Exact Next Steps"):  # fmt: skip
        assert f"\n{heading}\n" in cr.SUMMARY_PROMPT
    assert cr.SUMMARY_USER_PROMPT == "Provide a detailed summary of our conversation above."
    assert cr.INTERRUPTED.format(prompt="fix it") == (
        "The previous session was interrupted because it got too long, the initial user "
        "request was: `fix it`"
    )


@pytest.mark.parametrize(
    ("window", "tokens", "expected"),
    [
        (1_000_000, 980_000, True),  # over 200k: a flat 20,000 buffer
        (1_000_000, 979_999, False),
        (200_001, 180_001, True),
        (200_001, 180_000, False),
        (200_000, 160_000, True),  # exactly 200k is not "over": 20 % = 40,000
        (200_000, 159_999, False),
        (128_000, 102_400, True),  # 20 % of 128k = 25,600
        (128_000, 102_399, False),
        (0, 10**9, False),  # unknown window: never
    ],
)
def test_stop_when_rule(window: int, tokens: int, expected: bool) -> None:
    assert cr.should_summarize(window, tokens) is expected
    assert cr.should_summarize(window, tokens, disabled=True) is False


def words(n: int) -> str:
    return " alpha" * n


def session() -> list[Message]:
    return [system("sys"), user("build it" + words(5)), call("c1", text="reading"),
            tool_result("c1", words(2000)), call("c2"), tool_result("c2", words(2000)),
            assistant("done" + words(50)), user("next task"), assistant("ok")]  # fmt: skip


def test_summarises_the_session_after_the_step_and_queues_the_prompt() -> None:
    """The step of c2 (request ~2,027 + its output) leaves <= 20 % of 2,500: summarised
    before the next call, c2's result included (run inside the step); it called tools, so
    the run's prompt is queued after the summary."""
    summ = EchoSummarizer("SUMMARY")
    res = run(conv(*session()), "crush", params={"context_window": 2500}, summarizer=summ)
    (ev,) = events_of(res, "compact")
    assert ev.detail["buffer"] == 500 and 0 < ev.detail["remaining"] <= 500
    assert ev.detail["queued_prompt"] is True
    (req,) = summ.requests
    assert req.system == cr.SUMMARY_PROMPT
    assert [m.role for m in req.messages] == ["user", "assistant", "user", "assistant", "user",
                                              "user"]  # fmt: skip
    assert req.messages[-1].text == cr.SUMMARY_USER_PROMPT
    assert sorted(c.index for c in ev.changes) == [1, 2, 3, 4, 5]
    step = next(s for s in res.steps if s.source_index == 6)
    assert step.context_indexes == [0] and step.summary_id is not None
    assert step.tokens.reference < 100  # the summary and the queued prompt only


def test_a_new_prompt_after_the_step_is_not_summarised() -> None:
    msgs = [system("sys"), user("a" + words(3000)), assistant("answer"), user("again"),
            assistant("ok")]  # fmt: skip
    summ = EchoSummarizer("S")
    res = run(conv(*msgs), "crush", params={"context_window": 3500}, summarizer=summ)
    (ev,) = events_of(res, "compact")
    assert sorted(c.index for c in ev.changes) == [1, 2]
    assert ev.detail["queued_prompt"] is False
    assert res.steps[-1].context_indexes == [0, 3]


def test_disabled_and_failing() -> None:
    params: dict[str, Any] = {"context_window": 2500, "disable_auto_summarize": True}
    assert not run(conv(*session()), "crush", params=params).events
    res = run(conv(*session()), "crush", params={"context_window": 2500},
              summarizer=FailingSummarizer("raise"))  # fmt: skip
    assert events_of(res, "summary_failed") and not events_of(res, "compact")


def test_native_crushrc() -> None:
    native = native_config("crush", {"disable_auto_summarize": True, "context_window": 128000})
    assert native.filename == "crushrc"
    assert native.content == {"option": {"auto-summarize": False}}
    assert "option auto-summarize false\n" in native.text
    assert ("context_window", 128000) in native.unexpressed
    assert any("crush.json" in n and "disable_auto_summarize" in n for n in native.notes)


CORPUS_FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replays_every_corpus_transcript(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for window in (200_000, 6_000, 0):
        res = run(conversation, "crush", params={"context_window": window})
        assert len(res.steps) >= 0
