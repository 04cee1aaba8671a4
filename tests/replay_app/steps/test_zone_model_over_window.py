"""One zone model for the run page's step context and the compare step view (issue 31,
item 10). The shape that broke: a Claude Code session (tests/data/corpus/claude-code/
ccviewer-5c0375b4…, reported usage ~18k per request) replayed by claude_code in an
8,000-token window sends 18k-token requests; the compare step view drew them as a full bar
("Free 0", widths silently switched to % of the request), said "Tool definitions 0" where
the run page said why, and its zones added up to the window while its line said otherwise.
Now both pages read ``zone_bar.zone_model``: widths and percentages of the window, an
explicit over-the-window part, and a line whose numbers add up to the bar."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.models import RunStep
from sessions_app import services as session_services

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

SESSION = (
    Path(__file__).resolve().parents[2]
    / "data" / "corpus" / "claude-code" / "ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)  # fmt: skip
WINDOW = 8000
BLOCK = re.compile(r'<div class="zone-block".*?</ul><p class="small zone-line".*?</p>', re.S)


@pytest.fixture
def over(user: Any) -> tuple[Any, Any, int]:
    """(claude_code run whose requests exceed its window, a codex run that fits, a step
    where the first is over the window)."""
    outcome = session_services.upload_import(
        owner=user, name=SESSION.name, data=SESSION.read_bytes()
    )
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.order_by("pk").first()  # the main session
    cc = make_run(user, transcript, "claude_code", context_window=WINDOW)
    codex = make_run(user, transcript, "codex", model_context_window=WINDOW)
    steps = RunStep.objects.filter(run=cc).order_by("index")
    over = [s.index for s in steps if s.tokens_strategy > s.zones["window"]]
    assert over, [(s.tokens_strategy, s.zones["window"]) for s in steps]
    assert all(s.zones["window"] == WINDOW for s in steps)
    return cc, codex, over[-1]


def _adds_up(bar: dict[str, Any]) -> None:
    window = bar["window"]
    assert bar["scale"] == "percent of the window"
    assert bar["request"] + bar["output_reserve"] + bar["free"] == window + bar["over_window"]
    for zone in bar["zones"]:
        assert zone["percent_of_window"] == round(100 * zone["tokens"] / window, 3)
    assert sum(piece["width"] for piece in bar["bar"]) == pytest.approx(100, abs=0.01)
    inside = sum(p["tokens"] for p in bar["bar"] if p["key"] != "over_window")
    assert inside == window  # the window's part of the bar is the window, never more


def test_a_request_over_its_window_has_an_over_the_window_part(
    client: Any, user: Any, over: tuple[Any, Any, int]
) -> None:
    cc, _, step = over
    client.force_login(user)
    data = client.get(f"/runs/{cc.pk}/steps/{step}/?format=json").json()
    bar = data["zone_bar"]
    _adds_up(bar)
    assert bar["window"] == WINDOW and bar["request"] > 2 * WINDOW
    assert bar["over_window"] == bar["request"] + bar["output_reserve"] - WINDOW
    assert bar["free"] == 0 and bar["bar"][-1]["key"] == "over_window"
    assert bar["counted"] == data["tokens"]["strategy"] == bar["request"]
    # the biggest zone is well over 100% of the window, never squeezed into the bar
    assert max(z["percent_of_window"] for z in bar["zones"]) > 100
    html = client.get(f"/runs/{cc.pk}/steps/{step}/").content.decode()
    assert 'data-zone="over_window"' in html and "Over the window" in html
    line = re.search(r'<p class="small zone-line".*?</p>', html, re.S).group(0)
    for key in ("request", "output_reserve", "window", "over_window"):
        figure = bar["over_window"] if key == "over_window" else bar[key]
        assert f'data-line="{key}">{figure:,}<' in line
    assert "Widths and percentages are of the window" in line


def test_run_page_and_compare_step_view_draw_the_same_zones(
    client: Any, user: Any, over: tuple[Any, Any, int]
) -> None:
    cc, codex, step = over
    client.force_login(user)
    across = client.get(f"/compare/?runs={cc.pk},{codex.pk}&step={step}&format=json").json()
    for run in (cc, codex):
        mine = client.get(f"/runs/{run.pk}/steps/{step}/?format=json").json()["zone_bar"]
        (theirs,) = [r["zone_bar"] for r in across["runs"] if r["id"] == run.pk]
        assert theirs == mine
        _adds_up(mine)
    # the HTML: the same block, word for word (legend notes, line, bar widths)
    compare_html = client.get(f"/compare/?runs={cc.pk},{codex.pk}&step={step}").content.decode()
    blocks = BLOCK.findall(compare_html)
    assert len(blocks) == 2
    for run, block in zip((cc, codex), blocks, strict=True):
        page = client.get(f"/runs/{run.pk}/steps/{step}/").content.decode()
        assert BLOCK.findall(page) == [block]
    # a Claude Code log carries no tool definitions: said, never "0"
    tools = re.search(r'data-zone="tools"[^>]*>(.*?)</li>', blocks[0], re.S).group(1)
    assert "not in transcript" in tools and "<strong" not in tools
    # the fitting run's bar: no over part, free fills the rest of the window
    fits = [r["zone_bar"] for r in across["runs"] if r["id"] == codex.pk][0]
    assert fits["over_window"] == 0 and fits["free"] > 0
    assert 'data-zone="over_window"' in blocks[0] and 'data-zone="over_window"' not in blocks[1]
