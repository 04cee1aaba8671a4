"""Issue 15, huge content on the run pages: a huge tool result is never written whole into
the message diff (page, step-page fragment, JSON twin); they show its head and tail with
its size and link to the full text, served whole, paged or as a download."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from replay_app.models import RunEvent, RunStatus
from replay_app.runs import executor, services
from sessions_app import huge
from sessions_app import services as session_services

pytestmark = pytest.mark.django_db

LOG = "".join(f"line {i}: GET /api/items?page={i} 200 {i % 97}ms\n" for i in range(12_000))
BIG = len(LOG)  # ~500,000 characters: over huge.HUGE_CHARS


def _chat() -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the access log."}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": f"/log/{i}"})}}  # fmt: skip
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} {LOG}"})
        messages.append({"role": "user", "content": f"And the next one ({i})?"})
    return json.dumps(messages).encode()


@pytest.fixture
def truncated(user: Any) -> tuple[Any, int, int]:
    """A cowagent run over the transcript, and (event seq, index) of a truncated result."""
    outcome = session_services.upload_import(owner=user, name="logs.json", data=_chat())
    assert outcome.upload is not None, outcome.error
    transcript = outcome.upload.transcripts.get()
    run = services.run_create(
        owner=user, transcript=transcript, spec=services.RunSpec(strategy="cowagent"),
        enqueue=False,
    )  # fmt: skip
    run = executor.run_execute(run=run)
    assert run.status == RunStatus.DONE, run.error
    for event in RunEvent.objects.filter(run=run).order_by("seq"):
        for change in event.changes:
            if change["fate"] == "truncated":
                return run, event.seq, int(change["index"])
    raise AssertionError("cowagent truncated no tool result")


def test_message_diff_shows_head_and_tail_of_a_huge_text(
    user: Any, truncated: tuple[Any, int, int]
) -> None:
    run, seq, index = truncated
    client = Client()
    client.force_login(user)
    url = f"/runs/{run.pk}/messages/{index}/diff/?event={seq}"
    page = client.get(url)
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    for response in (page, fragment):
        html = response.content.decode()
        assert response.status_code == 200
        assert len(html) < BIG // 2  # never the whole text
        assert "only its first" in html and "full original" in html
        assert f"{url}&amp;full=original" in html
        assert "line 11999: GET /api/items?page=11999 200" in html  # the tail is shown

    data = client.get(url + "&format=json").json()
    assert len(json.dumps(data)) < BIG // 2
    cut = data["truncated"]["original"]
    assert cut["chars"] > huge.HUGE_CHARS and cut["full_text"] == f"{url}&full=original"
    assert len(data["original"]) == huge.HEAD_CHARS

    whole = client.get(cut["full_text"])
    assert whole["Content-Type"].startswith("text/plain")
    text = whole.content.decode()
    assert len(text) == cut["chars"] == int(whole["X-Total-Chars"])
    assert LOG in text
    page_of = client.get(cut["full_text"] + "&start=10&length=50").content.decode()
    assert page_of == text[10:60]
    download = client.get(cut["full_text"] + "&download=1")
    assert download["Content-Disposition"].startswith("attachment")


def test_full_text_is_the_owners_only(
    user: Any, other_user: Any, truncated: tuple[Any, int, int]
) -> None:
    run, seq, index = truncated
    client = Client()
    client.force_login(other_user)
    url = f"/runs/{run.pk}/messages/{index}/diff/?event={seq}&full=original"
    assert client.get(url).status_code == 404
