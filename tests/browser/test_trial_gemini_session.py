"""A new user's trial on the real Gemini CLI session, in a real browser: the run form's
transcript search finds it by its format ("gemini": the file name does not say so), the
step view of a gemini_cli run says where the count written above the zone bar leaves
part of the bar out (973 tokens over zones of 1,066 at step 7), and scrubbing the run
page without JavaScript (``?step=N``) shows each step while keeping none of them."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from inspect_helpers import make_run  # noqa: E402
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"
)


def _gemini_run(username: str) -> Any:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    return make_run(user, transcript, "gemini_cli", token_limit=3000)


def test_search_by_format_and_a_step_whose_count_leaves_part_of_the_bar_out(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    run = _gemini_run("alice")
    page.goto(f"{live_server.url}/runs/new/")
    page.fill("#id_transcript_q", "gemini")
    option = page.locator("#transcript-options .transcript-option")
    option.first.wait_for()
    assert option.count() == 1 and SESSION.name[:30] in option.inner_text()

    page.goto(f"{live_server.url}/runs/{run.pk}/steps/7/")
    line = page.locator(".step-tokens")
    gap = page.locator(".zone-line .zone-gap")  # under the bar, in the one zone model's line
    assert gap.is_visible()
    counted = int(re.search(r"Request: ([\d,]+)", line.inner_text())[1].replace(",", ""))  # type: ignore[index]
    bar = int(gap.get_attribute("data-bar-total") or 0)
    assert bar > counted and f"{bar:,}" in gap.inner_text()
    assert f"leaves out {bar - counted:,}" in gap.inner_text()
    screenshot("step-7")
    assert page.errors == []


def test_scrubbing_without_javascript_shows_each_step_and_keeps_none(
    browser: Any, live_server: Any, django_user_model: Any
) -> None:
    from replay_app import memo

    django_user_model.objects.create_user(username="bob", password="bob-pass-123")
    run = _gemini_run("bob")
    from conftest import set_page_timeouts

    context = browser.new_context(java_script_enabled=False)
    page = set_page_timeouts(context.new_page())
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "bob")
        page.fill("input[name=password]", "bob-pass-123")
        page.click("button[type=submit]")
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        kept = {k for k in memo.MEMO.items if k.startswith(("page-", "html-"))}
        for step in (2, 5, 9):
            page.goto(f"{live_server.url}/runs/{run.pk}/?step={step}")
            assert page.locator(".step-title").first.inner_text() == f"Step {step}"
        # the slider's own form, submitted without JavaScript
        page.locator("input[name=step]").first.evaluate("e => e.value = 4")
        page.locator("form:has(input[name=step]) button").first.click()
        page.wait_for_load_state()
        assert "step=4" in page.url
        assert page.locator(".step-title").first.inner_text() == "Step 4"
        assert {k for k in memo.MEMO.items if k.startswith(("page-", "html-"))} == kept
    finally:
        context.close()
