"""pi strategy: pi-mono's own compaction tests (compaction.test.ts) ported as tables, its
prompts byte for byte, and the real session's two compactions reproduced."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from builders import EchoSummarizer, assistant, conv, tool_use, user

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Message, Role, Usage
from ctxlab.engine.core.records import expand
from ctxlab.engine.core.summary_request import PromptMessage, SummaryRequest, SummaryResponse
from ctxlab.engine.replay import Replay, run
from ctxlab.engine.strategies import LIBRARY
from ctxlab.engine.strategies import _pi_rules as rules
from ctxlab.engine.strategies.pi import PiStrategy, entry_kind, pi_role, serial
from ctxlab.engine.summarize.recorded import RecordedSummarizer, summary_text

PI = Path(__file__).parents[2] / "data" / "pi"
BEFORE = PI / "before-compaction.jsonl"
LARGE = PI / "large-session.jsonl"

# sha256 of the template literals at pi-mono 83378aad (compaction.ts / utils.ts)
PROMPT_SHA256 = {
    "SUMMARIZATION_SYSTEM_PROMPT": "78c24210d5ba3e2fbcb8b13289c2488d52f3d5317fe5bfc4055dfc126e4b8570",
    "SUMMARIZATION_PROMPT": "9b00aa68df1a64279bc36e9093367f638701d48ec82e3d08436f65092a515f9b",
    "UPDATE_SUMMARIZATION_PROMPT": "240c52982209146eae47d73c7172f6ba1dab60f44520bcb6a6ec1a883fef2ec7",
    "TURN_PREFIX_SUMMARIZATION_PROMPT": "9aeeb36ea731a8497d38abb03c2da351d81bcade4b2ae389bb6ae74300cf6ba5",
    # compaction.ts at tag v0.14.2 (33a2bcf2)
    "V014_SUMMARIZATION_PROMPT": "f3f93759cce839416cb1720cc30e71c85b820ad8dac5710ddc6d2dfa429bbadb",
}  # fmt: skip


def _pi_usage(total: int) -> Usage:
    return Usage(input_uncached=1, output=1, cache_read=total - 2, convention="pi")


def _tool(tool_id: str, text: str) -> Message:
    return Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id=tool_id, text=text),))


# --- prompts ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(PROMPT_SHA256))
def test_pi_prompt_is_byte_exact(name: str) -> None:
    text: str = getattr(rules, name)
    assert hashlib.sha256(text.encode()).hexdigest() == PROMPT_SHA256[name]


def test_pi_summary_prompt_text_initial_update_and_focus() -> None:
    initial = rules.summary_prompt_text("[User]: hi")
    assert initial == f"<conversation>\n[User]: hi\n</conversation>\n\n{rules.SUMMARIZATION_PROMPT}"
    update = rules.summary_prompt_text(
        "[User]: hi", previous_summary="OLD", custom_instructions="x"
    )
    assert update == (
        "<conversation>\n[User]: hi\n</conversation>\n\n<previous-summary>\nOLD\n"
        f"</previous-summary>\n\n{rules.UPDATE_SUMMARIZATION_PROMPT}\n\nAdditional focus: x"
    )
    assert rules.turn_prefix_prompt_text("c").endswith(rules.TURN_PREFIX_SUMMARIZATION_PROMPT)
    assert (rules.summary_max_tokens(16384), rules.turn_prefix_max_tokens(16384)) == (13107, 8192)


# --- compaction.test.ts: Token calculation / shouldCompact ----------------------------------
@pytest.mark.parametrize(
    ("usage", "total"),
    [(Usage(input_uncached=1000, output=500, cache_read=200, cache_write_5m=100), 1800),
     (Usage(), 0)],
    ids=["sum", "zero"],
)  # fmt: skip
def test_pi_calculate_context_tokens(usage: Usage, total: int) -> None:
    assert usage.context_tokens == total


@pytest.mark.parametrize(
    ("tokens", "fires"), [(95_000, True), (90_001, True), (90_000, False), (89_000, False)]
)
def test_pi_should_compact_is_strictly_above_window_minus_reserve(tokens: int, fires: bool) -> None:
    assert rules.should_compact(tokens, 100_000, 10_000) is fires


def test_pi_disabled_has_no_threshold_and_never_compacts() -> None:
    messages = [user("q"), assistant("a", usage=_pi_usage(199_000)), user("next"), assistant("b")]
    result = run(conv(*messages), "pi", params={"enabled": False}, summarizer=EchoSummarizer())
    assert result.events == []
    assert PiStrategy({"enabled": False}).threshold(None) is None  # type: ignore[arg-type]


# --- compaction.test.ts: findCutPoint -------------------------------------------------------
def E(kind: str, tokens: int = 0) -> rules.Entry:  # noqa: N802 - a table's row builder
    return rules.Entry(kind, tokens)


@pytest.mark.parametrize(
    ("entries", "keep", "want"),
    [
        # "should return startIndex if no valid cut points in range"
        ([E("toolResult", 5)], 1000, (0, -1, False)),
        ([E("assistant", 5)], 1000, (0, -1, False)),
        # "should keep everything if all messages fit within budget"
        ([E("user", 1), E("assistant", 2), E("user", 1), E("assistant", 2)], 50_000, (0, -1, False)),
        # the walk crosses the budget at a tool result: cut at the next valid point
        ([E("user", 10), E("assistant", 10), E("toolResult", 500), E("assistant", 10),
          E("user", 10), E("assistant", 10)], 100, (3, 0, True)),
        # crossing at a user message: a clean cut
        ([E("user", 300), E("assistant", 10), E("user", 200), E("assistant", 10)], 210,
         (2, -1, False)),
        # "should indicate split turn when cutting at assistant message": turn 2 starts at 2
        ([E("user", 1), E("assistant", 1), E("user", 1), E("assistant", 2000),
          E("assistant", 2000), E("assistant", 2000)], 3000, (4, 2, True)),
        # non-message entries just before the cut are kept with it, not past a compaction;
        # pi then tests the *settings entry* for a user message, so the cut counts as a
        # split turn starting at the previous user message (pi's own quirk, kept)
        ([E("user", 100), E("assistant", 100), E("model_change"), E("thinking_level_change"),
          E("user", 100), E("assistant", 100)], 150, (2, 0, True)),
        ([E("user", 100), E("compaction"), E("model_change"), E("user", 100),
          E("assistant", 100)], 150, (2, 0, True)),
        # a ! command starts a turn like a user message; a branch_summary entry is a cut point
        ([E("bashExecution", 100), E("assistant", 100), E("assistant", 100)], 150,
         (1, 0, True)),
        # a branch_summary entry before the cut is pulled in and starts the turn
        ([E("user", 100), E("branch_summary"), E("assistant", 100)], 50, (1, 1, True)),
        # no turn start before an assistant cut: not a split turn
        ([E("assistant", 100), E("assistant", 100), E("assistant", 100)], 150, (1, -1, False)),
    ],
    ids=["only-tool-result", "single-assistant", "all-fit", "skip-tool-result", "user-cut",
         "split-turn", "settings-kept", "stop-at-compaction", "bash-turn", "branch-summary",
         "no-turn-start"],
)  # fmt: skip
def test_pi_find_cut_point(
    entries: list[rules.Entry], keep: int, want: tuple[int, int, bool]
) -> None:
    cut = rules.find_cut_point(entries, 0, len(entries), keep)
    assert (cut.first_kept, cut.turn_start, cut.split_turn) == want


def test_pi_find_cut_point_token_differences_fixture() -> None:
    """compaction.test.ts "should find cut point based on actual token differences", with
    the messages' own estimates ("User i" = 2, "Assistant i" = 3 tokens)."""
    strategy = PiStrategy()
    entries: list[rules.Entry] = []
    for i in range(10):
        for m in (user(f"User {i}"), assistant(f"Assistant {i}")):
            entries.append(rules.Entry(pi_role(m), strategy.count_message(m)))
    assert [e.tokens for e in entries[:2]] == [2, 3]
    assert rules.find_cut_point(entries, 0, len(entries), 2500).first_kept == 0
    cut = rules.find_cut_point(entries, 0, len(entries), 12)  # 3+2+3+2+3 crosses at entry 15
    assert (cut.first_kept, cut.split_turn) == (15, True)
    assert cut.turn_start == 14


