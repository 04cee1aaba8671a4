"""PicoClaw legacy context manager: estimator, boundaries, compression, summarisation."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role, ToolDef
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _picoclaw_budget as pb
from ctxlab.engine.strategies._picoclaw_budget import PicoMsg, PicoToolCall
from ctxlab.engine.summarize.offline import FailingSummarizer

# -- tiny builders (as context_budget_test.go has them) ----------------------------------------


def msg_user(content: str = "u") -> PicoMsg:
    return PicoMsg("user", content)


def msg_assistant(content: str = "a") -> PicoMsg:
    return PicoMsg("assistant", content)


def msg_assistant_tc(*ids: str) -> PicoMsg:
    return PicoMsg("assistant", "", tool_calls=tuple(PicoToolCall(i, "exec", "{}") for i in ids))


def msg_tool(call_id: str, content: str = "r") -> PicoMsg:
    return PicoMsg("tool", content, tool_call_id=call_id)


# -- estimator -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        pytest.param(PicoMsg("user", ""), 12 * 2 // 5, id="overhead-only"),
        pytest.param(PicoMsg("user", "abc"), 15 * 2 // 5, id="ascii"),
        pytest.param(PicoMsg("user", "中文字"), 15 * 2 // 5, id="multibyte-counts-runes"),
        pytest.param(
            PicoMsg("tool", "", tool_call_id="中"), (12 + 3) * 2 // 5, id="id-counts-bytes"
        ),
        pytest.param(
            PicoMsg("assistant", "", tool_calls=(PicoToolCall("c1", "ls", '{"p":"é"}'),)),
            (12 + 2 + 8 + 2 + 10) * 2 // 5,
            id="tool-call-bytes",
        ),
        pytest.param(PicoMsg("assistant", "x", reasoning="yy"), 15 * 2 // 5, id="reasoning"),
        pytest.param(PicoMsg("user", "", media=2), 4 + 512, id="media-256-each"),
        pytest.param(
            PicoMsg("system", "ab\n\n---\n\ncd", system_parts=("ab", "cd")),
            (4 + 40 + 12) * 2 // 5,
            id="system-parts-larger",
        ),
    ],
)
def test_estimate_message_tokens(msg: PicoMsg, expected: int) -> None:
    assert pb.estimate_message_tokens(msg) == expected


def test_estimate_ceil4_variant() -> None:
    assert pb.estimate_message_tokens(PicoMsg("user", "a"), "ceil(chars/4)") == 4  # ceil(13/4)


def test_go_json_marshal_sorts_compacts_and_escapes_html() -> None:
    value = {"b": 1.0, "a": ["<x>", "&", "é"], "c": {"z": None, "y": True}}
    assert pb.go_json_marshal(value) == (
        '{"a":["\\u003cx\\u003e","\\u0026","é"],"b":1,"c":{"y":true,"z":null}}'
    )


def test_estimate_tool_defs_sums_then_divides() -> None:
    defs = [ToolDef("ab", "cd", {"type": "object"}), ToolDef("e", "", None)]
    chars = (2 + 2 + len('{"type":"object"}') + 20) + (1 + 0 + 20)
    assert pb.estimate_tool_defs_tokens(defs) == chars * 2 // 5
    assert pb.estimate_tool_defs_tokens([]) == 0


@pytest.mark.parametrize(
    ("window", "over"),
    [pytest.param(100, False, id="equal-is-within"), pytest.param(99, True, id="one-less-is-over")],
)
def test_is_over_context_budget_strictly_greater(window: int, over: bool) -> None:
    msgs = [PicoMsg("user", "x" * 38)]  # (38+12)*2/5 = 20
    assert pb.is_over_context_budget(window, msgs, tool_tokens=30, max_tokens=50) is over


# -- adapter ---------------------------------------------------------------------------------


def test_to_pico_splits_claude_tool_results_into_tool_messages() -> None:
    source = Message(
        Role.USER,
        (
            Block(BlockKind.TOOL_RESULT, tool_id="t1", text="r1"),
            Block(BlockKind.TOOL_RESULT, tool_id="t2", text="r2"),
        ),
    )
    out = pb.to_pico(5, source)
    assert [(m.role, m.tool_call_id, m.content, m.src) for m in out] == [
        ("tool", "t1", "r1", 5),
        ("tool", "t2", "r2", 5),
    ]


def test_to_pico_assistant_keeps_reasoning_and_marshals_arguments() -> None:
    source = Message(
        Role.ASSISTANT,
        (
            Block(BlockKind.THINKING, text="hmm"),
            Block(BlockKind.TEXT, text="ok"),
            Block(BlockKind.TOOL_USE, tool_id="c", tool_name="ls", tool_input={"b": 2, "a": 1}),
        ),
    )
    (out,) = pb.to_pico(0, source)
    assert out.reasoning == "hmm" and out.content == "ok"
    assert out.tool_calls == (PicoToolCall("c", "ls", '{"a":1,"b":2}'),)


# -- boundaries (TestParseTurnBoundaries / TestFindSafeBoundary*) -------------------------------


def test_parse_turn_boundaries() -> None:
    h = [msg_user(), msg_assistant_tc("1"), msg_tool("1"), msg_assistant(), msg_user()]
    assert pb.parse_turn_boundaries(h) == [0, 4]


@pytest.mark.parametrize(
    ("history", "target", "expected"),
    [
        pytest.param([], 3, 0, id="empty"),
        pytest.param([msg_user(), msg_assistant()], 0, 0, id="target-zero"),
        pytest.param([msg_user(), msg_assistant()], 5, 2, id="target-past-end"),
        pytest.param(
            [msg_user(), msg_assistant(), msg_user(), msg_assistant()], 2, 2, id="already-safe"
        ),
        pytest.param(
            [msg_user(), msg_assistant_tc("1"), msg_tool("1"), msg_user(), msg_assistant()],
            2,
            3,
            id="single-user-before-forward-scan",
        ),
        pytest.param(
            [
                msg_user(),
                msg_assistant(),
                msg_user(),
                msg_assistant_tc("1"),
                msg_tool("1"),
                msg_tool("2"),
                msg_assistant(),
            ],
            5,
            2,
            id="backward-skips-tool-sequence",
        ),
        pytest.param(
            [msg_user(), msg_assistant_tc("1"), msg_tool("1"), msg_assistant()],
            2,
            0,
            id="single-turn-returns-zero",
        ),
        pytest.param(
            [msg_assistant(), msg_assistant(), msg_assistant()], 1, 1, id="no-user-returns-target"
        ),
    ],
)
def test_find_safe_boundary(history: list[PicoMsg], target: int, expected: int) -> None:
    assert pb.find_safe_boundary(history, target) == expected


def test_find_safe_boundary_single_turn_returns_zero_for_plan() -> None:
    # A single user message at 0: summarisation cannot cut safely.
    h = [
        msg_user(),
        msg_assistant_tc("1"),
        msg_tool("1"),
        msg_assistant_tc("2"),
        msg_tool("2"),
        msg_assistant(),
    ]
    assert pb.plan_summary(h, context_window=1000) is None


# -- sanitizer -------------------------------------------------------------------------------


def test_sanitize_drops_orphans_and_unanswered_calls() -> None:
    h = [
        PicoMsg("system", "s"),
        msg_tool("x"),  # leading orphan
        msg_assistant_tc("0"),  # tool call at start
        msg_user("q"),
        msg_assistant_tc("1", "2"),
        msg_tool("1"),
        msg_tool("1"),  # duplicate
        msg_tool("2"),
        msg_tool(""),  # id-less
        msg_assistant("a"),
        msg_assistant_tc("3"),  # predecessor is assistant: dropped
        msg_tool("3"),
        msg_user("q2"),
        msg_assistant_tc("4"),  # never answered
    ]
    out = pb.sanitize_history(h)
    assert [(m.role, m.tool_call_id or m.content) for m in out] == [
        ("user", "q"),
        ("assistant", ""),
        ("tool", "1"),
        ("tool", "2"),
        ("assistant", "a"),
        ("user", "q2"),
    ]


def test_build_system_injects_summary_part() -> None:
    sysmsg = pb.build_system("PROMPT", "S")
    assert sysmsg.content == "PROMPT\n\n---\n\n" + pb.SUMMARY_PREFIX + "S"
    assert sysmsg.content.split("\n\n---\n\n")[1].startswith(
        "CONTEXT_SUMMARY: The following is an approximate summary of prior conversation for "
        "reference only. It may be incomplete or outdated — always defer to explicit "
        "instructions.\n\n"
    )
    assert pb.build_system("PROMPT", "").system_parts == ("PROMPT",)


# -- forceCompression (TestLegacyCompact_*) ----------------------------------------------------


def test_force_compression_too_short() -> None:
    assert pb.force_compression([msg_user(), msg_assistant()], "") is None


@pytest.mark.parametrize(
    ("turns", "dropped_turns"),
    [
        pytest.param(5, 2, id="5-drops-2"),
        pytest.param(4, 2, id="4-drops-2"),
        pytest.param(3, 1, id="3-drops-1"),
    ],
)
def test_force_compression_drops_floor_half_of_turns(turns: int, dropped_turns: int) -> None:
    h = [m for i in range(turns) for m in (msg_user(f"q{i}"), msg_assistant(f"a{i}"))]
    res = pb.force_compression(h, "")
    assert res is not None
    assert len(res.dropped) == 2 * dropped_turns
    n = 2 * dropped_turns
    assert (
        res.summary == f"[Emergency compression dropped {n} oldest messages due to context limit]"
    )


def test_force_compression_single_turn_keeps_last_user_message() -> None:
    h = [msg_user("only"), msg_assistant_tc("1"), msg_tool("1"), msg_assistant("a")]
    res = pb.force_compression(h, "prev")
    assert res is not None
    assert res.kept == (msg_user("only"),)
    assert (
        res.summary
        == "prev\n\n[Emergency compression dropped 3 oldest messages due to context limit]"
    )


def test_trim_history_drops_oldest_turns_then_clears() -> None:
    h = [msg_user("x" * 50), msg_assistant("y" * 50), msg_user("z" * 50), msg_assistant("w" * 50)]

    def build(hist: object) -> list[PicoMsg]:
        return [PicoMsg("system", "s"), *hist, msg_user("now")]  # type: ignore[misc]

    def over_limit(limit: int):  # type: ignore[no-untyped-def]
        return lambda msgs: pb.estimate_messages(msgs) > limit

    hist, _, fit = pb.trim_history_to_fit(h, build, over_limit(70))
    assert fit and hist == h[2:]
    hist, msgs, fit = pb.trim_history_to_fit(h, build, over_limit(5))
    assert not fit and hist == [] and msgs[-1] == msg_user("now")


# -- summarisation ---------------------------------------------------------------------------


def test_should_summarize_message_count_and_token_threshold() -> None:
    h = [msg_user()] * 21
    assert pb.should_summarize(h, context_window=10**9)[0]
    h = [msg_user("x" * 100)] * 2  # 2 * (112*2//5=44) = 88
    fire, tokens, threshold = pb.should_summarize(h, context_window=117)
    assert (fire, tokens, threshold) == (True, 88, 87)
    assert not pb.should_summarize(h, context_window=118)[0]  # 118*75//100 = 88: not >


def test_plan_summary_omits_oversized_and_skips_tools() -> None:
    h = [
        msg_user("q" * 300),  # 300//2 = 150 > 200//2 = 100: omitted
        msg_assistant_tc("1"),
        msg_tool("1"),
        msg_assistant("a"),
        msg_user("q2"),
        msg_assistant("b"),
        msg_user("q3"),
        msg_assistant("c"),
    ]
    plan = pb.plan_summary(h, context_window=200)
    assert plan is not None
    assert (plan.cut, plan.keep, plan.omitted) == (4, 4, True)
    assert [m.content for m in plan.valid] == ["", "a"]


def test_split_batches_moves_mid_to_user_and_batch_prompt_format() -> None:
    valid = [m for i in range(6) for m in (msg_user(f"u{i}"), msg_assistant(f"a{i}"))]
    first, second = pb.split_batches(valid)
    assert len(first) == 6 and second[0].role == "user"
    assert pb.batch_prompt([msg_user("hi")], "S") == (
        "Provide a concise summary of this conversation segment, preserving core context and key "
        "points.\nExisting context: S\n\nCONVERSATION:\nuser: hi\n"
    )


def test_fallback_batch_summary_cuts_runes() -> None:
    text = pb.fallback_batch_summary([msg_user(" " + "é" * 300 + " "), msg_assistant("")])
    assert text == "Conversation summary: user: " + "é" * 200 + "... | assistant: "


# -- replay (strategy wired into the engine) ---------------------------------------------------


def _conv(turns: int, result_chars: int = 100) -> Conversation:
    def text(role: Role, t: str) -> Message:
        return Message(role, (Block(BlockKind.TEXT, text=t),))

    msgs = [text(Role.SYSTEM, "sys")]
    for k in range(turns):
        use = Block(BlockKind.TOOL_USE, tool_id=f"t{k}", tool_name="sh", tool_input={"c": k})
        res = Block(BlockKind.TOOL_RESULT, tool_id=f"t{k}", text="x" * result_chars)
        msgs += [
            text(Role.USER, f"please do task {k} in /src/f{k}.py"),
            Message(Role.ASSISTANT, (use,)),
            Message(Role.TOOL, (res,)),
            text(Role.ASSISTANT, f"decided to use plan {k}"),
        ]
    return Conversation("c", "t", tuple(msgs))


def test_replay_post_turn_summary_lands_next_request_and_keeps_last_four() -> None:
    res = run(_conv(12), "picoclaw")
    first = next(e for e in res.events if e.kind == "summarise")
    assert first.detail["messages"] == 24  # > 20 after six turns
    step = res.steps[first.step]
    assert step.summary_id == first.summary_id is not None
    # the last 4 session messages (turn 5) + the new user message remain
    assert step.context == ((0, 1), (21, step.source_index))
    fates = {c.fate for c in first.changes}
    assert fates == {Fate.SUMMARISED, Fate.DROPPED}  # tool messages never reach the summariser
    assert first.detail["batches"] == 2 and not first.detail["previous_summary_discarded"]


def test_replay_split_path_discards_previous_summary() -> None:
    res = run(_conv(20), "picoclaw")
    later = [e for e in res.events if e.kind == "summarise"][1:]
    assert later
    assert any(e.detail["batches"] == 1 for e in later) or any(
        e.detail["previous_summary_discarded"] for e in later
    )
    merge = [s for s in res.summaries if s.input.startswith("[user]\nMerge these two")]
    assert merge


def test_replay_proactive_budget_force_compression_and_note() -> None:
    res = run(
        _conv(8, 3000),
        "picoclaw",
        params={"max_tokens": 500, "context_window": 5000, "enable_summary": False},
    )
    comp = next(e for e in res.events if e.kind == "force_compression")
    assert comp.detail["dropped_messages"] == 8 and comp.detail["remaining_messages"] == 8
    assert {c.fate for c in comp.changes} == {Fate.DROPPED}
    assert res.steps[comp.step].tokens.strategy < res.steps[comp.step - 1].tokens.strategy


def test_replay_request_local_trim_when_compression_is_not_enough() -> None:
    res = run(
        _conv(4, 9800),
        "picoclaw",
        params={"max_tokens": 100, "context_window": 4000, "enable_summary": False},
    )
    kinds = [e.kind for e in res.events]
    assert "trim" in kinds
    trim = next(e for e in res.events if e.kind == "trim")
    assert trim.detail["fit"] in (True, False)
    # the current user message is never trimmed
    assert res.steps[trim.step].context_indexes[-1] == res.steps[trim.step].source_index - 1


def test_replay_request_local_trim_ends_with_its_turn() -> None:
    """The session keeps what a trim hid: the next turn's request is rebuilt from it (the
    messages come back, ``restored``), and only then compressed again."""
    res = run(
        _conv(4, 9800),
        "picoclaw",
        params={"max_tokens": 100, "context_window": 4000, "enable_summary": False},
    )
    trim = next(e for e in res.events if e.kind == "trim")
    trimmed = {c.index for c in trim.changes}
    restore = next(e for e in res.events if e.kind == "restore_request")
    assert restore.step > trim.step
    assert {c.index for c in restore.changes} == trimmed
    assert {c.fate for c in restore.changes} == {Fate.RESTORED}
    # within the trimmed turn the messages stay out of every request ...
    for step in res.steps[trim.step : restore.step]:
        assert trimmed.isdisjoint(step.context_indexes)
    # ... and the restored session is what the next turn's compression works on
    after = [e for e in res.events if e.step == restore.step and e.id > restore.id]
    assert after and after[0].kind == "force_compression"
    assert after[0].tokens_before == restore.tokens_after > restore.tokens_before
    assert trimmed <= {c.index for c in after[0].changes}
    assert "restore_request" not in res.metrics["compactions"]


def test_replay_failing_summariser_uses_fallback_text() -> None:
    res = run(_conv(8), "picoclaw", summarizer=FailingSummarizer())  # type: ignore[arg-type]
    summ = next(e for e in res.events if e.kind == "summarise")
    assert summ.detail["failed_calls"] >= 1
    assert res.steps[summ.step].summary_id is not None


def test_replay_orphan_tool_result_is_sanitized_away() -> None:
    orphan = Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id="ghost", text="x"),))
    msgs = (
        Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="s"),)),
        orphan,
        Message(Role.USER, (Block(BlockKind.TEXT, text="q"),)),
        Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text="a"),)),
    )
    res = run(Conversation("c", "t", msgs), "picoclaw")
    san = next(e for e in res.events if e.kind == "sanitize")
    assert san.messages == (1,)


# -- golden replay over a real corpus transcript -----------------------------------------------

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SNIFFLY = CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"


def _golden(
    params: dict[str, object],
) -> tuple[object, dict[str, int], dict[str, int], dict[str, int]]:
    conv = importers.parse(SNIFFLY.read_bytes(), name=SNIFFLY.name).conversations[0]
    res = run(conv, "picoclaw", params=params)
    kinds = Counter(e.kind for e in res.events)
    firsts = {k: next(e.step for e in res.events if e.kind == k) for k in kinds}
    return res, dict(kinds), dict(Counter(f.kind for f in res.findings)), firsts


def test_golden_sniffly_small_window() -> None:
    res, kinds, findings, firsts = _golden({"context_window": 20_000, "max_tokens": 2000})
    # The provider's context-length error (simulate_overflow) compresses inside turns: at
    # step 14 the current turn alone does not fit (the call fails: its one overflow step),
    # and the post-turn summaries come later and fewer.
    assert kinds == {
        "warning": 3, "force_compression": 4, "compact_failed": 1, "summarise": 1,
        "compact_skipped": 1,
    }  # fmt: skip
    assert findings == {"overflow": 1}
    assert firsts == {
        "warning": 14, "force_compression": 14, "compact_failed": 14, "summarise": 29,
        "compact_skipped": 51,
    }  # fmt: skip
    assert len(res.summaries) == 1  # type: ignore[attr-defined]


def test_golden_sniffly_small_window_proactive_only() -> None:
    params = {"context_window": 20_000, "max_tokens": 2000, "simulate_overflow": False}
    res, kinds, findings, firsts = _golden(params)
    assert kinds == {"force_compression": 2, "summarise": 3}
    # the offline summary of these messages is no longer larger than what it replaced; its
    # summaries (375, 520, 771 characters: no chatter, no duplicated bullets) leave one step
    # fewer over the window than the previous summariser's (534, 679, 1,106: 18)
    assert findings == {"overflow": 17}
    assert firsts == {"summarise": 21, "force_compression": 21}
    assert len(res.summaries) == 3  # type: ignore[attr-defined]


# -- issue 14 divergence 7: merged summary as given, 3 tries, runtime context -------------------


class _Scripted:
    """Answers from a script, one entry per call: an exception message (str starting with
    '!'), or the text to return."""

    name = "scripted"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls = 0

    def summarize(self, request: object) -> object:
        from ctxlab.engine.core.summary_request import SummarizerError, SummaryResponse

        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if answer.startswith("!"):
            raise SummarizerError(answer[1:])
        return SummaryResponse(text=answer)


def test_merged_summary_is_not_trimmed_and_batches_are() -> None:
    """context_legacy.go: summarizeBatch returns strings.TrimSpace(resp.Content), the merge
    keeps resp.Content as it came (finalSummary = resp.Content)."""
    script = _Scripted("  part one \n", "\n part two  ", "  merged \n\n")
    res = run(_conv(12), "picoclaw", summarizer=script)  # type: ignore[arg-type]
    first = next(e for e in res.events if "batches" in e.detail)
    assert first.detail["batches"] == 2
    merge = res.summaries[2]
    assert merge.input.endswith("1: part one\n\n2: part two")
    step = res.steps[first.step]
    assert step.summary_id == merge.id
    assert res.summaries[step.summary_id].output == "  merged \n\n"  # type: ignore[index]
    rendered = pb.SUMMARY_PREFIX + "  merged \n\n"
    assert step.zones.summary == (len(rendered) + pb.SYSTEM_PART_OVERHEAD) * 2 // 5


def test_failed_or_empty_summary_calls_are_tried_three_times() -> None:
    """retryLLMCall: an error or an empty answer is asked again, up to 3 calls."""
    script = _Scripted("!boom", "", "summary after two failures")
    params = {"summarize_message_threshold": 6}
    res = run(_conv(4), "picoclaw", params=params, summarizer=script)  # type: ignore[arg-type]
    first = next(e for e in res.events if "batches" in e.detail)
    assert first.detail["batches"] == 1 and first.detail["failed_calls"] == 0
    assert [s.error for s in res.summaries[:3]] == ["boom", "", ""]
    assert res.summaries[2].output == "summary after two failures"
    assert res.steps[first.step].summary_id == 2
    # three failures: the rule-based fallback, after exactly three calls
    failing = run(_conv(4), "picoclaw", params=params, summarizer=FailingSummarizer())  # type: ignore[arg-type]
    summ = next(e for e in failing.events if "batches" in e.detail)
    assert summ.detail["failed_calls"] == 1
    assert len([s for s in failing.summaries if s.step <= summ.step]) == 3


def test_runtime_context_is_part_of_every_system_message() -> None:
    """context.go buildDynamicContext: time and runtime are a system part of their own,
    between the static prompt and the summary."""
    from datetime import datetime

    runtime = pb.runtime_context(datetime(2026, 3, 2, 9, 5))
    assert (
        runtime
        == "## Current Time\n2026-03-02 09:05 (Monday)\n\n## Runtime\nlinux amd64, Go go1.25.11"
    )
    sysmsg = pb.build_system("PROMPT", "S", runtime)
    assert sysmsg.system_parts == ("PROMPT", runtime, pb.SUMMARY_PREFIX + "S")
    with_rt = run(_conv(2), "picoclaw")
    without = run(_conv(2), "picoclaw", params={"runtime_context": False})
    default_rt = pb.runtime_context(None)  # the corpus-free builder has no timestamps
    extra = (len("sys") + len(default_rt) + 2 * pb.SYSTEM_PART_OVERHEAD + 12) * 2 // 5
    assert with_rt.steps[0].zones.system == extra
    assert without.steps[0].zones.system == (len("sys") + pb.SYSTEM_PART_OVERHEAD + 12) * 2 // 5
    # a transcript without a system prompt still sends the runtime part
    assert pb.build_system("", "", runtime).system_parts == (runtime,)
