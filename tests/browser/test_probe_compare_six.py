"""The compare-probes page with six runs of the real Codex rollout, in chromium at 1280 and
390 px: the chart names its runs in a legend whose entries do not overlap one another and
stay inside the chart (no text beside the points: near runs' labels overlapped), each run
its own marker shape; nothing scrolls sideways on a phone (wide tables scroll inside their
own box, their cells unbroken); no console error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for_polls
from waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge_app"))  # shared test data
from judge_testdata import import_session  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
ROLLOUT = (
    CORPUS / "codex-rollout"
    / "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"
)  # fmt: skip
STRATEGIES = ("cowagent", "claude_code", "codex", "langchain_trim", "qwenpaw", "copaw")

# Bounding boxes of every text the chart draws beside its points and in its legend (SVG
# text), of the chart, and the marker shapes drawn, in page pixels.
LABEL_BOXES = """() => {
  const chart = document.querySelector('#probe-tradeoff');
  const box = t => { const r = t.getBoundingClientRect();
                     return {text: t.textContent, l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const points = [...chart.querySelectorAll('.scatterlayer .textpoint text')]
    .filter(t => t.textContent.trim()).map(box);
  const legend = [...chart.querySelectorAll('.legend .traces .legendtext')].map(box);
  const shapes = [...chart.querySelectorAll('.scatterlayer path.point')].map(p => p.getAttribute('d'));
  const plot = chart.getBoundingClientRect();
  return {points, legend, shapes, plot: {l: plot.left, r: plot.right}};
}"""


# The outermost elements that reach past the screen's right edge (what scrolls sideways).
WIDER_THAN_SCREEN = """() => {
  const clipped = e => { for (let a = e.parentElement; a; a = a.parentElement) {
      if (a === document.body) return false;
      if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; };
  return [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !clipped(e))
    .slice(0, 6).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' +
                          Math.round(e.getBoundingClientRect().right));
}"""


def _overlaps(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if (
                a["l"] < b["r"] - 1
                and b["l"] < a["r"] - 1
                and a["t"] < b["b"] - 1
                and b["t"] < a["b"] - 1
            ):
                out.append((a["text"], b["text"]))
    return out


def test_six_runs_chart_labels_apart_and_no_sideways_scroll(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    from replay_app.runs.executor import run_execute
    from replay_app.runs.services import RunSpec, run_create

    login()
    user = get_user_model().objects.get(username="alice")
    transcript = import_session(user, ROLLOUT.read_bytes(), name=ROLLOUT.name)
    runs = []
    for strategy in STRATEGIES:
        run = run_create(owner=user, transcript=transcript,
                         spec=RunSpec(strategy=strategy, window=20_000), enqueue=False)  # fmt: skip
        runs.append(run_execute(run=run))
    assert all(r.status == "done" for r in runs), [r.error for r in runs]
    ids = ",".join(str(r.pk) for r in runs)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/compare/probes/?runs={ids}")
        page.locator("#probe-shared [data-testid=shared-table]").wait_for()
        page.locator("#probe-tradeoff .scatterlayer").wait_for()
        # before the checks, so what failed is there to see: the page, the chart's section
        full = screenshot(f"w{width}")
        page.screenshot(path=str(full.with_suffix(".top.png")))  # the shared set's tables
        page.locator("#probe-compare").screenshot(path=str(full.with_suffix(".chart.png")))
        found = page.evaluate(LABEL_BOXES)
        assert found["points"] == []  # no text beside the points
        assert len(found["legend"]) == len(STRATEGIES), found
        assert _overlaps(found["legend"]) == [], width
        assert all(found["plot"]["l"] - 1 <= b["l"] and b["r"] <= found["plot"]["r"] + 1
                   for b in found["legend"]), (width, found)  # fmt: skip
        assert len(found["shapes"]) == len(STRATEGIES)
        # no two runs drawn alike: plotly draws each marker's shape round the origin (then
        # moves it), so equal paths are equal shapes
        assert len(set(found["shapes"])) == len(STRATEGIES)
        wide = page.evaluate(WIDER_THAN_SCREEN)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, wide
    assert page.errors == []  # type: ignore[attr-defined]


def test_shared_set_pending_then_filled_by_the_worker_while_the_page_polls(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    """The shared set's scoring runs in the server's real Celery worker: a task at work
    shows a pending section; when it is taken as lost (queued 20 minutes ago) the next poll
    queues it again, and the section fills in by itself."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from judge_app import shared_jobs
    from judge_app.models import SharedScoring
    from replay_app.runs.executor import run_execute
    from replay_app.runs.services import RunSpec, run_create

    login(base_url=asgi_worker_server.url)
    user = get_user_model().objects.get(username="alice")
    transcript = import_session(user, ROLLOUT.read_bytes(), name=ROLLOUT.name)
    runs = [
        run_execute(run=run_create(owner=user, transcript=transcript,
                                   spec=RunSpec(strategy=s, window=20_000), enqueue=False))
        for s in STRATEGIES[:3]
    ]  # fmt: skip
    key = shared_jobs.runs_key([r.pk for r in runs])
    SharedScoring.objects.create(runs=key, status="running", done_runs=1, total_runs=3,
                                 requested_at=timezone.now())  # fmt: skip
    ids = ",".join(str(r.pk) for r in runs)
    page.goto(f"{asgi_worker_server.url}/compare/probes/?runs={ids}")
    pending = page.locator("#probe-shared[data-pending=true] [data-testid=shared-pending]")
    assert "1 of 3 runs scored" in pending.inner_text()
    assert page.locator("#probe-shared [data-testid=shared-questions]").count() == 0  # no "0"
    wait_for_polls(page, "fragment=shared")  # two polls: still pending, nothing queued meanwhile
    assert page.locator("#probe-shared[data-pending=true]").count() == 1
    screenshot("pending")
    SharedScoring.objects.filter(runs=key).update(
        requested_at=timezone.now() - timedelta(minutes=20)
    )
    page.locator("#probe-shared [data-testid=shared-table]").wait_for()
    assert page.locator("#probe-shared[data-pending]").count() == 0
    answered = page.locator("#probe-shared [data-testid=shared-answered]").all_inner_texts()
    assert len(answered) == 3
    # the task marks its row done just after storing the scores the page shows
    row = wait_until(lambda: SharedScoring.objects.filter(runs=key, status="done").first(),
                     "the scoring task's row marked done")  # fmt: skip
    assert row.done_runs == 3
    screenshot("filled")
    assert page.errors == []  # type: ignore[attr-defined]
