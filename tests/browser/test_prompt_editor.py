"""The prompt editor in a real browser: start from Claude Code's real compaction prompt, edit
it and add a must-keep rule and custom instructions, replay it beside the original prompt
with the offline summariser, see the survival difference (and the probes and cost columns),
open the comparison, the prompt diff beside the summary diff, and download the export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "<img src=x onerror=alert(1)>"


def test_edit_replay_diff_and_export(
    page: Any, live_server: Any, login: Any, screenshot: Any, django_user_model: Any
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))
    from replay_testdata import agent_chat, import_transcript

    from ctxlab.engine.strategies import _claude_code_rules
    from ctxlab.engine.summarize import prompt_edit

    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    login()
    user = django_user_model.objects.get(username="alice")
    transcript = import_transcript(user, agent_chat(turns=24, size=3000), name="chat.json")

    page.goto(f"{live_server.url}/prompts/")
    page.locator("button[data-start='claude_code']").click()
    page.wait_for_url("**/prompts/*/")
    text = page.locator("#prompt-text")
    assert text.input_value() == _claude_code_rules.BASE_COMPACT_PROMPT.replace("\r\n", "\n")
    edited = text.input_value().replace("Your task is", "YOUR JOB is")
    text.fill(edited)
    page.locator("#prompt-rules").fill("srv/app/f1")
    page.locator("#prompt-instructions").fill(f"Keep the file list. {HOSTILE}")
    page.locator("#prompt-name").fill("keep paths")
    page.locator("#prompt-form button[type=submit]").click()
    page.wait_for_selector("h1:has-text('prompt v2')")
    screenshot("prompt-v2")

    page.locator("#replay-transcript").select_option(str(transcript.pk))
    page.locator("#replay-summarizer").select_option("offline")
    page.locator("#replay-window").fill("20000")
    page.locator("#replay-form button[type=submit]").click()
    page.wait_for_selector("#prompt-replays tr[data-status='done'] >> nth=1")
    rows = page.locator("#prompt-replays tr[data-run]")
    assert rows.count() == 2
    survival = [rows.nth(i).locator("td.survival").inner_text() for i in range(2)]
    assert all(s.endswith("%") for s in survival)
    assert int(survival[1].rstrip(" %")) > int(survival[0].rstrip(" %")), survival
    assert rows.nth(0).locator("td.probe-score").inner_text().strip()
    assert "0 (offline)" in rows.nth(1).inner_text()
    screenshot("prompt-replayed")

    page.locator("a.compare-link").click()
    page.wait_for_url("**/compare/?runs=*")
    page.wait_for_selector("text=claude_code prompt v2")
    page.go_back()

    page.locator("a.diff-link[data-against='1']").click()
    page.wait_for_url("**/diff/*/")
    prompt_side = page.locator("#prompt-diff")
    assert "Your task is" in prompt_side.locator("del").first.inner_text()
    assert "YOUR JOB is" in prompt_side.locator("ins").first.inner_text()
    assert "srv/app/f1" in page.locator("#rules-diff ins").inner_text()
    added = " ".join(page.locator("#summary-diff ins").all_inner_texts())
    assert "rules" in added and "/srv/app/f1" in added, added[:400]
    screenshot("prompt-diff")
    page.go_back()

    with page.expect_download() as download:
        page.locator("#prompt-export").click()
    assert download.value.suggested_filename == "CLAUDE.md"
    body = Path(download.value.path()).read_text(encoding="utf-8")
    assert body.startswith("# Compact Instructions\n\nKeep the file list. " + HOSTILE)
    assert prompt_edit.RULES_HEADING in body and "- srv/app/f1" in body
    assert not dialogs, dialogs
    assert not page.errors, page.errors
