"""Roo Code condense + sliding window: cases ported as tables from the original's tests
(RooCodeInc/Roo-Code @ d1e74cb3, ``src/core/condense/__tests__/index.spec.ts``:
getKeepMessagesWithToolBlocks, getMessagesSinceLastSummary, summarizeConversation's
refusals; ``src/core/context-management/__tests__/context-management.spec.ts`` and
``truncation.spec.ts``: truncateConversation's counts, manageContext / willManageContext
thresholds and getMaxTokens), replays through the strategy, the prompt pinned byte for
byte, and every corpus transcript replayed."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from builders import (
    EchoSummarizer,
    assistant,
    call,
    conv,
    cycle,
    events_of,
    results,
    system,
    tool_result,
    tool_use,
    user,
)

from ctxlab.engine import cli
from ctxlab.engine.core.context_view import ContextView
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.records import Fate, StepRecord, expand
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import roo_code as rc
from ctxlab.engine.summarize.offline import FailingSummarizer, OfflineSummarizer
from ctxlab.engine.tokens import reference_stored
from ctxlab.engine.tokens.cl100k import block_text, reference_counter
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SKIP = {"MANIFEST.tsv", "NOTICE.md", "README.md"}
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name not in SKIP
)
SMALL = {"contextWindow": 2000, "maxTokens": 200, "autoCondenseContextPercent": 50}


# -- the prompt --------------------------------------------------------------------------------


def test_condense_prompt_is_byte_exact() -> None:
    """support-prompt.ts CONDENSE template at d1e74cb3 (2,574 characters, sha256 pinned)."""
    data = rc.SUMMARY_PROMPT.encode("utf-8")
    assert len(rc.SUMMARY_PROMPT) == 2574
    assert hashlib.sha256(data).hexdigest() == (
        "ee9b4cf88a3424cd145743d6f097a3ba405647c29492f6ca84e56f1c6c5277da"
    )
    assert rc.SUMMARY_PROMPT.startswith("Your task is to create a detailed summary of the")
    assert rc.SUMMARY_PROMPT.endswith("without any additional commentary or explanation.")
    assert "\t- [Summary of why this file is important]" in rc.SUMMARY_PROMPT


# -- numbers (context-management.spec.ts, truncation.spec.ts) ---------------------------------


@pytest.mark.parametrize(
    ("visible", "frac", "removed"),
    [
        (3, 0.5, 0),  # "should retain the first message": 1 rounds down to 0
        (5, 0.5, 2),  # "should remove the specified fraction (rounded to even number)"
        (7, 0.3, 0),  # "should round to an even number": 1.8 -> 1 -> 0
        (3, 0.0, 0),  # fracToRemove = 0
        (4, 1.0, 2),  # fracToRemove = 1: 3 -> 2
        (1, 0.5, 0),  # very few messages
        (11, 0.5, 4),  # 5 -> 4
    ],
)
def test_truncation_count(visible: int, frac: float, removed: int) -> None:
    assert rc.truncation_count(visible, frac) == removed


@pytest.mark.parametrize(
    ("window", "max_tokens", "allowed"),
    [
        (100_000, 30_000, 60_000),  # willManageContext: 100000 x 0.9 - 30000
        (100_000, 50_000, 40_000),  # getMaxTokens "maxTokens as buffer"
        (100_000, 0, 81_808),  # ANTHROPIC_DEFAULT_MAX_TOKENS: 91808 - 10000
        (50_000, 10_000, 35_000),  # small context window
        (200_000, 30_000, 150_000),  # large context window
    ],
)
def test_allowed_tokens(window: int, max_tokens: int, allowed: int) -> None:
    assert rc.allowed_tokens(window, max_tokens) == pytest.approx(allowed)


@pytest.mark.parametrize(
    ("tokens", "window", "max_tokens", "percent", "due"),
    [
        (60_000, 100_000, 30_000, 50, True),  # 60% >= 50%
        (40_000, 100_000, 30_000, 50, False),  # 40% < 50%
        (55_000, 100_000, 30_000, 80, False),  # global 80%
        (49_000, 100_000, 30_000, 50, False),  # without lastMessageTokens
        (51_000, 100_000, 30_000, 50, True),  # with lastMessageTokens (+2000)
        (60_001, 100_000, 30_000, 100, True),  # over allowedTokens
        (59_999, 100_000, 30_000, 100, False),
        (81_809, 100_000, 0, 100, True),  # default max tokens: over 81808
        (81_807, 100_000, 0, 100, False),
    ],
)
def test_condense_due(tokens: int, window: int, max_tokens: int, percent: int, due: bool) -> None:
    assert rc.condense_due(tokens, window, max_tokens, percent) is due


# -- getKeepMessagesWithToolBlocks / summarizeConversation (index.spec.ts) ----------------------


def entries(spec: str) -> list[rc.Entry]:
    """``u``/``a`` messages, ``S`` a summary; source index = position."""
    out = []
    for pos, ch in enumerate(spec):
        if ch == "S":
            out.append(rc.Entry(rc.SUMMARY, "assistant"))
        else:
            out.append(rc.Entry(pos, "user" if ch == "u" else "assistant"))
    return out


def plan(
    spec: str, uses: dict[int, tuple[str, ...]], res: dict[int, tuple[str, ...]]
) -> str | tuple[list[rc.Entry], int, list[tuple[int, str]]]:
    return rc.plan_condense(
        entries(spec),
        lambda e: uses.get(e.src, ()) if e.role == "assistant" else (),
        lambda e: res.get(e.src, ()) if e.role == "user" else (),
    )


@pytest.mark.parametrize(
    ("spec", "uses", "res", "start", "preserved", "summarised"),
    [
        # no tool_result in the kept messages: nothing preserved, first 4 summarised
        ("uauauau", {}, {}, 4, [], [0, 1, 2, 3]),
        # first kept message has a tool_result: its tool_use preserved, that message summarised
        ("uauauau", {3: ("t1",)}, {4: ("t1",)}, 4, [(3, "t1")], [0, 1, 2, 3, 4]),
        # parallel calls: every tool_use of the holder preserved
        ("uauauau", {3: ("t1", "t2")}, {4: ("t1", "t2")}, 4, [(3, "t1"), (3, "t2")],
         [0, 1, 2, 3, 4]),
        # tool_result in the 2nd kept message, tool_use 2 messages before the boundary
        ("uaauaua", {2: ("t1",)}, {5: ("t1",)}, 4, [(2, "t1")], [0, 1, 2, 3, 4]),
        # tool_result in the 3rd kept message, tool_use at the boundary edge
        ("uauau", {1: ("t1",)}, {4: ("t1",)}, 2, [(1, "t1")], [0, 1, 2]),
        # tool_results in different kept messages: both tool_uses preserved
        ("uauauua", {1: ("t1",), 3: ("t2",)}, {4: ("t1",), 5: ("t2",)}, 4,
         [(1, "t1"), (3, "t2")], [0, 1, 2, 3, 4]),
        # tool_use beyond the search boundary (3 messages before the kept ones): not found
        ("auauauauau", {0: ("t1",)}, {7: ("t1",)}, 7, [], [0, 1, 2, 3, 4, 5, 6]),
        # the same tool_result id twice: preserved once
        ("uauauau", {3: ("t1",)}, {4: ("t1",), 6: ("t1",)}, 4, [(3, "t1")], [0, 1, 2, 3, 4]),
        # first kept message is an assistant: no tool_result, nothing preserved
        ("uauauaua", {}, {}, 5, [], [0, 1, 2, 3, 4]),
        # a summary before the kept ones: the original first message, then since the summary
        ("uaSuauau", {}, {}, 5, [], [0, rc.SUMMARY, 3, 4]),
    ],
)  # fmt: skip
def test_keep_messages_and_tool_blocks(
    spec: str,
    uses: dict[int, tuple[str, ...]],
    res: dict[int, tuple[str, ...]],
    start: int,
    preserved: list[tuple[int, str]],
    summarised: list[int],
) -> None:
    out = plan(spec, uses, res)
    assert not isinstance(out, str)
    to_summarize, keep_start, kept_uses = out
    assert keep_start == start
    assert kept_uses == preserved
    assert [e.src for e in to_summarize] == summarised


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("uaua", "condense_not_enough_messages"),  # messages <= N_MESSAGES_TO_KEEP + 1
        ("ua", "condense_not_enough_messages"),
        ("uauauSu", "condensed_recently"),  # "should not summarize when there was a recent summary"
        ("uauaSua", "condensed_recently"),  # the first kept message is the summary
    ],
)
def test_summarize_refusals(spec: str, error: str) -> None:
    assert plan(spec, {}, {}) == error


@pytest.mark.parametrize(
    ("spec", "since"),
    [
        ("uaua", [0, 1, 2, 3]),  # no summary: all messages
        ("uaSua", [0, rc.SUMMARY, 3, 4]),  # original first user message, then the summary
        ("uaSuaSu", [0, rc.SUMMARY, 6]),  # since the last of several summaries
        ("", []),  # empty
        ("aSu", [rc.CONTINUE_ENTRY, rc.SUMMARY, 2]),  # first message not a user's: generic
    ],
)
def test_messages_since_last_summary(spec: str, since: list[int]) -> None:
    assert [e.src for e in rc.since_last_summary(entries(spec))] == since


@pytest.mark.parametrize("spec", ["uaua", "uaSua", "uaSuaSu", "", "aSu", "uaSuauaSuau"])
def test_messages_since_last_summary_of_a_prefix(spec: str) -> None:
    # plan_condense reads the stored messages before the kept ones without copying them
    stored = entries(spec)
    for end in range(len(stored) + 1):
        got = rc.since_last_summary(stored, end)
        assert [e.src for e in got] == [e.src for e in rc.since_last_summary(stored[:end])]


# -- replays -----------------------------------------------------------------------------------


def events_of_step(step: StepRecord, kind: str) -> list[object]:
    return [e for e in step.events if e.kind == kind]


def long_session() -> list:  # type: ignore[type-arg]
    return [system(), *cycle(6, size=900)]


def test_condense_keeps_the_first_message_and_the_last_three() -> None:
    echo = EchoSummarizer("the summary")
    result = run(conv(*long_session()), "roo_code", params=SMALL, summarizer=echo)
    events = events_of(result, "summarise")
    assert events, "the small window condenses"
    request = echo.requests[0]
    assert request.system == rc.SUMMARY_PROMPT
    assert request.messages[-1].role == "user"
    assert request.messages[-1].text == rc.FINAL_REQUEST
    assert request.messages[0].text == "task 0: please fix file src/mod0.py"
    # The first message (index 1, after the system prompt) is never summarised.
    summarised = {c.index for e in result.events for c in e.changes if c.fate is Fate.SUMMARISED}
    assert summarised and 1 not in summarised
    # Right after each condense, the request holds the first message, (a re-attached
    # tool_use,) and the last 3 messages.
    for step in result.steps:
        if not events_of_step(step, "summarise"):
            continue
        flat = [i for i in expand(step.context) if i != 0]  # 0: the system prompt
        assert flat[0] == 1
        assert flat[-3:] == list(range(step.source_index - 3, step.source_index))
        assert len(flat) in (4, 5)


def test_custom_condensing_prompt_trimmed_replaces_the_default() -> None:
    echo = EchoSummarizer()
    params = {**SMALL, "customCondensingPrompt": "  Summarise tersely.  "}
    run(conv(*long_session()), "roo_code", params=params, summarizer=echo)
    assert echo.requests and echo.requests[0].system == "Summarise tersely."
    echo2 = EchoSummarizer()
    run(conv(*long_session()), "roo_code", params={**SMALL, "customCondensingPrompt": "   "},
        summarizer=echo2)  # fmt: skip
    assert echo2.requests[0].system == rc.SUMMARY_PROMPT


def test_failed_condense_falls_back_to_the_sliding_window() -> None:
    result = run(conv(*long_session()), "roo_code", params=SMALL,
                 summarizer=FailingSummarizer("raise"))  # fmt: skip
    assert events_of(result, "summary_failed")
    truncs = events_of(result, "drop")
    assert truncs
    assert truncs[0].detail["messages_removed"] % 2 == 0
    assert truncs[0].detail["marker"].startswith("[Sliding window truncation: ")
    dropped = [c.index for c in truncs[0].changes if c.fate is Fate.DROPPED]
    assert 1 not in dropped and dropped == sorted(dropped)
    assert dropped[0] == 2  # the first visible message is kept, the next ones go


class _Flaky:
    """The offline summariser, failing every third call (condense, then the sliding
    window, then condense again)."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.calls += 1
        if self.calls % 3 == 0:
            return FailingSummarizer("error").summarize(request)
        return OfflineSummarizer().summarize(request)


