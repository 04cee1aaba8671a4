"""Runs with the "recorded" summariser: the transcript's own compaction summaries are
reused, and the run page (HTML and JSON) shows where the replay's trigger and the
original's compaction agree or differ (synthetic Claude Code and Codex transcripts)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from replay_testdata import import_transcript

from replay_app.configs.forms import SUMMARIZER_LABELS
from replay_app.runs import executor, services

pytestmark = pytest.mark.django_db

RECORDED = Path(__file__).resolve().parents[2] / "data" / "recorded"


def _run(user: Any, name: str, strategy: str, params: dict[str, Any]) -> Any:
    transcript = import_transcript(user, (RECORDED / name).read_bytes(), name=name)
    group = services.group_create(
        enqueue=False,
        owner=user,
        transcript=transcript,
        specs=[services.RunSpec(strategy=strategy, params=params)],
        summarizer="recorded",
    )
    (run,) = group.runs.all()
    executor.run_execute(run=run)
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


def _cells(html: str) -> list[list[str]]:
    table = html.split('data-table="original-compactions"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr data-agree=\"(\w+)\"[^>]*>(.*?)</tr>", table, re.S)
    return [
        [
            agree,
            *(
                re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", c)).strip()
                for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)
            ),
        ]
        for agree, body in rows
    ]


def test_claude_code_run_uses_the_real_summary_and_agrees(user: Any, auth_client: Any) -> None:
    run = _run(user, "claude-code-compacted.jsonl", "claude_code", {"context_window": 60_000})
    summary = run.summaries.get()
    assert summary.output.startswith("Summary:\n1. Primary Request and Intent:")
    html = auth_client.get(run.get_absolute_url()).content.decode()
    assert "The original's own compactions" in html
    # kind, agent version, step original / replay, tokens original / replay, relation, rules
    (row,) = _cells(html)
    assert row[0] == "yes" and row[1] == "auto-compaction"
    assert row[3] == row[4] == "6" and row[5] == "28,180" and row[7] == "same step"
    data = json.loads(auth_client.get(run.get_absolute_url() + "?format=json").content)
    assert data["metrics"]["original_compactions"][0]["agree"] is True
    (shown,) = data["original_compactions"]  # the page's rows, from the same object
    assert (shown["kind_label"], shown["original_step"], shown["relation"]) == (
        row[1], int(row[3]), row[7],
    )  # fmt: skip
    assert f"{shown['replay_tokens']:,}" in row[6]


def test_codex_run_says_the_replay_fired_earlier(user: Any, auth_client: Any) -> None:
    params = {"model_context_window": 6000, "model_auto_compact_token_limit": 3000}
    run = _run(user, "codex-compacted.jsonl", "codex", params)
    assert run.summaries.filter(output__startswith="Streaming CSV importer").count() == 1
    (row,) = _cells(auth_client.get(run.get_absolute_url()).content.decode())
    assert row[0] == "no" and row[1] == "Codex compaction" and row[5] == "—"
    assert (row[3], row[4], row[7]) == ("4", "3", "1 step earlier")


def test_recorded_is_offered_in_the_run_form(auth_client: Any) -> None:
    assert "recorded" in services.SUMMARIZERS and "recorded" in SUMMARIZER_LABELS
    html = auth_client.get("/runs/new/").content.decode()
    assert 'value="recorded"' in html
