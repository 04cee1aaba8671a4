"""The forecast rule and the original session's steps (issue 38), on real sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import cli
from ctxlab.engine.evaluate import forecast as fc
from ctxlab.engine.evaluate.session_now import forecast, forecast_hits, session_now
from ctxlab.engine.strategies import _claude_code_versions as versions
from ctxlab.engine.strategies.claude_code import ClaudeCodeStrategy

DATA = Path(__file__).resolve().parents[2] / "data"
AGREEMENT = DATA / "agreement"
# Claude Code 2.1.14: a microcompact (line 33), then an auto compact_boundary (preTokens 155,068)
MICRO_THEN_AUTO = AGREEMENT / "entireio-cli" / "76" / "62d755ef9f" / "2" / "full.jsonl"
FROM_START = DATA / "claude-code-2.1" / "parallel-calls-hooks.jsonl"


@pytest.mark.parametrize("rules", versions.RANGES, ids=lambda r: r.label)
@pytest.mark.parametrize("window", [200_000, 1_000_000])
def test_the_threshold_is_the_strategys(rules: versions.VersionRules, window: int) -> None:
    strategy = ClaudeCodeStrategy()
    expected = strategy.auto_compact_threshold(rules, window)
    assert fc.claude_code_threshold(window, rules.output_reserve, rules.buffer) == expected


def test_turns_to_trigger_rule() -> None:
    assert fc.turns_to_trigger([], 100).turns is None
    one = fc.turns_to_trigger([50], 100)
    assert one.turns is None and "no growth rate" in one.why
    assert fc.turns_to_trigger([10, 20, 30], 100).turns == 7  # 70 to go at 10 a turn
    assert fc.turns_to_trigger([10, 20, 31], 100).turns == 7  # 69 at 10.5: ceil(6.57)
    assert fc.turns_to_trigger([10, 120], 100).turns == 0
    flat = fc.turns_to_trigger([40, 40, 40], 100)
    assert flat.turns is None and "did not grow" in flat.why
    assert fc.turns_to_trigger([10, 20], None).turns is None
    # the rate is the mean over the last RATE_TURNS turns only
    counts = [0] * 10 + [i * 100 for i in range(fc.RATE_TURNS + 1)]
    estimate = fc.turns_to_trigger(counts, counts[-1] + 1_000)
    assert estimate.rate == 100 and estimate.basis == fc.RATE_TURNS and estimate.turns == 10


def test_steps_of_a_real_session_mark_its_compactions_and_reset_the_span() -> None:
    conv = cli.load_file(MICRO_THEN_AUTO)
    now = session_now(conv, "claude-code")
    assert now.rules.agent == "claude_code" and now.rules.version == "2.1.14"
    assert now.rules.threshold == 155_000  # 200,000 - 32,000 - 13,000 before 2.1.21
    marked = [(s.step, s.compacted_before.kind) for s in now.steps if s.compacted_before]
    assert [kind for _, kind in marked] == ["microcompact", "compact_boundary"]
    after = now.steps[-1]
    assert after.compacted_before is not None and after.span_start == 61
    # the request after the agent's compaction: its summary has a zone of its own
    assert after.zones["summary"] > 0 and "not_in_file" not in after.zones
    # every step's zones add up to what the provider reported
    for step in now.steps:
        request = sum(
            step.zones.get(k, 0)
            for k in ("unseen", "not_in_file", "instruction_files", "summary", "compactable")
        )
        assert request == step.reported
    # a file that starts mid-session: the fixed part is not told from earlier conversation
    first = now.steps[0]
    assert first.zones["unseen"] == 0 and first.zones["not_in_file"] > 100_000
    assert now.overhead_note


def test_the_fixed_part_is_measured_at_the_first_reported_usage() -> None:
    conv = cli.load_file(FROM_START)
    now = session_now(conv, "claude-code")
    first = now.steps[0]
    assert not now.overhead_note and "not_in_file" not in first.zones
    # system prompt + tools + attachments: the first usage minus the messages before it
    assert first.reported is not None and 20_000 < first.zones["unseen"] < first.reported
    assert all(s.zones["unseen"] == first.zones["unseen"] for s in now.steps)


def test_forecast_before_the_real_compaction() -> None:
    conv = cli.load_file(MICRO_THEN_AUTO)
    now = session_now(conv, "claude-code")
    step = now.steps[-2]  # the agent's last call before its compaction
    got = forecast(now, step)
    assert got.span == (13, 61)  # since the microcompact, up to the boundary
    assert got.summarised == 48 and got.kept == ()
    assert got.facts["paths"] > 0 and got.facts["commands"] > 0
    assert set(got.facts) <= set(got.examples)
    # its count is 154,769, under 155,000: the next turn's growth passes it
    assert got.turns.count == 154_769 and got.turns.turns == 1


def test_forecast_measured_ten_turns_ahead_on_the_vendored_sessions() -> None:
    conv = cli.load_file(MICRO_THEN_AUTO)
    (hit,) = forecast_hits(conv, "claude-code", "76/62d755ef9f/2")
    assert hit.actual == fc.HORIZON and hit.at_message == 61
    assert hit.predicted == 8 and hit.within  # 9,355 tokens to go at ~1,100 a turn
    assert fc.share_within([hit]) == 1.0


def test_the_range_comes_from_the_growth_of_5_turn_stretches() -> None:
    # steady growth: a range of one point
    steady = fc.turns_to_trigger([i * 100 for i in range(11)], 2_000)
    assert (steady.turns, steady.low, steady.high) == (10, 10, 10)
    assert steady.range_text == ""  # nothing to say beyond the point
    # bursty growth: the fastest stretches give the low end, the slowest the high end
    slow_then_fast = [0]
    for step in [50] * 5 + [1_000] * 5:
        slow_then_fast.append(slow_then_fast[-1] + step)
    got = fc.turns_to_trigger(slow_then_fast, slow_then_fast[-1] + 5_250)  # 525 a turn
    assert got.turns == 10 and got.low is not None and got.high is not None
    # the stretches grow 50, 240, 430, 620, 810, 1,000 a turn; the 10 % and 90 % ones
    # (240 and 1,000) give 5,250 / 1,000 -> 6 and 5,250 / 240 -> 22 turns
    assert (got.low, got.high) == (6, 22)
    assert got.range_text == "6-22"
    assert got.as_dict()["range"] == [got.low, got.high]
    # a stretch that did not grow: no upper end
    flat_then_up = [0] * 9 + [1_000, 2_000]
    open_ended = fc.turns_to_trigger(flat_then_up, 4_000)  # 200 a turn: 10 turns
    assert open_ended.high is None and open_ended.range_text.endswith("or more")


def test_hits_say_whether_the_real_turns_were_in_the_range() -> None:
    hit = fc.Hit("s", 1, 8, 10, 7, 12)
    assert hit.within and hit.in_range
    assert not fc.Hit("s", 1, 8, 10, 7, 9).in_range
    assert fc.Hit("s", 1, 8, 10, 7, None).in_range
    assert fc.share_in_range([hit, fc.Hit("s", 2, None, 10)]) == 0.5


def test_the_oracle_forecasts_at_the_spans_own_mean_growth() -> None:
    # 11 counts growing 0, 0, ..., then 1,000 a turn: the whole span's mean is 500 a turn
    span = [0] * 6 + [1_000, 2_000, 3_000, 4_000, 5_000]
    assert fc.oracle_turns(span, 0, 5_000) == 10  # 5,000 to go at 500 a turn
    assert fc.oracle_turns(span, 10, 5_000) == 0  # at the threshold
    assert fc.oracle_turns([7, 7, 7], 0, 100) is None  # no growth: no forecast
    assert fc.oracle_turns([7], 0, 100) is None  # one count: no rate
    hits = [fc.Hit("s", 1, 8, 10, oracle=13), fc.Hit("s", 2, 3, 10, oracle=9)]
    assert fc.share_oracle_within(hits) == 0.5 and fc.share_within(hits) == 0.5


def test_the_vendored_hit_carries_its_oracle() -> None:
    conv = cli.load_file(MICRO_THEN_AUTO)
    (hit,) = forecast_hits(conv, "claude-code", "76/62d755ef9f/2")
    assert hit.oracle == 9  # the span's own mean growth, the 10 calls to come included
