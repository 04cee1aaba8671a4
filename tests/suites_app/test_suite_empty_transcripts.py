"""Suites leave out conversations with no messages (aider sessions opened and closed with no
chat: 150 of the 1,134 in aider's own history). Each would replay to zero steps and put a
row of zeros into every median; chosen by a filter or an upload they are skipped and
counted in the suite's source, chosen by hand they are refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from replay_app.models import Run
from sessions_app.models import Transcript
from suites_app.models import Suite

pytestmark = pytest.mark.django_db

AIDER = Path(__file__).resolve().parents[1] / "data/corpus/aider/aider-repo-chat-history.md"


def _first_sessions(count: int) -> bytes:
    """The real history's first ``count`` sessions (the whole 4 MB file imports slowly);
    the test checks that they hold both empty and non-empty ones."""
    lines = AIDER.read_text(encoding="utf-8").split("\n")
    headers = [i for i, line in enumerate(lines) if line.startswith("# aider chat started at")]
    return "\n".join(lines[: headers[count]]).encode()


def _post(client: Client, **fields: Any) -> Any:
    data = {"name": "aider", "summarizer": "offline", "max_attempts": "1", **fields}
    return client.post("/suites/new/", {"presets": ["qwenpaw"], **data})


def test_upload_and_filter_skip_empty_conversations(user: Any, client: Client) -> None:
    client.force_login(user)
    upload = SimpleUploadedFile("aider-history.md", _first_sessions(12))
    response = _post(client, uploads=[upload])
    assert response.status_code == 302, response.content.decode()[:2000]
    mine = Transcript.objects.filter(owner=user)
    empty = mine.filter(message_count=0).count()
    full = mine.filter(message_count__gt=0).count()
    assert empty and full  # the real sessions hold both kinds
    suite = Suite.objects.get(name="aider")
    assert suite.items.count() == full
    assert not suite.items.filter(transcript__message_count=0).exists()
    assert suite.source["skipped_empty"] == empty
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert f"({empty} conversations with no messages left out)" in page

    response = _post(client, name="by format", filter_format="aider")
    assert response.status_code == 302, response.content.decode()[:2000]
    suite = Suite.objects.get(name="by format")
    assert suite.items.count() == full
    assert suite.source["skipped_empty"] == empty


def test_an_empty_conversation_chosen_by_hand_is_refused_by_name(user: Any, client: Client) -> None:
    client.force_login(user)
    _post(client, name="first", uploads=[SimpleUploadedFile("h.md", _first_sessions(12))])
    runs = Run.objects.count()
    empty = Transcript.objects.filter(owner=user, message_count=0).first()
    assert empty is not None
    response = _post(client, name="by hand", transcripts=[empty.pk])
    assert response.status_code == 200
    page = response.content.decode()
    assert "has no messages: there is nothing to replay" in page
    assert not Suite.objects.filter(name="by hand").exists()
    assert Run.objects.count() == runs
