"""The worker replays each strategy whose own per-message count is stored at import
(``stored_counts.ESTIMATES``: Aider's count, CowAgent's and QwenPaw's estimates, seeded by
``executor._execute`` through ``ReferenceTokens.seed_rule``): the import stores one for
every message, equal to the strategy's own count of it; a run from them equals a replay
that counts every message; the worker really reads them; a transcript imported without
them still replays."""

from __future__ import annotations

from typing import Any

import pytest
from replay_testdata import (
    FULL_SESSION_FOUR,
    afresh_step_tokens,
    import_transcript,
    worker_step_column,
)

from ctxlab.engine import importers
from ctxlab.engine.strategies import make_strategy, stored_counts

pytestmark = pytest.mark.django_db

SESSION = FULL_SESSION_FOUR
# Each stored column, the strategy reading it and settings that make it compact here.
CASES = {
    "aider_tokens": ("aider", {"max_chat_history_tokens": 2_000, "weak_max_input_tokens": 6_000}),
    "cowagent_tokens": (
        "cowagent",
        {"agent_max_context_tokens": 6_000, "agent_max_context_turns": 6},
    ),
    "qwenpaw_tokens": ("qwenpaw", {"max_input_length": 12_000, "pruning_old_msg_max_bytes": 600}),
}


@pytest.fixture(params=[e.column for e in stored_counts.ESTIMATES])
def estimate(request: pytest.FixtureRequest) -> stored_counts.Estimate:
    column = request.param
    assert column in CASES, f"a stored estimate without a worker test: {column}"
    return next(e for e in stored_counts.ESTIMATES if e.column == column)


def _strategy_tokens(user: Any, transcript: Any, column: str) -> list[int]:
    name, params = CASES[column]
    return worker_step_column(user, transcript, name, params, "tokens_strategy")


def _counted(transcript: Any, column: str) -> list[int]:
    """Counted afresh (not the counts the worker seeded, which the process keeps for the
    same conversation)."""
    name, params = CASES[column]
    return afresh_step_tokens(transcript, name, params, "strategy")


def test_the_import_stores_the_count_of_every_message(
    user: Any, estimate: stored_counts.Estimate
) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    rows = transcript.messages.order_by("index")
    stored = list(rows.values_list(estimate.column, flat=True))
    (parsed,) = importers.parse(SESSION.read_bytes(), name=SESSION.name).conversations
    assert len(stored) == len(parsed.messages) > 20
    assert stored == estimate.counts(parsed.messages)
    strategy = make_strategy(CASES[estimate.column][0])
    assert stored == [strategy.count_message(m) for m in transcript.to_conversation().messages]


def test_a_run_from_stored_counts_matches_a_counted_replay(
    user: Any, estimate: stored_counts.Estimate
) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    steps = _strategy_tokens(user, transcript, estimate.column)
    assert len(steps) > 10
    assert steps == _counted(transcript, estimate.column)


def test_the_worker_reads_the_stored_counts(user: Any, estimate: stored_counts.Estimate) -> None:
    # A stored count changed by hand shows in the first step: the message was not counted.
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    row = transcript.messages.exclude(role="system").order_by("index")[0]
    setattr(row, estimate.column, getattr(row, estimate.column) + 1_000)
    row.save(update_fields=[estimate.column])
    steps = _strategy_tokens(user, transcript, estimate.column)
    assert steps[0] == _counted(transcript, estimate.column)[0] + 1_000


def test_a_transcript_imported_before_replays_as_counted(
    user: Any, estimate: stored_counts.Estimate
) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    transcript.messages.update(**{estimate.column: None})
    assert _strategy_tokens(user, transcript, estimate.column) == _counted(
        transcript, estimate.column
    )
