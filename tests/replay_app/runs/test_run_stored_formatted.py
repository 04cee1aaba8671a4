"""QwenPaw's per-message sizes formatted for its summariser, stored at import
(``stored_counts.MEASURES``: ``qwenpaw.stored_formatted``, seeded by the worker as
``qwenpaw.FORMATTED_RULE``): the import stores one for every message, a run from them
equals a replay that formats every message, the worker really reads them, and a transcript
imported without them still replays."""

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
from ctxlab.engine.strategies import qwenpaw, stored_counts

pytestmark = pytest.mark.django_db

SESSION = FULL_SESSION_FOUR
# compacts often, the summariser's input cap below the history (some messages beyond it)
PARAMS = {"max_input_length": 12_000, "pruning_old_msg_max_bytes": 600,
          "compact_threshold_ratio": 0.4, "reserve_threshold_ratio": 0.05}  # fmt: skip


def _worker(user: Any, transcript: Any) -> list[int]:
    return worker_step_column(user, transcript, "qwenpaw", PARAMS, "tokens_strategy")


def _formatted_afresh(transcript: Any) -> list[int]:
    return afresh_step_tokens(transcript, "qwenpaw", PARAMS, "strategy")


def test_the_import_stores_every_messages_formatted_size(user: Any) -> None:
    assert "qwenpaw_formatted" in stored_counts.COLUMNS
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    stored = list(transcript.messages.order_by("index").values_list("qwenpaw_formatted", flat=True))
    (parsed,) = importers.parse(SESSION.read_bytes(), name=SESSION.name).conversations
    assert len(stored) == len(parsed.messages) > 20
    assert stored == qwenpaw.stored_formatted(parsed.messages)


def test_a_run_from_them_is_a_replay_that_formats_every_message(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    steps = _worker(user, transcript)
    assert len(steps) > 10 and steps == _formatted_afresh(transcript)
    # read: each original sized as huge, the cap shows only the newest message to compact
    transcript.messages.update(qwenpaw_formatted=10_000_000)
    assert _worker(user, transcript) != steps
    # a transcript imported before they were stored replays as it formats them
    transcript.messages.update(qwenpaw_formatted=None)
    assert _worker(user, transcript) == steps
