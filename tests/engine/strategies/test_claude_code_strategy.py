"""Claude Code auto-compact: threshold, token count, prompt, summary message, failure path,
golden replay over a real Claude Code session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import EchoSummarizer, assistant, call, conv, events_of, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Message, OriginalCompaction, Usage
from ctxlab.engine.core.records import Fate
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS
from ctxlab.engine.strategies import _claude_code_rules as rules
from ctxlab.engine.strategies.claude_code import ClaudeCodeStrategy, rough_tokens
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"
TRACE = CORPUS / "anthropic-messages" / "claude-trace-req34-request.json"


CLAUDE_REPLY = (
    "<analysis>draft</analysis>\n<summary>S</summary>"  # an analysis pass, then the summary
)


def Echo(text: str = CLAUDE_REPLY) -> EchoSummarizer:  # noqa: N802
    return EchoSummarizer(text)


events = events_of


def used(total: int) -> Usage:
    return Usage(input_uncached=total)


def two_calls(reported: int) -> list[Message]:
    """The second call (index 4) is checked against the first response's usage + "q2"."""
    return [system("S"), user("q1"), assistant("a1", usage=used(reported)), user("q2"),
            assistant("a2")]  # fmt: skip


# -- threshold ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "threshold"),
    [
        ({}, 167_000),  # 200 000 - 20 000 - 13 000
        ({"context_window": 1_000_000}, 967_000),
        ({"autocompact_pct_override": 50}, 90_000),  # floor(180 000 x 0.5): lowered
        ({"autocompact_pct_override": 95}, 167_000),  # Math.min: never raised
        ({"autocompact_pct_override": 100}, 167_000),
        ({"autocompact_pct_override": 0.5}, 900),  # a fraction is a (tiny) percent
        ({"auto_compact_window": 100_000}, 67_000),  # CLAUDE_CODE_AUTO_COMPACT_WINDOW caps
        ({"auto_compact_window": 300_000}, 167_000),  # ... never raises
        ({"output_reserve": 8_000}, 179_000),
    ],
)
def test_auto_compact_threshold(params: dict[str, float], threshold: int) -> None:
    assert ClaudeCodeStrategy(params).auto_compact_threshold() == threshold


@pytest.mark.parametrize(("reported", "fires"), [(998, False), (999, True), (1_000, True)])
def test_trigger_is_greater_or_equal(reported: int, fires: bool) -> None:
    # threshold 34 000 - 20 000 - 13 000 = 1 000; the count is reported + round(2 / 4) = 1
    params = {"context_window": 34_000}
    result = run(conv(*two_calls(reported)), "claude_code", params=params, summarizer=Echo())
    compacts = events(result, "compact")
    assert bool(compacts) is fires
    if fires:
        detail = compacts[0].detail
        assert detail["usage_source"] == "reported" and detail["threshold"] == 1_000
        assert detail["tokens"] == reported + 1 and detail["estimated_tail"] == 1


@pytest.mark.parametrize(
    "params", [{"auto_compact_enabled": False}, {"disable_auto_compact": True}]
)
def test_disabled_auto_compact(params: dict[str, bool]) -> None:
    params = {"context_window": 34_000, **params}
    result = run(conv(*two_calls(10**6)), "claude_code", params=params, summarizer=Echo())
    assert not result.events and result.steps[-1].zones.threshold is None


def test_estimate_without_usage_counts_messages_only() -> None:
    # no usage anywhere: round(len / 4) per block of the messages, no system prompt
    msgs = [system("S" * 4000), user("x" * 3997), assistant("a" * 6), user("y" * 3),
            assistant("b")]  # fmt: skip
    strategy = ClaudeCodeStrategy({"context_window": 34_000})
    assert strategy.count_message(msgs[1]) == 999  # 999.25 -> 999
    assert strategy.count_message(msgs[2]) == 2 and strategy.count_message(msgs[3]) == 1  # x.5 up
    result = run(conv(*msgs), "claude_code", params={"context_window": 34_000},
                 summarizer=Echo())  # fmt: skip
    compact = events(result, "compact")[0]
    assert result.steps[compact.step].source_index == 4  # 999 + 2 + 1 >= 1000; at index 2: 999
    first = events(result, "compact")[0]
    assert first.detail == {**first.detail, "usage_source": "estimate", "overhead": 0}


