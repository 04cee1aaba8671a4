"""Probe pages in a real browser: a run's probes (question, expected answer, offline
verdict) and the comparison's one score vs tokens saved vs cost chart, drawn by plotly under
the site's CSP with no console error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge_app"))  # shared test data
from judge_testdata import (  # noqa: E402
    COWAGENT,
    QWENPAW,
    compacted_session,
    finished_run,
    import_session,
)
from test_share_a11y import _axe  # noqa: E402  (the vendored axe-core, serious/critical)

pytestmark = pytest.mark.django_db(transaction=True)


def _runs(username: str) -> list[Any]:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    transcript = import_session(user)
    return [
        finished_run(user, transcript, "qwenpaw", QWENPAW),
        finished_run(user, transcript, "cowagent", COWAGENT),
    ]


def test_probe_page_and_compare_chart_render(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    qwen, cow = _runs("alice")
    page.goto(f"{live_server.url}/runs/{qwen.pk}/probes/")
    rows = page.locator(
        "#probe-list ~ .table-wrap tbody tr, section[aria-labelledby=probe-list] tbody tr"
    )
    rows.first.wait_for()
    kinds = {r.get_attribute("data-kind") for r in rows.all()}
    assert kinds == {"recall", "artifact", "continuation", "decision"}
    assert page.get_by_text("Which files were modified?").first.is_visible()
    verdicts = page.locator("section[aria-labelledby=probe-list] .badge").all_inner_texts()
    assert set(verdicts) <= {"recoverable", "partial", "lost"} and verdicts
    offline = page.locator("[data-testid=offline-score]").inner_text()
    assert 0 <= float(offline) <= 1
    assert _axe(page) == []  # no serious or critical WCAG 2.1 AA violation
    screenshot("run-probes")
    # Every probe column in view at a desktop width (expected answers hold paths and error
    # lines with no break point: the Claude columns were cut off on a real Codex rollout).
    table = page.locator("section[aria-labelledby=probe-list] .table-wrap")
    assert table.evaluate("e => e.scrollWidth <= e.clientWidth")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/compare/probes/?runs={qwen.pk},{cow.pk}")
    chart = page.locator("#probe-tradeoff")
    chart.locator(".main-svg").first.wait_for()  # plotly drew it
    points = chart.locator(".scatterlayer .trace")
    assert points.count() == 2
    # runs are named in the legend (text beside near points overlapped)
    labels = [t.text_content() or "" for t in chart.locator(".legend .legendtext").all()]
    assert any(f"run {qwen.pk}" in t for t in labels) and any(f"run {cow.pk}" in t for t in labels)
    table = page.locator("#probe-compare tbody tr")
    assert table.count() == 2
    assert _axe(page) == []
    screenshot("compare-probes")
    assert page.errors == []  # type: ignore[attr-defined]


def test_after_effects_panel_on_the_transcript_page(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    login()
    user = get_user_model().objects.get(username="alice")
    transcript = import_session(user, compacted_session(), name="compacted.jsonl")
    page.goto(f"{live_server.url}/transcripts/{transcript.pk}/")
    panel = page.locator("#aftereffects")
    panel.wait_for()
    summary = panel.locator("[data-testid=aftereffects-summary]").inner_text()
    assert "1 file re-read" in summary and "1 command repeated" in summary
    row = panel.locator("tbody tr")
    assert row.count() == 1 and "/repo/src/parse.py" in row.inner_text()
    screenshot("aftereffects")
    assert page.errors == []  # type: ignore[attr-defined]
