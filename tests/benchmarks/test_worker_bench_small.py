"""The worker bench on a small transcript: the replay it compares with is the worker's own
(decoded from the rows, stored counts seeded), and the worker path's parts after the
replay (writes, metrics, ledger, analysis, compare inputs) are timed apart."""

from __future__ import annotations

import io

import pytest

from ctxlab.benchmarks import worker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_worker_bench_times_the_parts_after_the_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "MESSAGES", 300)
    out = io.StringIO()
    rows = worker._measure(out)
    lines = dict(r["line"].split("=", 1) for r in rows if "line" in r)
    share, preset = lines["real_worker_after_replay_share"].split()
    assert 0 < float(share) < 1 and preset
    measured = [r for r in rows if "line" not in r]
    assert len(measured) == 5
    for row in measured:
        assert row["replay_s"] > 0 and row["worker_s"] > row["after_replay_s"] > 0
        assert row["writes_s"] > 0 and row["analysis_s"] >= 0 and row["ledger_s"] >= 0
    assert "outside the replay: " in out.getvalue()
