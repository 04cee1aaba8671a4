"""Goose auto-compaction (block/goose crates/goose/src/context_mgmt/mod.rs @ 0036b81).

Ported from the original's own tests (mod.rs ``mod tests``): ``test_keeps_tool_request``,
``test_progressive_removal_on_context_exceeded`` and
``test_compaction_output_with_new_tool_pair_is_valid``; ``filter_tool_responses``'s
middle-out order and ``check_if_compaction_needed``'s threshold rule as tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import assistant, call, conv, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies import goose as g
from ctxlab.engine.summarize.offline import FailingSummarizer
from ctxlab.engine.tokens.cl100k import message_reference_tokens

HALF = {"context_limit": 3000, "GOOSE_AUTO_COMPACT_THRESHOLD": 0.5}
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

# Byte-exact texts, written out again here (not imported) so a drift in the module fails.
PROMPT_HEAD = (
    "The messages above are a conversation to summarize. Create a structured context "
    "checkpoint summary that another LLM will use to continue the work.\n\n"
    "**Conversation History:**\n"
)
PROMPT_TAIL = (
    "\n\nUse this EXACT format:\n\n## Goal\n[What is the user trying to accomplish? Can be "
    "multiple items if the session covers different tasks.]\n\n## Constraints & Preferences\n"
    "- [Any constraints, preferences, or requirements mentioned by user]\n"
    '- [Or "(none)" if none were mentioned]\n\n## Progress\n### Done\n'
    "- [x] [Completed tasks/changes with file paths]\n\n### In Progress\n- [ ] [Current work]"
    "\n\n### Blocked\n- [Issues preventing progress, if any]\n\n## Key Decisions\n"
    "- **[Decision]**: [Brief rationale]\n\n## Next Steps\n"
    "1. [Ordered list of what should happen next]\n\n## Critical Context\n"
    "- [Any data, examples, error messages, or references needed to continue]\n"
    '- [Or "(none)" if not applicable]\n\nRULES:\n'
    "- Keep each section concise but complete\n"
    "- Preserve exact file paths, function names, and error messages\n"
    "- Include code snippets only if they are critical for continuation\n"
    "- This summary will be read by you (the LLM) to continue the session\n"
    "- Do not include information that can be easily re-derived from files\n"
)
USER_TEXT = "Please summarize the conversation history provided in the system prompt."
CONVERSATION = (
    "Your context was compacted. The previous message contains a summary of the conversation "
    "so far.\nDo not mention that you read a summary or that conversation summarization "
    "occurred.\nJust continue the conversation naturally based on the summarized context."
)
TOOL_LOOP = (
    "Your context was compacted. The previous message contains a summary of the conversation "
    "so far.\nDo not mention that you read a summary or that conversation summarization "
    "occurred.\nContinue calling tools as necessary to complete the task."
)


class Capturing:
    name = "capturing"

    def __init__(self, text: str = "<mock summary>") -> None:
        self.text = text
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return SummaryResponse(text=self.text)


def words(n: int) -> str:
    return " alpha" * n  # one cl100k token each


def tool_turns(n: int, size: int = 5) -> list[Message]:
    """``user("start")`` then ``n`` read_file pairs (mod.rs tests' shape)."""
    msgs: list[Message] = [user("start")]
    for i in range(n):
        msgs += [
            call(f"tool_{i}", "read_file"),
            tool_result(f"tool_{i}", f"response{i}" + words(size)),
        ]
    return msgs


def events(res: ReplayResult, kind: str) -> list[dict[str, Any]]:
    return [dict(e.detail) for e in res.events if e.kind == kind]


# -- registration, prompt ----------------------------------------------------------------------


def test_registered_in_library_not_presets() -> None:
    assert STRATEGIES["goose"] is g.GooseStrategy
    assert "goose" in LIBRARY and "goose" not in PRESETS
    params = {p.name: p.default for p in g.GooseStrategy.PARAMS}
    assert params == {
        "context_limit": 128_000,
        "GOOSE_AUTO_COMPACT_THRESHOLD": 0.8,
        "removal_percentages": [0, 10, 20, 50, 100],
    }
    assert g.GooseStrategy.WINDOW == "context_limit"


def test_prompt_and_texts_byte_exact() -> None:
    assert g.render_prompt("[user]: hi") == PROMPT_HEAD + "[user]: hi" + PROMPT_TAIL
    assert g.SUMMARIZE_USER_TEXT == USER_TEXT
    assert g.CONVERSATION_CONTINUATION_TEXT == CONVERSATION
    assert g.TOOL_LOOP_CONTINUATION_TEXT == TOOL_LOOP


# -- check_if_compaction_needed ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "limit", "threshold", "expected"),
    [
        (800, 1000, 0.8, False),  # usage_ratio > threshold, strictly
        (801, 1000, 0.8, True),
        (500, 1000, 0.0, False),  # threshold <= 0.0: auto-compact disabled
        (999, 1000, 1.0, False),  # threshold >= 1.0: disabled
        (301, 1000, 0.3, True),
    ],
)
def test_threshold_rule(tokens: int, limit: int, threshold: float, expected: bool) -> None:
    s = g.GooseStrategy({"context_limit": limit, "GOOSE_AUTO_COMPACT_THRESHOLD": threshold})
    assert s.needs_compaction(tokens) is expected