def test_condense_marks_only_the_messages_not_condensed_yet() -> None:
    # Each condense marks the stored messages before the kept ones; those marked by an
    # earlier one are not visited again (stored[1:condensed_to]), a truncation marker
    # inserted among them moves that bound back.
    seen: list[tuple[int, int]] = []

    class Checked(rc.RooCodeStrategy):
        def _condense(self, ctx: ContextView, tokens: int, detail: dict[str, Any]) -> bool:
            st: rc._State = ctx.state
            assert all(e.condensed for e in st.stored[1 : st.condensed_to])
            done = super()._condense(ctx, tokens, detail)
            if done:
                assert all(e.condensed for e in st.stored[1 : st.condensed_to])
                assert st.stored[st.condensed_to].src == rc.SUMMARY
                assert not any(e.condensed for e in st.stored[st.condensed_to :])
                seen.append((st.condensed_to, len(st.stored)))
            return done

    result = run(conv(*long_session(), *cycle(8, size=700)), Checked(SMALL), summarizer=_Flaky())
    assert events_of(result, "summarise") and events_of(result, "drop")
    assert len(seen) >= 2


def test_auto_condense_off_only_truncates() -> None:
    echo = EchoSummarizer()
    params = {**SMALL, "autoCondenseContext": False}
    result = run(conv(*long_session()), "roo_code", params=params, summarizer=echo)
    assert not echo.requests
    assert events_of(result, "drop") and not events_of(result, "summarise")


