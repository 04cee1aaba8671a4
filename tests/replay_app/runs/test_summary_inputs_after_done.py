"""An in-process run (offline, recorded summariser) writes its summary rows without their
inputs while replaying and stores them after done, first thing (``executor._store_inputs``);
a run stopped before done, or whose pieces cannot be made, keeps them inline instead, so
that no path leaves a summary without the input the replay gave it."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_helpers import make_run

from ctxlab.engine.replay import run as replay_run
from replay_app.models import Run, RunStatus, RunSummary
from replay_app.runs import executor, services, textstore
from sessions_app.models import Transcript
from tests.engine.builders import SMALL_WINDOWS as SMALL

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


def replayed_inputs(run: Run) -> list[str]:
    result = replay_run(run.transcript.to_conversation(), run.strategy, params=run.params)
    return [s.input for s in result.summaries]


def test_inputs_go_inline_when_their_pieces_cannot_be_made(
    monkeypatch: pytest.MonkeyPatch, user: Any, session_four: Transcript
) -> None:
    def broken(self: textstore.TextWriter) -> list[Any]:
        raise ValueError("no pieces")

    monkeypatch.setattr(textstore.TextWriter, "summaries_later", broken)
    run = make_run(user, session_four, "qwenpaw", **SMALL["qwenpaw"])
    assert run.finished_at is not None
    rows = list(RunSummary.objects.filter(run=run).order_by("seq"))
    assert rows and all(not r.input_parts for r in rows)
    assert [r.input for r in rows] == replayed_inputs(run)


def test_a_run_failing_before_done_keeps_its_summary_inputs_inline(
    monkeypatch: pytest.MonkeyPatch, user: Any, session_four: Transcript
) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("metrics failed")

    monkeypatch.setattr(executor, "compute_metrics", failing)
    run = services.run_create(
        owner=user, transcript=session_four, enqueue=False,
        spec=services.RunSpec(strategy="qwenpaw", params=SMALL["qwenpaw"]),
    )  # fmt: skip
    run = executor.run_execute(run=run)
    assert run.status == RunStatus.FAILED and "metrics failed" in run.error
    rows = list(RunSummary.objects.filter(run=run).order_by("seq"))
    assert rows and all(r.input and not r.input_parts for r in rows)
    assert [r.input for r in rows] == replayed_inputs(run)
