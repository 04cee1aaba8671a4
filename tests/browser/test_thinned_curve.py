"""A long run's token curve in a real browser: the chart draws a thinned line (what a chart
can show) yet every event marker, at its exact count, with its hover text; every drawn
point is the JSON twin's value at that step (the twin keeps every step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def _long_run(username: str) -> Any:
    from django.contrib.auth import get_user_model

    from ctxlab.engine.synth import realistic as synth_realistic
    from replay_app.runs import executor, services
    from sessions_app import services as session_services

    user = get_user_model().objects.get(username=username)
    # ~1,500 steps from real sessions of the corpus: more than the chart draws
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=3_000, seed=5)
    outcome = session_services.conversation_import(
        owner=user, name="long.json", conversations=(conversation,), source_format="synthetic"
    )
    transcript = outcome.upload.transcripts.get()
    run = services.run_create(
        owner=user, transcript=transcript, spec=services.RunSpec(strategy="qwenpaw"), enqueue=False
    )
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    return run


def test_thinned_curve_keeps_every_marker(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)
    run = _long_run("alice")
    events = list(run.events.order_by("seq").values_list("step", "tokens_before"))
    assert len(events) > 20 and run.steps_total > 1_000
    url = f"{asgi_live_server.url}/runs/{run.pk}/"
    page.goto(url)
    page.wait_for_selector("#token-curve-plot .main-svg")
    markers = page.locator("#token-curve-plot .scatterlayer .trace:last-child .points path")
    assert markers.count() == len(events)  # one drawn marker per event

    drawn = page.evaluate(
        "() => document.getElementById('token-curve-plot').data"
        ".map(t => ({name: t.name, role: t.meta && t.meta.role, x: t.x, y: t.y}))"
    )
    twin = page.request.get(f"{url}?format=json").json()["curve"]
    assert len(twin["steps"]) == run.steps_total  # the JSON twin: every step
    strategy, reference = drawn[0], drawn[1]
    for line, values in ((strategy, twin["strategy"]), (reference, twin["reference"])):
        assert 2 < len(line["x"]) < run.steps_total  # thinned ...
        assert line["x"][0] == 0 and line["x"][-1] == run.steps_total - 1
        assert all(values[x] == y for x, y in zip(line["x"], line["y"], strict=True))  # exact
    on_line = set(strategy["x"])
    assert all(step in on_line for step, _ in events)  # every drop ends on the line
    (marks,) = [t for t in drawn if t["role"] == "events"]
    assert list(zip(marks["x"], marks["y"], strict=True)) == events

    # hovering a marker shows the event's label and counts (plotly fills the template)
    page.locator("#token-curve").scroll_into_view_if_needed()
    page.evaluate(
        "k => { const gd = document.getElementById('token-curve-plot');"
        " const curve = gd.data.findIndex(t => t.meta && t.meta.role === 'events');"
        " Plotly.Fx.hover(gd, [{curveNumber: curve, pointNumber: k}]); }",
        len(events) // 2,
    )
    hover = page.locator("#token-curve-plot .hoverlayer .hovertext")
    hover.wait_for()
    text = hover.text_content() or ""  # SVG: its text, lines joined
    step, before = events[len(events) // 2]
    assert f"step {step}" in text and f"{before:,} →" in text and "touched" in text, text
    shots = screenshot("page").parent  # artifacts/: the chart with its hover, close up
    page.locator("#token-curve").screenshot(path=str(shots / "thinned-curve-hover.png"))
    assert page.errors == []
