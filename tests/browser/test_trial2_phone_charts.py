"""Charts at phone width (390 px), on the real tau-bench airline conversation (OpenAI chat):
the run curve's legend, one line above the plot on a desktop, wrapped to three lines over
the plot's top and under plotly's mode bar; the sweep chart's metric dropdown sat under the
mode bar. Now the legend goes below the plot and the dropdown gets a strip of its own
(static/js/plots.js), and a desktop keeps the server's layout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/openai-chat/taubench-gpt-4o-airline-task2-messages.json"
)


def _sweep_group(username: str) -> Any:
    from django.contrib.auth import get_user_model

    from replay_app.models import RunStatus
    from replay_app.runs import executor, services
    from replay_app.runs.services import RunSpec

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, CHAT.read_bytes(), name=CHAT.name)
    specs = [RunSpec(strategy="claude_code", window=w) for w in (6000, 7000, 8000)]
    group = services.group_create(owner=user, transcript=transcript, specs=specs, enqueue=False)
    for run in group.runs.all():
        assert executor.run_execute(run=run).status == RunStatus.DONE
    return group


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def _drawn(page: Any, chart: str) -> None:
    page.wait_for_selector(f"{chart} .main-svg")
    page.locator(chart).scroll_into_view_if_needed()
    page.hover(f"{chart} .nsewdrag")  # the mode bar shows (it is always on; be sure)


def test_run_curve_and_sweep_chart_fit_a_phone(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    base = asgi_live_server.url  # run pages open a WebSocket
    login(base_url=base)
    group = _sweep_group("alice")
    run = group.runs.order_by("pk").first()
    page.set_viewport_size({"width": 390, "height": 844})

    page.goto(f"{base}/runs/{run.pk}/")
    chart = "#token-curve-plot"
    _drawn(page, chart)
    plot, legend = _box(page, f"{chart} .nsewdrag"), _box(page, f"{chart} g.legend")
    modebar = _box(page, f"{chart} .modebar")
    assert legend["y"] >= plot["y"] + plot["height"]  # below the plot area
    assert not _overlap(legend, modebar)
    screenshot("run-curve-390")

    page.goto(f"{base}/runs/groups/{group.pk}/")
    chart = "#sweep-plot"
    _drawn(page, chart)
    menu, modebar = _box(page, f"{chart} .updatemenu-container"), _box(page, f"{chart} .modebar")
    assert not _overlap(menu, modebar)
    screenshot("sweep-chart-390")

    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{base}/runs/{run.pk}/")
    chart = "#token-curve-plot"
    _drawn(page, chart)
    plot, legend = _box(page, f"{chart} .nsewdrag"), _box(page, f"{chart} g.legend")
    assert legend["y"] + legend["height"] <= plot["y"] + 1  # the server's: above the plot
    assert page.errors == []
