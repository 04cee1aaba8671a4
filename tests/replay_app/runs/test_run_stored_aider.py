"""The worker replays Aider with its per-message counts stored at import
(``Message.aider_tokens``, seeded by ``executor._execute`` through
``ReferenceTokens.seed_rule``): the import stores one for every message, a run from them
equals a replay that counts every message, the worker really reads them, and a transcript
imported without them still replays."""

from __future__ import annotations

from typing import Any

import pytest
from replay_testdata import FULL_SESSION_FOUR, import_transcript, worker_step_column

from ctxlab.engine import importers
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import aider
from ctxlab.engine.tokens.reference import ReferenceTokens

pytestmark = pytest.mark.django_db

SESSION = FULL_SESSION_FOUR
PARAMS = {"max_chat_history_tokens": 2_000, "weak_max_input_tokens": 6_000}


def _strategy_tokens(user: Any, transcript: Any) -> list[int]:
    return worker_step_column(user, transcript, "aider", PARAMS, "tokens_strategy")


def _counted(transcript: Any) -> list[int]:
    """Counted afresh (not the reference counts the worker seeded, which the process
    keeps for the same conversation)."""
    conversation = transcript.to_conversation()
    result = replay_run(
        conversation, "aider", params=PARAMS, reference=ReferenceTokens(conversation)
    )
    return [s.tokens.strategy for s in result.steps]


def test_the_import_stores_the_count_of_every_message(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    stored = list(transcript.messages.order_by("index").values_list("aider_tokens", flat=True))
    (parsed,) = importers.parse(SESSION.read_bytes(), name=SESSION.name).conversations
    assert len(stored) == len(parsed.messages) > 20
    assert stored == aider.stored_counts(parsed.messages)
    strategy = aider.AiderStrategy()
    assert stored == [strategy.count_message(m) for m in transcript.to_conversation().messages]


def test_a_run_from_stored_counts_matches_a_counted_replay(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    steps = _strategy_tokens(user, transcript)
    assert len(steps) > 10
    assert steps == _counted(transcript)


def test_the_worker_reads_the_stored_counts(user: Any) -> None:
    # A stored count changed by hand shows in the first step: the message was not counted.
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    row = transcript.messages.exclude(role="system").order_by("index")[0]
    row.aider_tokens += 1_000
    row.save(update_fields=["aider_tokens"])
    steps = _strategy_tokens(user, transcript)
    assert steps[0] == _counted(transcript)[0] + 1_000


def test_a_transcript_imported_before_replays_as_counted(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    transcript.messages.update(aider_tokens=None)
    assert _strategy_tokens(user, transcript) == _counted(transcript)
