"""The saved suite report opens from disk in Chromium with the network cut off and draws
both charts (the Pareto front and the grid's heatmap; plotly.js inlined, no request leaves
file://), light and dark, with no serious axe-core violation; the hostile transcript title stays text, the key masked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites_app"))  # shared test data
from suite_report_testdata import HOSTILE, MASKED_PREFIX, RAW_KEY, make_suite  # noqa: E402

pytestmark = pytest.mark.django_db

CHARTS = ("suite-pareto", "suite-heatmap")
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"  # vendored for tests


def _serious_axe_violations(page: Any) -> list[tuple[str, list[Any]]]:
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate(
        """() => axe.run(document, {runOnly: {type: 'tag',
             values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']})"""
    )
    return [
        (v["id"], [n["target"] for n in v["nodes"]][:3])
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def _open(page: Any, path: Path) -> list[str]:
    requests: list[str] = []
    dialogs: list[str] = []
    page.context.set_offline(True)
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart}[data-plotted=true] .main-svg")
    assert dialogs == []  # nothing from the title ran
    return [u for u in requests if not u.startswith(("file:", "data:", "blob:"))]


def test_suite_report_opens_from_disk_offline_with_both_charts_drawn(
    page: Any, user: Any, tmp_path: Path, screenshot: Any
) -> None:
    from suites_app import report, results

    suite = make_suite(user)
    path = tmp_path / report.report_filename(suite)
    path.write_text(report.report_html(suite), encoding="utf-8")

    assert _open(page, path) == []
    results_page = results.build(suite)
    assert page.evaluate("document.getElementById('suite-pareto').data.length") == 2
    heat_traces = page.evaluate("document.getElementById('suite-heatmap').data.length")
    assert heat_traces == len(results_page.heatmap.cells)  # one per metric, a menu picks
    assert page.locator("#suite-heatmap .hm, #suite-heatmap .heatmaplayer").count() >= 1
    for chart in CHARTS:
        for title in ("Download plot as SVG", "Download plot as a PNG"):
            assert page.locator(f"#{chart} .modebar-btn[data-title='{title}']").count() == 1
    assert page.locator("#leaderboard tbody tr").count() == 4
    assert page.locator("#heatmap-table a.heat-cell").count() == 4
    # In-file links: a heatmap cell jumps to its configuration's section.
    page.locator("#heatmap-table a.heat-cell").first.click()
    assert page.evaluate("location.hash").startswith("#config-")
    body = page.inner_text("body")
    assert RAW_KEY not in page.content() and MASKED_PREFIX in body
    assert HOSTILE[:20] in body  # the title's markup shows as text
    assert page.locator("details.transcript img, details.transcript script").count() == 0
    assert _serious_axe_violations(page) == []
    assert page.errors == []
    screenshot("light")

    page.emulate_media(color_scheme="dark")
    page.reload()
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart}[data-plotted=true] .main-svg")
    background = page.evaluate("document.getElementById('suite-heatmap')._fullLayout.paper_bgcolor")
    assert background == "#111827"
    assert _serious_axe_violations(page) == []
    assert page.errors == []
    screenshot("dark")
