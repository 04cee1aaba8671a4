"""Survival by category on stored runs: computed in the worker path with the retention
analysis, lazily for older runs, the original pseudo-run per transcript, the compare and
run pages' table and JSON twins (a real Claude Code /compact and its summary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from replay_testdata import import_transcript

from ctxlab.engine.evaluate import survival as engine_survival
from replay_app.compare import survival_table
from replay_app.compare.compare_page import SHOWN
from replay_app.models import OriginalSurvival, RunAnalysis
from replay_app.runs import executor, services
from replay_app.runs import survival as stored

pytestmark = pytest.mark.django_db

RECORDED = Path(__file__).resolve().parents[2] / "data" / "recorded"
REAL = "claude-trace-req34-compacted.jsonl"


def _group(user: Any, name: str = REAL) -> list[Any]:
    transcript = import_transcript(user, (RECORDED / name).read_bytes(), name=name)
    group = services.group_create(
        enqueue=False,
        owner=user,
        transcript=transcript,
        specs=[
            services.RunSpec(strategy="claude_code", window=8000),
            services.RunSpec(strategy="langchain_trim", window=6000),
        ],
        summarizer="recorded",
    )
    runs = list(group.runs.order_by("pk"))
    for run in runs:
        executor.run_execute(run=run)
        run.refresh_from_db()
        assert run.status == "done", run.error
    return runs


def test_worker_stores_survival_equal_to_the_table_from_stored_rows(user: Any) -> None:
    runs = _group(user)
    for run in runs:
        saved = RunAnalysis.objects.get(run=run).survival
        assert stored.current(saved)
        _, again = stored._from_rows(run)
        assert saved == json.loads(json.dumps(again.as_dict()))
    claude = RunAnalysis.objects.get(run=runs[0]).survival
    assert claude["compactions_count"] == 1 and claude["categories"]["paths"]["at_risk"] >= 10


def test_older_run_is_computed_once_and_stored(user: Any) -> None:
    run = _group(user)[0]
    RunAnalysis.objects.filter(run=run).update(survival={})
    data = stored.run_survival(run)
    assert data is not None and data["version"] == engine_survival.VERSION
    assert RunAnalysis.objects.get(run=run).survival == data
    RunAnalysis.objects.filter(run=run).update(survival={**data, "survival": 0.123})
    assert stored.run_survival(run)["survival"] == 0.123  # type: ignore[index]  # stored


def test_original_pseudo_run_is_stored_per_transcript(user: Any) -> None:
    run = _group(user)[0]
    data = stored.original_survival(run.transcript)
    assert data is not None and data["compactions_count"] == 1
    assert OriginalSurvival.objects.get(transcript=run.transcript).survival == data
    assert data["categories"]["commands"]["survived"] == 0


def test_transcript_without_compactions_has_no_original_row(user: Any) -> None:
    transcript = import_transcript(
        user, (RECORDED / REAL).read_bytes()[:20_000].rsplit(b"\n", 1)[0] + b"\n", name="cut.jsonl"
    )
    assert stored.original_survival(transcript) is None


def test_table_puts_the_original_first_and_the_json_has_every_category(user: Any) -> None:
    runs = _group(user)
    table = survival_table.table(runs)
    assert [r.key for r in table.rows] == ["original", *(str(r.pk) for r in runs)]
    data = table.as_json()
    assert data["original"]["compactions"] == 1
    keys = [c["key"] for c in data["categories"]]
    assert keys == list(engine_survival.CATEGORIES)
    for row in (data["original"], *data["runs"].values()):
        assert set(row["categories"]) == set(keys)
    trim = data["runs"][str(runs[1].pk)]
    assert trim["compactions"] > 1 and trim["survival"] < data["original"]["survival"]


def test_compare_page_and_json_twins_show_survival(user: Any, auth_client: Any) -> None:
    runs = _group(user)
    ids = f"{runs[0].pk},{runs[1].pk}"
    html = auth_client.get(f"/compare/?runs={ids}").content.decode()
    section = html.split('id="survival"', 1)[1].split("</section>", 1)[0]
    assert section.index('data-survival-row="original"') < section.index(
        f'data-survival-row="{runs[0].pk}"'
    )
    # per-compaction rows for the run that compacted more than once (11 trims): the
    # compare page lists the first SHOWN of them (the JSON twin has all)
    trim_rows = section.split(f'data-survival-compactions="{runs[1].pk}"', 1)[1]
    details = trim_rows.split("</details>", 1)[0]
    assert details.count("<tr>") == 1 + SHOWN == 11
    assert f"first {SHOWN} of 11; all in the JSON twin" in details
    data = auth_client.get(f"/compare/?runs={ids}&format=json").json()["survival"]
    assert set(data["runs"]) == {str(r.pk) for r in runs}
    assert data["original"]["categories"]["paths"]["at_risk"] >= 10
    own = auth_client.get(f"/runs/{runs[0].pk}/?format=json").json()["survival"]
    assert own["categories"] == data["runs"][str(runs[0].pk)]["categories"]
