"""The saved comparison report opens from disk in Chromium with the network cut off, and
draws its chart (plotly.js inlined, no request leaves file://)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "share"))
from share_testdata import MASKED_PREFIX, RAW_KEY, make_comparison  # noqa: E402

pytestmark = pytest.mark.django_db


def test_report_opens_from_disk_offline_with_the_chart_drawn(
    page: Any, user: Any, django_capture_on_commit_callbacks: Any, tmp_path: Path, screenshot: Any
) -> None:
    from replay_app.compare import report

    runs = make_comparison(user, django_capture_on_commit_callbacks)
    path = tmp_path / report.report_filename(runs)
    path.write_text(report.report_html(runs), encoding="utf-8")

    requests: list[str] = []
    page.context.set_offline(True)
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector("#report-curves[data-plotted=true] .main-svg")
    traces = page.evaluate("document.getElementById('report-curves').data.length")
    assert traces >= len(runs) * 2  # each run's reference and own-count curves
    assert (
        page.locator("#report-curves .modebar-btn[data-title='Download plot as SVG']").count() == 1
    )
    assert (
        page.locator("#report-curves .modebar-btn[data-title='Download plot as a PNG']").count()
        == 1
    )
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    body = page.inner_text("body")
    assert RAW_KEY not in page.content() and MASKED_PREFIX in body
    assert page.errors == []
    screenshot("report")
