"""Issue 15 in Chromium: a huge tool result shows its head, tail, size and a working
full-text link; a secret shows masked; repeated failed logins get a clear message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache

from sessions_app import services as session_services

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"[:36]


def test_huge_result_and_masked_secret(
    page: Any, live_server: Any, login: Any, django_user_model: Any, screenshot: Any
) -> None:
    login()
    alice = django_user_model.objects.get(username="alice")
    rows = "".join(f"row {i:06d} {'abcdefghij' * 5}\n" for i in range(40_000))  # ~2.5 MB
    messages = [
        {"role": "user", "content": f"publish with token {TOKEN} please"},
        {"role": "tool", "tool_call_id": "c1", "content": "HEAD-MARKER\n" + rows + "TAIL-MARKER"},
    ]
    outcome = session_services.upload_import(
        owner=alice, name="huge.json", data=json.dumps(messages).encode()
    )
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.get()
    page.goto(f"{live_server.url}{transcript.get_absolute_url()}")
    body = page.locator("body").inner_text()
    assert TOKEN not in body and "[masked npm_access_token]" in body
    result = page.locator("details.block-tool-result").first
    result.locator("summary").click()
    gap = result.locator(".huge-gap")
    assert gap.is_visible()
    assert "more characters not shown" in gap.inner_text()
    assert result.inner_text().count("row ") < 2_000  # head and tail, not 40,000 rows
    assert "TAIL-MARKER" in result.inner_text()
    screenshot("huge-result")
    href = gap.locator("a", has_text="full text").get_attribute("href")
    full = page.request.get(f"{live_server.url}{href}")
    assert full.status == 200 and full.text().endswith("TAIL-MARKER")
    assert len(full.text()) == len("HEAD-MARKER\n" + rows + "TAIL-MARKER")
    assert page.errors == []


def test_failed_logins_are_throttled_with_a_message(
    page: Any, live_server: Any, django_user_model: Any
) -> None:
    cache.clear()
    django_user_model.objects.create_user(username="carol", password="carol-pass-123")
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        for _ in range(5):
            page.fill("input[name=username]", "carol")
            page.fill("input[name=password]", "wrong")
            page.click("button[type=submit]")
            page.wait_for_selector("[role=alert]")
        page.fill("input[name=username]", "carol")
        page.fill("input[name=password]", "carol-pass-123")
        page.click("button[type=submit]")
        alert = page.locator("[role=alert]")
        assert "Too many failed logins" in alert.inner_text()
        assert page.locator("nav.site-nav").count() == 0  # the right password did not get in
    finally:
        cache.clear()
