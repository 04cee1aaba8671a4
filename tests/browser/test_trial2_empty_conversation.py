"""A real aider chat history holds sessions that were opened and closed with no chat (150
of the 1,134 in aider's own history): each imports as a conversation with no messages. As
a new user picking one in the run form, the form used to suggest windows from a
"largest request of 0 tokens" and start runs of zero steps whose pages were all zeros;
now the run form and the sweep form refuse it, naming it and saying why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

AIDER = Path(__file__).resolve().parents[1] / "data/corpus/aider/aider-repo-chat-history.md"


def _aider_session_without_chat(username: str) -> Any:
    """The first empty session of the real history, alone in a file (the whole 4 MB
    history imports in tens of seconds)."""
    from django.contrib.auth import get_user_model

    lines = AIDER.read_text(encoding="utf-8").split("\n")
    headers = [i for i, line in enumerate(lines) if line.startswith("# aider chat started at")]
    empty = next(
        i
        for i, j in zip(headers, headers[1:], strict=False)
        if not any(line.strip() for line in lines[i + 1 : j])
    )
    data = (lines[empty] + "\n\n").encode()
    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, data, name="aider-empty-session.md")
    assert transcript.message_count == 0
    return transcript


def test_run_and_sweep_forms_refuse_a_conversation_without_messages(
    page: Any, live_server: Any, login: Any
) -> None:
    from replay_app.models import Run

    login()
    transcript = _aider_session_without_chat("alice")
    page.goto(f"{live_server.url}/runs/new/?transcript={transcript.pk}")
    assert page.locator("#window-suggestions option").count() == 0  # none from 0 tokens
    page.click("button:has-text('Start replay')")
    error = page.locator("#field-transcript .errorlist")
    assert "has no messages: there is nothing to replay" in error.inner_text()
    assert transcript.display_title in error.inner_text()

    page.goto(f"{live_server.url}/runs/sweep/new/?transcript={transcript.pk}")
    page.fill("input[name=values]", "0.5,0.8")
    page.locator("form button[type=submit]").last.click()
    page.wait_for_selector("main:has-text('has no messages')")  # the refused form's answer
    assert "has no messages" in page.locator("main").inner_text()
    assert Run.objects.count() == 0
    # the refused forms answer 400, which Chromium logs; nothing else may fail
    assert [e for e in page.errors if "status of 400" not in e] == []
