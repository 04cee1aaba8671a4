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
    rows = worker._measure(out)
    lines = dict(r["line"].split("=", 1) for r in rows if "line" in r)
    share, preset = lines["real_worker_after_replay_share"].split()
    assert 0 < float(share) < 1 and preset
    ratio, preset = lines["real_worker_after_done_ratio"].split()
    assert float(ratio) > 0 and preset
    measured = [r for r in rows if "line" not in r]
    assert len(measured) == 5
    for row in measured:
        assert row["replay_s"] > 0 and row["worker_s"] > row["after_replay_s"] > 0
        assert row["writes_s"] > 0 and row["analysis_s"] >= 0 and row["ledger_s"] >= 0
        # the analysis is after done: in after_done_s, not in the worker path until done
        assert row["after_done_s"] >= row["analysis_s"] + row["ledger_s"] > 0
        assert row["worker_s"] > row["replay_s"] * 0.5
    assert "outside the replay: " in out.getvalue() and "after done" in out.getvalue()
