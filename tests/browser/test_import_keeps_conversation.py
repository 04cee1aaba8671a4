"""In a real browser: a Claude Code session whose local-command lines hang off its first
line imports whole, the result row says what was set aside, a rewound branch is listed on
the transcript page as an alternate; a real corpus session saved with a BOM and CRLF line
ends imports like the original."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.engine.importers.claude_shapes import branch_trap_session, rewind_session

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS_SESSION = (
    Path(settings.BASE_DIR)
    / "tests/data/corpus/claude-code/ccviewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
)


def test_upload_results_and_transcript_pages_keep_the_conversation(
    page: Any, live_server: Any, login: Any, screenshot: Any, tmp_path: Path
) -> None:
    login()
    trap = tmp_path / "trap.jsonl"
    trap.write_bytes(branch_trap_session())
    rewind = tmp_path / "rewind.jsonl"
    rewind.write_bytes(rewind_session())
    windows = tmp_path / "windows-saved.jsonl"
    windows.write_bytes(b"\xef\xbb\xbf" + CORPUS_SESSION.read_bytes().replace(b"\n", b"\r\n"))
    page.goto(f"{live_server.url}/transcripts/")
    page.set_input_files(
        "#upload-form input[type=file]", [str(trap), str(rewind), str(windows), str(CORPUS_SESSION)]
    )
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-results .upload-result >> nth=3")

    rows = page.locator("#upload-results .upload-result")
    trap_row = rows.filter(has_text="trap.jsonl").inner_text()
    assert "5 lines set aside (first at line 336)" in trap_row
    assert "the model never saw them" in trap_row
    windows_row = rows.filter(has_text="windows-saved.jsonl")
    original_row = rows.filter(has_text=CORPUS_SESSION.name)
    assert "imported" in windows_row.inner_text() and "not imported" not in windows_row.inner_text()
    assert "15 messages" in windows_row.inner_text() and "15 messages" in original_row.inner_text()
    screenshot("results")

    # The whole main thread, titled by its first real request, with its sub-agent.
    rows.filter(has_text="trap.jsonl").locator("a", has_text="list them").click()
    page.get_by_role("link", name="Refactor the parser to stream lines").click()
    assert page.locator("h1").inner_text() == "Refactor the parser to stream lines"
    assert "224" in page.locator("dl.facts").inner_text()
    assert "Find every caller of parse()" in page.locator("dl.facts").inner_text()

    # The rewound branch: listed with its size, and it links back.
    page.goto(f"{live_server.url}/transcripts/")
    page.locator("#upload-table a", has_text="rewind.jsonl").click()
    page.get_by_role("link", name="q", exact=True).click()
    alternates = page.locator("#alternates")
    assert "1 message, forks after line 1" in alternates.inner_text()
    screenshot("alternates")
    alternates.locator("a").click()
    assert "alternate branch at line 1" in page.locator("h1").inner_text()
    assert page.locator("#alternate-of a").inner_text() == "q"
    assert "old answer" in page.locator(".message-list").inner_text()

    # The real corpus session: never titled by its /init slash command.
    page.goto(f"{live_server.url}/transcripts/")
    page.locator("#upload-table a", has_text=CORPUS_SESSION.name).first.click()
    title = page.locator("h1").inner_text()
    assert not title.startswith("/") and title.startswith("Please analyze this codebase")
    assert page.errors == []
