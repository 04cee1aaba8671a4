"""The transcript page as a conversation: safe markdown, tool calls with their results,
search (server-side, paged, escaped), compaction jumps, local times. Real imports of corpus
files and hostile chats, through the real view."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Transcript

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
COMPACTED = CORPUS.parent / "recorded" / "claude-trace-req34-compacted.jsonl"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"
RAW_KEY = (
    "sk-ant-api03-"
    + "Q7x9LmN2pR4tV6wY8zA1bC3dE5fG7hJ9kL0mN2pQ4rS6tU8vW0xY2zA4bC6dE8fG0hJ2kL4mN6pQ8rS0tU2v-AbCdEfAA"
)

HOSTILE = """# Plan
<script>alert('x')</script>
<img src=x onerror=alert(1)>
[click](javascript:alert(2)) and [docs](https://example.org/docs)
![pixel](https://tracker.example/p.png)
**bold** and `code`

| a | b |
|---|---|
| 1 | 2 |

```
<b>not bold</b>
```
"""


def _import(owner: Any, path: Path) -> Transcript:
    outcome = services.upload_import(owner=owner, name=path.name, data=path.read_bytes())
    assert outcome.upload is not None, outcome
    return Transcript.objects.filter(upload=outcome.upload, parent=None).order_by("pk").first()


def _import_chat(owner: Any, *messages: dict[str, Any]) -> Transcript:
    data = json.dumps(list(messages)).encode()
    outcome = services.upload_import(owner=owner, name="chat.json", data=data)
    assert outcome.upload is not None
    return Transcript.objects.get(upload=outcome.upload)


def _page(client: Client, t: Transcript, query: str = "") -> str:
    response = client.get(reverse("transcript-detail", args=[t.pk]) + query)
    assert response.status_code == 200
    return response.content.decode()


def test_markdown_rendered_and_every_hostile_payload_inert(
    alice: Any, alice_client: Client
) -> None:
    t = _import_chat(
        alice, {"role": "user", "content": "hi"}, {"role": "assistant", "content": HOSTILE}
    )
    html = _page(alice_client, t)
    body = html[html.index('id="messages"') :]
    assert (
        "<h1>Plan</h1>" in body and "<strong>bold</strong>" in body and "<code>code</code>" in body
    )
    assert "<table>" in body and "<td>1</td>" in body
    assert "<script>alert" not in body and "&lt;script&gt;alert" in body
    assert "onerror" not in re.sub(r"&lt;img src=x onerror=alert\(1\)&gt;", "", body)
    assert 'href="javascript' not in body and "[click](javascript:alert(2))" in body  # text only
    assert '<a href="https://example.org/docs" rel="noopener noreferrer nofollow">docs</a>' in body
    assert "tracker.example" not in body.split("pixel")[0][-200:] and "<img" not in body
    assert "&lt;b&gt;not bold&lt;/b&gt;" in body  # code fence stays text


def test_tool_call_shown_with_its_result_and_preview(alice: Any, alice_client: Client) -> None:
    t = _import_chat(
        alice,
        {"role": "user", "content": "run the tests"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "arguments": json.dumps({"command": "pytest -q tests/"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3 passed in 0.5s"},
        {"role": "assistant", "content": "All green."},
    )
    html = _page(alice_client, t)
    call = re.search(r'<details class="block block-tool-use[^"]*">(.*?)</details>', html, re.S)
    assert call, html
    summary = call.group(1).split("</summary>")[0]
    assert "bash" in summary and "pytest -q tests/" in summary  # the command, collapsed
    assert "3 passed in 0.5s" in call.group(1)  # the result inside the same row
    assert 'shown with its call in <a href="#m1">#1</a>' in html
    assert html.count("3 passed in 0.5s") == 2  # with the call, and in its own message
    # The pair split by a page break: the call's page links to the result on the next one.
    first = _page(alice_client, t, "?per_page=2")
    assert "result in #2" in first and "?page=2&amp;per_page=2#m2" in first


def test_real_session_previews_paths_and_local_times(alice: Any, alice_client: Client) -> None:
    t = _import(alice, SESSION)
    html = _page(alice_client, t)
    previews = re.findall(r'<span class="tool-preview mono">([^<]*)</span>', html)
    assert "**/NavUser.{tsx,ts,jsx,js}" in previews
    assert any(p.startswith("/Users/jnarowski/") for p in previews)  # Read's file_path
    assert '<time datetime="2025-10-26T10:38:08+00:00"' in html


def test_search_counts_every_occurrence_pages_and_links(alice: Any, alice_client: Client) -> None:
    t = _import(alice, SESSION)
    query = "navuser"
    expected = 0
    for blocks in t.messages.values_list("blocks", flat=True):
        for block in blocks:
            texts = [block.get("text") or ""] + [
                p.get("text") or "" for p in block.get("parts") or []
            ]
            if block.get("kind") == "tool_use" and block.get("tool_input") is not None:
                texts.append(json.dumps(block["tool_input"], ensure_ascii=False))
            expected += sum(text.lower().count(query) for text in texts)
    assert expected > 20  # enough for two pages of hits
    url = reverse("transcript-detail", args=[t.pk])
    data = alice_client.get(url + f"?format=json&q={query}").json()["search"]
    assert data["count"] == expected and data["pages"] == -(-expected // 20)
    assert all(h["match"].lower() == query for h in data["hits"])
    assert data["hits"][0]["url"].endswith(f"#m{data['hits'][0]['index']}")
    page2 = alice_client.get(url + f"?format=json&q={query}&hits=2").json()["search"]
    assert page2["page"] == 2 and page2["hits"][0] != data["hits"][0]
    html = _page(alice_client, t, f"?q={query}")
    assert html.count("<mark>") == 20 and "next hits" in html
    # Following hit 21 (first of the second page): its message's page, with the hits
    # before and after it at hand.
    hit = page2["hits"][0]
    assert hit["number"] == 21 and f"&hit=21#m{hit['index']}" in hit["url"]
    at_hit = alice_client.get(hit["url"].split("#")[0]).content.decode()
    assert f'id="m{hit["index"]}"' in at_hit and f"hit 21 of {expected}" in at_hit
    previous = re.search(r'<a rel="prev" href="([^"]+)">&larr; previous hit', at_hit)
    following = re.search(r'<a rel="next" href="([^"]+)">next hit', at_hit)
    assert previous and "&amp;hit=20#m" in previous.group(1)
    assert following and "&amp;hit=22#m" in following.group(1)
    first = alice_client.get(data["hits"][0]["url"].split("#")[0]).content.decode()
    assert "hit 1 of" in first and "previous hit" not in first


def test_search_escapes_and_finds_non_ascii_and_masked_text(
    alice: Any, alice_client: Client
) -> None:
    t = _import_chat(
        alice,
        {"role": "user", "content": f"déjà vu <b>x</b> and key {RAW_KEY} here"},
        {"role": "assistant", "content": "ok"},
    )
    html = _page(alice_client, t, "?q=%3Cb%3E")
    assert "<mark>&lt;b&gt;</mark>x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert "1 hit " in html
    assert "<mark>déjà</mark>" in _page(alice_client, t, "?q=D%C3%89J%C3%80")
    found = _page(alice_client, t, "?q=sk-ant")
    assert RAW_KEY not in found and "masked" in found and "<mark>sk-ant</mark>" in found


def test_compaction_jump_and_marker(alice: Any, alice_client: Client) -> None:
    t = _import(alice, COMPACTED)
    assert t.compactions, "the corpus file has a compact boundary"
    before = t.compactions[0]["before_index"]
    html = _page(alice_client, t, "?per_page=10")
    page = before // 10 + 1
    assert f'href="/transcripts/{t.pk}/?page={page}&amp;per_page=10#m{before}"' in html
    later = _page(alice_client, t, f"?per_page=10&page={page}")
    assert f'id="compaction-{before}"' in later and "12,075 tokens before" in later


def test_subagent_threads_linked_where_they_were_launched(alice: Any, alice_client: Client) -> None:
    t = _import(
        alice, CORPUS / "claude-code" / "ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    )
    children = list(t.children.all())
    assert len(children) == 2
    html = _page(alice_client, t, "?per_page=1000")
    for child in children:
        link = f'Sub-agent thread launched here: <a href="/transcripts/{child.pk}/">'
        assert html.count(link) == 1, child.title
        # ... inside the tool call whose prompt started it.
        call = html[: html.index(link)].rsplit('<details class="block block-tool-use', 1)[1]
        assert "</details>" not in call
