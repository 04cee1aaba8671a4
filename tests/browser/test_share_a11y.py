"""Accessibility, dark mode and phone width on the main pages, in real Chromium.

- axe-core (vendored, tests only: tests/browser/vendor/axe-core) finds no serious or
  critical violation of WCAG 2.1 A/AA on any main page, in the light and the dark theme;
- the dark theme follows the system setting and the header toggle (remembered across
  pages in localStorage), and charts are drawn dark with it;
- at 390 px wide no page is wider than the screen (wide tables scroll in their own box).
Screenshots: artifacts/test_*-<page>-<theme|390>.png.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "share"))
from share_testdata import make_comparison  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
SERIOUS = ("serious", "critical")
PASSWORD = "alice-pass-123"


@pytest.fixture
def site(django_user_model: Any, django_capture_on_commit_callbacks: Any) -> dict[str, str]:
    """The main pages, with a transcript and a finished two-run comparison behind them."""
    user = django_user_model.objects.create_user(username="alice", password=PASSWORD)
    runs = make_comparison(user, django_capture_on_commit_callbacks)
    t = runs[0].transcript
    ids = ",".join(str(r.pk) for r in runs)
    return {
        "home": "/",
        "transcripts": "/transcripts/",
        "transcript": f"/transcripts/{t.pk}/",
        "transcript-search": f"/transcripts/{t.pk}/?q=module",
        "transcript-hit": f"/transcripts/{t.pk}/?q=module&hit=2",
        "upload": f"/transcripts/files/{t.upload_id}/",
        "strategies": "/strategies/",
        "strategy-new": "/strategies/new/?preset=qwenpaw",
        "runs": "/runs/",
        "run-new": f"/runs/new/?transcript={t.pk}",
        "run": f"/runs/{runs[0].pk}/",
        "group": f"/runs/groups/{runs[0].group_id}/",
        "compare": f"/compare/?runs={ids}",
        "compare-step": f"/compare/?runs={ids}&step=5",
    }


def _axe(page: Any) -> list[dict[str, Any]]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))  # devtools evaluate: not subject to CSP
    result = page.evaluate(
        """() => axe.run(document, {runOnly: {type: 'tag',
             values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']})"""
    )
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "count": len(v["nodes"]),
            "nodes": [n["target"] for n in v["nodes"]][:3],
        }
        for v in result["violations"]
        if v["impact"] in SERIOUS
    ]


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    for chart in page.locator("[data-plotly]").all():
        chart.locator(".main-svg").first.wait_for()


def test_axe_is_the_vendored_release() -> None:
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() == AXE_SHA256


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_serious_axe_violations_on_main_pages(
    page: Any, login: Any, live_server: Any, site: dict[str, str], theme: str, screenshot: Any
) -> None:
    page.emulate_media(color_scheme=theme)
    login("alice", PASSWORD)
    found: dict[str, Any] = {}
    for name, path in site.items():
        _open(page, live_server.url + path)
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        violations = _axe(page)
        if violations:
            found[name] = violations
        screenshot(f"{name}-{theme}")
    assert found == {}, json.dumps(found)
    # live_server is WSGI: the run pages' live-progress websocket cannot connect here (the
    # websocket is tested with the ASGI server elsewhere); any other error counts.
    assert [e for e in page.errors if "WebSocket" not in e and "[object Event]" not in e] == []


def test_dark_toggle_is_remembered_and_charts_follow(
    page: Any, login: Any, live_server: Any, site: dict[str, str]
) -> None:
    page.emulate_media(color_scheme="light")
    login("alice", PASSWORD)
    _open(page, live_server.url + site["run"])
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    background = "getComputedStyle(document.body).backgroundColor"
    light_bg = page.evaluate(background)
    paper = "document.querySelector('[data-plotted=true]')._fullLayout.paper_bgcolor"
    assert page.evaluate(paper) in ("#fff", "white", "rgb(255, 255, 255)")
    page.click("#theme-toggle")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.get_attribute("#theme-toggle", "aria-pressed") == "true"
    assert page.evaluate(background) != light_bg
    page.wait_for_function(f"{paper} === '#171e28'")  # the drawn chart turned dark
    _open(page, live_server.url + site["compare"])  # remembered on the next page
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate(paper) == "#171e28"
    page.click("#theme-toggle")
    assert page.evaluate("localStorage.getItem('ctxlab-theme')") == "light"
    # The modebar offers PNG (plotly's toImage) and SVG.
    assert page.locator(".modebar-btn[data-title='Download plot as SVG']").count() >= 1
    assert page.locator(".modebar-btn[data-title='Download plot as a PNG']").count() >= 1


def test_390px_pages_never_scroll_sideways(
    browser: Any, live_server: Any, site: dict[str, str], request: pytest.FixtureRequest
) -> None:
    from conftest import ARTIFACTS, set_page_timeouts

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = set_page_timeouts(context.new_page())
    page.goto(live_server.url + "/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("nav.site-nav")
    wide: dict[str, int] = {}
    ARTIFACTS.mkdir(exist_ok=True)
    for name, path in site.items():
        _open(page, live_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide[name] = width
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{name}-390.png"), full_page=True)
    context.close()
    assert wide == {}, f"pages wider than 390 px: {wide}"
