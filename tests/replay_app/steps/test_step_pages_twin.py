"""The step page, the message diff and the compare step view each render one object and
serialise that same object as their JSON twin: a value set only on the object (after it
was read from the database) shows in both."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.compare import compare_steps
from replay_app.steps import at_step, message_diffs

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

MARK = "value-set-on-the-page-object"


def marked(build: Any, **changes: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        found = build(*args, **kwargs)
        if dataclasses.is_dataclass(found) and found.__dataclass_params__.frozen:
            return dataclasses.replace(found, **changes)
        for name, value in changes.items():
            setattr(found, name, value)
        return found

    return wrapper


def test_step_page_and_json_read_one_step_view(
    auth_client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(user, transcript, "qwenpaw")
    monkeypatch.setattr(at_step, "step_view", marked(at_step.step_view, pending=[MARK]))
    url = f"/runs/{run.pk}/steps/3/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert f"pending: {MARK}" in html and data["pending"] == [MARK]


def test_message_diff_and_json_read_one_diff(
    auth_client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(user, transcript, "qwenpaw")
    build = marked(message_diffs.message_diff, reason=MARK)
    monkeypatch.setattr(message_diffs, "message_diff", build)
    url = f"/runs/{run.pk}/messages/2/diff/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert MARK in html and data["reason"] == MARK


def test_compare_step_view_and_json_read_one_object(
    auth_client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [make_run(user, transcript, s) for s in ("cowagent", "copaw")]
    ids = ",".join(str(r.pk) for r in runs)
    build = compare_steps.step_across

    def at_other_step(*args: Any, **kwargs: Any) -> Any:
        return build(*args, **{**kwargs, "step": 2})  # the request asks for step 5

    monkeypatch.setattr(compare_steps, "step_across", at_other_step)
    html = auth_client.get("/compare/", {"runs": ids, "step": 5}).content.decode()
    data = auth_client.get("/compare/", {"runs": ids, "step": 5, "format": "json"}).json()
    assert data["step"] == 2
    assert '<h1 id="step-title">Step 2 <span' in html
