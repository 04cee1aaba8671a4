"""The worker replays QwenPaw with its per-message estimates stored at import
(``Message.qwenpaw_tokens``, seeded by ``executor._execute`` through
``ReferenceTokens.seed_rule``): the import stores one for every message, a run from them
equals a replay that estimates every message, the worker really reads them, and a
transcript imported without them still replays."""

from __future__ import annotations

from typing import Any

import pytest
from replay_testdata import FULL_SESSION_FOUR, import_transcript, worker_step_column

from ctxlab.engine import importers
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import qwenpaw
from ctxlab.engine.tokens.reference import ReferenceTokens

pytestmark = pytest.mark.django_db

SESSION = FULL_SESSION_FOUR
PARAMS = {"max_input_length": 12_000, "pruning_old_msg_max_bytes": 600}


def _strategy_tokens(user: Any, transcript: Any) -> list[int]:
    return worker_step_column(user, transcript, "qwenpaw", PARAMS, "tokens_strategy")


def _estimated(transcript: Any) -> list[int]:
    """Estimated afresh (no stored estimate seeded)."""
    conversation = transcript.to_conversation()
    result = replay_run(
        conversation, "qwenpaw", params=PARAMS, reference=ReferenceTokens(conversation)
    )
    return [s.tokens.strategy for s in result.steps]


def test_the_import_stores_the_estimate_of_every_message(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    stored = list(transcript.messages.order_by("index").values_list("qwenpaw_tokens", flat=True))
    (parsed,) = importers.parse(SESSION.read_bytes(), name=SESSION.name).conversations
    assert len(stored) == len(parsed.messages) > 20
    assert stored == qwenpaw.stored_counts(parsed.messages)
    strategy = qwenpaw.QwenPaw()
    assert stored == [strategy.count_message(m) for m in transcript.to_conversation().messages]


def test_a_run_from_stored_estimates_matches_an_estimated_replay(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    steps = _strategy_tokens(user, transcript)
    assert len(steps) > 10
    assert steps == _estimated(transcript)


def test_the_worker_reads_the_stored_estimates(user: Any) -> None:
    # A stored estimate changed by hand shows in the first step: the message was not
    # estimated again.
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    row = transcript.messages.exclude(role="system").order_by("index")[0]
    row.qwenpaw_tokens += 1_000
    row.save(update_fields=["qwenpaw_tokens"])
    steps = _strategy_tokens(user, transcript)
    assert steps[0] == _estimated(transcript)[0] + 1_000


def test_a_transcript_imported_before_replays_as_estimated(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    transcript.messages.update(qwenpaw_tokens=None)
    assert _strategy_tokens(user, transcript) == _estimated(transcript)
