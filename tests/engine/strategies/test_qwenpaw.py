from __future__ import annotations

from typing import Any

import pytest
from builders import assistant, call, conv, cycle, system, tool_result, tool_use, user

from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.qwenpaw import QwenPaw
from ctxlab.engine.summarize.offline import FailingSummarizer

SMALL = {"max_input_length": 1024, "language": "en"}  # threshold 819, reserve 102


def q(**kw: Any) -> QwenPaw:
    return QwenPaw({**SMALL, **kw})


def summarised(result: ReplayResult) -> list[int]:
    return [c.index for e in result.events for c in e.changes if c.fate is Fate.SUMMARISED]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abcde", 1), ("abcdef", 2), ("abcdefg", 2), ("你好", 2)],
    ids=["empty", "1.25-down", "1.5-half-up", "1.75-up", "multibyte-6-bytes"],
)
def test_qwenpaw_count_text_half_up(text: str, tokens: int) -> None:
    assert q().count_text(text) == tokens


def test_qwenpaw_count_message_rounds_per_block() -> None:
    msg = Message(
        Role.USER, (Block(BlockKind.TEXT, text="abcdef"), Block(BlockKind.TEXT, text="abcdef"))
    )
    assert q().count_message(msg) == 4  # 2 + 2, not round(12/4) = 3
    use = assistant("", tool_use("t", "ls", path="/"))
    assert q().count_message(use) == q().count_text('ls{"path": "/"}')


@pytest.mark.parametrize(
    ("result_bytes", "expected_summarised", "latest_dropped"),
    [(100, [0], True), (500, [0, 1, 2], True)],
    ids=["pair-kept-when-both-fit", "pair-excluded-when-result-too-large"],
)
def test_qwenpaw_split_keeps_tool_aligned_suffix(
    result_bytes: int, expected_summarised: list[int], latest_dropped: bool
) -> None:
    c = conv(
        user("u" * 3200), call("t1", "ls"), tool_result("t1", "r" * result_bytes), assistant("x")
    )
    result = run(c, q())
    last = result.steps[-1]
    assert sorted(summarised(result)) == expected_summarised
    assert ("latest_user_dropped" in {f.kind for f in result.findings}) is latest_dropped
    assert last.summary_id is not None


@pytest.mark.parametrize(
    ("tokens", "fires"), [(819, True), (818, False)], ids=["equal", "one-less"]
)
def test_qwenpaw_threshold_equality_triggers(tokens: int, fires: bool) -> None:
    result = run(conv(user("a" * (4 * tokens)), assistant("x")), q())
    assert bool(result.summaries) is fires


def test_qwenpaw_system_and_summary_lower_the_trigger() -> None:
    c = conv(system("s" * 400), user("a" * (4 * 720)), assistant("x"))
    assert run(c, q()).summaries  # 720 >= 819 - 100


def test_qwenpaw_left_nonpositive_skips() -> None:
    c = conv(system("s" * 4000), user("a" * 4000), assistant("x"), user("b"), assistant("y"))
    result = run(c, q())
    assert [e.kind for e in result.events] == ["compact_skipped"]
    assert result.summaries == []


def test_qwenpaw_reserve_zero_compacts_everything() -> None:
    c = conv(user("a" * 3000), assistant("b" * 40), user("c" * 400), assistant("x"))
    result = run(c, q(reserve_threshold_ratio=0))
    assert sorted(summarised(result)) == [0, 1, 2]
    assert result.steps[-1].context == ()


@pytest.mark.parametrize(
    "summarizer",
    [FailingSummarizer("raise"), FailingSummarizer("error"), FailingSummarizer("empty")],
    ids=["raises", "error", "empty"],
)
def test_qwenpaw_failing_summariser_drops_and_keeps_previous_summary(summarizer: Any) -> None:
    c = conv(user("a" * 3200), assistant("b" * 40), user("c" * 40), assistant("x"))
    result = run(c, q(), summarizer=summarizer)
    kinds = [e.kind for e in result.events]
    assert kinds == ["summary_failed", "drop"]
    drop = result.events[1]
    assert {ch.fate for ch in drop.changes} == {Fate.DROPPED}
    assert drop.detail["fallback_reserve"] == 819
    assert result.steps[-1].summary_id is None
    assert result.steps[-1].context == ((1, 3),)  # kept up to `left` tokens


class NoHeadings:
    name = "no-headings"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse(text="just prose")


def test_qwenpaw_output_without_hashes_is_a_failure() -> None:
    c = conv(user("a" * 3400), assistant("x"))
    result = run(c, q(), summarizer=NoHeadings())
    assert result.events[0].detail["reason"] == "output without ##"


def test_qwenpaw_compaction_disabled_drops() -> None:
    result = run(
        conv(user("a" * 3400), assistant("b"), user("c"), assistant("x")),
        q(context_compact_enabled=False),
    )
    assert [e.kind for e in result.events] == ["drop"]
    assert result.summaries == []


def test_qwenpaw_summariser_input_capped_newest_first() -> None:
    msgs = [user("m" * 400) for _ in range(12)] + [assistant("x")]
    result = run(conv(*msgs), q(compact_threshold_ratio=0.1, reserve_threshold_ratio=0.0))
    event = next(e for e in result.events if e.kind == "summarise")
    beyond = [c.index for c in event.changes if c.fate is Fate.DROPPED]
    assert beyond and beyond == list(range(len(beyond)))  # the oldest ones
    assert event.detail["beyond_cap"] == len(beyond)


