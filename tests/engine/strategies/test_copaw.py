from __future__ import annotations

from typing import Any

import pytest
from builders import assistant, call, conv, cycle, system, tool_result, tool_use, user

from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.copaw import CoPaw
from ctxlab.engine.summarize.offline import FailingSummarizer, OfflineSummarizer
from ctxlab.engine.tokens.qwen_tokens import available, qwen_counter

# bytes//4 keeps the arithmetic readable: threshold int(1024*.75)=768, reserve 102.
SMALL = {"max_input_length": 1024, "token_counter": "bytes4", "language": "en"}


def c(**kw: Any) -> CoPaw:
    return CoPaw({**SMALL, **kw})


def fates(result: ReplayResult, fate: Fate) -> list[int]:
    return sorted(ch.index for e in result.events for ch in e.changes if ch.fate is fate)


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("abc", 0), ("abcdefg", 1), ("你好", 1)],
                         ids=["empty", "floor", "floor-7", "multibyte"])  # fmt: skip
def test_copaw_fallback_counter_floors(text: str, tokens: int) -> None:
    assert c().count_text(text) == tokens


@pytest.mark.skipif(not available(), reason="tokenizers package or Qwen2.5 tokenizer missing")
def test_copaw_qwen_tokenizer_is_default_and_exact() -> None:
    strategy = CoPaw({})
    assert strategy.estimator == "Qwen2.5 tokenizer, per block"
    assert qwen_counter().count("hello world") == 2
    assert strategy.count_text("你好世界") == qwen_counter().count("你好世界")


@pytest.mark.parametrize(
    ("tokens", "fires"), [(768, True), (767, False)], ids=["equal", "one-less"]
)
def test_copaw_threshold_equality_triggers(tokens: int, fires: bool) -> None:
    result = run(conv(user("a" * (4 * tokens)), assistant("x")), c())
    assert bool(result.summaries) is fires


def test_copaw_keep_pulls_in_far_tool_use_non_contiguous() -> None:
    msgs = [
        user("go"),
        call("far", "ls"),
        user("n" * 3040),
        tool_result("far", "r" * 40),
        assistant("x"),
    ]
    result = run(conv(*msgs), c())
    # kept: the result (3) and, as a dependency, its far tool_use (1); 0 and 2 compacted
    assert result.steps[-1].context == ((1, 2), (3, 4))
    assert fates(result, Fate.SUMMARISED) == [0, 2]


def test_copaw_orphan_result_is_invalid_and_falls_back_to_keep_recent() -> None:
    msgs = [
        user("a" * 3000),
        assistant("b" * 40),
        user("c" * 40),
        tool_result("ghost", "g" * 40),
        assistant("x"),
    ]
    result = run(conv(*msgs), c())
    event = next(e for e in result.events if e.kind == "summarise")
    assert event.detail["valid_split"] is False
    # keep=3 -> [1,2,3] not aligned (orphan) -> 2 -> [2,3] not aligned -> 1 -> [3] not -> 0: all
    assert event.detail["fallback_keep"] == 0
    assert fates(result, Fate.SUMMARISED) == [0, 1, 2, 3]


def test_copaw_newest_alone_over_reserve_compacts_everything() -> None:
    result = run(conv(user("a" * 2800), assistant("b"), user("c" * 600), assistant("x")), c())
    assert fates(result, Fate.SUMMARISED) == [0, 1, 2]
    assert "latest_user_dropped" in {f.kind for f in result.findings}


@pytest.mark.parametrize("mode", ["raise", "error"])
def test_copaw_failure_text_replaces_previous_summary(mode: str) -> None:
    """Issue 14 divergence 2: when the compactor call raises, ReMe's op framework returns
    "[Compactor] failed: <error>" and CoPaw stores THAT as the summary: the previous one
    is lost, the model sees the failure text, and the next compaction updates it."""
    msgs = cycle(30, 400)
    good = run(conv(system("S"), *msgs), c())
    assert len(good.summaries) >= 3

    class SecondFails:  # fail only the second call
        name = "second-fails"

        def __init__(self) -> None:
            self.calls = 0

        def summarize(self, request: Any) -> Any:
            self.calls += 1
            if self.calls == 2:
                return FailingSummarizer(mode).summarize(request)  # type: ignore[arg-type]
            return OfflineSummarizer().summarize(request)

    bad = run(conv(system("S"), *msgs), c(), summarizer=SecondFails())
    stored = "[Compactor] failed: summariser failed (simulated)"
    failed = next(e for e in bad.events if e.kind == "summary_failed")
    assert failed.detail["previous_summary_lost"] is True
    assert failed.detail["stored_summary"] == stored
    drop = next(e for e in bad.events if e.kind == "drop")
    step = next(s for s in bad.steps if s.index == drop.step)
    assert step.summary_id is None
    # CoPaw counts system + raw summary as one string (bytes//4 here): 50 bytes -> 12
    assert step.zones.summary == len(("S" + stored).encode()) // 4 == 12
    third = bad.summaries[2].input
    assert f"<previous-summary>\n{stored}\n</previous-summary>" in third


