"""The run page of a real Claude Code session (no system prompt, no tool definitions in the
log): the zone bar shows the strategy's own overhead and never a "0" system zone, and one
compaction carries the same before → after figures in the events table, the summaries list
and the curve's hover."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from inspect_helpers import make_run  # noqa: E402
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "corpus"
    / "claude-code"
    / "agentcmd-full-session-four.jsonl"
)


def _claude_code_run(username: str) -> Any:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    assert not transcript.tools
    assert transcript.messages.filter(index=0, role="system").count() == 0
    # a 60K window makes Claude Code (threshold = window - 20K - 13K) compact this session
    return make_run(user, transcript, "claude_code", context_window=60_000)


def _pairs(page: Any, selector: str) -> list[tuple[int, int]]:
    cells = page.locator(selector).evaluate_all(
        "els => els.map(e => [e.dataset.before, e.dataset.after])"
    )
    return [(int(b), int(a)) for b, a in cells]


def _shown(text: str) -> tuple[int, int]:
    before, after = re.findall(r"[\d,]+", text)[-2:]
    return int(before.replace(",", "")), int(after.replace(",", ""))


def test_zone_bar_overhead_and_one_before_after_per_compaction(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)  # ASGI: the run page opens its progress websocket
    run = _claude_code_run("alice")
    compactions = list(run.events.filter(kind="compact").order_by("seq"))
    assert compactions and run.summaries.count() == len(compactions)
    after_first = compactions[0].step

    page.goto(f"{asgi_live_server.url}/runs/{run.pk}/?step={after_first}#scrubber")
    page.wait_for_selector("#token-curve-plot .main-svg")

    # zone bar: the strategy's overhead is its own zone; system/tools say why they are empty
    bar = page.locator("#step-context .zone-block")
    unseen = bar.locator(".zone-bar [data-zone=unseen]")
    assert unseen.count() == 1 and int(unseen.get_attribute("data-tokens") or 0) > 10_000
    assert bar.locator(".zone-bar [data-zone=system], .zone-bar [data-zone=tools]").count() == 0
    for key in ("system", "tools"):
        legend = bar.locator(f".zone-legend [data-zone={key}]").inner_text()
        assert "not in transcript" in legend and not re.search(r"\b0\b", legend), legend
    overhead = bar.locator(".zone-legend [data-zone=unseen]").inner_text()
    assert re.search(r"Strategy overhead \d{2},\d{3}", overhead), overhead
    screenshot("zones")
    shots = screenshot("page").parent  # artifacts/: close-ups of the parts checked here
    bar.screenshot(path=str(shots / "run-numbers-zone-bar.png"))
    page.locator("#token-curve").screenshot(path=str(shots / "run-numbers-curve.png"))

    # one compaction, one pair of figures: events table, summaries list, curve hover
    events = _pairs(page, "#run-events tr .num[data-before]")
    rows = page.locator("#run-events tr").evaluate_all(
        "els => els.filter(e => e.querySelector('.badge[data-kind]')?.dataset.kind === 'compact')"
        ".map(e => e.querySelector('[data-before]').textContent)"
    )
    expected = [(e.tokens_before, e.tokens_after) for e in compactions]
    assert [_shown(t) for t in rows] == expected
    assert all(pair in events for pair in expected)
    summaries = _pairs(page, "#run-summaries .summary-event + .num[data-before]")
    assert summaries == expected
    for text in page.locator("#run-summaries .summary-event + .num").all_inner_texts():
        assert "," in text  # thousands separators, as in the events table
    # The hover reads each marker's label and counts (customdata, one hovertemplate).
    hovers = page.evaluate(
        "() => document.getElementById('token-curve-plot').data"
        ".filter(t => t.meta && t.meta.role === 'events')"
        ".flatMap(t => t.y.map((y, i) => [t.customdata[i][0], y, t.customdata[i][1]]))"
    )
    from replay_app.display.vocabulary import event_label

    # hovers name a kind by its label, and a compaction by its one number (#K)
    label = html.escape(event_label("compact"))
    named = [(name, b, a) for name, b, a in hovers if name.startswith(label)]
    assert [(b, a) for _, b, a in named] == expected
    assert [name for name, _, _ in named] == [
        f"{label} · compaction #{k}" for k in range(1, len(expected) + 1)
    ]
    template = page.evaluate(
        "() => document.getElementById('token-curve-plot').data"
        ".find(t => t.meta && t.meta.role === 'events').hovertemplate"
    )
    assert "%{customdata[0]}" in template and "%{y:,} → %{customdata[1]:,} tokens" in template
    # every compaction fired at or above the threshold line it is drawn against
    threshold = run.metrics["threshold"]
    assert all(before >= threshold for before, _ in expected)
    page.locator("#run-summaries-panel").screenshot(path=str(shots / "run-numbers-summaries.png"))
    page.locator("#run-events-panel").screenshot(path=str(shots / "run-numbers-events.png"))
    assert page.errors == []


def test_times_in_local_time_and_the_group_says_why_a_run_stayed_quiet(
    browser: Any, live_server: Any, django_user_model: Any
) -> None:
    from replay_app.runs import executor, services

    user = django_user_model.objects.create_user(username="tz", password="tz-pass-123")
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    group = services.group_create(
        owner=user,
        transcript=transcript,
        specs=[services.RunSpec(strategy="claude_code"), services.RunSpec(strategy="cowagent")],
        enqueue=False,
    )
    for run in group.runs.all():
        executor.run_execute(run=run)
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, timezone_id="Asia/Kolkata"
    )
    from conftest import set_page_timeouts

    page = set_page_timeouts(context.new_page())
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "tz")
        page.fill("input[name=password]", "tz-pass-123")
        page.click("button[type=submit]")
        page.wait_for_selector("nav.site-nav")

        page.goto(f"{live_server.url}/transcripts/")
        stamp = page.locator("time[datetime][data-local]").first
        stamp.wait_for()
        utc = transcript.upload.created_at
        assert (stamp.get_attribute("title") or "").endswith(" UTC")
        assert stamp.get_attribute("title") == utc.strftime("%Y-%m-%d %H:%M UTC")
        local = stamp.inner_text()
        assert local.endswith("(UTC+05:30)") and local != stamp.get_attribute("title")
        shots = Path(__file__).resolve().parents[2] / "artifacts"
        shots.mkdir(exist_ok=True)
        page.locator("table").first.screenshot(path=str(shots / "run-numbers-local-time.png"))

        page.goto(f"{live_server.url}/runs/groups/{group.pk}/")
        row = page.locator('tr[data-metric="quiet"]')
        assert "Never compacted: its count under claude_code peaked at" in row.inner_text()
        page.locator("#results").screenshot(path=str(shots / "run-numbers-group-quiet.png"))
        assert errors == []
    finally:
        context.close()