def _large_entries() -> list[rules.Entry]:
    """The large session's entries as pi holds them (settings entries included)."""
    (c,) = importers.parse(LARGE.read_bytes(), name=LARGE.name).conversations
    strategy = PiStrategy()
    by_line = {m.source.line: m for m in c.messages}
    out = []
    for number, line in enumerate(LARGE.read_text("utf-8").splitlines(), start=1):
        kind = json.loads(line)["type"]
        if kind == "session":
            continue
        m = by_line.get(number)
        out.append(rules.Entry(pi_role(m), strategy.count_message(m)) if m else rules.Entry(kind))
    return out


def test_pi_find_cut_point_large_session() -> None:
    """compaction.test.ts "should find cut point in large session", plus the walk's own
    invariant: the budget is crossed at a message with no valid cut point between it and
    the cut."""
    entries = _large_entries()
    keep = 20_000
    cut = rules.find_cut_point(entries, 0, len(entries), keep)
    assert entries[cut.first_kept].kind in ("user", "assistant")
    total, crossing = 0, None
    for i in range(len(entries) - 1, -1, -1):
        total += entries[i].tokens if entries[i].is_message else 0
        if entries[i].is_message and total >= keep:
            crossing = i
            break
    assert crossing is not None and crossing <= cut.first_kept
    points = set(rules.valid_cut_points(entries, 0, len(entries)))
    assert cut.first_kept in points
    assert not points & set(range(crossing, cut.first_kept))


