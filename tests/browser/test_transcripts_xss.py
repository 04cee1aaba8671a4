"""Transcript text is data, never markup: payloads in texts, tool names and file names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "<script>window.__xss = 1</script>"
IMG = '<img src=x onerror="window.__xss = 2">'
SVG = "<svg onload=window.__xss=3>"
FILE_NAME = "<img src=x onerror=window.__xss=4>.json"


def payload_transcript() -> bytes:
    return json.dumps(
        [
            {"role": "system", "content": f"system {SVG}"},
            {"role": "user", "content": f"hello {SCRIPT} and {IMG}"},
            {
                "role": "assistant",
                "content": f"calling {SVG}",
                "tool_calls": [
                    {
                        "id": "call<b>1</b>",
                        "type": "function",
                        "function": {"name": IMG, "arguments": json.dumps({"q": SCRIPT})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call<b>1</b>", "content": f"result {IMG}"},
            {"role": "assistant", "content": f"done </textarea></pre>{SCRIPT}"},
        ]
    ).encode()


def assert_clean(page: Any) -> None:
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert (
        page.locator("body script:not([src])").evaluate_all(
            "els => els.filter(e => e.textContent.includes('__xss')).length"
        )
        == 0
    )


def test_transcript_payloads_show_literally_and_never_run(
    page: Any, live_server: Any, login: Any, screenshot: Any, tmp_path: Path
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    login()
    path = tmp_path / FILE_NAME
    path.write_bytes(payload_transcript())

    page.goto(f"{live_server.url}/transcripts/")
    page.set_input_files("#upload-form input[type=file]", str(path))
    page.click("#upload-form button[type=submit]")
    result = page.locator("#upload-results .upload-result").first
    result.wait_for()
    assert "imported" in result.inner_text()
    assert FILE_NAME in result.inner_text()  # the file name as text
    page.wait_for_selector(f'#upload-table a:text-is("{FILE_NAME}")')
    assert_clean(page)
    screenshot("list")

    page.click(f'#upload-table a:text-is("{FILE_NAME}")')
    page.wait_for_selector(".message-item")
    for details in page.locator("details.block").all():
        details.evaluate("el => el.open = true")
    body = page.locator("main").inner_text()
    for needle in (SCRIPT, IMG, SVG, "</textarea></pre>"):
        assert needle in body
    assert page.locator("main img, main svg:not(.main-svg)").count() == 0
    assert_clean(page)
    screenshot("transcript")

    page.goto(page.url + "?format=json")
    assert_clean(page)
    page.go_back()
    page.click("text=" + FILE_NAME)  # the breadcrumb to the upload page
    page.wait_for_selector("h1")
    assert page.locator("h1").inner_text() == FILE_NAME
    assert_clean(page)
    assert dialogs == []
    assert [e for e in page.errors if "__xss" in e] == []
