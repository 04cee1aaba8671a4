"""Step rows written by ``runs.step_rows`` (one prepared INSERT per flush) read back as the
rows ``RunStep.from_record`` + ``bulk_create`` store, for every step of real replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_testdata import import_transcript

from ctxlab.engine.replay import run as replay_run
from replay_app.models import RunStep
from replay_app.runs import executor, services
from replay_app.runs.step_rows import StepRows

pytestmark = pytest.mark.django_db

SESSION = (
    Path(__file__).resolve().parents[2] / "data" / "corpus" / "claude-code"
    / "agentcmd-full-session-four.jsonl"
)  # fmt: skip
FIELDS = [f.name for f in RunStep._meta.concrete_fields if f.name not in ("id", "run")]


def _new_run(transcript: Any, strategy: str) -> Any:
    return services.run_create(
        owner=transcript.owner,
        transcript=transcript,
        spec=services.RunSpec(strategy=strategy, window=12_000),
        enqueue=False,
    )


@pytest.mark.parametrize("strategy", ["qwenpaw", "claude_code", "codex"])
def test_step_rows_read_back_as_model_rows(user: Any, strategy: str) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    conversation = transcript.to_conversation()
    via_models, via_rows = _new_run(transcript, strategy), _new_run(transcript, strategy)
    result = replay_run(conversation, strategy, params=via_models.params)
    assert any(s.summary_id is not None or s.pending for s in result.steps) or strategy == "codex"
    RunStep.objects.bulk_create([RunStep.from_record(via_models, s) for s in result.steps])
    rows = StepRows(via_rows)
    rows.write([rows.row(s) for s in result.steps])

    def stored(run: Any) -> list[tuple[Any, ...]]:
        return list(RunStep.objects.filter(run=run).order_by("index").values_list(*FIELDS))

    assert len(stored(via_rows)) == len(result.steps) > 20
    assert stored(via_rows) == stored(via_models)
    first = RunStep.objects.filter(run=via_rows).order_by("index").first()
    assert first is not None and first.to_record().zones == result.steps[0].zones


def test_worker_writes_every_step(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    run = executor.run_execute(run=_new_run(transcript, "qwenpaw"), batch_steps=7)
    assert run.status == "done", run.error
    indexes = list(
        RunStep.objects.filter(run=run).order_by("index").values_list("index", flat=True)
    )
    assert indexes == list(range(run.steps_total)) and run.steps_total > 20
