"""Issue 15, "Huge content is never rendered whole": a 30 MiB tool result shows its head
and tail with its size and a link to the full text, on the transcript page and its JSON
twin (which says it is truncated and where the full text is); the link serves it whole or
a page at a time, to its owner only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from sessions_app import huge
from sessions_app import services as session_services

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024


def _huge_result(mib: int) -> str:
    body = [f"row {i:07d}: {'abcdefghij' * 6}\n" for i in range(mib * MIB // 73 + 1)]
    return "HEAD-MARKER\n" + "".join(body) + "TAIL-MARKER"


def _import(user: Any, mib: int) -> tuple[Any, str]:
    result = _huge_result(mib)
    messages = [
        {"role": "user", "content": "dump the table"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "sql", "arguments": json.dumps({"q": "select *"})}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    outcome = session_services.upload_import(
        owner=user, name="big.json", data=json.dumps(messages).encode()
    )
    assert outcome.error is None and outcome.upload is not None
    return outcome.upload.transcripts.get(), result


@pytest.fixture
def big(user: Any) -> tuple[Any, str]:
    return _import(user, 1)


def test_30mib_result_page_and_json_twin(client: Client, user: Any) -> None:
    transcript, result = _import(user, 30)
    assert len(result) > 30 * MIB
    client.force_login(user)
    page = client.get(transcript.get_absolute_url())
    html = page.content.decode()
    assert page.status_code == 200
    assert len(html) < 1 * MIB  # not the 30 MiB
    assert "HEAD-MARKER" in html and "TAIL-MARKER" in html
    assert f'data-huge-chars="{len(result)}"' in html
    url = huge.full_text_url(transcript.pk, 2, 0, "text", None)
    assert url.replace("&", "&amp;") in html
    full = client.get(url)
    assert full["Content-Type"] == "text/plain; charset=utf-8"
    assert full.content.decode() == result
    paged = client.get(url + "&start=12&length=20")
    assert paged.content.decode() == result[12:32]
    assert paged["X-Total-Chars"] == str(len(result))
    # the JSON twin says it is truncated, how much, and where the whole text is
    response = client.get(transcript.get_absolute_url() + "?format=json")
    assert len(response.content) < 1 * MIB
    (block,) = response.json()["messages"][2]["blocks"]
    assert block["text"] == result[: huge.HEAD_CHARS]
    info = block["truncated"]["text"]
    assert info["chars"] == len(result) and info["tail"] == result[-huge.TAIL_CHARS :]
    assert info["omitted_chars"] == len(result) - huge.HEAD_CHARS - huge.TAIL_CHARS
    assert client.get(info["full_text"]).content.decode() == result
    small = response.json()["messages"][0]["blocks"][0]
    assert "truncated" not in small and small["text"] == "dump the table"


def test_full_text_is_owner_only(client: Client, other_user: Any, big: Any) -> None:
    transcript, _ = big
    client.force_login(other_user)
    assert client.get(huge.full_text_url(transcript.pk, 2, 0, "text", None)).status_code == 404
    client.logout()
    response = client.get(huge.full_text_url(transcript.pk, 2, 0, "text", None))
    assert response.status_code == 302  # to the login page


def test_full_text_bad_coordinates_are_404(client: Client, user: Any, big: Any) -> None:
    transcript, _ = big
    client.force_login(user)
    base = f"/transcripts/{transcript.pk}/messages"
    for url in (
        f"{base}/99/blocks/0/text/",
        f"{base}/2/blocks/5/text/",
        f"{base}/2/blocks/0/text/?field=bogus",
        f"{base}/2/blocks/0/text/?part=x",
    ):
        assert client.get(url).status_code == 404, url  # fmt: skip