# --- estimateTokens --------------------------------------------------------------------------
def _bash(command: str, output: str) -> Message:
    text = rules.bash_execution_text(command, output, 0, False, False, "")
    block = Block(BlockKind.TEXT, text=text, raw_type="bashExecution", size=len(command + output))
    return Message(Role.USER, (block,), flags=frozenset({"bash_execution"}))


@pytest.mark.parametrize(
    ("message", "tokens"),
    [
        (user("abcde"), 2),
        (Message(Role.USER, (Block(BlockKind.TEXT, text="abcd"),
                             Block(BlockKind.MEDIA, media_type="image/png", size=9000))), 1),
        (assistant("ab", tool_use("c", "read", path="é"), thinking="cd"), 5),  # 2+2+4+10 chars
        (Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id="c", text="abcd", parts=(
            Block(BlockKind.TEXT, text="abcd"), Block(BlockKind.MEDIA, size=10))),)), 1201),
        (_bash("ls", "a\nb"), 2),
        (Message(Role.USER, (Block(BlockKind.TEXT, text=rules.compaction_summary_text("x" * 9)),),
                 flags=frozenset({"compact_summary"})), 3),
        (Message(Role.USER, (Block(BlockKind.TEXT, text=rules.branch_summary_text("x" * 8)),),
                 flags=frozenset({"branch_summary"})), 2),
        (user("😀😀"), 1),  # UTF-16 length 4
    ],
    ids=["user", "user-image-not-counted", "assistant", "tool-result-image", "bash",
         "compaction-summary", "branch-summary", "utf16"],
)  # fmt: skip
def test_pi_estimate_tokens(message: Message, tokens: int) -> None:
    assert PiStrategy().count_message(message) == tokens


# --- serialisation and file lists (utils.ts) -----------------------------------------------
def test_pi_serialize_conversation() -> None:
    messages = [
        user("fix"),
        assistant("ok", tool_use("c1", "read", path="a.py", limit=3), thinking="think"),
        _tool("c1", "x" * 2001),
        _tool("c2", ""),
    ]
    text = rules.serialize_conversation(serial(m) for m in messages)
    assert text == (
        "[User]: fix\n\n[Assistant thinking]: think\n\n[Assistant]: ok\n\n"
        '[Assistant tool calls]: read(path="a.py", limit=3)\n\n'
        f"[Tool result]: {'x' * 2000}\n\n[... 1 more characters truncated]"
    )


