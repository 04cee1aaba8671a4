"""Images kept in a transcript show as thumbnails on its page (data: URLs, safe raster types
only) and are described, without their bytes, in the JSON twin. Real imports, real view."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app import media_thumbs, services
from sessions_app.models import Transcript
from tests.engine.importers.tiny_images import PNG, PNG_B64, SVG_B64

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FAKE_PNG = base64.b64encode(b"<html><script>alert(3)</script></html>").decode()
QUOTED = 'data:image/png" onerror="alert(4);base64,' + PNG_B64


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _chat(owner: Any) -> Transcript:
    content = [
        {"type": "text", "text": "five pictures"},
        _image(f"data:image/png;base64,{PNG_B64}"),
        _image(f"data:image/svg+xml;base64,{SVG_B64}"),
        _image(f"data:image/png;base64,{FAKE_PNG}"),
        _image(f"data:text/html;base64,{FAKE_PNG}"),
        _image(QUOTED),
    ]
    data = json.dumps([{"role": "user", "content": content}]).encode()
    outcome = services.upload_import(owner=owner, name="pictures.json", data=data)
    assert outcome.upload is not None, outcome
    return Transcript.objects.get(upload=outcome.upload)


def _get(client: Client, t: Transcript, query: str = "") -> Any:
    response = client.get(reverse("transcript-detail", args=[t.pk]) + query)
    assert response.status_code == 200
    return response


def test_only_a_real_raster_image_becomes_a_thumbnail(alice: Any, alice_client: Client) -> None:
    response = _get(alice_client, _chat(alice))
    assert "img-src 'self' data:" in response["Content-Security-Policy"]
    html = response.content.decode()
    body = html[html.index('class="message-list"') :]
    images = re.findall(r"<img [^>]*>", body)
    assert len(images) == 1
    assert f'src="data:image/png;base64,{PNG_B64}"' in images[0]
    assert 'alt="image/png image from the transcript, 73' in images[0]
    assert 'href="#img-m0-b1"' in body and 'id="img-m0-b1"' in body  # opens full size
    assert "data:image/svg" not in body and "data:text/html" not in body
    assert "not shown: image/svg+xml is not shown inline" in body
    assert "not shown: the bytes are not image/png" in body
    assert "not shown: text/html is not shown inline" in body
    assert 'onerror="' not in body and "onerror=&quot;alert(4)" in body  # text, escaped


def test_json_twin_describes_images_without_their_bytes(alice: Any, alice_client: Client) -> None:
    twin = _get(alice_client, _chat(alice), "?format=json").json()
    media = [b for b in twin["messages"][0]["blocks"] if b["kind"] == "media"]
    assert [b["thumbnail"]["shown"] for b in media] == [True, False, False, False, False]
    assert all("data" not in b for b in media)
    assert media[0]["data_bytes"] == len(PNG) and media[0]["media_type"] == "image/png"
    assert media[1]["thumbnail"]["refused"].startswith("image/svg+xml is not shown")
    assert media[2]["thumbnail"]["refused"] == "the bytes are not image/png"


def test_corpus_screenshot_in_a_tool_result_is_a_thumbnail(
    alice: Any, alice_client: Client
) -> None:
    path = CORPUS / "claude-code" / "agentcmd-full-session-two.jsonl"
    outcome = services.upload_import(owner=alice, name=path.name, data=path.read_bytes())
    assert outcome.upload is not None
    t = Transcript.objects.filter(upload=outcome.upload, parent=None).order_by("pk").first()
    assert t is not None
    html = _get(alice_client, t, "?per_page=200").content.decode()
    # shown with its call and in the tool result's own message: two thumbnails, one image
    found = re.findall(r'<img src="data:image/png;base64,(iVBORw0KGgo[^"]+)"', html)
    assert len(found) == 2 and found[0] == found[1]
    assert base64.b64decode(found[0]).startswith(b"\x89PNG")
    assert re.search(r'id="img-call-m\d+-b\d+-p\d+"', html) and re.search(
        r'id="img-m\d+-b\d+-p\d+"', html
    )


@pytest.mark.parametrize(
    ("media_type", "data", "why"),
    [
        ("image/png", PNG_B64, ""),
        ("IMAGE/PNG ", PNG_B64, ""),
        ("image/png", PNG_B64[:40] + "\n" + PNG_B64[40:], ""),  # wrapped base64
        ("image/svg+xml", SVG_B64, "image/svg+xml is not shown inline (only PNG, JPEG, GIF, WebP)"),
        ("image/jpeg", PNG_B64, "the bytes are not image/jpeg"),
        ("image/png", PNG_B64[:-4] + '"><s', "not valid base64"),
        ("image/png", "", "no bytes in the transcript"),
    ],
    ids=["png", "case-space", "wrapped", "svg", "mislabelled", "quote-break", "empty"],
)
def test_check(media_type: str, data: str, why: str) -> None:
    plain, reason = media_thumbs.check(media_type, data, 73)
    assert reason == why
    assert (plain == PNG_B64) is (why == "")


def test_oversized_images_are_not_inlined() -> None:
    _, why = media_thumbs.check("image/png", PNG_B64, media_thumbs.MAX_INLINE_BYTES + 1)
    assert why == "larger than 5 MB"
