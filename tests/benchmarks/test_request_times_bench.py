"""The request-times bench section (the duration targets taken out of the tests): on small
tables it measures every request it names and prints each result line with its target."""

from __future__ import annotations

import io

import pytest

from ctxlab.benchmarks import _rows, request_times

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_request_times_bench_prints_each_time_with_its_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(request_times, "CONVERSATIONS", 300)
    monkeypatch.setattr(_rows, "ROWS", 300)
    out = io.StringIO()
    rows = request_times._measure(out)
    lines = dict(r["line"].split("=", 1) for r in rows if "line" in r)
    form, search, target = lines["request_run_form_ms_20k"].split()
    assert float(form) > 0 and float(search) > 0 and target == "target=1000"
    ms, url, target = lines["request_admin_changelist_ms_max_100k"].split()
    assert float(ms) > 0 and url in _rows.ADMIN_URLS and target == "target=2000"
    ms, target = lines["request_shared_probes_pending_ms"].split()
    assert float(ms) > 0 and target == "target=5000"
    assert lines["request_times_ok"] in {"True", "False"}
    for url in _rows.ADMIN_URLS:
        assert f"admin {url} at 300 rows" in out.getvalue()