def test_pi_file_lists() -> None:
    ops = rules.FileOps(set(), set(), set())
    for name, path in [("read", "b"), ("read", "a"), ("edit", "b"), ("write", "c"),
                       ("bash", "z"), ("read", "")]:  # fmt: skip
        ops.add_call(name, {"path": path})
    read, modified = rules.compute_file_lists(ops)
    assert (read, modified) == (["a"], ["b", "c"])
    assert rules.format_file_operations(read, modified) == (
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\nc\n</modified-files>"
    )
    assert rules.format_file_operations([], []) == ""


# --- replay -----------------------------------------------------------------------------------
# Estimates and usages that agree (about 4 000 tokens a turn), so pi's count and the
# estimate move together: threshold 10 000 - 2 000 = 8 000.
SMALL = {"contextWindow": 10_000, "reserveTokens": 2_000, "keepRecentTokens": 4009}


def _turn(k: int, total: int) -> list[Message]:
    """user (2) -> read call (5) -> 16 000-char result (4 000) -> reply (2) = 4 009."""
    return [
        user(f"task {k}"),
        assistant("", tool_use(f"r{k}", "read", path=f"f{k}.py"), usage=_pi_usage(total - 50)),
        _tool(f"r{k}", "y" * 16_000),
        assistant(f"done {k}", usage=_pi_usage(total)),
    ]


def _summary_after(messages: list[Message], params: dict[str, object], echo: object) -> str:
    job = Replay(conv(*messages), "pi", params=params, summarizer=echo)  # type: ignore[arg-type]
    job.exhaust()
    return job.ctx.summary


def test_pi_checks_at_the_end_of_a_run_not_mid_run() -> None:
    # the usage is over 8 000 on a tool-calling response mid-run: no check there
    messages = [*_turn(0, 4100), user("go"),
                assistant("", tool_use("x", "edit", path="g.py"), usage=_pi_usage(9000)),
                _tool("x", "ok"), assistant("fine", usage=_pi_usage(7000)), user("more"),
                assistant("end", usage=_pi_usage(7100))]  # fmt: skip
    result = run(conv(*messages), "pi", params=SMALL, summarizer=EchoSummarizer())
    assert result.events == []
    messages[7] = assistant("fine", usage=_pi_usage(8001))  # the run ends above 8 000
    result = run(conv(*messages), "pi", params=SMALL, summarizer=EchoSummarizer())
    (event,) = result.events
    assert event.kind == "summarise" and event.detail["contextTokens"] == 8001
    # pi's own tokensBefore leaves out "more" (typed after the run); the curve counts it
    assert (event.detail["tokensBefore"], event.tokens_before) == (8001, 8002)
    assert event.step == 4  # the request after the prompt that followed the run
    context = expand(result.steps[-1].context)
    assert 8 in context and 0 not in context  # "more" arrived after the check: kept


def test_pi_summary_request_update_prompt_and_file_lists() -> None:
    echo = EchoSummarizer("SUM")
    messages = [*_turn(0, 4100), *_turn(1, 8200), *_turn(2, 12300), user("end"),
                assistant("bye")]  # fmt: skip
    run(conv(*messages), "pi", params=SMALL, summarizer=echo)
    first, second = echo.requests
    assert first.system == rules.SUMMARIZATION_SYSTEM_PROMPT
    assert first.max_output_tokens == rules.summary_max_tokens(2000)
    (prompt,) = first.messages
    assert prompt.text.startswith("<conversation>\n[User]: task 0\n")
    assert "[User]: task 1" not in prompt.text  # turn 1 is kept: a clean cut at its user
    assert prompt.text.endswith(rules.SUMMARIZATION_PROMPT)
    installed = "SUM\n\n<read-files>\nf0.py\n</read-files>"
    assert f"<previous-summary>\n{installed}\n</previous-summary>" in second.messages[0].text
    assert second.messages[0].text.endswith(rules.UPDATE_SUMMARIZATION_PROMPT)
    assert second.purpose == "merge" and second.previous_summary == installed
    # pi's boundaryStart: the second compaction cuts only what came after the first (turn
    # 2, kept whole here); turn 1, kept by the first, leaves unsummarised (pi-mono #2608)
    assert second.messages[0].text.startswith("<conversation>\n\n</conversation>")
    result = run(conv(*messages), "pi", params=SMALL, summarizer=EchoSummarizer("SUM"))
    _, later = (e for e in result.events if e.kind == "summarise")
    assert {c.index: c.fate.value for c in later.changes} == dict.fromkeys(range(4, 8), "dropped")
    # the previous compaction's file lists carry over into the next one
    assert _summary_after(messages, SMALL, EchoSummarizer("SUM")) == installed