def test_reported_usage_then_estimate_with_overhead_after_compacting() -> None:
    msgs = [user("q1"), assistant("a1", usage=used(1_000)), user("q2"),
            assistant("a2", usage=used(5_000)), user("q3"), assistant("a3", usage=used(900)),
            user("q4"), assistant("a4")]  # fmt: skip
    result = run(conv(*msgs), "claude_code", params={"context_window": 36_000},
                 summarizer=Echo("short"))  # fmt: skip
    first, *rest = events(result, "compact")
    assert first.detail["usage_source"] == "reported" and first.detail["reported"] == 5_000
    # overhead = 1000 - (q1 1 + a1 1) = 998; later: 998 + summary + messages < 3000
    assert not rest
    step = result.steps[-1]
    assert result.steps[first.step].source_index == 5  # 5 000 + 1 >= 3 000
    assert step.source_index == 7 and step.context_indexes == [5, 6]


# -- prompt and summary message -------------------------------------------------------------


def test_prompt_is_byte_exact_and_shares_text_with_the_wire_capture() -> None:
    prompt = rules.compact_prompt("2.1.88")
    assert prompt.startswith(rules.NO_TOOLS_PREAMBLE + "Your task is to create a detailed")
    assert prompt.endswith("</example>\n" + rules.NO_TOOLS_TRAILER)
    assert len(rules.BASE_COMPACT_PROMPT) == 5030 and len(rules.NO_TOOLS_PREAMBLE) == 379
    captured = json.loads(TRACE.read_text())["messages"][-1]["content"][0]["text"]
    head = captured[: captured.index("Before providing")]
    tail = captured[captured.index("Please provide your summary based") :]
    assert rules.BASE_COMPACT_PROMPT.startswith(head) and rules.BASE_COMPACT_PROMPT.endswith(tail)
    old = rules.compact_prompt("2.0")
    assert old == rules.BASE_COMPACT_PROMPT_V20 and "\n6. Pending Tasks:" in old
    assert "\n  - Errors that you ran into" in old and "CRITICAL" not in old


@pytest.mark.parametrize(
    ("version", "instructions", "suffix"),
    [
        ("2.1.88", "focus on tests", "\n\nAdditional Instructions:\nfocus on tests"),
        ("2.1.88", "   ", ""),  # blank: nothing appended
        ("2.0", "focus on tests", "\n\nAdditional Instructions:\nfocus on tests"),
    ],
)
def test_custom_instructions(version: str, instructions: str, suffix: str) -> None:
    trailer = rules.NO_TOOLS_TRAILER if version == "2.1.88" else ""
    base = rules.compact_prompt(version)
    assert (
        rules.compact_prompt(version, instructions) == base.removesuffix(trailer) + suffix + trailer
    )


def test_summary_message_text() -> None:
    raw = "<analysis>draft</analysis>\n\n\n<summary>\n 1. Goal \n</summary>"
    new = rules.summary_message("2.1.88", raw, "~/.claude/projects/-w/s.jsonl")
    assert new == (
        "This session is being continued from a previous conversation that ran out of context."
        " The summary below covers the earlier portion of the conversation.\n\nSummary:\n1. Goal"
        "\n\nIf you need specific details from before compaction (like exact code snippets, "
        "error messages, or content you generated), read the full transcript at: "
        "~/.claude/projects/-w/s.jsonl" + rules.CONTINUE["2.1.88"]
    )
    old = rules.summary_message("2.0", raw)
    assert old.startswith("This session is being continued from a previous conversation that "
                          "ran out of context. The conversation is summarized below:\nAnalysis:"
                          "\ndraft\n\nSummary:\n1. Goal.\nPlease continue")  # fmt: skip


