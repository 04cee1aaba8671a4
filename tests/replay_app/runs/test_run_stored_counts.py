"""The worker replays with the per-message reference counts stored at import
(``executor._execute`` seeds ``ctxlab.engine.tokens.reference``): on real sessions those stored
counts are the ones a fresh count gives, and a run's reference figures match a replay that
counts everything again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_testdata import import_transcript

from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.tokens.reference import ReferenceTokens
from replay_app.models import RunStep
from replay_app.runs import executor, services

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSIONS = (
    CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl",
    CORPUS / "codex-rollout" / sorted(p.name for p in (CORPUS / "codex-rollout").iterdir())[0],
)


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.name)
def test_counts_stored_at_import_equal_a_fresh_count(user: Any, session: Path) -> None:
    transcript = import_transcript(user, session.read_bytes(), name=session.name)
    stored = list(transcript.messages.order_by("index").values_list("reference_tokens", flat=True))
    fresh = ReferenceTokens(transcript.to_conversation()).per_message
    assert len(stored) == len(fresh) > 20
    assert stored == fresh


def test_a_run_from_stored_counts_matches_a_counted_replay(user: Any) -> None:
    session = SESSIONS[0]
    transcript = import_transcript(user, session.read_bytes(), name=session.name)
    run = services.run_create(
        owner=user,
        transcript=transcript,
        spec=services.RunSpec(strategy="qwenpaw", params={"max_input_length": 12_000}),
        enqueue=False,
    )
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    conversation = transcript.to_conversation()
    expected = replay_run(
        conversation, "qwenpaw", params={"max_input_length": 12_000},
        reference=ReferenceTokens(conversation),
    )  # fmt: skip
    stored = list(RunStep.objects.filter(run=run).order_by("index").values_list(
        "tokens_reference", flat=True))  # fmt: skip
    assert stored == [s.tokens.reference for s in expected.steps]
    assert len(stored) > 10


def test_the_worker_reads_the_stored_counts(user: Any) -> None:
    # A stored count changed by hand shows in every step: nothing was counted again.
    session = SESSIONS[0]
    transcript = import_transcript(user, session.read_bytes(), name=session.name)
    first = transcript.messages.get(index=0)
    first.reference_tokens += 1_000
    first.save(update_fields=["reference_tokens"])
    run = services.run_create(
        owner=user, transcript=transcript, spec=services.RunSpec(strategy="codex"), enqueue=False
    )
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    conversation = transcript.to_conversation()
    counted = replay_run(conversation, "codex", reference=ReferenceTokens(conversation))
    stored = list(RunStep.objects.filter(run=run).order_by("index").values_list(
        "tokens_reference", flat=True))  # fmt: skip
    assert stored == [s.tokens.reference + 1_000 for s in counted.steps]