def test_estimator_is_count_chat_tokens_of_one_message() -> None:
    msg = user("Hello, how are you?")
    # 4 per message + the content + 3 for the reply primer (called once per message)
    assert g.GooseStrategy().count_message(msg) == message_reference_tokens(msg) + 7


# -- filter_tool_responses (middle out) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("tools", "percent", "removed"),
    [
        (10, 0, []),
        (10, 10, [10]),  # num 1: tool_indices[middle - 1]
        (10, 20, [10, 12]),
        (10, 50, [6, 8, 10, 12, 14]),
        (10, 100, [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]),
        (3, 10, [2]),  # at least one: max(.., 1)
        (1, 100, []),  # middle = 0: the single response is never removed
        (3, 100, [2, 4]),  # odd count: the last one stays
        (2, 100, [2, 4]),
        (0, 100, []),
    ],
)
def test_filter_tool_responses(tools: int, percent: int, removed: list[int]) -> None:
    msgs = tool_turns(tools)
    kept = g.filter_tool_responses(msgs, percent)
    assert [i for i in range(len(msgs)) if i not in kept] == removed


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (user("hi"), "[user]: hi"),
        (
            call("c1", "read_file", path="a.py"),
            '[assistant]: tool_request(read_file): {"path":"a.py"}',
        ),
        (tool_result("c1", "hello, world"), "[user]: tool_response: hello, world"),
        (tool_result("c1", ""), "[user]: tool_response: [non-text content]"),
        (assistant("", thinking="secret plan"), "[assistant]: <empty message>"),
        (
            Message(Role.USER, (Block(BlockKind.MEDIA, media_type="image/png", size=3),)),
            "[user]: [image: image/png]",
        ),
    ],
)
def test_format_message_for_compacting(message: Message, expected: str) -> None:
    assert g.format_message_for_compacting(message) == expected


# -- compact_messages --------------------------------------------------------------------------


def test_threshold_compaction_request_and_result() -> None:
    """At a new user turn over 0.8 of the limit: every agent-visible message summarised,
    the latest user text kept after the summary, CONVERSATION continuation."""
    msgs = [*tool_turns(3, size=500), assistant("done"), user("Now do something else"),
            assistant("ok")]  # fmt: skip
    summ = Capturing()
    res = run(conv(*msgs), "goose", params=HALF, summarizer=summ)
    (detail,) = events(res, "compact")
    assert detail["trigger"] == "threshold" and detail["continuation"] == "conversation"
    assert detail["preserved_user_message"] == 8
    (req,) = summ.requests
    assert [(m.role, m.text) for m in req.messages] == [("user", USER_TEXT)]
    body = "\n".join(g.format_message_for_compacting(m) for m in msgs[:9])
    assert req.system == PROMPT_HEAD + body + PROMPT_TAIL
    last = res.steps[-1]
    assert last.context_indexes == [8]  # only the re-appended user text stays live
    assert last.summary_id is not None


def test_keeps_tool_request() -> None:
    """mod.rs test_keeps_tool_request: the compacted agent-visible conversation is valid
    (no tool response without its request)."""
    msgs = [user("read hello.txt"), call("tool_0", "read_file"),
            tool_result("tool_0", "hello, world" + words(600)), call("tool_1", "read_file"),
            tool_result("tool_1", "again" + words(600)), assistant("done")]  # fmt: skip
    res = run(conv(*msgs), "goose", params={"context_limit": 1000}, summarizer=Capturing())
    assert events(res, "compact")
    for step in res.steps:
        kept = [msgs[i] for i in step.context_indexes]
        calls = {b.tool_id for m in kept for b in m.blocks if b.kind is BlockKind.TOOL_USE}
        answered = {b.tool_id for m in kept for b in m.blocks if b.kind is BlockKind.TOOL_RESULT}
        assert answered <= calls