def test_compaction_request_and_injected_summary() -> None:
    summarizer = Echo()
    msgs = [system("S"), user("q1"), call("t1", "Read", file_path="/w/a.py"),
            tool_result("t1", "code"), assistant("a1", usage=used(2_000)), user("q2"),
            assistant("a2")]  # fmt: skip
    params = {"context_window": 34_000, "custom_instructions": "keep paths",
              "transcript_path": ""}  # fmt: skip
    result = run(conv(*msgs), "claude_code", params=params, summarizer=summarizer)
    compact = events(result, "compact")[0]
    assert {c.index: c.fate for c in compact.changes} == dict.fromkeys(range(1, 6), Fate.SUMMARISED)
    request = summarizer.requests[0]
    assert request.system == "S" and request.messages[-1].text.endswith(rules.NO_TOOLS_TRAILER)
    assert "Additional Instructions:\nkeep paths" in request.messages[-1].text
    assert "[tool_use Read]" in request.messages[1].text
    step = result.steps[compact.step]
    assert step.context_indexes == [0] and step.summary_id == compact.summary_id
    expected = rules.summary_message("2.1.88", summarizer.text)
    assert step.zones.summary == rough_tokens(expected) and "draft" not in expected
    old = run(conv(*msgs), "claude_code", params={**params, "prompt_version": "2.0"},
              summarizer=Echo())  # fmt: skip
    assert old.summaries[0].input.startswith("[system]\n" + rules.SUMMARY_SYSTEM)


def test_default_transcript_path_from_the_session_metadata() -> None:
    msgs = [user("q1"), assistant("a1", usage=used(5_000)), user("q2"), assistant("a2"),
            user("q3"), assistant("a3")]  # fmt: skip
    conversation = conv(*msgs)
    conversation = type(conversation)(
        id="t", title="t", messages=conversation.messages,
        metadata=(("session_id", "s-1"), ("cwd", "/Users/a/x.y")),
    )  # fmt: skip
    summarizer = Echo()
    run(conversation, "claude_code", params={"context_window": 34_000}, summarizer=summarizer)
    # the second compaction's request starts with the first summary message
    previous = summarizer.requests[1].messages[0].text
    assert previous.startswith("This session is being continued")
    # the agent quotes its absolute path: the home directory comes from the cwd
    path = "/Users/a/.claude/projects/-Users-a-x-y/s-1.jsonl\n"
    assert "read the full transcript at: " + path in previous


# -- failure path ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["raise", "error", "empty"])
def test_failing_or_empty_summary_keeps_context_and_trips_breaker(mode: str) -> None:
    msgs = [user("q")] + [m for k in range(5) for m in (assistant(f"a{k}", usage=used(5_000)),
                                                        user(f"q{k}"))] + [assistant("z")]  # fmt: skip
    result = run(conv(*msgs), "claude_code", params={"context_window": 34_000},
                 summarizer=FailingSummarizer(mode))  # type: ignore[arg-type]  # fmt: skip
    failed = events(result, "compact_failed")
    assert not events(result, "compact") and len(failed) == 3  # then the breaker stops it
    assert [e.detail["consecutive_failures"] for e in failed] == [1, 2, 3]
    assert failed[-1].detail["circuit_breaker"] is True
    if mode == "empty":
        assert failed[0].detail["error"].startswith("Failed to generate conversation summary")
    assert result.steps[-1].context_indexes == list(range(len(msgs) - 1))


# -- degenerate inputs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("msgs", "steps", "failed"),
    [
        ([], 0, 0),
        ([user("only a question")], 0, 0),
        # a negative threshold (window below the reserves): nothing to compact before "hi"
        ([system("S"), assistant("hi"), assistant("again")], 2, 1),
    ],
)
def test_degenerate_conversations(msgs: list[Message], steps: int, failed: int) -> None:
    result = run(conv(*msgs), "claude_code", params={"context_window": 1_000}, summarizer=Echo())
    assert len(result.steps) == steps
    assert len(events(result, "compact_failed")) == failed
    for event in events(result, "compact_failed"):
        assert event.detail["error"] == "Not enough messages to compact."


