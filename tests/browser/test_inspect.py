"""Inspecting runs in a real browser: the token curve with its event markers, scrubbing
steps (keyboard and slider) swaps the zone bar and the message list, compare page."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import agent_chat, import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def _runs(username: str, strategies: tuple[str, ...]) -> list[Any]:
    from django.contrib.auth import get_user_model

    from replay_app.runs import executor, services

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, agent_chat(turns=40, size=6000, seed=3))
    runs = []
    for strategy in strategies:
        run = services.run_create(
            owner=user,
            transcript=transcript,
            spec=services.RunSpec(strategy=strategy),
            enqueue=False,
        )
        runs.append(executor.run_execute(run=run))
        assert runs[-1].status == "done", runs[-1].error
    return runs


def _state(page: Any) -> tuple[str, str, list[str]]:
    ctx = page.locator("#step-context")
    return (
        ctx.get_attribute("data-step") or "",
        page.locator("#step-context .zone-bar").inner_html(),
        page.locator("#step-context .ctx-message").evaluate_all(
            "els => els.map(e => e.dataset.index + ':' + e.dataset.fate)"
        ),
    )


def _wait_step(page: Any, step: int) -> None:
    page.wait_for_selector(f'#step-context[data-step="{step}"]')


def test_run_curve_markers_and_scrubbing(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    # ASGI server: the run page also opens its progress websocket
    login(base_url=asgi_live_server.url)
    (run,) = _runs("alice", ("cowagent",))
    events = run.events.count()
    assert events > 0
    page.goto(f"{asgi_live_server.url}/runs/{run.pk}/")
    page.wait_for_selector("#token-curve-plot .main-svg")
    # the events trace: one scatter point per event
    points = page.locator("#token-curve-plot .scatterlayer .trace:last-child .points path")
    assert points.count() == events
    titles = page.locator("#token-curve-plot .modebar-btn").evaluate_all(
        "els => els.map(e => e.getAttribute('data-title') || '')"
    )
    assert any("png" in t.lower() for t in titles), titles  # plotly's own download button
    screenshot("curve")

    last = run.steps_total - 1
    _wait_step(page, last)
    start = _state(page)

    # keyboard: Home jumps to step 0, ArrowRight moves one step
    page.locator("h1").click()
    page.keyboard.press("Home")
    _wait_step(page, 0)
    home = _state(page)
    assert home[1] != start[1], "the zone bar changes"
    assert home[2] != start[2], "the message list changes"
    page.keyboard.press("ArrowRight")
    _wait_step(page, 1)
    assert page.locator("#step-slider").input_value() == "1"

    # the slider: jump to a step after the first drop
    drop_step = min(e.step for e in run.events.all() if "dropped" in e.fate_counts)
    page.locator("#step-slider").evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }",
        str(drop_step),
    )
    _wait_step(page, drop_step)
    # the counts now include dropped messages; the first page of the list shows them
    assert page.locator("#step-context [data-fate-count=dropped]").count() == 1
    on_page = int(page.locator("#step-context").get_attribute("data-page") or "1")
    while on_page > 1:
        page.locator("#step-context .pagination a[rel=prev]").click()
        on_page -= 1
        page.wait_for_selector(f'#step-context[data-page="{on_page}"]')
    page.wait_for_selector("#step-context .ctx-message[data-fate=dropped]", state="attached")
    assert page.locator("#step-context .zone-bar span").count() >= 2
    screenshot("scrubbed")

    # the prev link swaps in place too (and keeps the slider in step)
    page.locator("#step-context a.step-prev").click()
    _wait_step(page, drop_step - 1)
    assert page.locator("#step-slider").input_value() == str(drop_step - 1)
    # the progress websocket's out-of-band fragments all find their targets (its latest
    # events travel as a whole <table>: a bare <tbody> used to leave id-less cells, #null)
    assert page.errors == []
    assert page.locator(f"#run-{run.pk}-latest tbody tr").count() >= 1


def test_compare_shows_every_run_and_the_fate_matrix(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    runs = _runs("alice", ("cowagent", "picoclaw", "qwenpaw"))
    ids = ",".join(str(r.pk) for r in runs)
    page.goto(f"{live_server.url}/compare/?runs={ids}")
    page.wait_for_selector("#compare-plot .main-svg")
    legend = page.locator("#compare-plot .legend").text_content() or ""
    page.wait_for_selector(".fate-matrix .fate-cell")  # the matrix section loads itself
    for run in runs:
        assert f"{run.pk} {run.label}" in legend
        assert page.locator(f'.fate-matrix tr[data-run="{run.pk}"] .fate-cell').count() > 0
    assert page.locator(".fate-matrix .fate-cell[data-fate=dropped]").count() > 0
    assert page.locator(".metrics-table td.best").count() > 0
    screenshot("compare")
    page.locator(".fate-matrix .fate-cell").first.click()  # those messages in the step view
    page.wait_for_selector("table.step-table")
    assert page.locator("table.step-table tbody tr").count() >= 1
    assert page.locator("#step-zones .zone-bar").count() == len(runs)
    assert page.errors == []
