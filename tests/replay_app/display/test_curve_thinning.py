"""The run page's thinned token curve (``replay_app.display.thinning``): every drawn value is
a stored one, every bucket's extremes, crossing, gap and event step stays, and the chart
built from it keeps every event marker. Checked on replays of real Claude Code and Codex
sessions (reported counts with gaps) and of a realistic 3,000-message transcript."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.synth import realistic as synth_realistic
from replay_app.display import thinning
from replay_app.display.charts import EventPoint, Series, figure, token_curve

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _crossings(values: Sequence[int | None], level: int) -> int:
    """How many times the drawn line crosses ``level`` (gaps break the line)."""
    count, above = 0, None
    for v in values:
        if v is None:
            above = None
            continue
        if above is not None and (v >= level) != above:
            count += 1
        above = v >= level
    return count


def _check(values: Sequence[int | None], buckets: int, forced: list[int], levels: list[int]) -> list[int]:  # fmt: skip
    keep = thinning.keep_indexes(values, buckets=buckets, forced=forced, levels=levels)
    n = len(values)
    assert keep == sorted(set(keep)) and keep[0] == 0 and keep[-1] == n - 1
    assert set(forced) <= set(keep)
    if n <= 2 * buckets:
        assert keep == list(range(n))
        return keep
    crossings_kept = sum(_crossings(values, level) for level in levels)
    assert len(keep) <= 2 * buckets + 2 + len(forced) + 2 * crossings_kept + 3 * values.count(None)
    kept = set(keep)
    for b in range(buckets):  # each bucket's lowest and highest value are drawn
        part = [(v, lo) for lo, v in enumerate(values) if b * n // buckets <= lo < (b + 1) * n // buckets and v is not None]  # fmt: skip
        if part:
            assert min(v for v, _ in part) in {values[i] for _, i in part if i in kept}
            assert max(v for v, _ in part) in {values[i] for _, i in part if i in kept}
    drawn = [values[i] for i in keep]
    for level in levels:  # the thinned line crosses each level exactly as often
        assert _crossings(drawn, level) == _crossings(values, level)
    for a, b in zip(keep, keep[1:], strict=False):  # a gap stays a gap
        if values[a] is not None and values[b] is not None:
            assert None not in values[a:b]
    return keep


def test_random_walks_with_gaps() -> None:
    rng = random.Random(7)
    for n in (5, 999, 1000, 1001, 4000, 12_345):
        values: list[int | None] = []
        level = 0
        for _ in range(n):
            level = max(0, level + rng.randint(-900, 1000))
            values.append(None if rng.random() < 0.02 else level)
        forced = sorted(rng.sample(range(n), min(n, 40)))
        _check(values, 500, forced, [n * 50, n * 20])


def test_a_flat_curve_keeps_its_ends() -> None:
    assert thinning.keep_indexes([7] * 10_000, buckets=10) == [
        0, *range(1000, 10_000, 1000), 9999
    ]  # fmt: skip


@pytest.mark.slow
def test_real_replays_thin_to_what_a_chart_draws() -> None:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:3]
    realistic = synth_realistic.realistic_bench_conversation(CORPUS, messages=3_000, seed=5)
    cases = [(c, "claude_code") for c in real] + [(realistic, "qwenpaw"), (realistic, "cowagent")]
    with_events = 0
    for conversation, strategy in cases:
        result = replay_run(conversation, strategy)
        steps = result.steps
        series = Series(
            steps=[s.index for s in steps],
            strategy=[s.tokens.strategy for s in steps],
            reference=[s.tokens.reference for s in steps],
            reported=[s.tokens.reported for s in steps],
        )
        events = [
            EventPoint(e.step, e.kind, e.tokens_before, e.tokens_after, len(e.messages))
            for e in result.events
        ]
        threshold = steps[-1].zones.threshold if steps else None
        window = steps[-1].zones.window if steps else None
        levels = [v for v in (threshold, window) if v]
        at_events = sorted({e.step for e in events})
        buckets = max(len(steps) // 20, 2)  # short real sessions: thin them hard too
        keep = _check(list(series.strategy), buckets, at_events, levels)
        _check(list(series.reported), buckets, [], levels)
        assert len(keep) < len(steps), (strategy, conversation.title)

        spec = token_curve(series, events, window=window, threshold=threshold, thin=True)
        figure(spec)  # valid plotly
        by_name = {t.get("meta", {}).get("role", t["name"]): t for t in spec["data"]}
        if not events:
            assert "events" not in by_name
            continue
        marks = by_name["events"]
        assert list(marks["x"]) == [e.step for e in events]  # every event marker, exact
        assert list(marks["y"]) == [e.tokens_before for e in events]
        assert [c[1] for c in marks["customdata"]] == [e.tokens_after for e in events]
        line = spec["data"][0]
        drawn = dict(zip(line["x"], line["y"], strict=True))
        for e in events:  # the strategy's count at each event step is on the line
            assert drawn[e.step] == series.strategy[series.steps.index(e.step)]
        if len(steps) > 2 * thinning.CHART_BUCKETS:
            assert len(line["x"]) < len(steps)
        with_events += 1
    assert with_events >= 2
