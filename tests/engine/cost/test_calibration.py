from __future__ import annotations

import random

import pytest

from ctxlab.engine.core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    OriginalCompaction,
    Role,
    Usage,
)
from ctxlab.engine.cost.calibration import (
    Calibration,
    CalibrationError,
    CalibrationPoint,
    ErrorBand,
    RequestSize,
    calibrate_conversation,
    fit_calibration,
    flag_overflows,
    percentile,
    points_from_conversation,
)
from ctxlab.engine.tokens.cl100k import PER_MESSAGE_OVERHEAD, reference_counter


def synthetic(a: float, b: float, c: float, *, n: int = 60, noise: float = 0.0, seed: int = 7):
    """Calls whose reported sizes grow by a·Δref + b·Δblocks plus per-delta noise (each new
    message's tokenizer ratio varies on its own, so errors accumulate like a random walk)."""
    rng = random.Random(seed)
    ref = blocks = 0
    exact = c
    pts = []
    for i in range(n):
        dx, dn = rng.randint(50, 4000), rng.randint(1, 6)
        ref += dx
        blocks += dn
        exact += a * dx + b * dn + rng.gauss(0, noise)
        pts.append(
            CalibrationPoint(step=i, reference_tokens=ref, blocks=blocks, reported=round(exact))
        )
    return pts


def test_fit_recovers_exact_parameters() -> None:
    cal = fit_calibration(synthetic(1.25, 7.0, 3000.0), model="m")
    assert cal.a == pytest.approx(1.25, abs=1e-3)
    assert cal.b == pytest.approx(7.0, abs=0.2)
    assert cal.c == pytest.approx(3000.0, abs=2)
    assert cal.band.stddev < 1.0 and cal.pairs_dropped == 0
    assert cal.model == "m"


def test_fit_recovers_parameters_under_noise_with_sensible_band() -> None:
    pts = synthetic(1.3, 5.0, 2500.0, n=400, noise=30.0)
    cal = fit_calibration(pts)
    assert cal.a == pytest.approx(1.3, abs=0.005)
    assert cal.b == pytest.approx(5.0, abs=2.0)
    # the delta residuals are the injected per-call noise (σ 30)
    assert 25 < cal.delta_band.stddev < 35
    assert -60 < cal.delta_band.p05 < -35 and 35 < cal.delta_band.p95 < 60
    # the absolute band holds ~90 % of the calls between its 5th and 95th percentiles
    inside = sum(
        lo <= p.reported <= hi
        for p in pts
        for lo, hi in [cal.interval(p.reference_tokens, p.blocks)]
    )
    assert 0.85 * len(pts) <= inside <= 0.95 * len(pts)
    assert cal.band.p05 < 0 < cal.band.p95


def test_fit_skips_pairs_where_the_original_compacted() -> None:
    pts = synthetic(1.1, 4.0, 1000.0, n=30)
    ref, blocks = pts[0].reference_tokens, pts[0].blocks  # after compaction: a small request
    after = CalibrationPoint(100, ref, blocks, round(1.1 * ref + 4 * blocks + 1000))
    cal = fit_calibration([*pts, after])
    assert cal.a == pytest.approx(1.1, abs=1e-3)
    assert cal.pairs_used == len(pts) - 1  # the shrinking pair is not used


def test_fit_drops_outlier_pairs() -> None:
    pts = synthetic(1.2, 6.0, 800.0, n=50, noise=5.0)
    bad = pts[25]
    pts[25] = CalibrationPoint(bad.step, bad.reference_tokens, bad.blocks, bad.reported + 40_000)
    cal = fit_calibration(pts)
    assert cal.pairs_dropped >= 1
    assert cal.a == pytest.approx(1.2, abs=0.01)


def test_fit_negative_token_rate_falls_back_to_tokens_alone() -> None:
    # few noisy pairs where blocks "explain" the growth and tokens get a negative rate
    pts = [
        CalibrationPoint(0, 1000, 10, 5000),
        CalibrationPoint(1, 3000, 11, 5100),
        CalibrationPoint(2, 3500, 30, 8200),
        CalibrationPoint(3, 6000, 31, 8300),
    ]
    cal = fit_calibration(pts)
    assert cal.a > 0 and cal.b == 0.0