def test_copaw_empty_answer_stores_empty_summary() -> None:
    """An answer with no text (the call did not raise) overwrites with ""."""
    msgs = cycle(30, 400)
    bad = run(conv(system("S"), *msgs), c(), summarizer=FailingSummarizer("empty"))
    drop = next(e for e in bad.events if e.kind == "drop")
    assert next(e for e in bad.events if e.kind == "summary_failed").detail["stored_summary"] == ""
    step = next(s for s in bad.steps if s.index == drop.step)
    assert step.summary_id is None and step.zones.summary == 0


def test_copaw_update_prompt_shape() -> None:
    result = run(conv(system("S"), *cycle(30, 400)), c())
    first, second = result.summaries[0].input, result.summaries[1].input
    assert "[user]\n<conversation>\n" in first and "\nuser:\n<text>task " in first
    assert first.endswith("error messages.")  # get_prompt strips the YAML block
    assert "</conversation>\n\nThe messages above are NEW" in second
    assert (
        "\n\n<previous-summary>\n" in second
        and "\n</previous-summary>\n\nUpdate the existing" in second
    )


def test_copaw_default_language_is_chinese() -> None:
    result = run(
        conv(system("S"), *cycle(12, 400)),
        CoPaw({"max_input_length": 1024, "token_counter": "bytes4"}),
    )
    assert "使用此确切格式：" in result.summaries[0].input


def test_copaw_summary_reinjection_counts_with_system() -> None:
    result = run(conv(system("S" * 40), *cycle(12, 400)), c())
    step = next(s for s in result.steps if s.summary_id is not None)
    assert step.zones.system == 10
    assert step.zones.summary > 0


def test_copaw_tool_result_compact_head_tail_marker() -> None:
    body = "".join(chr(65 + i % 26) for i in range(3000))
    msgs = [user("go"), call("t1"), tool_result("t1", body)] + [
        m for k in range(3) for m in (user(f"u{k}"), assistant(f"a{k}"))
    ]
    result = run(
        conv(*msgs),
        c(enable_tool_result_compact=True, max_input_length=10**5, tool_result_compact_keep_n=2),
    )
    event = next(e for e in result.events if e.kind == "tool_result_compact")
    change = event.changes[0]
    assert change.index == 2 and change.fate is Fate.OFFLOADED
    text = change.message.blocks[0].text
    assert text == (
        body[:500]
        + "\n\n<<<TRUNCATED>>> (2000 characters omitted) <<<END_TRUNCATED>>>\n\n"
        + body[-500:]
        + f"\n\n[Full content saved to: {change.offload_path}]"
    )
    assert (
        result.offloads[change.offload_path] == "# tool_name: bash\n# created_at: \n# ---\n" + body
    )


def test_copaw_tool_result_compact_is_off_by_default() -> None:
    msgs = [user("go"), call("t1"), tool_result("t1", "x" * 3000)] + [
        m for k in range(6) for m in (user(f"u{k}"), assistant(f"a{k}"))
    ]
    result = run(conv(*msgs), c(max_input_length=10**5))
    assert result.events == []


def test_copaw_multibyte_and_parallel_tools() -> None:
    msgs = [
        user("修复" * 500),
        assistant("", tool_use("a"), tool_use("b")),
        tool_result("a", "一" * 30),
        tool_result("b", "二" * 30),
        assistant("x"),
    ]
    result = run(conv(*msgs), c())
    assert fates(result, Fate.SUMMARISED) == [0]
    assert result.steps[-1].context == ((1, 4),)


def test_copaw_summariser_sees_the_whole_compacted_tool_result() -> None:
    """Issue 14 divergence 6: ReMe's as_msg_stat keeps the full text of a compacted tool
    result (head, <<<TRUNCATED>>> notice, tail, saved path); only QwenPaw's formatter
    cuts at the marker."""
    from ctxlab.engine.stages import agentscope
    from ctxlab.engine.stages.markers import reme_truncate_text

    compacted = reme_truncate_text("H" * 600 + "T" * 600, 1000) + "\n\n[Full content saved to: x]"
    msg = tool_result("t1", compacted)
    reme = agentscope.format_message(msg, style="reme", include_thinking=False, tool_names={})
    assert reme == f"system:\n<tool_result> output={compacted}</tool_result>"
    qwen = agentscope.format_message(msg, style="qwenpaw", include_thinking=False, tool_names={})
    assert "T" not in qwen and "<<<TRUNCATED>>>" not in qwen

    # replayed: the compacted result (as ReMe left it) reaches the summary input whole
    msgs = [*cycle(5, 300), user("go"), call("t1", "cat"), tool_result("t1", compacted)]
    msgs += [assistant("x"), user("y" * 300), assistant("z")]
    first = run(conv(*msgs), c()).summaries[0].input
    assert f"<tool_result>cat output={compacted}</tool_result>" in first