def test_pi_split_turn_prefix_summary_is_joined() -> None:
    echo = EchoSummarizer("S")
    long_run = [user("big task"),
                assistant("", tool_use("a", "read", path="one.py"), usage=_pi_usage(2000)),
                _tool("a", "z" * 16_000),
                assistant("", tool_use("b", "write", path="two.py"), usage=_pi_usage(6100)),
                _tool("b", "z" * 16_000),
                assistant("done", usage=_pi_usage(8100)), user("next"), assistant("k")]  # fmt: skip
    params = {**SMALL, "keepRecentTokens": 4000}
    result = run(conv(*long_run), "pi", params=params, summarizer=echo)
    (event,) = [e for e in result.events if e.kind == "summarise"]
    # 1 + 4 000 crosses 4 000 at the write's result: cut at the next assistant message
    assert event.detail["split_turn"] is True and event.detail["pi_first_kept"] == 5
    (prefix,) = echo.requests  # no history before the turn: "No prior history.", no call
    assert prefix.purpose == "turn_prefix"
    assert prefix.max_output_tokens == rules.turn_prefix_max_tokens(2000)
    assert prefix.messages[0].text.startswith("<conversation>\n[User]: big task")
    assert prefix.messages[0].text.endswith(rules.TURN_PREFIX_SUMMARIZATION_PROMPT)
    assert _summary_after(long_run, params, EchoSummarizer("S")) == (
        rules.NO_PRIOR_HISTORY + rules.TURN_CONTEXT_SEPARATOR + "S"
        + "\n\n<read-files>\none.py\n</read-files>\n\n<modified-files>\ntwo.py\n</modified-files>"
    )  # fmt: skip


class _Failing:
    name = "failing"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse(text="", error="overloaded")


def test_pi_failed_summary_keeps_the_context() -> None:
    messages = [*_turn(0, 4100), *_turn(1, 8200), user("end"), assistant("bye")]
    result = run(conv(*messages), "pi", params=SMALL, summarizer=_Failing())
    (event,) = result.events
    assert event.kind == "compact_failed" and event.changes == ()
    assert expand(result.steps[-1].context) == list(range(9))


# --- the real session ------------------------------------------------------------------------
def _before() -> importers.Conversation:
    (c,) = importers.parse(BEFORE.read_bytes(), name=BEFORE.name).conversations
    return c


def test_pi_reproduces_both_real_compactions_with_the_recorded_summariser() -> None:
    c = _before()
    result = run(c, "pi", summarizer=RecordedSummarizer())
    rows = [(r["original_step"], r["replay_step"], r["original_tokens"], r["replay_tokens"])
            for r in result.metrics["original_compactions"]]  # fmt: skip
    assert rows == [(173, 173, 175_004, 175_004), (303, 303, 185_014, 185_014)]
    first, second = (e for e in result.events if e.kind == "summarise")
    assert first.detail["trigger"] == "original"  # below 183 616: the user's /compact
    assert second.detail["trigger"] == "threshold"  # pi's own rule fires there
    assert (first.detail["original_first_kept"], second.detail["original_first_kept"]) == (288, 546)
    # the session predates pi v0.17.0: v0.14's rules, whose own cut is the original's
    assert [e.detail["rules_version"] for e in (first, second)] == ["0.14", "0.14"]
    assert first.detail["rules_reason"].startswith("auto: the session started 2025-12-09T00:53")
    rows = result.metrics["original_compactions"]
    assert [r["rules_version"] for r in rows] == ["0.14", "0.14"]
    assert (first.detail["pi_first_kept"], second.detail["pi_first_kept"]) == (288, 546)
    # what the first kept (288-353) leaves at the second without a summary (#2608)
    assert second.detail["dropped_kept"] == 66
    # the recorded summaries are used whole (pi's own file lists and all)
    assert [s.output for s in result.summaries] == [summary_text(c, k) for k in c.compactions]
    # after each, the replay holds what pi held: the summary + the original's kept messages
    at = expand(result.steps[first.step].context)
    assert min(at) == 288 and c.compactions[0].summary_index not in at


