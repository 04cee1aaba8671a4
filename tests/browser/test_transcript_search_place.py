"""Issue 31, item 15, in a real browser: a transcript search highlights the words in the
opened message (its blocks unfolded, the first mark in view) and keeps its place: reading
on to the next page keeps the query, the hit and the marks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1] / "data/corpus/claude-code/agentcmd-full-session-four.jsonl"
)


def _transcript(username: str) -> Any:
    from django.contrib.auth import get_user_model

    from sessions_app import services
    from sessions_app.models import Transcript

    user = get_user_model().objects.get(username=username)
    outcome = services.upload_import(owner=user, name=SESSION.name, data=SESSION.read_bytes())
    assert outcome.upload is not None
    return Transcript.objects.filter(upload=outcome.upload, parent=None).order_by("pk").first()


def test_search_marks_the_words_and_keeps_its_place(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    t = _transcript("alice")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/transcripts/{t.pk}/?per_page=5")
    page.fill("#transcript-q", "NavUser")
    page.locator("form.transcript-search button[type=submit]").click()
    page.wait_for_selector("#search-results .hit-list li")
    hits = page.locator("#search-results .hit-list li a")
    assert hits.count() > 6
    target = hits.nth(6)
    index = (target.inner_text() or "").lstrip("#")
    target.click()
    page.wait_for_url(f"**hit=7#m{index}")
    message = page.locator(f"#m{index}")
    marks = message.locator("mark.search-mark")
    marks.first.wait_for()
    assert all(m.lower() == "navuser" for m in marks.all_inner_texts())
    current = message.locator("mark.search-mark.current")
    assert current.count() == 1 and current.is_visible()  # unfolded if inside a tool block
    assert page.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight; }""",
        f"#m{index} mark.search-mark.current",
    )
    assert page.locator(".hit-list li.current-hit").count() == 1
    screenshot("search-hit")
    # reading on: the next page (htmx, as it scrolls into view) keeps the search and marks
    page.locator("li.next-page").first.scroll_into_view_if_needed()
    page.locator("ol.message-list > li.message-item").nth(5).wait_for()
    nxt = page.locator("li.next-page a")
    if nxt.count():
        assert "q=NavUser" in (nxt.first.get_attribute("href") or "")
    assert page.input_value("#transcript-q") == "NavUser"
    assert page.errors == []
