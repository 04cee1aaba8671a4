"""The pages benchmark's machinery on a small scale: runs stored in a throwaway data
directory, a real server with its page processes, concurrent clients, a restart; every
page answered and every result line printed."""

from __future__ import annotations

import io

import pytest

from ctxlab.benchmarks import pages

pytestmark = pytest.mark.slow


def test_pages_bench_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "MESSAGES", 200)
    monkeypatch.setattr(pages, "CLIENTS", 3)
    monkeypatch.setattr(pages, "REQUESTS_PER_CLIENT", 2)
    out = io.StringIO()
    rows = pages.run(out)
    lines = dict(r["line"].split("=", 1) for r in rows if "line" in r)
    run_p95, compare_p95, step_p95 = (float(v) for v in lines["page_p95_ms_20_clients"].split())
    assert min(run_p95, compare_p95, step_p95) > 0
    assert float(lines["page_p95_ms_compare_step_20_clients"]) > 0
    first_ms, first_url = lines["page_first_view_ms_max"].split()
    again_ms, again_url = lines["page_first_view_after_restart_ms_max"].split()
    assert float(first_ms) > 0 and float(again_ms) > 0
    assert first_url.startswith("/") and again_url.startswith("/")
    assert lines["pages_ok"] in ("true", "false")
    text = out.getvalue()
    assert text.count("first view /runs/") == 10  # 5 run pages, 5 step pages
    assert text.count("first view /compare/?runs=") == 6  # the comparison, 5 step views
    assert text.count("after a restart /") == 16  # and the compare page
    assert "statuses [200]" in text and "compare: 6 GETs from 3 clients" in text
    assert "compare_step: 6 GETs from 3 clients" in text
