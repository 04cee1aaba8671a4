"""CowAgent (chatgpt-on-wechat): estimator, turns, truncation, sanitizer, summary rules."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.records import Fate
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _cowagent_rules as cow
from ctxlab.engine.strategies._cowagent_rules import CowMsg
from ctxlab.engine.summarize.offline import FailingSummarizer

# -- tiny builders ---------------------------------------------------------------------------


def user(text: str) -> Message:
    return Message(Role.USER, (Block(BlockKind.TEXT, text=text),))


def assistant(text: str = "", *tool_ids: str, inputs: object = None) -> Message:
    blocks = [Block(BlockKind.TEXT, text=text)] if text else []
    blocks += [
        Block(BlockKind.TOOL_USE, tool_id=t, tool_name="bash", tool_input=inputs or {"c": t})
        for t in tool_ids
    ]
    return Message(Role.ASSISTANT, tuple(blocks))


def result(tool_id: str, text: str = "ok") -> Message:
    return Message(Role.USER, (Block(BlockKind.TOOL_RESULT, tool_id=tool_id, text=text),))


def image_only() -> Message:
    return Message(Role.USER, (Block(BlockKind.MEDIA, media_type="image/png", size=10),))


def rows(*msgs: Message) -> list[CowMsg]:
    return [cow.to_cow(i, m) for i, m in enumerate(msgs)]


def srcs(items: list[CowMsg]) -> list[int | None]:
    return [r.src for r in items]


# -- estimator -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("a", 1, id="one-ascii-int(0.25)+1"),
        pytest.param("abcd", 2, id="four-ascii"),
        pytest.param("abc", 1, id="three-ascii-floors"),
        pytest.param("中", 2, id="one-cjk-int(1.5)+1"),
        pytest.param("中文", 4, id="two-cjk"),
        pytest.param("中a", 2, id="mixed-1.75"),
        pytest.param("é", 2, id="latin1-is-non-ascii"),
        pytest.param("😀", 2, id="astral-is-one-code-point"),
    ],
)
def test_estimate_text_weighting(text: str, expected: int) -> None:
    assert cow.estimate_text(text) == expected


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        pytest.param(user(""), 1, id="empty-text-min-1"),
        pytest.param(user("abcd"), 2, id="text"),
        pytest.param(image_only(), 1200, id="image"),
        pytest.param(result("t", "abcd"), 32, id="tool-result-30+"),
        pytest.param(
            assistant("", "t1", inputs={"k": "v"}),
            50 + cow.estimate_text('{"k": "v"}'),
            id="tool-use",
        ),
        pytest.param(
            Message(Role.ASSISTANT, (Block(BlockKind.TOOL_USE, tool_id="x", tool_input="raw"),)),
            1,
            id="tool-use-non-dict-not-counted",
        ),
        pytest.param(
            Message(Role.ASSISTANT, (Block(BlockKind.THINKING, text="x" * 400),)),
            10,
            id="thinking-is-other-10",
        ),
    ],
)
def test_estimate_message_rules(msg: Message, expected: int) -> None:
    assert cow.estimate_message(msg) == expected


def test_budget_tokens_falls_back_to_ninety_percent_of_model_window() -> None:
    assert cow.budget_tokens(50_000, "whatever") == 50_000
    assert cow.budget_tokens(0, "claude-3-5-sonnet") == 180_000
    assert cow.budget_tokens(0, "gpt-4") == 7_200
    assert cow.budget_tokens(0, "unknown") == 115_200


# -- turns -----------------------------------------------------------------------------------


def test_split_turns_tool_results_and_images_join_the_turn() -> None:
    msgs = rows(
        assistant("hello first"),  # before any query: a turn of its own
        user("q1"),
        assistant("", "t1"),
        result("t1"),
        image_only(),
        assistant("a1"),
        user("q2"),
    )
    assert [srcs(t) for t in cow.split_turns(msgs)] == [[0], [1, 2, 3, 4, 5], [6]]
    # the flags a caller keeps are read instead of the rows
    flags = [cow.is_user_query(r.msg) for r in msgs]
    assert flags == [False, True, False, False, False, False, True]
    assert cow.split_turns(msgs, flags) == cow.split_turns(msgs)
    assert [srcs(t) for t in cow.split_turns(msgs, [False] * 7)] == [[0, 1, 2, 3, 4, 5, 6]]


def test_split_turns_tool_role_is_user_in_cowagent() -> None:
    tool_msg = Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id="t1", text="x"),))
    msgs = rows(user("q"), assistant("", "t1"), tool_msg, assistant("done"))
    assert msgs[2].msg.role is Role.USER
    assert len(cow.split_turns(msgs)) == 1


def test_split_turns_empty_history() -> None:
    assert cow.split_turns([]) == []
    assert cow.split_turns([], []) == []


# -- truncation ------------------------------------------------------------------------------


def test_truncate_historical_marker_is_head_only_and_byte_exact() -> None:
    text = "x" * 20_001
    out = cow.truncate_historical(text)
    assert out == "x" * 20_000 + "\n\n[Historical output truncated: 20001 -> 20000 chars]"
    assert cow.truncate_historical("y" * 20_000) == "y" * 20_000


def test_truncate_at_creation_marker() -> None:
    out = cow.truncate_at_creation("z" * 50_010)
    assert out.endswith("\n\n[Output truncated: 50010 chars total, showing first 50000 chars]")
    assert out.startswith("z" * 50_000 + "\n\n")


def test_truncate_historical_tool_results_spares_the_current_turn() -> None:
    big = "b" * 25_000
    msgs = rows(
        user("q1"),
        assistant("", "t1"),
        result("t1", big),
        user("q2"),
        assistant("", "t2"),
        result("t2", big),
    )
    out, done = cow.truncate_historical_tool_results(msgs)
    assert [d.src for d in done] == [2]
    assert out[2].msg.blocks[0].text.endswith("[Historical output truncated: 25000 -> 20000 chars]")
    assert out[5].msg.blocks[0].text == big


def test_compress_turn_keeps_first_user_text_and_last_assistant_text() -> None:
    turn = rows(
        user("  ask  "),
        assistant("thinking aloud", "t1"),
        result("t1", "data"),
        assistant(" final "),
    )
    out = cow.compress_turn_to_text_only(turn)
    assert [(r.src, r.msg.role, r.msg.blocks[0].text) for r in out] == [
        (0, Role.USER, "ask"),
        (3, Role.ASSISTANT, "final"),
    ]


def test_compress_turn_without_text_vanishes() -> None:
    assert cow.compress_turn_to_text_only(rows(assistant("", "t1"), result("t1"))) == []


# -- sanitizer -------------------------------------------------------------------------------


def test_sanitize_appends_synthetic_result_after_trailing_tool_use() -> None:
    msgs = rows(user("q"), assistant("", "t1"))
    out, removed, repairs = cow.sanitize(msgs)
    assert removed == 0 and repairs == 1
    assert out[-1].src is None
    assert out[-1].msg.blocks[0].text == cow.SYNTHETIC_TOOL_ERROR
    assert out[-1].msg.blocks[0].is_error


def test_sanitize_drops_leading_orphan_results_and_unmatched_pairs() -> None:
    msgs = rows(result("gone"), user("q"), assistant("", "t1"), result("t1"), result("zz"))
    out, removed, _ = cow.sanitize(msgs)
    assert srcs(out) == [1, 2, 3]
    assert removed == 2


def test_sanitize_keeps_text_when_removing_an_orphan_result_block() -> None:
    mixed = Message(
        Role.USER,
        (Block(BlockKind.TOOL_RESULT, tool_id="zz", text="x"), Block(BlockKind.TEXT, text="hi")),
    )
    out, removed, _ = cow.sanitize(rows(user("q"), assistant("a"), mixed))
    assert removed == 1
    assert [b.kind for b in out[2].msg.blocks] == [BlockKind.TEXT]


# -- summary ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "none"),
    [
        pytest.param("无", True, id="wu"),
        pytest.param("  无\n", True, id="wu-padded"),
        pytest.param("", True, id="empty"),
        pytest.param("- 用户要求部署", False, id="real"),
        pytest.param("无 变化", False, id="wu-prefix-is-real"),
    ],
)
def test_is_no_summary(reply: str, none: bool) -> None:
    assert cow.is_no_summary(reply) is none


def test_format_for_summary_caps_each_line_and_skips_tool_results() -> None:
    msgs = rows(user("u" * 600), assistant("", "t1"), result("t1", "secret"), assistant(" done "))
    text = cow.format_for_summary(msgs)
    assert text == f"用户: {'u' * 500}\n助手: done"
    assert cow.summary_user_prompt(text).startswith("请归纳以下对话的日常记录：\n\n用户: ")


def test_dedupe_for_flush_skips_seen_texts_and_textless_messages() -> None:
    msgs = rows(user("same"), assistant("", "t1"), result("t1"), user("same"), user("new"))
    seen: set[str] = set()
    out = cow.dedupe_for_flush(msgs, seen)
    assert srcs(out) == [0, 4]
    assert len(seen) == 2  # the new hashes are added in place
    again = cow.dedupe_for_flush(rows(user("new")), seen)
    assert again == []


def test_fallback_summary_pairs_and_caps() -> None:
    msgs = rows(
        *(
            m
            for i in range(12)
            for m in (user(f"q{i} " + "x" * 200), assistant(f"\n\nline{i}\nmore"))
        )
    )
    text = cow.fallback_summary(msgs)
    lines = text.split("\n")
    assert len(lines) == 10
    assert lines[0] == f"- 用户: {('q0 ' + 'x' * 200)[:120]} → 回复: line0"


def test_injection_text_is_byte_exact() -> None:
    assert cow.injection_text(" s \n", 3, "orig") == (
        "[System: Previous conversation summary — 3 turns were compacted]\n\ns\n\n"
        "The recent conversation continues below.\n\n---\n\norig"
    )


def test_inject_summary_misses_when_target_is_gone() -> None:
    msgs = rows(user("a"), assistant("b"))
    same, hit = cow.inject_summary(msgs, target_src=7, summary="s", turns=1)
    assert not hit and same == msgs
    out, hit = cow.inject_summary(msgs, target_src=0, summary="s", turns=1)
    assert hit and out[0].msg.blocks[0].text.endswith("---\n\na")


# -- overflow --------------------------------------------------------------------------------


def test_aggressive_trim_caps_and_keeps_last_five_turns() -> None:
    turns = [m for i in range(7) for m in (user(f"q{i}"), assistant(f"a{i}"))]
    big_input = {"content": "w" * 12_000, "path": "p"}
    msgs = rows(
        *turns,
        assistant("", "t9", inputs=big_input),
        result("t9", "r" * 10_001),
        user("u" * 10_001),
    )
    out, truncated, removed = cow.aggressive_trim(msgs)
    assert removed == 3  # 8 turns -> 5
    assert truncated == 3
    by_src = {r.src: r.msg for r in out}
    assert (
        by_src[15].blocks[0].text.endswith("[Truncated for context recovery: 10001 -> 10000 chars]")
    )
    assert by_src[14].blocks[0].tool_input["content"] == "w" * 1000 + "... [truncated 12000 chars]"
    assert (
        by_src[16]
        .blocks[0]
        .text.endswith("[Message truncated for context recovery: 10001 -> 10000 chars]")
    )


# -- replay (strategy wired into the engine) ---------------------------------------------------


def _conv(
    turns: int, result_chars: int = 100, *, answer: str = "decided to use plan"
) -> Conversation:
    msgs = [Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="sys"),))]
    for k in range(turns):
        msgs += [
            user(f"please do task {k} in /src/f{k}.py"),
            assistant("", f"t{k}"),
            result(f"t{k}", "x" * result_chars),
            assistant(f"{answer} {k}"),
        ]
    return Conversation("c", "t", tuple(msgs))


def test_replay_turn_limit_drops_half_and_injects_next_request() -> None:
    res = run(_conv(25), "cowagent")
    drop = next(e for e in res.events if e.kind == "drop")
    assert drop.detail["turns"] == 21 and drop.detail["dropped_turns"] == 10
    assert {c.fate for c in drop.changes} == {Fate.SUMMARISED, Fate.DROPPED}
    step = res.steps[drop.step]
    assert step.pending and step.summary_id is None  # lands at the next request
    nxt = res.steps[drop.step + 1]
    assert [e.kind for e in nxt.events] == ["summary_injected"]
    assert nxt.summary_id == drop.summary_id
    assert nxt.tokens.strategy > step.tokens.strategy
    summary = res.summaries[drop.summary_id]  # type: ignore[index]
    assert summary.input.splitlines()[-1].startswith("助手: ")
    assert "请归纳以下对话的日常记录：" in summary.input


def test_replay_sync_injection_lands_in_the_trimmed_request() -> None:
    res = run(_conv(25), "cowagent", params={"summary_injection": "sync"})
    drop = next(e for e in res.events if e.kind == "drop")
    assert res.steps[drop.step].summary_id is not None and not res.steps[drop.step].pending


class _Wu:
    name = "wu"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse(text=" 无 ")


def test_replay_wu_reply_means_no_summary_and_plain_drop() -> None:
    res = run(_conv(25), "cowagent", summarizer=_Wu())  # type: ignore[arg-type]
    drop = next(e for e in res.events if e.kind == "drop")
    assert {c.fate for c in drop.changes} == {Fate.DROPPED}
    assert any(e.kind == "summary_empty" for e in res.events)
    assert all(s.summary_id is None for s in res.steps)


def test_replay_failing_summariser_uses_rule_based_fallback() -> None:
    res = run(_conv(25), "cowagent", summarizer=FailingSummarizer())  # type: ignore[arg-type]
    assert any(e.kind == "summary_failed" for e in res.events)
    injected = next(e for e in res.events if e.kind == "summary_injected")
    assert res.steps[injected.step].summary_id is not None


def test_replay_memory_disabled_drops_without_summary() -> None:
    res = run(_conv(25), "cowagent", params={"memory_enabled": False})
    assert res.summaries == []
    assert all(c.fate is Fate.DROPPED for e in res.events if e.kind == "drop" for c in e.changes)


def test_replay_few_turns_over_budget_compress_to_text_never_drop_a_turn() -> None:
    res = run(_conv(4, 30_000), "cowagent", params={"agent_max_context_tokens": 5000})
    comp = [e for e in res.events if e.kind == "compress_text_only"]
    assert comp and not any(e.kind == "drop" for e in res.events)
    last = res.steps[-1]
    assert last.context_indexes[:5] == [0, 1, 4, 5, 8]  # each old turn: query + last answer
    assert res.summaries == []


def test_replay_many_turns_over_budget_drop_older_half_once() -> None:
    res = run(_conv(8, 30_000), "cowagent", params={"agent_max_context_tokens": 5000})
    drop = next(e for e in res.events if e.kind == "drop")
    assert drop.detail["turns"] == 5 and drop.detail["dropped_turns"] == 2


@pytest.mark.parametrize(
    ("budget", "fires"),
    [pytest.param(None, False, id="equal-is-within"), pytest.param(-1, True, id="one-over")],
)
def test_replay_budget_is_within_when_equal(budget: int | None, fires: bool) -> None:
    probe = run(_conv(6, 1000), "cowagent", params={"agent_max_context_tokens": 10**6})
    need = max(s.tokens.strategy for s in probe.steps if s.source_index % 4 == 2)
    res = run(_conv(6, 1000), "cowagent", params={"agent_max_context_tokens": need + (budget or 0)})
    assert any(e.kind in ("drop", "compress_text_only") for e in res.events) is fires


def test_replay_overflow_aggressive_trim_then_clear() -> None:
    res = run(_conv(7, 300_000), "cowagent", params={"model_context_window": 15_000})
    trims = [e for e in res.events if e.kind == "overflow_trim"]
    assert trims and trims[0].detail["truncated_blocks"] > 0
    res = run(_conv(3, 10), "cowagent", params={"model_context_window": 5})
    assert any(e.kind == "overflow_clear" for e in res.events)
    cleared = next(e for e in res.events if e.kind == "overflow_clear")
    assert res.steps[cleared.step].context == ((0, 1),)


def test_replay_orphan_result_is_removed_by_the_sanitizer() -> None:
    msgs = (
        Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="s"),)),
        result("ghost"),
        user("q"),
        assistant("a"),
    )
    res = run(Conversation("c", "t", msgs), "cowagent")
    san = next(e for e in res.events if e.kind == "sanitize")
    assert san.messages == (1,)


# -- golden replay over a real corpus transcript -----------------------------------------------

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SNIFFLY = CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"


def _golden(
    params: dict[str, object],
) -> tuple[object, dict[str, int], dict[str, int], dict[str, int]]:
    conv = importers.parse(SNIFFLY.read_bytes(), name=SNIFFLY.name).conversations[0]
    res = run(conv, "cowagent", params=params)
    kinds = Counter(e.kind for e in res.events)
    firsts = {k: next(e.step for e in res.events if e.kind == k) for k in kinds}
    return res, dict(kinds), dict(Counter(f.kind for f in res.findings)), firsts


@pytest.mark.parametrize(
    ("params", "kinds", "findings", "firsts"),
    [
        pytest.param(
            {},
            {"drop": 1, "summary_injected": 1, "truncate": 2},  # no event for a no-op re-cut
            {},
            {"truncate": 21, "drop": 51, "summary_injected": 52},
            id="defaults-budget-drop",
        ),
        pytest.param(
            {"agent_max_context_turns": 4, "model_context_window": 30_000},
            {"drop": 1, "overflow_trim": 2},
            {},
            {"overflow_trim": 17, "drop": 51},
            id="small-window-overflow",
        ),
    ],
)
def test_golden_sniffly(
    params: dict[str, object],
    kinds: dict[str, int],
    findings: dict[str, int],
    firsts: dict[str, int],
) -> None:
    res, got_kinds, got_findings, got_firsts = _golden(params)
    assert (got_kinds, got_findings, got_firsts) == (kinds, findings, firsts)
    assert len(res.steps) == 62  # type: ignore[attr-defined]


# -- issue 14: CowAgent divergences 3-5, each from its minimal case ---------------------------


def _tool_result(tool_id: str, text: str = "ok") -> Message:
    return Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id=tool_id, text=text),))


def test_parallel_results_are_one_message_so_adjacency_holds() -> None:
    """Divergence 3: agent_stream.py stores the results of one reply's tool calls as ONE
    user message, so message_utils' adjacency check sees every id answered. Two parallel
    calls with their results as two transcript messages, defaults: nothing is modified
    and the request counts 1 (sys) + 1 (q1) + 2 x 53 (tool_use) + 2 x 31 (results)
    + 2 (done) + 1 (q2) = 173 (a synthetic "Missing tool_result" block would add 63)."""
    msgs = (
        Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="sys"),)),
        user("q1"),
        assistant("", "a", "b"),
        _tool_result("a"),
        _tool_result("b"),
        assistant("done"),
        user("q2"),
        assistant("fin"),
    )
    res = run(Conversation("c", "t", msgs), "cowagent")
    assert res.events == []
    assert [s.tokens.strategy for s in res.steps] == [2, 170, 173]
    assert res.steps[-1].context == ((0, 7),)


def test_merge_tool_results_and_split_back() -> None:
    merged = cow.merge_tool_results(
        rows(user("q"), assistant("", "a", "b"), result("a", "A"), result("b", "B"), user("n"))
    )
    assert [r.sources for r in merged] == [(0,), (1,), (2, 3), (4,)]
    row = merged[2]
    assert [b.tool_id for b in row.msg.blocks] == ["a", "b"]
    # the session repair prepends a synthetic block; a cut changes b's text
    synthetic = cow.repair_adjacency(
        [CowMsg(None, assistant("", "a", "b", "c")), CowMsg(row.src, row.msg, row.members)]
    )
    assert synthetic == 1
    new_blocks = (
        Block(BlockKind.TOOL_RESULT, tool_id="c", raw_type="synthetic"),
        row.msg.blocks[0],
        Block(BlockKind.TOOL_RESULT, tool_id="b", text="cut"),
    )
    parts = cow.split_merged(
        row, Message(Role.USER, new_blocks), {2: result("a", "A"), 3: result("b", "B")}
    )
    assert [[b.tool_id for b in blocks] for blocks in parts.values()] == [["c", "a"], ["b"]]
    assert parts[3][0].text == "cut"


def test_merge_tool_results_continued_equals_one_merge() -> None:
    """_rows extends its merged list as messages are appended: merging a list in two calls
    (the first call's output and last flag carried over) equals merging it at once, at
    every split point, a results-only run across the split included."""
    all_rows = rows(
        user("q"), assistant("", "a", "b"), result("a", "A"), result("b", "B"),
        result("c", "C"), assistant("x"), user("n"), result("d", "D"),
    )  # fmt: skip
    whole = cow.merge_tool_results(all_rows)
    assert [r.sources for r in whole] == [(0,), (1,), (2, 3, 4), (5,), (6,), (7,)]
    for cut in range(len(all_rows) + 1):
        head, tail = all_rows[:cut], all_rows[cut:]
        merged = cow.merge_tool_results(head)
        last = cow.is_results_only(head[-1].msg) if head else False
        cow.merge_tool_results(tail, into=merged, prev_flag=last)
        assert merged == whole, cut


def test_injected_summary_is_in_the_text_a_later_flush_summarises() -> None:
    """Divergence 4: the summary callback writes the summary into the first kept user
    message's text; when that turn is dropped later, the next flush summarises that text,
    the earlier summary included. agent_max_context_turns=2, turns of one query + reply."""
    from builders import EchoSummarizer

    msgs: list[Message] = [Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="sys"),))]
    for k in range(4):
        msgs += [user(f"query {k}"), assistant(f"answer {k}")]
    echo = EchoSummarizer("FIRST SUMMARY")
    res = run(
        Conversation("c", "t", tuple(msgs)),
        "cowagent",
        params={"agent_max_context_turns": 2},
        summarizer=echo,  # type: ignore[arg-type]
    )
    assert len(echo.requests) == 2
    first, second = (r.messages[0].text for r in echo.requests)
    assert "用户: query 0\n助手: answer 0" in first
    # the second flush drops turn 1, whose query now carries the first summary in place
    assert (
        "用户: [System: Previous conversation summary — 1 turns were compacted]\n\n"
        "FIRST SUMMARY\n\nThe recent conversation continues below.\n\n---\n\nquery 1" in second
    )
    injected = [e for e in res.events if e.kind == "summary_injected"]
    assert [e.detail["target"] for e in injected] == [3]  # the second lands after the end
    assert res.steps[-1].pending


def test_two_queries_in_a_row_are_trimmed_twice() -> None:
    """Divergence 5: each run_stream call appends its query, then trims. Six 30-token
    turns (181 with the system prompt, within 200), then two queries in a row, A of 150
    tokens and B of 1, agent_max_context_tokens=200: A's trim drops 3 of 7 turns (241 is
    still over), B's trim drops 2 of 5. Trimming once for both would drop 4 of 8."""
    msgs: list[Message] = [Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="s"),))]
    for k in range(6):
        msgs += [user(f"q{k}".ljust(56, ".")), assistant(f"a{k}".ljust(56, "."))]
    msgs += [user("A".ljust(596, ".")), user("B"), assistant("end")]
    assert cow.estimate_message(msgs[1]) == 15 and cow.estimate_message(msgs[13]) == 150
    res = run(
        Conversation("c", "t", tuple(msgs)),
        "cowagent",
        params={"agent_max_context_tokens": 200, "memory_enabled": False},
    )
    drops = [e for e in res.steps[-1].events if "dropped_turns" in e.detail]
    assert [(e.detail["turns"], e.detail["dropped_turns"]) for e in drops] == [(7, 3), (5, 2)]
    assert res.steps[-1].context_indexes == [0, 11, 12, 13, 14]
    assert res.steps[-1].tokens.strategy == 1 + 30 + 150 + 1


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"summary_injection": "sync", "agent_max_context_turns": 3},
        {"history_result_max_chars": 300},
    ],
)
def test_rows_kept_across_trims_equal_rows_made_afresh(
    params: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """_rows keeps its merged rows between calls (appends extend them, a dropped prefix
    leaves, a replaced message's rows are made again): at every call, on a realistic
    transcript with drops, cuts and injected summaries, they equal rows made from nothing.
    Likewise the sanitiser's check from the part found clean (kept across prefix drops)
    equals the check over the whole history."""
    from ctxlab.engine.strategies import cowagent
    from ctxlab.engine.strategies.cowagent import CowAgentStrategy
    from ctxlab.engine.synth.realistic import realistic_bench_conversation

    whole_check = cowagent._sanitize_is_noop
    starts: list[int] = []

    def checked_noop(ctx: Any, start: int = 0) -> bool:
        found = whole_check(ctx, start)
        assert found == whole_check(ctx, 0)
        starts.append(start)
        return found

    monkeypatch.setattr(cowagent, "_sanitize_is_noop", checked_noop)

    corpus = Path(__file__).resolve().parents[2] / "data" / "corpus"
    conv = realistic_bench_conversation(corpus, messages=1500, seed=0)
    seen: list[int] = []

    class Checked(CowAgentStrategy):
        def _rows(self, ctx: Any) -> list[CowMsg]:
            got = super()._rows(ctx)
            st = ctx.state
            kept = (
                st.rows_merged, st.rows_flat, st.rows_ends, st.rows_long, st.rows_query,
                st.rows_dirty,
            )  # fmt: skip
            st.rows_merged, st.rows_flat, st.rows_ends = [], [], []
            st.rows_long, st.rows_query = [], []
            assert got == super()._rows(ctx)
            limit = int(self.params["history_result_max_chars"])
            assert kept[3] == [cow.has_long_result(r.msg, limit) for r in got]
            assert kept[4] == [cow.is_user_query(r.msg) for r in got]
            (
                st.rows_merged, st.rows_flat, st.rows_ends, st.rows_long, st.rows_query,
                st.rows_dirty,
            ) = kept  # fmt: skip
            seen.append(len(kept[1]))
            return got

    res = run(conv, Checked(params), params=params)
    assert len(seen) > 20
    assert sum(1 for s in starts if s > 0) > 20
    assert {e.kind for e in res.events} >= {"drop", "truncate"}
