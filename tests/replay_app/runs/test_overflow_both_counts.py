"""Overflow in both counts, and skipped compactions that do not look like compactions
(issue 31, item 11). The shape that broke: "Peak context (own estimate) 25,698" in a 21,000
window beside "Steps in overflow 0", counted in cl100k only. Here the real ccviewer Claude
Code session (tests/data/corpus/claude-code/ccviewer-5c0375b4…) replayed by claude_code in
an 8,000-token window: its own count (the reported usage, ~18k) is over the window at most
steps while cl100k of the file's messages never is. And cline at 3,000 tokens on the same
session skips six compactions: their markers must not be the compactions' diamonds."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from inspect_helpers import make_run

from ctxlab.engine.core import catalogue
from replay_app.display import charts
from replay_app.models import RunStep
from replay_app.steps import run_curve
from sessions_app import services as session_services

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

SESSION = (
    Path(__file__).resolve().parents[2]
    / "data" / "corpus" / "claude-code" / "ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)  # fmt: skip
WINDOW = 8000


@pytest.fixture
def transcript(user: Any) -> Any:
    outcome = session_services.upload_import(
        owner=user, name=SESSION.name, data=SESSION.read_bytes()
    )
    assert outcome.upload is not None
    return outcome.upload.transcripts.order_by("pk").first()  # the main session


def _row(page: str, key: str) -> tuple[str, str]:
    found = re.search(
        rf'<tr data-metric="{key}"><th[^>]*>(.*?)</th><td class="num">(.*?)</td>', page, re.S
    )
    assert found, key
    return found.group(1), found.group(2)


def test_overflow_is_counted_in_the_strategys_own_count_too(
    client: Any, user: Any, transcript: Any
) -> None:
    run = make_run(user, transcript, "claude_code", context_window=WINDOW)
    steps = list(RunStep.objects.filter(run=run))
    own = sum(1 for s in steps if s.tokens_strategy > s.zones["window"])
    cl100k = sum(1 for s in steps if s.tokens_reference > s.zones["window"])
    assert own >= 5 and cl100k == 0  # the shape that broke: over in one count only
    metrics = run.metrics
    assert metrics["peak_strategy"] > WINDOW
    assert metrics["overflow_steps"] == cl100k
    assert metrics["overflow_steps_strategy"] == own
    assert catalogue.overflowed(metrics)
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert _row(page, "overflow_steps") == ("Steps in overflow (cl100k)", "0")
    assert _row(page, "overflow_steps_strategy") == ("Steps in overflow (own estimate)", str(own))
    assert _row(page, "peak_strategy")[0] == "Peak context (own estimate)"
    rows = client.get(f"/runs/{run.pk}/?format=json").json()["metric_rows"]
    by_key = {r["key"]: r for r in rows}
    assert by_key["overflow_steps_strategy"]["value"] == own
    assert by_key["overflow_steps"]["label"] == "Steps in overflow (cl100k)"


def test_compare_csv_report_and_twin_carry_both_counts(
    client: Any, user: Any, transcript: Any
) -> None:
    cc = make_run(user, transcript, "claude_code", context_window=WINDOW)
    codex = make_run(user, transcript, "codex", model_context_window=WINDOW)
    own = cc.metrics["overflow_steps_strategy"]
    assert own > 0 and codex.metrics["overflow_steps_strategy"] == 0
    client.force_login(user)
    url = f"/compare/?runs={cc.pk},{codex.pk}"
    csv = client.get(f"{url}&format=csv").content.decode()
    rows = {line.split(",")[0]: line.split(",")[1:] for line in csv.splitlines()}
    assert rows["overflow_steps"][-2:] == ["0", "0"]  # cl100k: neither run
    assert rows["overflow_steps_strategy"][-2:] == [str(own), "0"]
    report = client.get(f"{url}&format=report").content.decode()
    assert "Steps in overflow (own estimate)" in report
    page = client.get(url).content.decode()
    assert "Steps in overflow (own estimate)" in page
    twin = json.dumps(client.get(f"{url}&format=json").json())
    assert '"overflow_steps_strategy"' in twin


def test_a_run_over_its_window_in_its_own_count_wins_nothing() -> None:
    over_own = {"steps": 10, "thrash": 0, "overflow_steps": 0, "overflow_steps_strategy": 9}
    fits = {"steps": 10, "thrash": 0, "overflow_steps": 0, "overflow_steps_strategy": 0}
    runs = [over_own, fits]
    assert catalogue.metric_best_flags("compaction_count", [0, 3], runs) == [False, True]
    # each overflow figure itself is judged as usual
    assert catalogue.metric_best_flags("overflow_steps_strategy", [9, 0], runs) == [False, True]


def test_skipped_compactions_are_not_drawn_as_compactions(
    client: Any, user: Any, transcript: Any
) -> None:
    run = make_run(user, transcript, "cline", max_input_tokens=3000)
    curve = run_curve.curve(run)
    kinds = [e.kind for e in curve.events]
    skipped = [e for e in curve.events if catalogue.event_category(e.kind) == "skip"]
    assert "compact_skipped" in kinds and len(skipped) < len(kinds)
    spec = charts.token_curve(
        curve.series, curve.events, window=curve.window, threshold=curve.threshold, thin=True
    )
    charts.figure(spec)  # valid plotly
    (acted,) = [t for t in spec["data"] if t.get("meta", {}).get("role") == "events"]
    (skips,) = [t for t in spec["data"] if t.get("meta", {}).get("role") == "skipped"]
    assert list(skips["x"]) == [e.step for e in skipped]
    assert len(acted["x"]) == len(kinds) - len(skipped)
    assert acted["marker"]["symbol"] == "diamond" and skips["marker"]["symbol"] == "circle-open"
    assert skips["marker"]["color"] != acted["marker"]["color"]
    assert skips["name"] == charts.SKIPPED_NAME and "skipped" in skips["name"]
    # the page's chart is that spec: its legend names them
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert html.escape(charts.SKIPPED_NAME) in page or json.dumps(charts.SKIPPED_NAME) in page
    # the compare chart: open circles in the run's colour, one legend entry for them
    both = charts.compare_curves(
        [
            charts.RunCurve("1 cline", curve.series, curve.events, curve.window),
            charts.RunCurve("2 cline", curve.series, curve.events, curve.window),
        ]
    )
    marks = [t for t in both["data"] if t.get("meta", {}).get("role") == "skipped"]
    assert [t["showlegend"] for t in marks] == [True, False]
    assert all(t["marker"]["symbol"] == "circle-open" for t in marks)
    diamonds = [t for t in both["data"] if t.get("meta", {}).get("role") == "events"]
    assert all(len(t["x"]) == len(kinds) - len(skipped) for t in diamonds)
