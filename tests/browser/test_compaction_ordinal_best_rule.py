"""In Chromium (issue 31 items 9 and 12): one compaction number on the run page (events
table, summaries) and the compare page (summaries by compaction row, step view header),
and the best rule as visible text under the compare page's metrics table, naming the run
it keeps out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from inspect_helpers import make_run  # noqa: E402
from replay_testdata import agent_chat, import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_compaction_number_and_the_best_rule_visible(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    from ctxlab.engine.core import catalogue

    login()
    user = get_user_model().objects.get(username="alice")
    transcript = import_transcript(user, agent_chat())
    # CowAgent: a compaction without a summary, then its summary as compaction #2;
    # Anthropic context editing at 6,000 tokens: steps in overflow, kept out of "best"
    cow = make_run(user, transcript, "cowagent")
    edits = make_run(user, transcript, "anthropic_edits", context_window=6_000)
    assert catalogue.overflowed(edits.metrics) and not catalogue.overflowed(cow.metrics)

    page.goto(f"{live_server.url}/runs/{cow.pk}/")
    row = page.locator("#event-1")
    row.wait_for()
    assert row.locator("td.compaction-ordinal").inner_text() == "#2"
    assert page.locator("#event-0 td.compaction-ordinal").inner_text() == "#1"
    heading = page.locator("#summary-0 > summary")
    assert heading.inner_text().startswith("Compaction #2 · summary #0")
    screenshot("run-page")

    page.goto(f"{live_server.url}/compare/?runs={cow.pk},{edits.pk}")
    rule = page.locator("#best-rule")
    rule.wait_for()
    assert rule.is_visible()
    text = rule.inner_text()
    assert catalogue.BEST_RULE in text
    assert f"Not eligible here: run {edits.pk} (steps in overflow" in text
    table = page.locator("#compare-metrics table").bounding_box()
    box = rule.bounding_box()
    assert table is not None and box is not None and box["y"] >= table["y"] + table["height"] - 1
    second = page.locator('#compare-summaries tr[data-ordinal="2"]')
    assert second.locator("a.ordinal-link").inner_text() == "#2"
    assert "drop" in second.inner_text().lower() or second.locator(".summary-md").count() >= 1
    screenshot("compare-page")
    second.locator("a.ordinal-link").click()
    page.wait_for_url("**compaction=2**")
    assert page.locator("h1").first.is_visible()
