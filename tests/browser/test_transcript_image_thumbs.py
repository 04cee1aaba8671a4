"""A transcript's images in a real browser: thumbnails drawn under the page's CSP, one
click opens the image full size over the page, "close" returns; an SVG never renders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessions_app import services
from sessions_app.models import Transcript
from tests.engine.importers.tiny_images import SVG_B64, tiny_png

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
CODEX = "agentcmd-rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl"


def _serious_axe_violations(page: Any) -> list[str]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))  # devtools evaluate: not subject to CSP
    result = page.evaluate(
        """() => axe.run(document, {runOnly: {type: 'tag',
             values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']})"""
    )
    return [v["id"] for v in result["violations"] if v["impact"] in ("serious", "critical")]


def _import(owner: Any, name: str, data: bytes) -> Transcript:
    outcome = services.upload_import(owner=owner, name=name, data=data)
    assert outcome.upload is not None, outcome
    found = Transcript.objects.filter(upload=outcome.upload, parent=None).order_by("pk").first()
    assert found is not None
    return found


def test_thumbnails_open_full_size_and_svg_stays_text(
    page: Any, live_server: Any, login: Any, screenshot: Any, django_user_model: Any
) -> None:
    import base64

    alice = django_user_model.objects.create_user(username="alice", password="alice-pass-123")
    big = base64.b64encode(tiny_png(600, 300, (30, 120, 200))).decode()
    parts = [
        {"type": "text", "text": "a wide picture and an svg"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{big}"}},
        {"type": "image_url", "image_url": {"url": f"data:image/svg+xml;base64,{SVG_B64}"}},
    ]
    chat = _import(
        alice, "pictures.json", json.dumps([{"role": "user", "content": parts}]).encode()
    )
    login()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    page.goto(f"{live_server.url}/transcripts/{chat.pk}/")
    thumb = page.locator(".media-thumb img").first
    thumb.wait_for()
    assert thumb.evaluate("el => el.complete && el.naturalWidth") == 600  # drawn: CSP allows it
    box = thumb.bounding_box()
    assert box is not None and box["width"] <= 12 * 16 + 2  # a thumbnail, not 600 px
    assert page.locator("main img[src^='data:image/svg'], main svg image").count() == 0
    assert "not shown: image/svg+xml" in page.locator("main").inner_text()
    screenshot("thumbnails")
    assert _serious_axe_violations(page) == []

    thumb.click()
    page.wait_for_function("location.hash.startsWith('#img-')")
    figure = page.locator(".media-thumb").first
    assert figure.evaluate("el => getComputedStyle(el).position") == "fixed"
    assert thumb.evaluate("el => el.clientWidth") == 600  # full size (border aside)
    screenshot("full-size")
    assert _serious_axe_violations(page) == []  # the caption and "close" readable over the image
    page.locator(".media-thumb .media-close").first.click()
    page.wait_for_function("location.hash === '#m0'")
    assert figure.evaluate("el => getComputedStyle(el).position") != "fixed"

    session = _import(alice, CODEX, (CORPUS / "codex-rollout" / CODEX).read_bytes())
    page.goto(f"{live_server.url}/transcripts/{session.pk}/?per_page=200")
    real = page.locator(".media-thumb img").first
    real.scroll_into_view_if_needed()
    assert real.evaluate("el => el.complete && el.naturalWidth") > 100  # the real screenshot
    real.locator("xpath=ancestor::li[1]").screenshot(
        path=str(screenshot("corpus-screenshot").with_name("corpus-screenshot-message.png"))
    )
    assert dialogs == [] and page.errors == []
