"""Kimi CLI's SimpleCompaction: its own tests (tests/core/test_simple_compaction.py at
4a550eff) ported as tables, the trigger's count, and replays of real sessions."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from builders import assistant, call, conv, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import kimi_cli
from ctxlab.engine.strategies.kimi_cli import (
    COMPACT,
    KimiCliStrategy,
    compact_message,
    estimate_text_tokens,
    preserve_start,
    should_auto_compact,
    text_chars,
    text_parts,
)
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def test_the_compact_prompt_is_byte_exact() -> None:
    digest = hashlib.sha256(COMPACT.encode("utf-8")).hexdigest()
    assert digest == "24753a19a3c0dfabc5545a103666a559cc7dd8caa963715fdc6ca7dd787a0e0a"
    assert COMPACT.startswith("\n---\n\nThe above is a list of messages")


# --- prepare (test_prepare_*) ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("roles", "max_preserved", "start"),
    [
        (["user"], 2, None),  # not enough messages
        (["user", "assistant"], 2, None),  # only the preserved ones
        (["system", "user", "assistant", "user", "assistant"], 2, 3),
        (["user", "assistant", "user", "assistant"], 2, 2),
        (["user", "assistant", "user"], 1, 2),  # media test: max_preserved_messages=1
        (["user", "assistant", "tool", "tool", "assistant"], 2, 1),  # tool is not counted
        (["user", "assistant", "tool", "assistant"], 0, None),
        ([], 2, None),
    ],
)
def test_prepare_preserves_from_the_second_user_or_assistant_from_the_end(
    roles: list[str], max_preserved: int, start: int | None
) -> None:
    assert preserve_start(roles, max_preserved) == start


def test_prepare_builds_the_compact_message() -> None:
    text = compact_message(
        [("system", ["System note"]), ("user", ["Old question"]), ("assistant", ["Old answer"])]
    )
    assert text == (
        "## Message 1\nRole: system\nContent:\nSystem note"
        "## Message 2\nRole: user\nContent:\nOld question"
        "## Message 3\nRole: assistant\nContent:\nOld answer"
        "\n" + COMPACT
    )


def test_only_text_parts_reach_the_compaction() -> None:
    message = Message(
        Role.USER,
        (
            Block(BlockKind.TEXT, text="Analyze these files:"),
            Block(BlockKind.MEDIA, text="data:image/png;base64,IMG"),
            Block(BlockKind.THINKING, text="internal reasoning"),
        ),
    )
    assert text_parts(message) == ["Analyze these files:"]
    answer = assistant("Old answer", call("t1", "bash", cmd="ls").blocks[0], thinking="hidden")
    assert text_parts(answer) == ["Old answer"]


# --- estimated_token_count (test_estimated_token_count_*) ---------------------------------------
def test_estimates_sum_the_characters_before_dividing() -> None:
    messages = [user("a" * 100), assistant("b" * 200)]
    assert estimate_text_tokens(sum(text_chars(m) for m in messages)) == 300 // 4
    assert estimate_text_tokens(text_chars(assistant("a" * 40, thinking="x " * 100))) == 10
    assert estimate_text_tokens(0) == 0
    assert estimate_text_tokens(3) + estimate_text_tokens(3) == 0 < estimate_text_tokens(6)


# --- should_auto_compact (TestShouldAutoCompact) --------------------------------------------
@pytest.mark.parametrize(
    ("tokens", "size", "ratio", "reserved", "fires"),
    [
        (150_000, 200_000, 0.85, 50_000, True),  # 200K: reserved fires first at 150K
        (140_000, 200_000, 0.85, 50_000, False),
        (850_000, 1_000_000, 0.85, 50_000, True),  # 1M: the ratio fires first at 850K
        (840_000, 1_000_000, 0.85, 50_000, False),
        (140_000, 200_000, 0.7, 50_000, True),
        (139_999, 200_000, 0.7, 50_000, False),
        (0, 200_000, 0.85, 50_000, False),
    ],
)
def test_should_auto_compact(
    tokens: int, size: int, ratio: float, reserved: int, fires: bool
) -> None:
    assert (
        should_auto_compact(tokens, size, trigger_ratio=ratio, reserved_context_size=reserved)
        is fires
    )


@pytest.mark.parametrize(
    ("size", "ratio", "reserved", "threshold"),
    [(200_000, 0.85, 50_000, 150_000), (1_000_000, 0.85, 50_000, 850_000), (8192, 0.5, 1000, 4096)],
)
def test_the_threshold_is_the_first_count_that_fires(
    size: int, ratio: float, reserved: int, threshold: int
) -> None:
    strategy = KimiCliStrategy(
        {"max_context_size": size, "compaction_trigger_ratio": ratio,
         "reserved_context_size": reserved}
    )  # fmt: skip
    assert strategy.threshold(None) == threshold  # type: ignore[arg-type]
    kwargs = {"trigger_ratio": ratio, "reserved_context_size": reserved}
    assert should_auto_compact(threshold, size, **kwargs)
    assert not should_auto_compact(threshold - 1, size, **kwargs)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"compaction_trigger_ratio": 0.4}, "compaction_trigger_ratio"),
        ({"compaction_trigger_ratio": 1.0}, "compaction_trigger_ratio"),
        ({"reserved_context_size": 999}, "reserved_context_size"),
    ],
)
def test_the_config_ranges(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KimiCliStrategy(params)


# --- the strategy in a replay ------------------------------------------------------------------
SMALL = {"max_context_size": 4096, "compaction_trigger_ratio": 0.5, "reserved_context_size": 1000}


def turns(n: int, size: int) -> list[Message]:
    out: list[Message] = []
    for k in range(n):
        out += [
            user(f"step {k}"),
            call(f"t{k}", "bash", cmd=f"cat f{k}"),
            tool_result(f"t{k}", "x" * size),
            assistant(f"read f{k}"),
        ]
    return out


def test_a_replay_compacts_all_but_the_last_two_user_or_assistant_messages() -> None:
    conversation = conv(system("S"), *turns(8, 2000))
    result = run(conversation, KimiCliStrategy(SMALL))
    first = next(e for e in result.events if e.kind == "compact")
    assert first.detail["threshold"] == 2048
    assert first.detail["estimate"] >= 2048
    removed = [c.index for c in first.changes if c.fate is Fate.SUMMARISED]
    # the last two user/assistant messages before the call (the tool results between them
    # are kept with them), never the system prompt
    live_before = list(range(1, result.steps[first.step].source_index))
    roles = [kimi_cli.kosong_role(conversation.messages[i]) for i in live_before]
    start = preserve_start(roles)
    assert start is not None
    assert removed == live_before[:start]
    assert 0 not in removed
    summary = result.summaries[first.summary_id]
    assert summary.input.startswith(f"[system]\n{kimi_cli.COMPACTION_SYSTEM_PROMPT}\n\n[user]\n")
    assert (
        "## Message 1\nRole: user\nContent:\nstep 0## Message 2\nRole: assistant\n" in summary.input
    )
    assert "Role: tool\nContent:\nxxxx" in summary.input
    assert summary.input.endswith(COMPACT)


def test_a_second_compaction_compacts_the_first_summary_as_message_one() -> None:
    result = run(conv(system("S"), *turns(16, 2000)), KimiCliStrategy(SMALL))
    compactions = [e for e in result.events if e.kind == "compact"]
    assert len(compactions) >= 2
    second = result.summaries[compactions[1].summary_id]
    head = "## Message 1\nRole: user\nContent:\n" + kimi_cli.SUMMARY_HEAD
    assert head + result.summaries[compactions[0].summary_id].output in second.input


def test_the_count_is_the_last_usage_plus_the_characters_appended_since() -> None:
    strategy = KimiCliStrategy(SMALL)
    st = kimi_cli._State(token_count=1000)
    st.batch_chars = 7  # two tool results of one step: one batch
    st.batch_chars += 7
    assert strategy.count_with_pending(st) == 1000 + 14 // 4
    strategy._close_batch(st)
    st.pending += estimate_text_tokens(6)  # then a user message
    assert strategy.count_with_pending(st) == 1000 + 3 + 1


def test_a_failed_compaction_fails_the_turn_and_changes_nothing() -> None:
    result = run(
        conv(system("S"), *turns(8, 2000)), KimiCliStrategy(SMALL), summarizer=FailingSummarizer()
    )
    failed = [e for e in result.events if e.kind == "summary_failed"]
    assert failed and "raises" in failed[0].detail["outcome"]
    assert not any(c.fate is Fate.SUMMARISED for e in result.events for c in e.changes)


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


def test_every_corpus_transcript_replays() -> None:
    replayed = compacted = 0
    for path in corpus_files():
        try:
            conversation = cli.load_file(path)
        except (ValueError, KeyError):
            continue  # not a transcript (a manifest, a cassette)
        result = run(conversation, KimiCliStrategy({**SMALL, "max_context_size": 8192}))
        replayed += 1
        compacted += any(e.kind == "compact" for e in result.events)
    assert replayed >= 30 and compacted >= 8


def test_golden_over_a_corpus_session() -> None:
    conversation = cli.load_file(CORPUS / "claude-code" / "agentcmd-full-session.jsonl")
    result = run(conversation, KimiCliStrategy({**SMALL, "max_context_size": 8192}))
    compactions = [e for e in result.events if e.kind == "compact"]
    # the two preserved messages hold large tool results between them: the count stays over
    # the trigger and Kimi compacts again at the next steps, as its loop does
    assert [e.step for e in compactions] == [6, 7, 8]
    assert [len(e.changes) for e in compactions] == [9, 2, 2]
    assert [e.tokens_after for e in compactions] == [8301, 6600, 1338]
    assert all(s.output.startswith("(Extractive summary") for s in result.summaries)


def test_registered_and_exported_as_its_config_toml() -> None:
    import tomllib

    from ctxlab.engine.native_config import native_config
    from ctxlab.engine.strategies import LIBRARY, STRATEGIES

    assert STRATEGIES["kimi_cli"] is KimiCliStrategy and "kimi_cli" in LIBRARY
    native = native_config(
        "kimi_cli", {"compaction_trigger_ratio": 0.7, "reserved_context_size": 20_000}
    )
    assert native.filename == "config.toml" and native.unexpressed == ()
    assert tomllib.loads(native.text) == {
        "loop_control": {"reserved_context_size": 20_000, "compaction_trigger_ratio": 0.7}
    }
    wide = native_config("kimi_cli", {"max_context_size": 100_000})
    assert wide.unexpressed == (("max_context_size", 100_000),)  # the model's, not loop_control