def test_qwenpaw_prompt_language_and_update() -> None:
    c = conv(system("S"), *cycle(30, 600))
    zh = run(c, QwenPaw({"max_input_length": 2048}))
    assert zh.summaries[0].input.startswith("[system]\n你是一个上下文压缩助手")
    assert "# 输出示例：" in zh.summaries[0].input
    en = run(c, QwenPaw({"max_input_length": 2048, "language": "en"}))
    assert "\n\n# Task\nCreate a structured summary" in en.summaries[0].input
    assert "\n\n# previous-summary\n" in en.summaries[1].input
    assert "Update the structured summary with new conversation messages" in en.summaries[1].input
    assert en.summaries[0].input.split("[user]\n", 1)[1].startswith("# conversation\n")


def test_qwenpaw_prune_offloads_old_tool_results() -> None:
    body = "".join(f"row {i}\n" for i in range(2000))  # ~15 KB, many lines
    c = conv(user("go"), call("t1", "bash"), tool_result("t1", body), call("t2", "bash"),
             tool_result("t2", "ok"), assistant("x"))  # fmt: skip
    result = run(c, q(max_input_length=10**6))
    offload = next(e for e in result.events if e.kind == "offload")
    change = offload.changes[0]
    assert change.index == 2 and change.fate is Fate.OFFLOADED
    new = change.message.blocks[0].text
    head, marker, notice = new.partition("<<<TRUNCATED>>>")
    assert len(head.encode()) == 3000 and marker
    assert f"file_path={change.offload_path} start_line=" in notice
    assert change.offload_path.startswith("~/.qwenpaw/tool_results/")
    assert result.offloads[change.offload_path] == body


@pytest.mark.parametrize(
    ("name", "tool_input", "pruned"),
    [("chat_with_agent", {}, False), ("read_file", {"path": "README.md"}, False),
     ("read_file", {"path": "a.py"}, True)],
    ids=["exempt-name", "exempt-extension", "not-exempt"],
)  # fmt: skip
def test_qwenpaw_prune_exemptions(name: str, tool_input: dict[str, str], pruned: bool) -> None:
    body = "line\n" * 2000
    c = conv(user("go"), call("t1", name, **tool_input), tool_result("t1", body), call("t2"),
             tool_result("t2"), assistant("x"))  # fmt: skip
    result = run(c, q(max_input_length=10**6))
    assert any(e.kind == "offload" for e in result.events) is pruned


def test_qwenpaw_prune_single_line_is_cut_without_notice() -> None:
    c = conv(
        user("go"),
        call("t1"),
        tool_result("t1", "x" * 9000),
        call("t2"),
        tool_result("t2"),
        assistant("x"),
    )
    result = run(c, q(max_input_length=10**6))
    change = next(e for e in result.events if e.kind == "offload").changes[0]
    assert change.message.blocks[0].text == "x" * 3000
    assert result.offloads[change.offload_path] == "x" * 9000


def test_qwenpaw_prune_retruncates_read_file_notice() -> None:
    pre = "l\n" * 5000 + (
        "<<<TRUNCATED>>>\nThe output above was truncated.\nThe full content is saved to the file "
        "and contains 9000 lines in total.\nThis excerpt starts at line 1 and covers the next "
        "10000 bytes.\nIf the current content is not enough, call `read_file` with "
        "file_path=/src/big.py start_line=5001 to read more."
    )
    c = conv(user("go"), call("t1", "read_file", path="/src/big.py"), tool_result("t1", pre),
             call("t2"), tool_result("t2"), assistant("x"))  # fmt: skip
    result = run(c, q(max_input_length=10**6))
    event = next(e for e in result.events if e.kind == "truncate")
    text = event.changes[0].message.blocks[0].text
    assert "covers the next 3000 bytes" in text and "start_line=1501 to read more" in text
    assert "file_path=/src/big.py" in text
    assert result.offloads == {}


def test_qwenpaw_trailing_tool_results_all_count_as_recent() -> None:
    body = "line\n" * 2000
    c = conv(user("go"), assistant("", tool_use("a"), tool_use("b"), tool_use("c")),
             tool_result("a", body), tool_result("b", body), tool_result("c", body), assistant("x"))  # fmt: skip
    result = run(c, q(max_input_length=10**6))
    assert not any(e.kind == "offload" for e in result.events)


def test_qwenpaw_golden_cycle_fires_every_kind() -> None:
    body = "".join(f"out {i}\n" for i in range(900))
    msgs = []
    for k in range(30):
        msgs += [
            user(f"step {k} in src/app{k}.py"),
            call(f"t{k}"),
            tool_result(f"t{k}", body),
            assistant(f"ok {k}"),
        ]
    result = run(conv(system("S"), *msgs), QwenPaw({"max_input_length": 8192}))
    kinds = set(result.metrics["events"])
    assert {"offload", "summarise"} <= kinds
    assert result.metrics["peak_strategy"] <= 8192
    assert all(
        s.tokens.strategy
        == s.zones.system + s.zones.summary + s.zones.compactable + s.zones.reserved_recent
        for s in result.steps
    )
