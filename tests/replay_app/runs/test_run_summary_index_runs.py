"""A summary's source messages are stored as runs of consecutive indexes when that is
shorter (``IndexListField``) and read back as the very list the engine gave, through the
model, ``values_list``, the run page's JSON twin and the summary page's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db.models import TextField
from django.db.models.functions import Cast
from inspect_helpers import make_run
from replay_testdata import import_transcript

from ctxlab.engine.replay import run as replay_run
from replay_app.models import RunSummary
from replay_app.models.fields import RUNS

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[3] / "tests" / "data" / "corpus"
ROLLOUT = (
    "codex-rollout/agentcmd-rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl"
)


def _raw(pk: int) -> Any:
    return json.loads(
        RunSummary.objects.filter(pk=pk).values_list(Cast("messages", TextField()), flat=True)[0]
    )


def test_aider_sources_stored_as_runs_read_back_as_listed(user: Any, auth_client: Any) -> None:
    transcript = import_transcript(user, (CORPUS / ROLLOUT).read_bytes(), name="rollout.jsonl")
    run = make_run(user, transcript, "aider", max_chat_history_tokens=300)
    engine = replay_run(run.transcript.to_conversation(), "aider", params=run.params)
    expected = {s.id: list(s.messages) for s in engine.summaries}
    assert len(expected) >= 10 and sum(map(len, expected.values())) > 2000
    rows = list(RunSummary.objects.filter(run=run).order_by("seq"))
    assert {r.seq: r.messages for r in rows} == expected
    listed = dict(RunSummary.objects.filter(run=run).values_list("seq", "messages"))
    assert listed == expected
    twin = auth_client.get(f"/runs/{run.pk}/", {"format": "json"}).json()
    assert {s["seq"]: s["messages"] for s in twin["summaries"]} == expected
    last = rows[-1]
    page = auth_client.get(f"/runs/{run.pk}/summaries/{last.seq}/", {"format": "json"}).json()
    assert page["messages"] == expected[last.seq]
    # stored as runs: a few numbers where the list had thousands
    raw = _raw(last.pk)
    assert isinstance(raw, str) and raw.startswith(RUNS)
    assert len(raw) * 20 < len(json.dumps(expected[last.seq]))


def test_scattered_and_short_lists_stay_lists(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "qwenpaw")
    row = RunSummary.objects.create(run=run, seq=99, step=0, output="x", messages=[1, 2])
    scattered = list(range(0, 4000, 3))  # no runs: stored as the list (packed when long)
    for value in (scattered, [7, 8, 9], [], [5, 6, 7, 8, 9, 10, 11, 12]):
        RunSummary.objects.filter(pk=row.pk).update(messages=value)
        assert RunSummary.objects.get(pk=row.pk).messages == value
        assert RunSummary.objects.filter(pk=row.pk).values_list("messages", flat=True)[0] == value
    raw = _raw(row.pk)  # the last: 8 indexes in one run
    assert raw == RUNS + "[5,13]"
    RunSummary.objects.filter(pk=row.pk).update(messages=[7, 8, 9])
    assert _raw(row.pk) == [7, 8, 9]  # too short to gain: plain JSON