def test_fit_collinear_blocks_falls_back_to_ratio() -> None:
    pts = [CalibrationPoint(i, 100 * i, 2 * i, 130 * i) for i in range(1, 6)]
    cal = fit_calibration(pts)
    assert (cal.a, cal.b) == (pytest.approx(1.3), 0.0)


@pytest.mark.parametrize(
    "points",
    [
        [],
        [CalibrationPoint(0, 10, 1, 20), CalibrationPoint(1, 20, 2, 40)],
        [CalibrationPoint(i, 100, 1, 100) for i in range(5)],  # nothing grows
    ],
    ids=["empty", "one-pair", "no-growth"],
)
def test_fit_needs_two_growing_pairs(points: list[CalibrationPoint]) -> None:
    with pytest.raises(CalibrationError, match="at least 2"):
        fit_calibration(points)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([1.0], 95, 1.0), ([1.0, 2.0], 50, 1.5), ([3.0, 1.0, 2.0, 4.0, 5.0], 5, 1.2)],
    ids=["single", "median-even", "p05-interp"],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def text_msg(role: Role, text: str, **kw: object) -> Message:
    return Message(role=role, blocks=(Block(BlockKind.TEXT, text=text),), **kw)  # type: ignore[arg-type]


def test_points_from_conversation_counts_request_before_each_call() -> None:
    count = reference_counter().count
    usage1, usage2 = (
        Usage(input_uncached=10, cache_read=90),
        Usage(input_uncached=5, cache_read=200),
    )
    msgs = (
        text_msg(Role.SYSTEM, "you are helpful"),
        text_msg(Role.USER, "hello there"),
        text_msg(Role.ASSISTANT, "part one", id="msg_1", usage=usage1, model="claude-x"),
        # the same API response, second content block: one call, not two
        text_msg(Role.ASSISTANT, "part two", id="msg_1", usage=usage1, model="claude-x"),
        text_msg(Role.USER, "side thread", flags=frozenset({"sidechain"})),
        text_msg(Role.USER, "next question"),
        text_msg(Role.ASSISTANT, "answer", id="msg_2", usage=usage2, model="claude-x"),
    )
    pts = points_from_conversation(Conversation("c", "t", msgs))
    per = [count(m.text) + PER_MESSAGE_OVERHEAD for m in msgs]
    assert [(p.step, p.reported, p.model) for p in pts] == [
        (2, 100, "claude-x"),
        (6, 205, "claude-x"),
    ]
    assert pts[0].reference_tokens == per[0] + per[1] and pts[0].blocks == 2
    assert pts[1].reference_tokens == per[0] + per[1] + per[2] + per[3] + per[5]
    assert pts[1].blocks == 5


def test_points_from_conversation_resets_at_original_compaction() -> None:
    msgs = (
        text_msg(Role.USER, "a"),
        text_msg(Role.ASSISTANT, "b", usage=Usage(input_uncached=50)),
        text_msg(Role.USER, "summary", flags=frozenset({"compact_summary"})),
        text_msg(Role.ASSISTANT, "c", usage=Usage(input_uncached=20)),
    )
    conv = Conversation("c", "t", msgs, compactions=(OriginalCompaction(2, "compact_boundary"),))
    pts = points_from_conversation(conv)
    assert pts[1].blocks == 1  # only the summary message is in the request


def test_calibrate_conversation_fits_per_model() -> None:
    rng = random.Random(3)
    msgs: list[Message] = []
    reported = 1000
    for _ in range(12):
        text = " ".join(f"word{rng.randint(0, 999)}" for _ in range(rng.randint(5, 60)))
        msgs.append(text_msg(Role.USER, text))
        reported += round(1.2 * (reference_counter().count(text) + PER_MESSAGE_OVERHEAD)) + 3
        msgs.append(
            text_msg(Role.ASSISTANT, "ok", usage=Usage(input_uncached=reported), model="claude-x")
        )
        reported += round(1.2 * (reference_counter().count("ok") + PER_MESSAGE_OVERHEAD)) + 3
    cals = calibrate_conversation(Conversation("c", "t", tuple(msgs)))
    assert list(cals) == ["claude-x"]
    assert cals["claude-x"].a == pytest.approx(1.2, abs=0.05)


