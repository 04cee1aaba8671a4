"""Codex CLI compaction: rules from compact.rs / truncate.rs tests, strategy edge cases, golden."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import EchoSummarizer, assistant, call, conv, events_of, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role, Usage
from ctxlab.engine.core.records import Fate
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS
from ctxlab.engine.strategies import _codex_rules as rules
from ctxlab.engine.strategies.codex import CodexStrategy
from ctxlab.engine.summarize.offline import FailingSummarizer

P = rules.TruncationPolicy
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus" / "codex-rollout"
ROLLOUT = CORPUS / "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"


# -- approx_token_count: ceil(utf8 bytes / 4) ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("é", 1), ("😀", 1), ("😀a", 2), ("中文字", 3)],
)
def test_approx_token_count_is_ceil_of_utf8_bytes(text: str, tokens: int) -> None:
    assert rules.approx_token_count(text) == tokens


# -- truncate_text (truncate.rs tests) -----------------------------------------------------------

LONG = "this is an example of a long output that should be truncated"
EMOJI = "😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n"


@pytest.mark.parametrize(
    ("text", "policy", "expected"),
    [
        ("short output", P("tokens", 100), "short output"),  # under the limit
        ("abcdef", P("tokens", 0), "…2 tokens truncated…"),  # zero limit: marker only
        ("example output", P("tokens", 10), "example output"),
        ("example output", P("bytes", 20), "example output"),
        (LONG, P("tokens", 5), "this is an…10 tokens truncated… truncated"),
        (LONG, P("bytes", 30), "this is an exam…30 chars truncated…ld be truncated"),
        (EMOJI, P("tokens", 8), "😀😀😀😀…8 tokens truncated… line with text\n"),  # whole chars
        (EMOJI, P("bytes", 20), "😀😀…21 chars truncated…with text\n"),
        ("", P("tokens", 4), ""),
    ],
)
def test_truncate_middle(text: str, policy: rules.TruncationPolicy, expected: str) -> None:
    assert rules.truncate_text(text, policy) == expected
    assert "\ufffd" not in rules.truncate_text(text, policy)


@pytest.mark.parametrize(
    ("text", "head", "tail", "expected"),
    [
        ("hello world", 5, 5, (1, "hello", "world")),
        ("abc", 0, 0, (3, "", "")),
        ("", 4, 4, (0, "", "")),
        ("abcdef", 3, 0, (3, "abc", "")),
        ("abcdef", 0, 3, (3, "", "def")),
        ("abcdef", 4, 4, (0, "abcd", "ef")),
        ("😀abc😀", 5, 5, (1, "😀a", "c😀")),
        ("😀😀😀😀😀", 1, 1, (5, "", "")),
        ("😀😀😀😀😀", 7, 7, (3, "😀", "😀")),
        ("😀😀😀😀😀", 8, 8, (1, "😀😀", "😀😀")),
    ],
)
def test_split_string(text: str, head: int, tail: int, expected: tuple[int, str, str]) -> None:
    assert rules.split_string(text, head, tail) == expected


def test_policy_budgets_and_serialization_multiplier() -> None:
    assert P("tokens", 10_000).mul(1.2) == P("tokens", 12_000)
    assert P("bytes", 7).mul(1.2) == P("bytes", 9)  # rounds up
    assert P("tokens", 5).byte_budget() == 20 and P("bytes", 9).token_budget() == 3


def test_legacy_formatter_lines_and_bytes() -> None:
    lines = "".join(f"{i}\n" for i in range(300))
    out = rules.format_output_for_model_body(lines)
    assert out.startswith("Total output lines: 300\n\n0\n1\n")
    assert "\n[... omitted 44 of 300 lines ...]\n\n" in out and out.endswith("299\n")
    one = "x" * 20_000
    out = rules.format_output_for_model_body(one)
    marker = "\n[... output truncated to fit 10240 bytes ...]\n\n"
    # one segment: it is all head (5 120 bytes); the tail slice is empty (tail_take 0)
    assert out == "Total output lines: 1\n\n" + "x" * 5_120 + marker
    assert rules.format_output_for_model_body("ok\n") == "ok\n"


# -- build_compacted_history (compact.rs tests) --------------------------------------------------


def test_build_token_limited_compacted_history_truncates_overlong_user_messages() -> None:
    big = "word " * 200
    history = rules.build_compacted_history([], [big], "SUMMARY", max_tokens=16)
    assert len(history) == 2
    assert "tokens truncated" in history[0] and big not in history[0]
    assert history[1] == "SUMMARY"


def test_build_token_limited_compacted_history_appends_summary_message() -> None:
    history = rules.build_compacted_history([], ["first user message"], "summary text")
    assert history[-1] == "summary text"


@pytest.mark.parametrize(
    ("users", "limit", "kept"),
    [
        ([], 20, []),  # no user messages
        (["a" * 8, "b" * 8, "c" * 8], 4, [(1, "b" * 8), (2, "c" * 8)]),  # exact fit, stop at 0
        (["a" * 8, "b" * 40], 4, [(1, "bbbbbbbb…6 tokens truncated…bbbbbbbb")]),  # huge newest
        (["a" * 8, "b" * 8], 0, []),  # limit 0 keeps none
        (
            ["x" * 12, "y" * 4],
            3,
            [(0, "xxxx…1 tokens truncated…xxxx"), (1, "yyyy")],
        ),  # order restored
    ],
)
def test_select_user_messages(users: list[str], limit: int, kept: list[tuple[int, str]]) -> None:
    assert rules.select_user_messages(users, limit) == kept


def test_summary_text_prefix_and_empty_summary() -> None:
    assert rules.SUMMARY_PREFIX.endswith("use the information in this summary to  assist with "
                                         "your own analysis:")  # fmt: skip
    assert len(rules.SUMMARY_PREFIX) == 400 and len(rules.PROMPT_GOAL) == 450
    assert rules.summary_text("S") == rules.SUMMARY_PREFIX + "\nS"
    assert rules.is_summary_message(rules.summary_text(""))
    assert rules.build_compacted_history([], [], "") == ["(no summary available)"]
    assert "- Goal / user objective\n" not in rules.PROMPT_NO_GOAL


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        ("# AGENTS.md instructions for project\n\n<INSTRUCTIONS>\ndo\n</INSTRUCTIONS>", True),
        ("<ENVIRONMENT_CONTEXT>cwd=/tmp</ENVIRONMENT_CONTEXT>", True),
        ("  <user_instructions>x</user_instructions>", True),
        ("real user message", False),
    ],
)
def test_collect_user_messages_filters_session_prefix_entries(text: str, prefix: bool) -> None:
    assert rules.is_session_prefix(text) is prefix


# -- the strategy --------------------------------------------------------------------------------


def used(total: int) -> Usage:
    return Usage(input_uncached=total)


Echo = EchoSummarizer


events = events_of


def fates(event) -> dict[int, Fate]:  # type: ignore[no-untyped-def]
    return {c.index: c.fate for c in event.changes}


def three_turns(reported: int) -> list[Message]:
    return [
        system("S"),
        user("<environment_context>cwd=/w</environment_context>", flags=frozenset({"meta"})),
        user("first task"),  # 2
        assistant("a1", usage=used(10)),  # 3
        user("old summary", flags=frozenset({"compact_summary"})),  # 4: the original's
        user("second task"),  # 5
        assistant("a2", usage=used(reported)),  # 6
        user("third task"),  # 7
        assistant("a3"),  # 8: the request that is checked
    ]


@pytest.mark.parametrize(("reported", "fires"), [(899, False), (900, True), (901, True)])
def test_trigger_is_greater_or_equal_on_reported_usage(reported: int, fires: bool) -> None:
    msgs = three_turns(reported)
    msgs[4] = user("plain")  # no original compaction: reported usage stays valid
    result = run(conv(*msgs), "codex", params={"model_context_window": 1000}, summarizer=Echo())
    compacts = events(result, "compact")
    assert bool(compacts) is fires
    if fires:
        assert compacts[0].detail["usage_source"] == "reported"
        assert compacts[0].detail["total_tokens"] == reported and compacts[0].detail["limit"] == 900


def test_reasoning_tokens_are_not_counted_and_explicit_limit_wins() -> None:
    msgs = three_turns(0)
    msgs[4] = user("plain")
    msgs[6] = assistant("a2", usage=Usage(input_uncached=80, output=30, reasoning=20))
    params = {"model_auto_compact_token_limit": 90}
    assert events(run(conv(*msgs), "codex", params=params, summarizer=Echo()), "compact")
    params = {"model_auto_compact_token_limit": 91}
    assert not events(run(conv(*msgs), "codex", params=params, summarizer=Echo()), "compact")


def test_compaction_keeps_initial_context_and_real_user_messages() -> None:
    summarizer = Echo("SUM")
    # estimates: 17, 24, 28 before messages 3, 6, 8: only the last request compacts
    result = run(conv(*three_turns(0)), "codex", params={"model_auto_compact_token_limit": 28},
                 summarizer=summarizer)  # fmt: skip
    assert len(events(result, "compact")) == 1
    compact = events(result, "compact")[0]
    assert compact.detail["usage_source"] == "estimate"  # the original compacted (index 4)
    assert fates(compact) == {3: Fate.SUMMARISED, 4: Fate.SUMMARISED, 6: Fate.SUMMARISED}
    step = result.steps[compact.step]
    assert step.context_indexes == [0, 1, 2, 5, 7]  # system, env, user messages, no summary 4
    assert result.summaries[0].output == "SUM"
    assert compact.detail["kept_user_messages"] == 3 and compact.detail["initial_context"] == 1
    warning = events(result, "warning")[0]
    assert warning.detail["message"] == rules.WARNING and not warning.changes
    request = summarizer.requests[0]
    assert request.messages[-1].text == rules.PROMPT_GOAL and request.system == "S"


def test_summary_message_is_prefix_newline_summary_and_empty_reply_is_not_a_failure() -> None:
    msgs = three_turns(0)
    params = {"model_auto_compact_token_limit": 1}
    result = run(conv(*msgs), "codex", params=params, summarizer=Echo("the summary"))
    compact = events(result, "compact")[0]
    assert result.steps[compact.step].summary_id == compact.summary_id
    summary_tokens = rules.approx_token_count(rules.SUMMARY_PREFIX + "\nthe summary")
    assert result.steps[compact.step].zones.summary == summary_tokens
    result = run(conv(*msgs), "codex", params=params, summarizer=FailingSummarizer("empty"))
    assert events(result, "compact")[0].detail["summary_empty"] is True
    assert not events(result, "compact_failed")


@pytest.mark.parametrize("mode", ["raise", "error"])
def test_failing_summariser_leaves_history_unchanged(mode: str) -> None:
    msgs = three_turns(0)
    result = run(conv(*msgs), "codex", params={"model_auto_compact_token_limit": 1},
                 summarizer=FailingSummarizer(mode))  # type: ignore[arg-type]  # fmt: skip
    failed = events(result, "compact_failed")
    assert failed and not events(result, "compact") and not events(result, "warning")
    assert failed[0].detail["retries"] == rules.DEFAULT_STREAM_MAX_RETRIES
    assert result.steps[-1].context_indexes == list(range(8))


def test_one_huge_user_message_is_truncated_to_the_budget() -> None:
    huge = "h" * 400  # 100 tokens
    msgs = [system("S"), user(huge), assistant("a", usage=used(500)), user("q"), assistant("b")]
    params = {"model_auto_compact_token_limit": 102, "compact_user_message_max_tokens": 20}
    result = run(conv(*msgs), "codex", params=params, summarizer=Echo())
    compact = events(result, "compact")[0]
    change = next(c for c in compact.changes if c.index == 1)
    assert change.fate is Fate.TRUNCATED and change.message is not None
    # "q" (newest, 1 token) first; 19 tokens = 76 bytes, halves of 38, (400 - 76) / 4 = 81
    # removed; the marker comes on top of the budget, as in Codex
    assert change.message.text == "h" * 38 + "…81 tokens truncated…" + "h" * 38
    assert fates(compact)[2] is Fate.SUMMARISED and 3 not in fates(compact)  # "q" kept whole


def test_compaction_request_overflow_drops_oldest_items() -> None:
    msgs = [system("S"), user("task"), call("t1", cmd="x"), tool_result("t1", "o" * 4000),
            assistant("a", usage=used(5000)), user("next"), assistant("b")]  # fmt: skip
    # the trigger (reported 5 000) fires before "b"; the request (~1 007 tokens of items)
    # is over 1 000 - system - prompt, so task, the call and its output go first
    params = {"model_context_window": 1000, "model_auto_compact_token_limit": 5000,
              "truncation_policy": "none"}  # fmt: skip
    summarizer = Echo()
    result = run(conv(*msgs), "codex", params=params, summarizer=summarizer)
    compact = events(result, "compact")[0]
    assert compact.detail["trimmed_items"] == 3  # task, the call, its 1 000-token output
    assert compact.detail["notice"].startswith("Trimmed 3 older conversation item(s)")
    assert fates(compact) == {2: Fate.DROPPED, 3: Fate.DROPPED, 4: Fate.SUMMARISED}
    assert [m.index for m in summarizer.requests[0].material] == [4, 5]
    assert result.steps[compact.step].context_indexes == [0, 1, 5]  # "task" is still kept


def test_prompt_alone_too_big_fails_with_context_window_exceeded() -> None:
    msgs = [system("S" * 4000), user("task"), assistant("a", usage=used(5000)), assistant("b")]
    result = run(conv(*msgs), "codex", params={"model_context_window": 1000}, summarizer=Echo())
    failed = events(result, "compact_failed")[0]
    assert failed.detail["error"] == "ContextWindowExceeded"


@pytest.mark.parametrize(
    ("msgs", "steps"),
    [
        ([], 0),  # empty conversation
        ([user("only a question")], 0),  # nothing after the last request
        ([system("S"), assistant("hi", usage=used(10**6)), assistant("again")], 2),  # no users
    ],
)
def test_degenerate_conversations(msgs: list[Message], steps: int) -> None:
    result = run(conv(*msgs), "codex", summarizer=Echo())
    assert len(result.steps) == steps
    for event in events(result, "compact"):
        assert event.detail["kept_user_messages"] == 0


def test_orphan_tool_result_is_summarised_and_outputs_truncated_when_recorded() -> None:
    out = "line\n" * 20_000  # 100 000 bytes > 12 000 tokens x 4
    msgs = [system("S"), user("go"), tool_result("ghost", out), assistant("a", usage=used(100)),
            user("more"), assistant("b")]  # fmt: skip
    result = run(conv(*msgs), "codex", params={"model_auto_compact_token_limit": 100},
                 summarizer=Echo())  # fmt: skip
    truncate = events(result, "truncate")[0]
    assert truncate.detail["budget"] == "tokens:12000"
    new = truncate.changes[0].message
    assert new is not None and "tokens truncated…" in new.text
    assert len(new.text.encode()) <= 48_000 + 40
    assert fates(events(result, "compact")[0])[2] is Fate.SUMMARISED


@pytest.mark.parametrize(
    ("params", "budget"),
    [
        ({"truncation_policy": "bytes"}, "bytes:12000"),
        ({"truncation_policy": "bytes", "tool_output_token_limit": 100}, "bytes:480"),
        ({"tool_output_token_limit": 100}, "tokens:120"),
        ({"truncation_policy": "lines_bytes"}, "10240 bytes / 256 lines"),
    ],
)
def test_tool_output_policies(params: dict[str, object], budget: str) -> None:
    msgs = [system("S"), user("go"), call("t"), tool_result("t", "z\n" * 30_000), assistant("a")]
    result = run(conv(*msgs), "codex", params=params, summarizer=Echo())
    assert events(result, "truncate")[0].detail["budget"] == budget


def test_multibyte_estimate_is_ceil_of_bytes_per_block() -> None:
    strategy = CodexStrategy()
    message = Message(
        Role.USER, (Block(BlockKind.TEXT, text="😀"), Block(BlockKind.TEXT, text="é"))
    )
    assert strategy.count_message(message) == 2  # 4 bytes -> 1, 2 bytes -> 1


@pytest.mark.parametrize(
    ("params", "limit"),
    [({}, 244_800), ({"auto_compact_default": "fixed_256000"}, 256_000),
     ({"model_context_window": 30_000}, 27_000), ({"model_auto_compact_token_limit": 5}, 5)],
)  # fmt: skip
def test_auto_compact_limit(params: dict[str, object], limit: int) -> None:
    assert CodexStrategy(params).auto_compact_limit() == limit


def test_registered_in_library_not_presets_and_native_config() -> None:
    assert "codex" in LIBRARY and "codex" not in PRESETS
    config = native_config("codex", {"model_context_window": 30_000, "tool_output_token_limit": 50})
    assert config.filename == "config.toml"
    assert config.content == {"model_context_window": 30_000, "tool_output_token_limit": 50}
    assert config.text == "model_context_window = 30000\ntool_output_token_limit = 50\n"
    full = native_config("codex", {"model_auto_compact_token_limit": 200_000})
    assert full.content["model_auto_compact_token_limit"] == 200_000


# -- golden replay over a real Codex rollout -----------------------------------------------------


def test_golden_codex_rollout_compacts_once_keeping_env_and_task() -> None:
    conversation = cli.load_file(ROLLOUT)
    result = run(conversation, "codex", params={"model_context_window": 30_000})
    # Message 0 is the <environment_context> (meta), 1 the only typed request before the
    # trigger; the reported usage of the response before message 68 is the first >= 27 000.
    compacts = events(result, "compact")
    assert len(compacts) == 1 and len(events(result, "warning")) == 1
    compact = compacts[0]
    assert result.steps[compact.step].source_index == 68
    assert compact.detail["usage_source"] == "reported" and compact.detail["limit"] == 27_000
    assert compact.detail["total_tokens"] >= 27_000
    assert compact.detail["kept_user_messages"] == 1 and compact.detail["initial_context"] == 1
    # everything else live (68 messages, 0..67) is summarised: 66 messages
    assert sum(1 for f in fates(compact).values() if f is Fate.SUMMARISED) == 66
    assert result.steps[compact.step].context_indexes == [0, 1]
    assert not result.summaries[0].error