def test_orphan_tool_result_is_summarised() -> None:
    msgs = [user("go"), tool_result("ghost", "x" * 400), assistant("a", usage=used(999)),
            user("more"), assistant("b")]  # fmt: skip
    result = run(conv(*msgs), "claude_code", params={"context_window": 34_000},
                 summarizer=Echo())  # fmt: skip
    compact = events(result, "compact")[0]
    assert {c.index: c.fate for c in compact.changes}[1] is Fate.SUMMARISED


def test_original_compaction_pre_tokens_recorded() -> None:
    msgs = two_calls(5_000)
    conversation = conv(*msgs)
    conversation = type(conversation)(
        id="t", title="t", messages=conversation.messages,
        compactions=(OriginalCompaction(before_index=3, kind="compact_boundary",
                                        trigger="auto", pre_tokens=4_321),),
    )  # fmt: skip
    result = run(conversation, "claude_code", params={"context_window": 34_000},
                 summarizer=Echo())  # fmt: skip
    detail = events(result, "compact")[0].detail
    assert detail["original_pre_tokens"] == 4_321 and detail["original_before_index"] == 3


# -- registration and native config ---------------------------------------------------------


def test_registered_in_library_not_presets_and_native_config() -> None:
    assert "claude_code" in LIBRARY and "claude_code" not in PRESETS
    config = native_config("claude_code")
    assert config.filename == "settings.json"
    assert config.content == {"autoCompactEnabled": True}
    tuned = native_config(
        "claude_code", {"autocompact_pct_override": 70, "disable_auto_compact": True,
                        "auto_compact_window": 100_000},
    )  # fmt: skip
    assert tuned.content == {
        "autoCompactEnabled": True,
        "env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "70", "DISABLE_AUTO_COMPACT": "1",
                "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"},
    }  # fmt: skip


# -- golden replay over a real Claude Code session ------------------------------------------


def test_golden_claude_code_session_compacts_twice() -> None:
    conversation = cli.load_file(SESSION)
    result = run(conversation, "claude_code", params={"context_window": 60_000})
    first, second = events(result, "compact")
    # threshold 60 000 - 20 000 - 13 000 = 27 000. Before message 10: the usage reported by
    # message 8 (5 + 17 896 + 14 182 + 1 = 32 084) >= 27 000; CLI 2.0.x checks the usage alone
    # (``estimate_after``: the Grep result 9 is not added). Its output (1) is the stream's
    # first line: CLI 2.0.27 counted the final output, estimated as message 8's own 42
    # tokens: 32 125, known to lie in 32 084 .. 32 084 + 32 000.
    assert result.steps[first.step].source_index == 10
    assert first.detail["usage_source"] == "reported" and first.detail["tokens"] == 32_125
    assert first.detail["estimated_tail"] == 0
    assert first.detail["count_range"] == [32_084, 64_084]
    assert sorted(c.index for c in first.changes) == list(range(10))
    # Then the estimate: overhead = 17 751 (first usage) - 172 (messages 0-4) = 17 579, plus
    # the (offline) summary in the 2.0 summary message (the transcript is CLI 2.0.27) and
    # messages 10..41 reach 27 615 before message 42.
    assert first.detail["rules_version"] == "2.0.27" and first.detail["prompt_version"] == "2.0"
    assert second.detail["usage_source"] == "estimate" and second.detail["overhead"] == 17_579
    assert result.steps[second.step].source_index == 42 and second.detail["tokens"] == 27_615
    assert sorted(c.index for c in second.changes) == list(range(10, 42))
    assert result.steps[second.step].context_indexes == []
    assert not events(result, "compact_failed") and not result.summaries[1].error
