"""Issue 31, item 15: the transcript search keeps its place. Opened on a hit, every link
that stays in the transcript (the previous page, the next page as link and htmx load, a
call's result on the next page) carries the query, the hits page and the hit
(``conversation.search_keep``), so reading on and coming back finds the search as it was;
the messages carry the query for marking the words, the opened hit is marked in the list."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Transcript

pytestmark = pytest.mark.django_db

SESSION = (
    Path(__file__).resolve().parents[1] / "data/corpus/claude-code/agentcmd-full-session-four.jsonl"
)


def _transcript(owner: Any) -> Transcript:
    outcome = services.upload_import(owner=owner, name=SESSION.name, data=SESSION.read_bytes())
    assert outcome.upload is not None
    found = Transcript.objects.filter(upload=outcome.upload, parent=None).order_by("pk").first()
    assert found is not None
    return found


def test_links_in_the_transcript_keep_the_search(alice: Any, alice_client: Client) -> None:
    t = _transcript(alice)
    url = reverse("transcript-detail", args=[t.pk])
    data = alice_client.get(url, {"format": "json", "q": "navuser", "per_page": "5"}).json()
    hit = data["search"]["hits"][5]  # the sixth hit, on a later page of messages
    page = alice_client.get(hit["url"].split("#")[0]).content.decode()
    keep = f"&q=navuser&hits=1&hit={hit['number']}"
    links = [html_lib.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]
    previous = [h for h in links if "previous page" in page and h.startswith("?page=")]
    assert previous and all(keep in h for h in previous), previous
    following = re.search(r'hx-get="([^"]+)" hx-trigger="revealed"', page)
    assert following and keep in html_lib.unescape(following.group(1))
    assert data["search"]["query"] == "navuser"
    as_json = alice_client.get(hit["url"].split("#")[0] + "&format=json").json()
    assert keep in as_json["next"]  # the JSON twin's next page keeps it too
    assert f'data-search="navuser" data-hit-message="{hit["index"]}"' in page
    assert '<a href="#search-results" class="back-to-hits">all hits</a>' in page
    current = re.findall(
        r'<li class="current-hit" aria-current="true"><a class="mono" href="([^"]+)"', page
    )
    assert len(current) == 1 and f"hit={hit['number']}#" in html_lib.unescape(current[0])


def test_no_search_no_carried_query(alice: Any, alice_client: Client) -> None:
    t = _transcript(alice)
    page = alice_client.get(reverse("transcript-detail", args=[t.pk]), {"per_page": "5"})
    text = page.content.decode()
    assert "data-search" not in text and "&amp;q=" not in text
