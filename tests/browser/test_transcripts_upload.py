"""Uploading many files in the browser, each reported on its own; scrolling loads messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)

TAU_TASK = (
    Path(settings.BASE_DIR)
    / "tests/data/corpus/openai-chat/taubench-gpt-4o-airline-task2-messages.json"
)


def test_upload_many_files_reports_each_and_lists_them(
    page: Any, live_server: Any, login: Any, screenshot: Any, tmp_path: Path
) -> None:
    login()
    bad = tmp_path / "truncated.json"
    bad.write_bytes(b'[\n{"role": "user",\n "content": "hi"')
    page.goto(f"{live_server.url}/transcripts/")
    page.set_input_files("#upload-form input[type=file]", [str(TAU_TASK), str(bad)])
    page.click("#upload-form button[type=submit]")

    page.wait_for_selector("#upload-results .upload-result >> nth=1")
    ok = page.locator("#upload-results .upload-ok")
    error = page.locator("#upload-results .upload-error")
    assert TAU_TASK.name in ok.inner_text() and "62 messages" in ok.inner_text()
    assert "truncated.json" in error.inner_text() and "line" in error.inner_text()
    page.wait_for_selector(f'#upload-table a:text-is("{TAU_TASK.name}")')
    assert page.locator("#upload-table tbody tr").count() == 1
    assert page.errors == []
    screenshot("results")


def test_drop_zone_imports_dropped_files(page: Any, live_server: Any, login: Any) -> None:
    login()
    page.goto(f"{live_server.url}/transcripts/")
    page.evaluate(
        """() => {
            const dt = new DataTransfer();
            const text = JSON.stringify([{role: "user", content: "dropped hello"}]);
            dt.items.add(new File([text], "dropped.json", {type: "application/json"}));
            const zone = document.getElementById("drop-zone");
            zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true}));
            zone.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true}));
        }"""
    )
    page.wait_for_selector("#upload-results .upload-ok")
    assert "dropped.json" in page.locator("#upload-results").inner_text()
    page.wait_for_selector('#upload-table a:text-is("dropped.json")')


def test_transcript_messages_load_as_you_scroll(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    user = login()  # noqa: F841 - signs the page in
    from django.contrib.auth import get_user_model

    from sessions_app import services

    owner = get_user_model().objects.get(username="alice")
    outcome = services.upload_import(owner=owner, name=TAU_TASK.name, data=TAU_TASK.read_bytes())
    transcript_id = outcome.conversations[0].transcript_id
    page.goto(f"{live_server.url}/transcripts/{transcript_id}/?per_page=20")
    assert page.locator(".message-item").count() == 20
    for _ in range(10):
        shown = page.locator(".message-item").count()
        if shown == 62:
            break
        page.locator(".message-list > li").last.scroll_into_view_if_needed()
        # the next page of messages arrives (not a fixed pause for it)
        page.wait_for_function(
            "n => document.querySelectorAll('.message-item').length > n", arg=shown
        )
    assert page.locator(".message-item").count() == 62
    assert page.locator(".next-page").count() == 0
    ids = page.locator(".message-item").evaluate_all("els => els.map(e => e.id)")
    assert ids == [f"m{i}" for i in range(62)]
    screenshot("scrolled")


def test_many_conversation_file_expands_in_place(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    from django.contrib.auth import get_user_model

    from sessions_app import services

    path = Path(settings.BASE_DIR) / "tests/data/corpus/sharegpt/fastchat-dummy_conversation.json"
    owner = get_user_model().objects.get(username="alice")
    assert services.upload_import(owner=owner, name=path.name, data=path.read_bytes()).ok
    page.goto(f"{live_server.url}/transcripts/")
    assert page.locator("#upload-table tbody > tr:not(.conversations-row)").count() == 1
    page.click("details.conversations summary")
    rows = page.locator("details.conversations .conversation-rows tbody tr")
    rows.first.wait_for()
    assert rows.count() == 50
    assert "Page 1 of 10" in page.locator("details.conversations").inner_text()
    page.click("details.conversations >> text=Next")
    page.wait_for_selector("details.conversations >> text=Page 2 of 10")
    assert page.url.endswith("/transcripts/")  # swapped in place, no navigation
    assert page.errors == []
    screenshot("expanded")


def test_a_long_file_name_keeps_every_column_in_view(
    page: Any, live_server: Any, login: Any, tmp_path: Path
) -> None:
    # Real corpus names such as pydanticai-test_openai_responses_thinking_with_tool_calls.yaml
    # have no break point: the table grew wider than the page and hid "Imported".
    login()
    long = tmp_path / ("pydanticai-test_openai_responses_thinking_with_tool_calls" * 2 + ".json")
    long.write_bytes(TAU_TASK.read_bytes())
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/transcripts/")
    page.set_input_files("#upload-form input[type=file]", [str(long)])
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-results .upload-ok")
    page.goto(f"{live_server.url}/transcripts/")
    wrap = page.locator("#upload-table")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth"), wrap.evaluate(
        "e => [e.scrollWidth, e.clientWidth]"
    )