@pytest.mark.parametrize("follow", ["triggered", "none"])
def test_pi_follow_options_leave_the_manual_compaction_to_the_user(follow: str) -> None:
    result = run(_before(), "pi", params={"follow_originals": follow},
                 summarizer=RecordedSummarizer())  # fmt: skip
    steps = [e.step for e in result.events if e.kind == "summarise"]
    assert 173 not in steps and steps  # the /compact is not pi's rule
    assert all(e.detail["trigger"] == "threshold" for e in result.events if e.kind == "summarise")


def test_pi_is_in_the_library() -> None:
    assert "pi" in LIBRARY


def test_pi_native_config_is_pis_settings_json() -> None:
    from ctxlab.engine.native_config import native_config

    native = native_config("pi", {"reserveTokens": 8000, "contextWindow": 100_000})
    assert native.filename == "settings.json"
    assert json.loads(native.text) == {
        "compaction": {"enabled": True, "reserveTokens": 8000, "keepRecentTokens": 20_000}
    }
    assert native.unexpressed == (("contextWindow", 100_000),)  # the model's, not a setting


def _session(*entries: dict[str, object]) -> importers.Conversation:
    head = {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"}
    data = "\n".join(json.dumps(e) for e in (head, *entries)).encode()
    (c,) = importers.parse(data, name="s.jsonl", format="pi-session").conversations
    return c


def _m(role: str, **fields: object) -> dict[str, object]:
    return {"type": "message", "message": {"role": role, **fields}}


def _reply(text: str, total: int, stop: str = "stop") -> dict[str, object]:
    usage = {"input": 1, "output": 1, "cacheRead": total - 2, "cacheWrite": 0}
    return _m("assistant", content=[{"type": "text", "text": text}], usage=usage, stopReason=stop)


@pytest.mark.parametrize(("follow", "followed"), [("all", True), ("triggered", False)])
def test_pi_original_compaction_after_a_bang_command(follow: str, followed: bool) -> None:
    """A /compact typed after a ! command: no run ended there, so pi's trigger cannot
    explain it; ``all`` follows it (its cut: entry 3, the second prompt), ``triggered``
    does not."""
    c = _session(
        _m("user", content="one " * 400), _reply("a" * 400, 1000),
        _m("user", content="two"), _reply("b", 1100),
        _m("bashExecution", command="ls", output="x", exitCode=0),
        {"type": "compaction", "summary": "S1", "firstKeptEntryIndex": 3, "tokensBefore": 1100},
        _m("user", content="three"), _reply("c", 300),
    )  # fmt: skip
    result = run(c, "pi", params={"follow_originals": follow}, summarizer=RecordedSummarizer())
    events = [e for e in result.events if e.kind == "summarise"]
    if not followed:
        assert events == []
        return
    (event,) = events
    assert event.detail["trigger"] == "original" and event.detail["original_first_kept"] == 2
    assert event.changes and {ch.index for ch in event.changes} == {0, 1, 5}  # 5: its summary
    assert [s.output for s in result.summaries] == ["S1"]


# agent-session-auto-compaction-queue.test.ts: threshold checks after an error reply
_ERROR = frozenset({"error"})


@pytest.mark.parametrize(
    ("messages", "want"),
    [
        # "...for error messages using last successful usage": 7 990 + 20 (the prompt) > 8 000
        ([user("q"), assistant("a", usage=_pi_usage(7990)), user("x" * 80),
          assistant("", flags=_ERROR), user("again"), assistant("b")], 8010),
        # "...not ... when no prior usage exists"
        ([user("q"), assistant("", flags=_ERROR), user("again"), assistant("b")], None),
        # "...not ... when only kept pre-compaction usage exists": the replay compacted when
        # the 5 000-token prompt came (8 100); the error reply after it finds only that
        # older usage (counted, it would be ~9 100 > 8 000)
        ([*_turn(0, 4100), *_turn(1, 8100), user("m" * 20_000), assistant("", flags=_ERROR),
          user("again"), assistant("c")], None),
    ],
    ids=["last-good-usage", "no-usage", "stale-usage"],
)  # fmt: skip
def test_pi_error_reply_threshold_check(messages: list[Message], want: int | None) -> None:
    result = run(conv(*messages), "pi", params=SMALL, summarizer=EchoSummarizer())
    after_error = [e for e in result.events if e.step == len(result.steps) - 1]
    if want is None:
        assert after_error == []
        return
    (event,) = after_error
    assert event.detail["contextTokens"] == want
    assert event.detail["usage_source"] == "last usage + estimate (error reply)"


def test_pi_originals_helpers_read_the_first_kept_message_and_the_summaries() -> None:
    from ctxlab.engine.stages.originals import first_kept, recorded_summaries

    c = _before()
    assert [first_kept(k) for k in c.compactions] == [288, 546]
    summaries = recorded_summaries(c)
    assert len(summaries) == 2
    assert all(s.startswith("# Context Checkpoint") and "<summary>" not in s for s in summaries)


# compaction-serialization.test.ts
@pytest.mark.parametrize(
    ("messages", "want"),
    [
        ([_tool("tc1", "x" * 5000)],
         "[Tool result]: " + "x" * 2000 + "\n\n[... 3000 more characters truncated]"),
        ([_tool("tc1", "x" * 1500)], "[Tool result]: " + "x" * 1500),
        ([user("y" * 5000), assistant("y" * 5000)],
         "[User]: " + "y" * 5000 + "\n\n[Assistant]: " + "y" * 5000),
    ],
    ids=["long-tool-result-truncated", "short-tool-result-kept", "user-assistant-never-cut"],
)  # fmt: skip
def test_pi_serialization_truncates_only_tool_results(messages: list[Message], want: str) -> None:
    assert rules.serialize_conversation(serial(m) for m in messages) == want


def test_pi_2026_rules_on_the_real_session_agree_on_steps_not_on_the_cut() -> None:
    result = run(_before(), "pi", params={"rules": "2026-03"}, summarizer=RecordedSummarizer())
    rows = [(r["original_step"], r["replay_step"]) for r in result.metrics["original_compactions"]]
    assert rows == [(173, 173), (303, 303)]
    first, second = (e for e in result.events if e.kind == "summarise")
    # the estimate walk would keep less than the usage-difference walk of v0.14 did
    assert (first.detail["pi_first_kept"], second.detail["pi_first_kept"]) == (255, 529)


# --- v0.14 (pi v0.10 - v0.16, December 2025) ------------------------------------------------
@pytest.mark.parametrize(
    ("is_user", "usages", "keep", "cut"),
    [
        ([False, False], [None, 900], 10, 0),  # no user message: keep all
        ([True, False, True, False], [None, None, None, None], 10, 2),  # no usage: last turn
        ([True, False, True, False], [None, 100, None, 200], 1000, 0),  # all within budget
        ([True, False, True, False, True, False], [None, 100, None, 5000, None, 9000], 3000, 4),
        ([True, False, True, False, True, False], [None, 100, None, 5000, None, 9000], 8000, 2),
        # the newer response kept sits before any user message: keep all
        ([False, False, True, False], [100, 5000, None, 9000], 8500, 0),
    ],
    ids=["no-user", "no-usage", "all-fit", "last-turn", "two-turns", "no-boundary-before"],
)
def test_pi_v014_find_cut_point(
    is_user: list[bool], usages: list[int | None], keep: int, cut: int
) -> None:
    assert rules.v014_find_cut_point(is_user, usages, keep) == cut


@pytest.mark.parametrize(
    ("metadata", "rules_name"),
    [
        ((("session_started", "2025-12-08T22:00:00.000Z"),), "0.14"),
        ((("session_started", "2025-12-10T00:00:00Z"),), "2026-03"),
        ((("session_started", "not a time"),), "2026-03"),
        ((), "2026-03"),
    ],
    ids=["before-v0.17", "after", "unreadable", "not-a-pi-session"],
)
def test_pi_auto_rules_by_session_start(
    metadata: tuple[tuple[str, str], ...], rules_name: str
) -> None:
    c = importers.Conversation(id="c", title="t", messages=(), metadata=metadata)
    assert PiStrategy().resolved_rules(c) == rules_name
    assert PiStrategy({"rules": "0.14"}).resolved_rules(c) == "0.14"


def test_pi_v014_checks_every_response_and_sends_the_messages() -> None:
    echo = EchoSummarizer("OLD")
    messages = [*_turn(0, 4100),
                user("go"),
                assistant("", tool_use("x", "edit", path="g.py"), usage=_pi_usage(8300)),
                _tool("x", "ok"), assistant("fine", usage=_pi_usage(8400)), user("more"),
                assistant("end", usage=_pi_usage(8500)), user("again"), assistant("bye")]  # fmt: skip
    result = run(conv(*messages), "pi", params={**SMALL, "rules": "0.14", "keepRecentTokens": 3000},
                 summarizer=echo)  # fmt: skip
    first = result.events[0]
    # after the edit's response (8 300): its result stays, the run's next call is step 3
    assert first.step == 3 and first.detail["rules_version"] == "0.14"
    assert 6 in expand(result.steps[3].context) and 0 not in expand(result.steps[3].context)
    request = echo.requests[0]
    assert request.system == ""
    assert request.messages[-1].text == rules.V014_SUMMARIZATION_PROMPT
    assert request.messages[0] == PromptMessage("user", "task 0")
    assert "[tool call read]" in request.messages[1].text
    if len(echo.requests) > 1:  # a later one starts from the previous summary
        assert echo.requests[1].messages[0].text == rules.V014_PREVIOUS_SUMMARY + "OLD"


def test_pi_real_session_with_the_offline_summariser_keeps_the_steps() -> None:
    """Another summary (of another length) after the first compaction: the count at the
    second is the reported usage corrected by the estimate difference, still within 1%."""
    result = run(_before(), "pi")
    rows = result.metrics["original_compactions"]
    assert [(r["original_step"], r["replay_step"]) for r in rows] == [(173, 173), (303, 303)]
    second = rows[1]
    assert second["replay_tokens"] != second["original_tokens"]
    assert abs(second["replay_tokens"] - second["original_tokens"]) < 0.01 * 185_014


def test_pi_entry_kinds_for_the_cut_search() -> None:
    """A branch summary or a custom_message entry is a cut point and a turn start, not a
    message of the keep-recent sum; a custom *message* (role custom) is both."""
    c = _session(
        _m("user", content="q"),
        {"type": "branch_summary", "fromId": "x", "summary": "tried"},
        {"type": "custom_message", "customType": "note", "content": "n", "display": True},
        _m("custom", customType="ext", content="c", display=True),
        _reply("a", 10),
    )
    assert [entry_kind(m) for m in c.messages] == [
        "user", "branch_summary", "custom_message", "custom", "assistant",
    ]  # fmt: skip
    kinds = [rules.Entry(entry_kind(m), 100) for m in c.messages]
    assert [e.is_message for e in kinds] == [True, False, False, True, True]
    # the walk sums assistant + custom (200) before it reaches the entries
    cut = rules.find_cut_point(kinds, 0, len(kinds), 150)
    assert (cut.first_kept, cut.turn_start, cut.split_turn) == (1, 1, True)
