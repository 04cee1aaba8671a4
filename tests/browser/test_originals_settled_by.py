"""In Chromium: the "settled by …" note of the original compactions' table, on the run page
and the compare page, reads what their JSON twins say (``decided_by`` of the row the run
stored, ``Agreement.decided_by``), at desktop and phone width.

The session is real: Claude Code 2.1.49 lines of FSM1/cipher-box (MIT,
tests/data/claude-code-2.1.49/README.md) ending in an auto ``compact_boundary`` the file
cannot show reaching the threshold (166,548 of 167,000: the last response's final output
and a tool result were never written), so the ``claude_code`` replay compacts there only
because the original did; a second run with a 1M window does not compact at all (no note).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ARTIFACTS
from django.conf import settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import executed_group, import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = Path(settings.BASE_DIR) / "tests/data/claude-code-2.1.49/unwritten-result.jsonl"
WIDTHS = {"desktop": 1400, "phone": 390}


def _fits(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


def _json(page: Any, url: str) -> Any:
    response = page.request.get(url)
    assert response.ok, response.status
    return response.json()


def test_settled_by_reads_as_the_json_twin(page: Any, live_server: Any, login: Any) -> None:
    from django.contrib.auth import get_user_model

    login()
    user = get_user_model().objects.get(username="alice")
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    runs = executed_group(
        user, transcript, [("claude_code", {}), ("claude_code", {"context_window": 1_000_000})]
    )
    settled, unsettled = runs

    twin = _json(page, f"{live_server.url}/runs/{settled.pk}/?format=json")
    (row,) = twin["original_compactions"]
    decided_by = row["decided_by"]
    assert decided_by.startswith("the original's compaction: the count is uncertain by")
    assert "by 1 tool result counted but not written before it" in decided_by
    assert decided_by.endswith("a line counted but not written (the boundary's logical parent)")
    other = _json(page, f"{live_server.url}/runs/{unsettled.pk}/?format=json")
    assert [r["decided_by"] for r in other["original_compactions"]] == [""]
    compare_url = f"{live_server.url}/compare/?runs={settled.pk},{unsettled.pk}"
    compared = _json(page, compare_url + "&format=json")["originals"]
    by_run = {key: r["decided_by"] for key, r in compared["runs"].items()}
    assert by_run == {str(settled.pk): [decided_by], str(unsettled.pk): [""]}

    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/runs/{settled.pk}/")
        table = page.wait_for_selector("table[data-table=original-compactions]")
        cell = page.locator("table[data-table=original-compactions] tbody tr td.relation")
        assert cell.count() == 1
        note = cell.locator(".decided-by")
        assert note.inner_text() == f"settled by {decided_by}"
        assert cell.inner_text().startswith(row["relation"])
        # the note wraps inside its cell (no text running over the next column)
        assert note.evaluate("e => e.scrollWidth <= e.parentElement.clientWidth + 1")
        table.scroll_into_view_if_needed()
        assert _fits(page), f"the run page is wider than a {width} px screen"
        table.screenshot(path=str(ARTIFACTS / f"originals-settled-run-{label}.png"))

        page.goto(f"{live_server.url}/runs/{unsettled.pk}/")
        page.wait_for_selector("table[data-table=original-compactions]")
        assert page.locator("table[data-table=original-compactions] .decided-by").count() == 0

        page.goto(compare_url)
        section = page.wait_for_selector("#compare-originals")
        mine = page.locator(f"#compare-originals tr[data-row='{settled.pk}'] td.settled")
        assert mine.count() == 1
        assert mine.get_attribute("title") == f"settled by {decided_by}"
        assert (
            page.locator(f"#compare-originals tr[data-row='{unsettled.pk}'] td.settled").count()
            == 0
        )
        notes = page.locator("#compare-originals .settled-note")
        assert notes.count() == 1 and decided_by in notes.inner_text()
        section.scroll_into_view_if_needed()
        assert _fits(page), f"the compare page is wider than a {width} px screen"
        section.screenshot(path=str(ARTIFACTS / f"originals-settled-compare-{label}.png"))
    assert page.errors == []