def test_no_management_before_the_first_call_reports_usage() -> None:
    big = "word " * 3000
    result = run(conv(system(), user(big), assistant("ok")), "roo_code", params=SMALL)
    assert not result.events


def test_tool_use_of_a_kept_result_is_reattached() -> None:
    """The first kept message is a tool result: its tool_use stays (stripped of text) right
    before it, and that message is in the summary input too."""
    msgs = [system(), user("start the task " * 200)]
    for k in range(4):
        msgs += [assistant(f"thinking about step {k} " * 60, tool_use(f"t{k}", "bash", cmd="ls")),
                 tool_result(f"t{k}", f"output {k} " * 150)]  # fmt: skip
    msgs += [assistant("done")]
    echo = EchoSummarizer()
    params = {"contextWindow": 2000, "maxTokens": 200, "autoCondenseContextPercent": 5}
    result = run(conv(*msgs), "roo_code", params=params, summarizer=echo)
    event = events_of(result, "summarise")[0]
    carried = [c for c in event.changes if c.fate is Fate.TRUNCATED]
    assert event.detail["reattached_tool_uses"] == len(carried) == 1
    kept = carried[0].message
    assert kept is not None
    assert [b.kind for b in kept.blocks] == [BlockKind.TOOL_USE]


def test_condense_refused_when_context_would_grow() -> None:
    """condense_context_grew: a summary larger than what it replaces is refused."""
    echo = EchoSummarizer("x " * 5000)
    result = run(conv(*long_session()), "roo_code", params=SMALL, summarizer=echo)
    failed = events_of(result, "compact_failed")
    assert failed and "condense_context_grew" in failed[0].detail["outcome"]
    assert not events_of(result, "summarise")


