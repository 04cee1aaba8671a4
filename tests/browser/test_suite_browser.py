"""A suite in a real browser: create 3 transcripts × a 2×2 grid with the form, watch the
progress update live (websocket, no reload), read the leaderboard and the heatmap (plotly
drew it; the table under it has the 4 cells), open one cell's configuration and its run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites_app"))  # shared test data
from suite_testdata import import_chat  # noqa: E402

from ctxlab.web.display import number  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def test_suite_grid_progress_heatmap_leaderboard_and_a_cells_run(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    base = asgi_worker_server.url
    login(base_url=base)
    user = get_user_model().objects.get(username="alice")
    transcripts = [import_chat(user, seed=s, turns=40, size=5000) for s in (1, 2, 3)]

    page.goto(f"{base}/suites/new/")
    page.fill("#id_name", "grid in a browser")
    for t in transcripts:
        page.check(f"#suite-transcripts input[value='{t.pk}']")
    page.select_option("#id_grid_base", "preset:qwenpaw")
    page.fill("#id_grid_key_1", "max_input_length")
    page.fill("#id_grid_values_1", "8000,30000")
    page.fill("#id_grid_key_2", "compact_threshold_ratio")
    page.fill("#id_grid_values_2", "0.5:0.8:0.3")
    screenshot("form")
    page.click("#suite-form button[type=submit]")
    page.wait_for_url("**/suites/*/")
    progress = page.locator(".suite-progress")
    first_done = int(progress.get_attribute("data-done") or "0")
    assert progress.get_attribute("data-total") == "12"
    assert first_done < 12
    # The results rendered with the page are partial and say so.
    assert page.locator("#results").get_attribute("data-finished") == "false"
    assert page.locator("#results-partial").is_visible()
    assert page.locator("#suite-cancel").is_visible()
    # Live: the fragment is swapped over the websocket until every run is done.
    page.wait_for_selector(".suite-progress[data-finished=true]")
    assert page.locator(".suite-progress [data-role=done]").inner_text() == "12"
    assert page.locator("#suite-cancel, #suite-resume").count() == 0  # nothing to cancel
    # The results section is fetched in place once finished (no reload): the page's own
    # partial section must not pass for it (it showed Done 0 and no medians).
    page.wait_for_selector("#results[data-finished=true]")
    screenshot("finished")
    assert page.locator("#results").get_attribute("data-done") == "12"
    assert page.locator("#results-partial").count() == 0
    assert page.locator("#leaderboard tbody tr").count() == 4
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # tables scroll in place
    # Every configuration ran on the 3 transcripts, and each has its medians.
    done = page.locator("#leaderboard tbody td:nth-child(6)").all_inner_texts()
    assert done == ["3", "3", "3", "3"]
    shown = page.locator("#leaderboard tbody td:nth-child(4)").all_inner_texts()
    twin = page.request.get(f"{page.url}?format=json").json()
    medians = {c["rank"]: c["stats"]["retention"]["median"] for c in twin["configurations"]}
    assert all(c["stats"]["retention"]["n"] == 3 for c in twin["configurations"])
    assert shown == [number(medians[rank]) for rank in range(1, 5)]
    assert page.locator("#leaderboard tbody tr.pareto").count() >= 1
    ranks = page.locator("#leaderboard tbody td:first-child").all_inner_texts()
    assert ranks == ["1", "2", "3", "4"]
    page.wait_for_selector("#suite-heatmap .main-svg")  # plotly drew the heatmap
    assert page.locator("#suite-heatmap .hm, #suite-heatmap .heatmaplayer").count() >= 1
    cells = page.locator("#heatmap-table a.heat-cell")
    assert cells.count() == 4
    assert page.locator("#heatmap-table thead th").all_inner_texts()[1:] == ["8000", "30000"]
    assert not [e for e in page.errors if "Content Security Policy" in e], page.errors

    cells.first.click()
    page.wait_for_selector("#config-transcripts")
    assert "max_input_length=8000 compact_threshold_ratio=0.5" in page.locator("h1").inner_text()
    assert page.locator("#config-transcripts tbody tr").count() == 3
    page.locator("#config-transcripts a.run-link").first.click()
    page.wait_for_url("**/runs/*/")
    assert "max_input_length=8000" in page.content()
    screenshot("cell-run")


def test_cancel_from_the_live_progress_then_resume_is_offered(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    base = asgi_worker_server.url
    login(base_url=base)
    user = get_user_model().objects.get(username="alice")
    transcripts = [import_chat(user, seed=s, turns=40, size=5000) for s in (4, 5, 6)]
    page.goto(f"{base}/suites/new/")
    page.fill("#id_name", "cancel in a browser")
    for t in transcripts:
        page.check(f"#suite-transcripts input[value='{t.pk}']")
    page.select_option("#id_grid_base", "preset:qwenpaw")
    page.fill("#id_grid_key_1", "max_input_length")
    page.fill("#id_grid_values_1", "8000:96000:8000")  # 36 runs: far from done when cancelled
    page.click("#suite-form button[type=submit]")
    page.wait_for_url("**/suites/*/")
    # The Cancel button of a pushed copy (no token field): it posts with the page's header.
    page.wait_for_selector(".suite-progress:not([data-done='0'])")
    assert page.locator("#suite-cancel").is_visible()
    page.click("#suite-cancel")
    page.wait_for_selector(".message-info:has-text('Suite cancelled')")
    page.wait_for_selector(".suite-progress[data-finished=true]")
    cancelled = int(page.locator(".suite-progress [data-role=cancelled]").inner_text())
    done = int(page.locator(".suite-progress [data-role=done]").inner_text())
    assert cancelled > 0 and done + cancelled == 36
    assert page.locator("#suite-resume").is_visible() and page.locator("#suite-cancel").count() == 0
    page.wait_for_selector("#results[data-finished=true]:not(.htmx-swapping)")
    assert page.locator("#leaderboard tbody tr").count() == 12
    screenshot("cancelled")
    assert not page.errors, page.errors
