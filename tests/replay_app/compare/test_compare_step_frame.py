"""The compare step view's frame (``whole_page.framed``: base.html and the head around the
step's title and main block) is rendered once per runs and viewer and reused for every
step: each view still gets its own CSRF token, another viewer never gets a frame rendered
for someone else, and a run finished again (re-run) or deleted is not served its old frame."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest
from django.middleware.csrf import _unmask_cipher_token
from inspect_helpers import make_run, view_with_templates
from replay_testdata import agent_chat, import_transcript

from replay_app.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

TEMPLATE = "replay_app/compare/compare_step.html"
TOKENS = re.compile(r'(?:name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")([A-Za-z0-9]+)"')


@pytest.fixture
def runs(user: Any, transcript: Any) -> list[Run]:
    return [make_run(user, transcript, s) for s in ("cowagent", "copaw")]


def _url(runs: list[Run], step: int, extra: str = "") -> str:
    return f"/compare/?runs={','.join(str(r.pk) for r in runs)}&step={step}{extra}"


def test_each_step_in_the_one_frame_with_its_own_token(
    client: Any, user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    first, rendered = view_with_templates(client, _url(runs, 2))
    assert TEMPLATE in rendered
    pages = [view_with_templates(client, _url(runs, step)) for step in (3, 4)]
    assert all(rendered == [] for _, rendered in pages)  # the frame came from the memo
    secret = client.cookies["csrftoken"].value
    seen = set()
    for step, html in ((2, first), (3, pages[0][0]), (4, pages[1][0])):
        assert f"<title>Compare runs {runs[0].pk},{runs[1].pk} at step {step} · ctxlab" in html
        assert f'id="step-title">Step {step} ' in html and user.get_username() in html
        tokens = set(TOKENS.findall(html))
        assert len(tokens) == 1 and _unmask_cipher_token(tokens.pop()) == secret
        seen |= set(TOKENS.findall(html))
    assert len(seen) == 3  # a fresh mask each view


def test_the_frame_is_the_whole_templates(client: Any, user: Any, runs: list[Run]) -> None:
    """What the frame serves is byte for byte what rendering the template gives (an htmx
    request is never memoised: it renders the whole template)."""
    client.force_login(user)
    client.get(_url(runs, 1))  # the frame is kept
    for step in (0, 3):
        framed, rendered = view_with_templates(client, _url(runs, step))
        assert rendered == []
        whole = client.get(_url(runs, step), HTTP_HX_REQUEST="true").content.decode()
        assert TOKENS.sub("T", framed) == TOKENS.sub("T", whole)
    compaction, rendered = view_with_templates(client, f"{_url(runs, 0)[:-7]}&compaction=1")
    assert rendered == [] and "at compaction 1 · ctxlab</title>" in compaction


def test_another_viewer_never_gets_the_frame(
    client: Any, user: Any, other_user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    view_with_templates(client, _url(runs, 2))
    client.force_login(other_user)
    assert client.get(_url(runs, 3)).status_code == 404  # not their runs
    theirs = import_transcript(other_user, agent_chat(), name="bob.json")
    bobs = [make_run(other_user, theirs, s) for s in ("cowagent", "copaw")]
    html, rendered = view_with_templates(client, _url(bobs, 3))
    assert TEMPLATE in rendered and "bob" in html and "alice" not in html
    # the same viewer with another name or staff flag is another frame
    user.username, user.is_staff = "alicia", True
    user.save()
    client.force_login(user)
    html, rendered = view_with_templates(client, _url(runs, 4))
    assert TEMPLATE in rendered and "alicia" in html and "/admin/" in html


def test_a_run_finished_again_or_deleted_is_not_served_its_old_frame(
    client: Any, user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    view_with_templates(client, _url(runs, 2))
    assert view_with_templates(client, _url(runs, 3))[1] == []
    finished = runs[1].finished_at
    assert finished is not None
    Run.objects.filter(pk=runs[1].pk).update(finished_at=finished + timedelta(seconds=5))
    assert TEMPLATE in view_with_templates(client, _url(runs, 4))[1]  # re-run: a new frame
    Run.objects.filter(pk=runs[1].pk).delete()
    assert client.get(_url(runs, 5)).status_code == 404


def test_queued_messages_show_and_are_not_framed(client: Any, user: Any, runs: list[Run]) -> None:
    client.force_login(user)
    view_with_templates(client, _url(runs, 2))
    storage = CookieStorage(HttpRequest())
    client.cookies["messages"] = storage._encode([Message(constants.INFO, "Run queued <again>")])
    html, rendered = view_with_templates(client, _url(runs, 3))
    assert "Run queued &lt;again&gt;" in html and TEMPLATE in rendered
    html, rendered = view_with_templates(client, _url(runs, 4))
    assert "Run queued" not in html and rendered == []  # the frame is as before