def test_registered_and_in_the_library() -> None:
    assert STRATEGIES["roo_code"] is rc.RooCodeStrategy
    assert "roo_code" in LIBRARY
    spec = {p.name: p for p in rc.RooCodeStrategy.PARAMS}
    assert spec["autoCondenseContextPercent"].default == 100
    assert (spec["autoCondenseContextPercent"].min, spec["autoCondenseContextPercent"].max) == (
        5,
        100,
    )
    with pytest.raises(ValueError, match="autoCondenseContextPercent"):
        rc.RooCodeStrategy({"autoCondenseContextPercent": 4})


def test_estimator_counts_blocks_times_one_and_a_half_rounded_up() -> None:
    s = rc.RooCodeStrategy()
    assert s.count_message(user("")) == 0
    one = s.count_message(user("hello"))  # 1 cl100k token x 1.5 -> 2
    assert one == 2
    two = s.count_message(results(("a", "x"), ("b", "y")))
    assert two == rc.count_blocks(results(("a", "x"), ("b", "y")).blocks)
    assert s.count_message(call("t1", "bash", cmd="ls")) > 0


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_transcript_replays(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for summarizer in (OfflineSummarizer(), FailingSummarizer("raise")):
        result = run(conversation, "roo_code", params=SMALL, summarizer=summarizer)
        assert len(result.steps) >= 0
        for event in result.events:
            assert event.kind in {"summarise", "drop", "summary_failed", "summary_empty",
                                  "compact_skipped", "compact_failed"}  # fmt: skip


def test_native_export_is_the_settings_import_shape() -> None:
    from ctxlab.engine.native_config import native_config

    default = native_config("roo_code")
    assert default.filename == "roo-code-settings.json"
    assert default.content == {
        "providerProfiles": {"currentApiConfigName": "default", "apiConfigs": {}},
        "globalSettings": {"autoCondenseContext": True, "autoCondenseContextPercent": 100},
    }
    tuned = native_config(
        "roo_code",
        {"autoCondenseContextPercent": 75, "customCondensingPrompt": " Be brief ",
         "contextWindow": 100_000},
    )  # fmt: skip
    settings = tuned.content["globalSettings"]
    assert settings["autoCondenseContextPercent"] == 75
    assert settings["customSupportPrompts"] == {"CONDENSE": "Be brief"}
    assert tuned.unexpressed == (("contextWindow", 100_000),)


# -- the estimator in a replay: the texts' counts read from the run's reference -----------------
def _references(conversation: Conversation) -> list[ReferenceTokens]:
    """The run's reference counted now, and as the worker seeds it (stored at import)."""
    stored, tables = reference_stored.stored_counts(conversation.messages)
    return [ReferenceTokens(conversation), ReferenceTokens(conversation, stored, tables)]


STARTS = ("", " ", "  x", "\t", "'s", "123", "é", ")", "\n", "\r\n", " \n", "!!", "\u00a0")


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replay_counter_is_the_estimator(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    strategy = rc.RooCodeStrategy()
    for reference in _references(conversation):
        counter = strategy.message_counter(reference, rc._State())
        for m in conversation.messages:
            assert counter(m) == strategy.count_message(m)
        # modified copies whose texts start with what may join the result head's piece
        for start in STARTS:
            for m in conversation.messages[:20]:
                copy = replace(m, blocks=tuple(
                    replace(b, text=start + b.text, tool_id=b.tool_id + start,
                            tool_name=b.tool_name + start)
                    if b.kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT, BlockKind.TOOL_USE)
                    else b
                    for b in m.blocks
                ))  # fmt: skip
                assert counter(copy) == strategy.count_message(copy), repr(start)


def test_result_head_counts_apart_from_the_text() -> None:
    count = reference_counter().count
    for start in STARTS:
        for text in ("", "ok", "x\n\ny", "    indented", "'ll do", "42 files"):
            block = tool_result(f"call_{start}1", start + text).blocks[0]
            joined = rc.block_tokens(block)
            apart = count(rc.result_head(block)) + count(block.text)
            if rc.counted_by_reference((block,)):
                assert joined == apart, (start, text)
    # a text starting with a line break joins the head's piece: counted whole
    block = tool_result("t1", "\n\nout").blocks[0]
    assert not rc.counted_by_reference((block,))
    assert rc.block_tokens(block) != count(rc.result_head(block)) + count(block.text)


def test_call_head_counts_apart_from_the_input() -> None:
    # Roo counts "Tool: name\nArguments: {json}", the reference "name {json}": the part
    # from the space on splits the same after either head.
    count = reference_counter().count
    names = ("Bash", "mcp__srv__read_file", "tool1", "t_", "x)", "a'", "é", "x-1", "A:", "x ")
    inputs = ("", " ", "  x", "\n", "'s", "'ll go", "1234 5", "[1,2]", "é", "\t", "!!", "s")
    checked = 0
    for name in names:
        for raw in inputs:
            for tool_input in (raw, {"k": raw}):
                block = Block(BlockKind.TOOL_USE, tool_id="c1", tool_name=name,
                              tool_input=tool_input)  # fmt: skip
                if not rc.counted_by_reference((block,)):
                    assert name[-1].isspace()
                    continue
                apart = count(block_text(block)) - count(name) + count(rc.use_head(block))
                assert rc.block_tokens(block) == apart, (name, tool_input)
                checked += 1
    assert checked == 9 * len(inputs) * 2


def test_replay_counter_reads_the_stored_counts() -> None:
    # Messages of text, tool calls and tool results take their texts' count from the counts
    # stored at import (not tokenized again); one with a reasoning block counts its blocks.
    thinking = Message(Role.ASSISTANT, (Block(BlockKind.THINKING, text="hmm"),
                                        Block(BlockKind.TEXT, text="Sure.")))  # fmt: skip
    conversation = conv(user("Hello!"), call("t1"), tool_result("t1", "ok"), thinking)
    stored, tables = reference_stored.stored_counts(conversation.messages)
    reference = ReferenceTokens(conversation, [c + 100 for c in stored], tables)
    strategy = rc.RooCodeStrategy()
    counter = strategy.message_counter(reference, rc._State())
    got = [counter(m) - strategy.count_message(m) for m in conversation.messages]
    assert got == [150, 150, 150, 0]  # 100 more tokens, x 1.5
