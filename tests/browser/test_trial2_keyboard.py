"""Keyboard only, as a new user: the first Tab on a page is a "Skip to content" link (it
took ten Tabs through the brand, theme toggle, five nav links and the user menu to reach
the upload form); Enter on it moves the focus into the page, so the next Tab is the page's
first control. Then the upload form, filled and sent by keyboard, imports a real ShareGPT
file (llamafactory glaive tool-call demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

SHAREGPT = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/sharegpt/llamafactory-glaive_toolcall_en_demo.json"
)


def _focused(page: Any) -> str:
    return page.evaluate("document.activeElement.id || document.activeElement.className")


def test_skip_link_then_upload_by_keyboard(page: Any, live_server: Any, login: Any) -> None:
    login()
    page.goto(f"{live_server.url}/transcripts/")
    skip = page.locator("a.skip-link")
    assert not skip.is_visible() or skip.bounding_box()["x"] < 0  # off screen until focused
    page.keyboard.press("Tab")
    assert _focused(page) == "skip-link"
    box = skip.bounding_box()
    assert box is not None and box["x"] >= 0 and skip.inner_text() == "Skip to content"
    page.keyboard.press("Enter")
    assert _focused(page) == "main"
    page.keyboard.press("Tab")
    assert _focused(page) == "id_files"  # the page's first control, past the header
    page.set_input_files("#id_files", str(SHAREGPT))
    page.keyboard.press("Tab")
    assert _focused(page) == "id_format"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the Import button
    result = page.locator(".upload-result").first
    result.wait_for()
    assert "300 conversations" in page.locator("main").inner_text()
    assert page.errors == []
