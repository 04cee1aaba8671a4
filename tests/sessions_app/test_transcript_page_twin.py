"""The transcript page renders one ``TranscriptPage`` and serialises that same object as its
JSON twin: a title, a narrowed message list and a message's text set only on the object
(after it was read from the database) show in both, and are gone once the builder is
restored."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app import services, transcript_page
from sessions_app.models import Message, Transcript
from sessions_app.transcript_page import TranscriptPage

pytestmark = pytest.mark.django_db

MARK = "value-set-on-the-page-object"


def test_transcript_page_and_json_twin_read_one_object(
    tau_upload: services.ImportOutcome, alice_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = Transcript.objects.get(upload=tau_upload.upload)
    assert transcript.message_count > 2
    build = transcript_page.transcript_page

    def marked(t: Transcript, page: Any, per_page: int, search: Any) -> TranscriptPage:
        shown = build(t, page, per_page, search)
        shown.transcript.title = "title-" + MARK
        second: Message = list(shown.page.object_list)[1]
        second.blocks = [{"kind": "text", "text": "text-" + MARK}]
        shown.page.object_list = [second]  # narrowed on the object only
        return shown

    monkeypatch.setattr(transcript_page, "transcript_page", marked)
    url = reverse("transcript-detail", args=[transcript.pk])
    html = alice_client.get(url).content.decode()
    data = alice_client.get(url, {"format": "json"}).json()
    assert data["transcript"]["title"] == "title-" + MARK and "title-" + MARK in html
    assert [m["index"] for m in data["messages"]] == [1]
    assert data["messages"][0]["blocks"][0]["text"] == "text-" + MARK and "text-" + MARK in html
    assert html.count('id="m0"') == 0 and html.count('id="m1"') == 1
    monkeypatch.undo()
    plain = alice_client.get(url, {"format": "json"}).json()
    assert MARK not in str(plain) and plain["transcript"]["title"] == transcript.title
    assert [m["index"] for m in plain["messages"]] == list(range(transcript.message_count))
    page = alice_client.get(url).content.decode()
    assert MARK not in page and 'id="m0"' in page
