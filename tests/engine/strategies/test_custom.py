from __future__ import annotations

from pathlib import Path

import pytest
from builders import conv, cycle, system
from test_perf_golden import summary

from ctxlab.engine import cli
from ctxlab.engine.core.records import Event, Fate, ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.custom import Custom, check_stages


def test_custom_composes_truncate_drop_and_summarise() -> None:
    stages = [
        {"stage": "truncate_tool_results", "max_bytes": 200, "keep_recent": 2},
        {"stage": "drop_oldest_turns", "keep_turns": 6},
        {"stage": "summarise", "keep_tokens": 300},
    ]
    result = run(conv(system("S"), *cycle(40, 1500)), Custom({"window": 2048, "stages": stages}))
    kinds = set(result.metrics["events"])
    assert {"truncate", "drop"} <= kinds
    offloaded = [c for e in result.events for c in e.changes if c.fate is Fate.OFFLOADED]
    assert offloaded and offloaded[0].offload_path in result.offloads
    assert max(s.tokens.strategy for s in result.steps) < 2048


def test_custom_summarise_only() -> None:
    result = run(
        conv(system("S"), *cycle(30, 600)),
        Custom({"window": 2048, "stages": [{"stage": "summarise", "keep_tokens": 300}]}),
    )
    assert result.summaries and "## Goal" in result.summaries[0].output


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ([{"stage": "nope"}], "unknown stage"),
        ([{"stage": "summarise", "x": 1}], "has no option 'x'"),
        ([{"stage": ["summarise"]}], "unknown stage"),
        ([3], "unknown stage 3"),
    ],
    ids=["unknown-stage", "unknown-option", "unhashable-name", "not-an-object"],
)
def test_custom_rejects_bad_stages(stages: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Custom({"stages": stages})


# --- the stages one by one ---------------------------------------------------------------
# A cycle turn k is user (1+4k), tool call (2+4k), result (3+4k), reply (4+4k) after the
# system message; each 400-char result is 100 tokens under bytes/4. The lowest threshold
# (51 tokens) makes every before-call stage run before every call.
LOW = {"window": 1024, "threshold_ratio": 0.05}


def result_index(turn: int) -> int:
    return 3 + 4 * turn


def replay(stages: list[dict[str, object]], turns: int = 8) -> ReplayResult:
    return run(conv(system("S"), *cycle(turns, 400)), Custom({**LOW, "stages": stages}))


def events_of(result: ReplayResult, kind: str) -> list[Event]:
    return [e for e in result.events if e.kind == kind]


def prune(**options: object) -> dict[str, object]:
    return {"stage": "prune_tool_outputs", "protect_turns": 0, "protect_tokens": 0, **options}


def test_prune_at_exactly_minimum_tokens_does_not_prune() -> None:
    first = events_of(replay([prune(minimum_tokens=300)]), "prune")[0]
    # 3 results (300 tokens, == minimum) are left alone; the 4th result tips it.
    assert first.detail["pruned_tokens"] == 400
    assert [c.index for c in first.changes] == [result_index(k) for k in (3, 2, 1, 0)]
    assert all(c.fate is Fate.PRUNED for c in first.changes)


def test_prune_keeps_the_protected_tokens_and_stops_at_a_pruned_output() -> None:
    result = replay([prune(protect_tokens=200, minimum_tokens=0)])
    first, second = events_of(result, "prune")[:2]
    # Results 2, 1 fill the 200 protected tokens; result 0 is the first one past them.
    assert [c.index for c in first.changes] == [result_index(0)]
    assert first.detail["scanned_tokens"] == 300
    # The next walk sums 3, 2, 1 and stops at the pruned result 0.
    assert [c.index for c in second.changes] == [result_index(1)]
    assert second.detail["scanned_tokens"] == 300


def test_prune_skips_the_newest_user_turns() -> None:
    result = replay([prune(protect_turns=2, minimum_tokens=0)])
    first = events_of(result, "prune")[0]
    # Nothing is prunable until turn 2 starts: turns 0 and 1 are the newest two before.
    assert result.steps[first.step].source_index == 2 + 4 * 2  # turn 2's tool call
    assert [c.index for c in first.changes] == [result_index(0)]
    unprotected = events_of(replay([prune(minimum_tokens=0)]), "prune")[0]
    assert result.steps[unprotected.step].source_index == 4  # turn 0's reply


def test_prune_persists_the_placeholder_and_keeps_the_original() -> None:
    result = replay([prune(minimum_tokens=0, placeholder="[gone]")])
    change = events_of(result, "prune")[0].changes[0]
    assert change.message is not None
    assert [b.text for b in change.message.blocks] == ["[gone]"]
    conversation = conv(system("S"), *cycle(8, 400))
    assert conversation.messages[change.index].blocks[0].text.startswith("line 0")


def test_clear_keeps_the_newest_results() -> None:
    result = replay([{"stage": "clear_tool_results", "keep": 2}])
    first = events_of(result, "clear_tool_uses")[0]
    assert [c.index for c in first.changes] == [result_index(0)]  # 3 results, keep 2
    assert first.changes[0].message is not None
    assert first.changes[0].message.blocks[0].text == "[cleared]"
    cleared = {c.index for e in events_of(result, "clear_tool_uses") for c in e.changes}
    assert cleared == {result_index(k) for k in range(6)}  # the newest 2 of 8 stay


def test_clear_keep_zero_clears_every_result() -> None:
    result = replay([{"stage": "clear_tool_results", "keep": 0}], turns=3)
    cleared = [c.index for e in events_of(result, "clear_tool_uses") for c in e.changes]
    assert cleared == [result_index(k) for k in range(3)]  # each once, as it arrives


def test_offload_replaces_the_whole_result_with_a_notice() -> None:
    result = replay([{"stage": "offload_tool_results", "max_bytes": 300, "keep_recent": 0}])
    change = events_of(result, "offload")[0].changes[0]
    assert change.fate is Fate.OFFLOADED and change.message is not None
    notice = change.message.blocks[0].text
    assert notice.startswith("[Tool result offloaded to tool_results/")
    assert change.offload_path in notice and "line 0" not in notice
    assert result.offloads[change.offload_path].startswith("line 0")
    # Short results stay; an offloaded notice is never offloaded again.
    small = replay([{"stage": "offload_tool_results", "max_bytes": 400, "keep_recent": 0}])
    assert not events_of(small, "offload")
    offloaded = [c.index for e in events_of(result, "offload") for c in e.changes]
    assert len(offloaded) == len(set(offloaded)) == 8


def test_truncate_offloads_the_full_text() -> None:
    stage = {"stage": "truncate_tool_results", "max_bytes": 100, "keep_recent": 0}
    result = replay([stage])
    change = events_of(result, "truncate")[0].changes[0]
    assert change.fate is Fate.OFFLOADED
    assert len(result.offloads[change.offload_path]) == 400


def test_stages_run_in_the_given_order() -> None:
    clear = {"stage": "clear_tool_results", "keep": 0}
    prune_all = prune(minimum_tokens=0)
    # Both act on each result as it arrives; whichever runs first takes it, and the other
    # finds nothing left (the prune walk stops at a cleared output).
    assert {e.kind for e in replay([clear, prune_all]).events} == {"clear_tool_uses"}
    assert {e.kind for e in replay([prune_all, clear]).events} == {"prune"}


def test_before_call_stages_wait_for_the_threshold() -> None:
    result = run(
        conv(system("S"), *cycle(8, 400)),
        Custom({"window": 1_000_000, "stages": [prune(minimum_tokens=0)]}),
    )
    assert not result.events


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ({"stage": "clear_tool_results", "keep": -1},
         "clear_tool_results option 'keep' must be >= 0"),
        ({"stage": "prune_tool_outputs", "protect_tokens": "many"},
         "prune_tool_outputs option 'protect_tokens' must be an integer"),
        ({"stage": "prune_tool_outputs", "minimum_tokens": True},
         "prune_tool_outputs option 'minimum_tokens' must be an integer"),
        ({"stage": "clear_tool_results", "placeholder": ""},
         "clear_tool_results option 'placeholder' must be a non-empty string"),
        ({"stage": "offload_tool_results", "max_bytes": 0},
         "offload_tool_results option 'max_bytes' must be >= 1"),
        ({"stage": "prune_tool_outputs", "keep": 1},
         "prune_tool_outputs has no option 'keep'"),
    ],
    ids=["negative", "string-for-int", "bool-for-int", "empty-placeholder", "zero-bytes",
         "other-stage-option"],
)  # fmt: skip
def test_custom_checks_option_types_and_ranges(stage: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Custom({"stages": [stage]})


def test_check_stages_fills_the_defaults() -> None:
    assert check_stages([{"stage": "clear_tool_results"}]) == [
        {"stage": "clear_tool_results", "keep": 3, "placeholder": "[cleared]"}
    ]
    with pytest.raises(ValueError, match="expected a JSON list"):
        check_stages({"stage": "summarise"})


# --- golden: a real corpus session through every stage -----------------------------------
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
EVERY_STAGE = [
    {"stage": "offload_tool_results", "max_bytes": 4000, "keep_recent": 0},
    {"stage": "truncate_tool_results", "max_bytes": 1500, "keep_recent": 1},
    {"stage": "prune_tool_outputs", "protect_turns": 0, "protect_tokens": 600,
     "minimum_tokens": 300},
    {"stage": "clear_tool_results", "keep": 3},
    {"stage": "drop_oldest_turns", "keep_turns": 1},
    {"stage": "summarise", "keep_tokens": 600},
]  # fmt: skip
# (steps, events, summaries, findings, digest of the whole result: see test_perf_golden)
GOLDEN_EVERY_STAGE = (
    10,
    11,
    3,
    6,
    "7883219b9533b6fa6cde72bf9202eb40071c134d72b99ee8858f86840af24609",
)


def test_golden_every_stage_over_a_corpus_session() -> None:
    conversation = cli.load_file(CORPUS / "claude-code" / "agentcmd-full-session.jsonl")
    result = run(conversation, Custom({"window": 1024, "stages": EVERY_STAGE}))
    assert {e.kind for e in result.events} == {
        "offload",
        "truncate",
        "prune",
        "clear_tool_uses",
        "drop",
        "summarise",
    }
    assert summary(result) == GOLDEN_EVERY_STAGE
