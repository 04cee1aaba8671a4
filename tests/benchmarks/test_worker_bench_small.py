"""The worker bench on a small transcript: the replay it compares with is the worker's own
(decoded from the rows, stored counts seeded), the worker path until done has its parts
outside the replay (writes, metrics) timed apart, and what the task does after done (the
ledger, the analysis, the compare inputs) is timed apart from it."""

from __future__ import annotations

import io

import pytest

from ctxlab.benchmarks import worker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_worker_bench_times_the_parts_after_the_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "MESSAGES", 300)
    out = io.StringIO()
    rows = worker._measure(out, rounds=2)
    lines = dict(r["line"].split("=", 1) for r in rows if "line" in r)
    for name in ("vs_replay_ratio", "after_replay_share", "after_done_ratio"):
        value, preset, low, high, rounds, *_ = lines[f"real_worker_{name}"].split()
        # the median of the rounds' paired values, with both ends beside it
        assert preset and rounds == "rounds=2", name
        assert float(low.removeprefix("min=")) <= float(value) <= float(high.removeprefix("max="))
    share = float(lines["real_worker_after_replay_share"].split()[0])
    assert 0 < share < 1
    assert float(lines["real_worker_after_done_ratio"].split()[0]) > 0
    measured = [r for r in rows if "line" not in r]
    assert len(measured) == 5
    for row in measured:
        assert row["rounds"] == 2 and row["ratio_min"] <= row["ratio"] <= row["ratio_max"]
        assert row["replay_s"] > 0 and row["worker_s"] > row["after_replay_s"] > 0
        assert row["writes_s"] > 0 and row["analysis_s"] >= 0 and row["ledger_s"] >= 0
        # the analysis is after done: in after_done_s, not in the worker path until done
        # (medians of the rounds: each round's after done holds both, so its median holds each)
        assert row["after_done_s"] >= max(row["analysis_s"], row["ledger_s"]) > 0
        assert row["worker_s"] > row["replay_s"] * 0.5
    text = out.getvalue()
    assert "outside the replay: " in text and "after done" in text
    assert "round 2/2 done" in text and "median [min-max] of 2 rounds" in text


def test_each_round_pairs_its_own_replay_and_worker_path() -> None:
    got = worker.Readings(replay=[1.0, 2.0, 1.1], worker=[1.5, 2.2, 1.4],
                          after=[0.3, 0.4, 0.2], after_done=[2.0, 3.0, 2.2])  # fmt: skip
    assert got.ratio().samples == [1.5, 2.2 / 2.0, 1.4 / 1.1]
    assert got.ratio().value == pytest.approx(1.4 / 1.1)
    assert got.share().samples == [0.3 / 1.5, 0.4 / 2.2, 0.2 / 1.4]
    assert got.analysed().value == 2.0
