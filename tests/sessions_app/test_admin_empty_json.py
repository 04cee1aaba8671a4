"""The admin saves rows whose JSON fields hold an empty list (a Message's ``flags`` and
``secrets``, a Transcript's ``tools``, ``compactions``, ``metadata``, ``secrets``): an
empty list is a value, not a missing one. An empty box is still refused, with a message."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions_app import services as session_services
from sessions_app.models import Message, Transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def transcript(staff_user: Any) -> Transcript:
    data = b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]'
    upload = session_services.upload_import(owner=staff_user, name="a.json", data=data).upload
    assert upload is not None
    return upload.transcripts.get()


def _form_data(client: Client, url: str) -> dict[str, Any]:
    """The change form's own values, as the browser would post them back."""
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None:
            value = ""
        if isinstance(value, bool):
            if value:
                data[name] = "on"
            continue
        data[name] = value
    return data


def _admin(staff_user: Any) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def test_a_message_with_no_flags_and_no_secrets_saves(
    staff_user: Any, transcript: Transcript
) -> None:
    message = transcript.messages.get(index=1)
    assert message.flags == [] and message.secrets == []
    client = _admin(staff_user)
    url = f"/admin/sessions_app/message/{message.pk}/change/"
    data = _form_data(client, url)
    assert data["flags"] == "[]" and data["secrets"] == "[]"
    data["reference_tokens"] = "7"  # an edit, so the save is seen
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    message.refresh_from_db()
    assert message.reference_tokens == 7 and message.flags == [] and message.secrets == []


def test_a_transcript_with_empty_lists_saves(staff_user: Any, transcript: Transcript) -> None:
    client = _admin(staff_user)
    url = f"/admin/sessions_app/transcript/{transcript.pk}/change/"
    data = _form_data(client, url)
    empty = [k for k in ("tools", "compactions", "metadata", "secrets") if data.get(k) == "[]"]
    assert {"tools", "compactions", "secrets"} <= set(empty)
    data["title"] = "renamed"
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    transcript.refresh_from_db()
    assert transcript.title == "renamed" and transcript.tools == []


def test_an_empty_box_is_refused_with_a_message(staff_user: Any, transcript: Transcript) -> None:
    message = transcript.messages.get(index=1)
    client = _admin(staff_user)
    url = f"/admin/sessions_app/message/{message.pk}/change/"
    data = {**_form_data(client, url), "flags": ""}
    response = client.post(url, data)
    assert response.status_code == 200
    assert "flags" in response.context["adminform"].form.errors
    assert Message.objects.get(pk=message.pk).flags == []


def test_a_probe_set_with_empty_scores_saves(staff_user: Any, transcript: Transcript) -> None:
    from judge_app import services as probes
    from replay_app.runs.executor import run_execute
    from replay_app.runs.services import RunSpec, run_create

    run = run_create(owner=staff_user, transcript=transcript,
                     spec=RunSpec(strategy="qwenpaw"), enqueue=False)  # fmt: skip
    row = probes.probe_set(run_execute(run=run))
    assert row is not None and row.shared == {} and row.claude == {}
    client = _admin(staff_user)
    url = f"/admin/judge_app/probeset/{row.pk}/change/"
    data = {**_form_data(client, url), "claude_message": "checked"}
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    row.refresh_from_db()
    assert row.claude_message == "checked" and row.shared == {}
