"""A finished run's whole page comes from the memo (``replay_app.runs.pages.whole_page``):
rendered once per query and viewer, each view with its own CSRF token, messages shown,
and the ownership check before anything is read."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest
from django.middleware.csrf import _unmask_cipher_token
from inspect_helpers import make_run, view_with_templates

from replay_app.models import Run, RunStatus

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"')
HEADER_TOKEN = re.compile(r'"X-CSRFToken": "([A-Za-z0-9]+)"')


def _tokens(html: str) -> set[str]:
    return set(TOKEN.findall(html)) | set(HEADER_TOKEN.findall(html))


@pytest.fixture
def done_run(user: Any, transcript: Any) -> Run:
    return make_run(user, transcript, "cowagent")


def test_a_finished_runs_page_is_rendered_once_with_each_views_own_token(
    client: Any, user: Any, done_run: Run
) -> None:
    client.force_login(user)
    url = f"/runs/{done_run.pk}/"
    first, rendered = view_with_templates(client, url)
    assert "replay_app/runs/run_detail.html" in rendered
    again, rendered_again = view_with_templates(client, url)
    assert rendered_again == []  # nothing rendered: the page came from the memo
    secret = client.cookies["csrftoken"].value
    for html in (first, again):
        tokens = _tokens(html)
        assert len(tokens) == 1  # the header's and the logout form's: one token per view
        assert _unmask_cipher_token(tokens.pop()) == secret  # valid for this session
    assert _tokens(first) != _tokens(again)  # a fresh mask each view, as Django renders
    (token,) = _tokens(first)
    assert again.replace(_tokens(again).pop(), token) == first
    assert user.get_username() in again and 'id="token-curve-plot"' in again
    # another query is another page
    _, rendered_step = view_with_templates(client, f"{url}?step=3")
    assert "replay_app/runs/run_detail.html" in rendered_step


def test_the_memoised_page_is_still_only_its_owners(
    client: Any, user: Any, other_user: Any, done_run: Run
) -> None:
    client.force_login(user)
    view_with_templates(client, f"/runs/{done_run.pk}/")
    client.force_login(other_user)
    assert client.get(f"/runs/{done_run.pk}/").status_code == 404
    client.logout()
    assert client.get(f"/runs/{done_run.pk}/").status_code == 302  # to the login page


def test_queued_messages_show_and_the_page_stays_per_viewer(
    client: Any, user: Any, done_run: Run
) -> None:
    client.force_login(user)
    url = f"/runs/{done_run.pk}/"
    view_with_templates(client, url)
    storage = CookieStorage(HttpRequest())
    client.cookies["messages"] = storage._encode([Message(constants.INFO, "Run queued <again>")])
    with_message, rendered = view_with_templates(client, url)
    assert "Run queued &lt;again&gt;" in with_message and rendered
    after, _ = view_with_templates(client, url)
    assert "Run queued" not in after  # shown once, and not kept in the memo
    user.username = "renamed-owner"
    user.save()
    renamed, rendered = view_with_templates(client, url)
    assert "renamed-owner" in renamed and rendered


def test_an_unfinished_run_is_rendered_every_view(client: Any, user: Any, done_run: Run) -> None:
    Run.objects.filter(pk=done_run.pk).update(status=RunStatus.RUNNING, finished_at=None)
    client.force_login(user)
    for _ in range(2):
        html, rendered = view_with_templates(client, f"/runs/{done_run.pk}/")
        assert "replay_app/runs/run_detail.html" in rendered
        assert len(_tokens(html)) == 1  # the cancel form's token is the view's own too


def test_the_compare_page_of_finished_runs_is_rendered_once(
    client: Any, user: Any, other_user: Any, done_run: Run, transcript: Any
) -> None:
    second = make_run(user, transcript, "qwenpaw")
    client.force_login(user)
    url = f"/compare/?runs={done_run.pk},{second.pk}"
    first, rendered = view_with_templates(client, url)
    assert "replay_app/compare/compare.html" in rendered
    again, rendered_again = view_with_templates(client, url)
    assert rendered_again == []
    (token,) = _tokens(first)
    assert again.replace(_tokens(again).pop(), token) == first
    assert _unmask_cipher_token(_tokens(again).pop()) == client.cookies["csrftoken"].value
    client.force_login(other_user)
    assert client.get(url).status_code == 404
