"""The best rule stated next to the metrics table (issue 31 item 12), not in a hover: on the
compare page, in its JSON twin, in the CSV's header notes and in the downloaded report, one
sentence from the catalogue (``catalogue.BEST_RULE``, made of the same clauses as every
metric's ``best_rule``), with the runs it keeps out here. And (item 15) the group page's
CSV and the compare page's CSV share one column list, rows and values."""

from __future__ import annotations

import csv
import html
import io
from typing import Any

import pytest
from django.test import Client

from ctxlab.engine.core import catalogue
from replay_app import memo
from replay_app.models import Run, RunGroup, RunStatus
from replay_app.runs import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def group(user: Any, transcript: Any, django_capture_on_commit_callbacks: Any) -> RunGroup:
    """Two runs at a window the agent chat overflows without compacting enough: one that
    never clears in time (overflow) and one that keeps inside."""
    memo.MEMO.clear()
    with django_capture_on_commit_callbacks(execute=True):
        group = services.group_create(
            owner=user, transcript=transcript,
            specs=[services.RunSpec(strategy=s, window=6_000) for s in ("anthropic_edits", "copaw")],
        )  # fmt: skip
    runs = list(group.runs.order_by("pk"))
    assert {r.status for r in runs} == {RunStatus.DONE}, [r.error for r in runs]
    return group


def _runs(group: RunGroup) -> list[Run]:
    return list(group.runs.order_by("pk"))


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_the_sentence_is_made_of_each_metrics_own_clauses() -> None:
    guarded = next(m for m in catalogue.METRICS.values() if m.guarded and m.better)
    assert (
        catalogue.OVERFLOW_RULE in guarded.best_rule and catalogue.THRASH_RULE in guarded.best_rule
    )
    assert catalogue.OVERFLOW_RULE in catalogue.BEST_RULE
    assert catalogue.THRASH_RULE in catalogue.BEST_RULE


def test_best_rule_next_to_the_table_in_page_json_csv_and_report(
    auth_client: Client, group: RunGroup
) -> None:
    runs = _runs(group)
    over = [r for r in runs if catalogue.overflowed(r.metrics)]
    assert len(over) == 1, [r.metrics.get("overflow_steps") for r in runs]
    out = over[0]
    ids = ",".join(str(r.pk) for r in runs)
    reasons = catalogue.not_eligible([r.metrics for r in runs])[runs.index(out)]
    assert reasons[0] == "steps in overflow"
    why = ", ".join(reasons)

    page = auth_client.get(f"/compare/?runs={ids}").content.decode()
    metrics = page[page.index('id="compare-metrics"') :]
    metrics = metrics[: metrics.index("</section>")]
    note = metrics[metrics.index('<p class="small" id="best-rule">') :].split("</p>", 1)[0]
    assert catalogue.BEST_RULE in html.unescape(note)
    assert f"Not eligible here: run {out.pk} ({why})." in note

    data = auth_client.get(f"/compare/?runs={ids}&format=json").json()
    assert data["best"] == {
        "rule": catalogue.BEST_RULE,
        "not_eligible": {str(out.pk): reasons},
    }

    rows = _rows(auth_client.get(f"/compare/?runs={ids}&format=csv").content.decode())
    assert rows[0] == [f"# best: {catalogue.BEST_RULE}"]
    assert rows[1] == [f"# not eligible: run {out.pk} {out.label}: {why}"]
    assert rows[2][:2] == ["metric", "better"]

    report = auth_client.get(f"/compare/?runs={ids}&format=report").content.decode()
    text = html.unescape(report[report.index('id="best-rule"') :].split("</p>", 1)[0])
    assert catalogue.BEST_RULE in text and f"run #{out.pk} ({why})" in text


def test_group_and_compare_csv_share_columns_rows_and_values(
    auth_client: Client, group: RunGroup
) -> None:
    ids = ",".join(str(r.pk) for r in _runs(group))
    compare = auth_client.get(f"/compare/?runs={ids}&format=csv").content.decode()
    grouped = auth_client.get(f"/runs/groups/{group.pk}/?format=csv").content.decode()
    assert grouped == compare
    keys = [row[0] for row in _rows(grouped) if row and not row[0].startswith("#")][1:]
    assert "retention" in keys and keys.index("peak_reference") < keys.index("peak_strategy")
