"""Issue 31, item 15: the transcript list names the conversations of a file by title, not
only the file: the first few under its name (with a search, those whose title matched
first), "and N more" to the file's page, the same lines in the JSON twin."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from sessions_app import services
from sessions_app.models import Transcript
from sessions_app.upload_pages import TITLES_SHOWN

pytestmark = pytest.mark.django_db


def _sharegpt(topics: list[str]) -> bytes:
    return json.dumps(
        [
            {
                "conversations": [
                    {"from": "human", "value": f"Please help with {topic}"},
                    {"from": "gpt", "value": f"Sure, {topic}."},
                ]
            }
            for topic in topics
        ]
    ).encode()


def test_list_shows_each_conversations_title(alice: Any, alice_client: Client) -> None:
    topics = [f"topic number {i}" for i in range(8)] + ["the <b>quarterly</b> report"]
    outcome = services.upload_import(owner=alice, name="many.json", data=_sharegpt(topics))
    assert outcome.upload is not None and outcome.upload.conversation_count == 9
    titles = list(
        Transcript.objects.filter(upload=outcome.upload)
        .order_by("position")
        .values_list("pk", "title")
    )
    assert all("Please help with" in t for _, t in titles), titles
    data = alice_client.get("/transcripts/", {"format": "json"}).json()
    row = data["uploads"][0]
    assert [t["id"] for t in row["titles"]] == [pk for pk, _ in titles[:TITLES_SHOWN]]
    assert row["titles"][0]["title"] == titles[0][1]
    page = alice_client.get("/transcripts/").content.decode()
    for pk, title in titles[:TITLES_SHOWN]:
        assert f'<li><a href="/transcripts/{pk}/">{title}</a></li>' in page
    assert f"and {9 - TITLES_SHOWN} more" in page
    # a search by a later conversation's title names that one first (escaped)
    found = alice_client.get("/transcripts/", {"q": "quarterly", "format": "json"}).json()
    assert found["uploads"][0]["titles"][0]["id"] == titles[-1][0]
    html = alice_client.get("/transcripts/", {"q": "quarterly"}).content.decode()
    assert "the &lt;b&gt;quarterly&lt;/b&gt; report" in html and "<b>quarterly" not in html
