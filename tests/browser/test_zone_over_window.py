"""The zone bar of a request over its window, in a browser (issue 31, item 10): the real
ccviewer Claude Code session replayed by claude_code in an 8,000-token window sends
~18k-token requests. The run page's step context and the compare step view draw the same
bar: the window's part, then an "Over the window" part past its edge, and the same legend
and line, whose numbers add up (request + output reserve = window + over)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from inspect_helpers import make_run  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1]
    / "data" / "corpus" / "claude-code" / "ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)  # fmt: skip
WINDOW = 8000


def _runs(username: str) -> tuple[Any, Any, int]:
    from django.contrib.auth import get_user_model

    from replay_app.models import RunStep
    from sessions_app import services as session_services

    user = get_user_model().objects.get(username=username)
    outcome = session_services.upload_import(
        owner=user, name=SESSION.name, data=SESSION.read_bytes()
    )
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.order_by("pk").first()
    cc = make_run(user, transcript, "claude_code", context_window=WINDOW)
    codex = make_run(user, transcript, "codex", model_context_window=WINDOW)
    over = [
        s.index
        for s in RunStep.objects.filter(run=cc).order_by("index")
        if s.tokens_strategy > WINDOW
    ]
    assert over
    return cc, codex, over[-1]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _read(block: Any) -> dict[str, Any]:
    """What one zone block shows: its legend and line as text, the line's figures, and where
    the over-the-window part sits in the bar (share of the bar's width before it)."""
    line = block.locator(".zone-line")
    figures = {
        key: _number(line.locator(f'[data-line="{key}"]').inner_text())
        for key in ("request", "output_reserve", "window", "over_window")
    }
    bar = block.locator(".zone-bar").bounding_box()
    over = block.locator('.zone-bar [data-zone="over_window"]').bounding_box()
    assert bar and over and over["width"] > 0
    return {
        "legend": block.locator(".zone-legend").inner_text(),
        "line": line.inner_text(),
        "figures": figures,
        "edge": (over["x"] - bar["x"]) / bar["width"],
        "over_share": over["width"] / bar["width"],
    }


def test_over_the_window_part_and_the_same_numbers_on_both_pages(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)  # ASGI: the run page opens its progress websocket
    cc, codex, step = _runs("alice")

    page.goto(f"{asgi_live_server.url}/runs/{cc.pk}/?step={step}#scrubber")
    page.wait_for_selector(f'#step-context[data-step="{step}"] .zone-block')
    on_run = _read(page.locator("#step-context .zone-block"))
    figures = on_run["figures"]
    assert figures["window"] == WINDOW and figures["over_window"] > 0
    assert figures["request"] + figures["output_reserve"] == WINDOW + figures["over_window"]
    # the over part starts at the window's edge and takes the rest of the bar
    length = WINDOW + figures["over_window"]
    assert on_run["edge"] == pytest.approx(WINDOW / length, abs=0.01)
    assert on_run["over_share"] == pytest.approx(figures["over_window"] / length, abs=0.01)
    assert "Over the window" in on_run["legend"] and "% of the window" in on_run["legend"]
    assert "Widths and percentages are of the window" in on_run["line"]
    alone = figures["request"] - WINDOW  # the request itself is over, reserve aside
    assert f"the request alone: {alone:,} over" in on_run["line"]
    assert not re.search(r"Tool definitions \d", on_run["legend"])  # says why, never "0"
    screenshot("run-page")

    page.goto(f"{asgi_live_server.url}/compare/?runs={cc.pk},{codex.pk}&step={step}")
    block = page.locator(f'.step-run[data-run="{cc.pk}"] .zone-block')
    block.wait_for()
    on_compare = _read(block)
    for key in ("legend", "line", "figures"):  # the same words and numbers
        assert on_compare[key] == on_run[key]
    for key in ("edge", "over_share"):  # the same geometry, to the pixel
        assert on_compare[key] == pytest.approx(on_run[key], abs=0.005)
    fits = page.locator(f'.step-run[data-run="{codex.pk}"] .zone-block')
    assert fits.locator('[data-zone="over_window"]').count() == 0
    assert fits.locator('.zone-bar [data-zone="free"]').count() == 1
    screenshot("step-view")