def test_progressive_removal_on_context_exceeded() -> None:
    """mod.rs test_progressive_removal_on_context_exceeded: the summary call overflows
    with every tool response, succeeds once enough are removed from the middle."""
    msgs = [*tool_turns(10, size=100), user("next"), assistant("ok")]
    summ = Capturing()
    res = run(conv(*msgs), "goose", params={"context_limit": 1000}, summarizer=summ)
    (detail,) = events(res, "compact")
    attempts = detail["attempts"]
    assert isinstance(attempts, list)
    percents = [a["remove_percent"] for a in attempts]
    assert percents == [0, 10, 20, 50, 100][: len(percents)] and len(percents) > 1
    assert attempts[-1]["request_tokens"] <= 1000 < attempts[-2]["request_tokens"]
    (req,) = summ.requests
    assert 0 < req.system.count("tool_response:") < 10


def test_overflow_even_without_tool_responses_fails() -> None:
    msgs = [user(words(900)), assistant("a"), user("again"), assistant("b")]
    summ = Capturing()
    res = run(conv(*msgs), "goose", params={"context_limit": 1000}, summarizer=summ)
    assert not summ.requests
    failed = events(res, "compact_failed")[0]
    attempts = failed["attempts"]
    assert isinstance(attempts, list)
    assert [a["remove_percent"] for a in attempts] == [0, 10, 20, 50, 100]


def test_compaction_output_with_new_tool_pair_is_valid() -> None:
    """mod.rs test_compaction_output_with_new_tool_pair_is_valid: after compaction the
    next tool pair is sent whole after the summary."""
    msgs = [user("Help me with a task")]
    for i in range(3):
        msgs += [call(f"old_tool_{i}", "some_tool"),
                 tool_result(f"old_tool_{i}", f"result {i}" + words(500))]  # fmt: skip
    msgs += [assistant("done"), user("Now do something else"),
             call("new_tool_1", "new_tool", text="I'll run a new tool"),
             tool_result("new_tool_1", "new result"), assistant("finished")]  # fmt: skip
    res = run(conv(*msgs), "goose", params=HALF, summarizer=Capturing())
    assert events(res, "compact")
    assert res.steps[-1].context_indexes == [8, 9, 10]
    assert not [f for f in res.findings if "pair" in f.kind]


def test_tool_loop_overflow_compacts_once_then_gives_up() -> None:
    """agent.rs: ContextLengthExceeded inside the reply loop compacts (TOOL_LOOP
    continuation); a second overflow in the same reply gives up."""
    msgs = [user("go")]
    for i in range(8):
        msgs += [call(f"t{i}"), tool_result(f"t{i}", words(400))]
    msgs.append(assistant("end"))
    res = run(conv(*msgs), "goose", params={"context_limit": 1000}, summarizer=Capturing())
    compacts = events(res, "compact")
    assert compacts[0]["trigger"] == "context_length_exceeded"
    assert compacts[0]["continuation"] == "tool_loop"
    assert events(res, "compact_failed")[0]["compaction_attempts"] == 2


def test_summariser_error_leaves_history() -> None:
    msgs = [*tool_turns(3, size=500), assistant("done"), user("more"), assistant("ok")]
    res = run(conv(*msgs), "goose", params=HALF,
              summarizer=FailingSummarizer("raise"))  # fmt: skip
    assert events(res, "summary_failed") and not events(res, "compact")
    assert res.steps[-1].context_indexes == list(range(9))


# -- every corpus transcript -------------------------------------------------------------------

CORPUS_FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replays_every_corpus_transcript(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for limit in (128_000, 6_000):
        res = run(conversation, "goose", params={"context_limit": limit})
        assert len(res.steps) >= 0


# -- native export -----------------------------------------------------------------------------


def test_native_config_writes_the_threshold_and_notes_the_limit() -> None:
    native = native_config("goose", {"GOOSE_AUTO_COMPACT_THRESHOLD": 0.7, "context_limit": 64000})
    assert native.filename == "config.yaml" and native.media_type == "application/yaml"
    assert native.content == {"GOOSE_AUTO_COMPACT_THRESHOLD": 0.7}
    assert "GOOSE_AUTO_COMPACT_THRESHOLD: 0.7\n" in native.text
    assert ("context_limit", 64000) in native.unexpressed
    assert any("GOOSE_CONTEXT_LIMIT" in note for note in native.notes)