CAL = Calibration(
    model="m",
    a=1.0,
    b=0.0,
    c=0.0,
    pairs_used=10,
    pairs_dropped=0,
    delta_band=ErrorBand(10, 1.0, -1.0, 0.0, 1.0),
    band=ErrorBand(10, 50.0, -100.0, 0.0, 100.0),
)


@pytest.mark.parametrize(
    ("row", "certainty"),
    [
        (RequestSize(0, strategy_tokens=900, reference_tokens=500, blocks=1), None),
        (RequestSize(1, strategy_tokens=1100, reference_tokens=5000, blocks=1), None),
        (RequestSize(2, strategy_tokens=900, reference_tokens=1200, blocks=1), "certain"),
        (RequestSize(3, strategy_tokens=900, reference_tokens=1050, blocks=1), "likely"),
        (RequestSize(4, strategy_tokens=900, reference_tokens=950, blocks=1), "possible"),
        (
            RequestSize(5, strategy_tokens=900, reference_tokens=10, blocks=1, reported=1001),
            "certain",
        ),
        (RequestSize(6, strategy_tokens=900, reference_tokens=5000, blocks=1, reported=999), None),
    ],
    ids=[
        "fits",
        "strategy-saw-it",
        "low-band-over",
        "estimate-over",
        "high-band-over",
        "reported-over",
        "reported-fits",
    ],
)
def test_flag_overflows(row: RequestSize, certainty: str | None) -> None:
    flags = flag_overflows([row], CAL, window=1200, output_reserve=200)
    assert [f.certainty for f in flags] == ([certainty] if certainty else [])
    if flags:
        assert flags[0].limit == 1000 and flags[0].step == row.step


def test_calibrated_counter_is_a_token_counter() -> None:
    cal = Calibration("m", 2.0, 3.0, 99.0, 2, 0, CAL.delta_band, CAL.band)
    counter = cal.as_counter()
    assert counter.name == "calibrated:m"
    assert counter.count("") == 0
    assert counter.count("hello world") == 2 * reference_counter().count("hello world") + 3


def test_request_sizes_from_a_replay() -> None:
    from dataclasses import replace

    from builders import conv, cycle, system

    from ctxlab.engine.cost.calibration import request_sizes
    from ctxlab.engine.replay import run

    msgs = [system("You are a careful coding agent."), *cycle(30, size=5000)]
    msgs = [  # every call reports a prompt size
        replace(m, usage=Usage(input_uncached=100 * i)) if m.role is Role.ASSISTANT else m
        for i, m in enumerate(msgs)
    ]
    conversation = conv(*msgs)
    result = run(conversation, "qwenpaw", params={"max_input_length": 12000})
    rows = request_sizes(result.steps, conversation)
    assert [r.step for r in rows] == [s.index for s in result.steps]
    first_change = next(
        s.index
        for s in result.steps
        if s.summary_id is not None or any(e.changes for e in s.events)
    )
    for rec, row in zip(result.steps, rows, strict=True):
        brute = sum(len(msgs[i].blocks) for i in rec.context_indexes)
        assert row.blocks == brute + (rec.summary_id is not None)
        assert row.limit == rec.zones.window - rec.zones.output_reserve
        assert (row.reported is None) == (rec.index >= first_change)
    # a calibration 2× the reference finds the requests the strategy thought fitted
    cal = Calibration("m", 2.0, 0.0, 0.0, 5, 0, CAL.delta_band, ErrorBand(5, 0, 0, 0, 0))
    flags = flag_overflows(rows, cal)
    assert flags and all(f.strategy_tokens <= f.limit < f.estimate for f in flags)
