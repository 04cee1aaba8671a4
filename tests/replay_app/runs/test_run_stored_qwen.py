"""The worker replays CoPaw with the Qwen2.5 counts stored at import
(``executor._execute`` seeds ``strategies._copaw_stored``): the import stores them for
every message, a run from them equals a replay that counts everything, the worker really
reads them, and a transcript imported without them still replays."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from replay_testdata import FULL_SESSION_FOUR, import_transcript, worker_step_column

from ctxlab.engine import importers
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import _copaw_stored
from ctxlab.engine.tokens import qwen_tokens

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(qwen_tokens._fast_count() is None, reason="needs the Qwen2.5 counter"),
]

SESSION = FULL_SESSION_FOUR
PARAMS = {"max_input_length": 12_000}


@pytest.fixture(autouse=True)
def _cold_counter() -> Iterator[None]:
    """The worker's counter is shared by the process: a changed stored count must not
    reach another test."""
    qwen_tokens.qwen_counter().clear()
    yield
    qwen_tokens.qwen_counter().clear()


def _strategy_tokens(user: Any, transcript: Any) -> list[int]:
    return worker_step_column(user, transcript, "copaw", PARAMS, "tokens_strategy")


def _counted(transcript: Any) -> list[int]:
    qwen_tokens.qwen_counter().clear()
    result = replay_run(transcript.to_conversation(), "copaw", params=PARAMS)
    return [s.tokens.strategy for s in result.steps]


def test_the_import_stores_the_entries_of_every_message(user: Any) -> None:
    """The entries of the messages the import parsed (this session has no secret to mask),
    and of the messages read back: the blocks column keeps a tool input's key order on
    every backend (sessions_app/json_text.py), so the text CoPaw formats from a stored
    message is the parsed one and every entry's size matches."""
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    stored = list(transcript.messages.order_by("index").values_list("qwen_counts", flat=True))
    (parsed,) = importers.parse(SESSION.read_bytes(), name=SESSION.name).conversations
    assert len(stored) == len(parsed.messages) > 20
    assert stored == _copaw_stored.message_entries(parsed.messages)
    assert all({"m", "f", "k"} <= set(entry) for entry in stored), "every message's counts"
    assert any(entry.get("n") for entry in stored), "results named by their calls"
    assert stored == _copaw_stored.message_entries(transcript.to_conversation().messages)


def test_a_run_from_stored_counts_matches_a_counted_replay(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    steps = _strategy_tokens(user, transcript)
    assert len(steps) > 10
    assert steps == _counted(transcript)


def test_the_worker_reads_the_stored_counts(user: Any) -> None:
    # A stored count changed by hand shows in the first step: prepare counted nothing again.
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    row = transcript.messages.exclude(role="assistant").filter(index__gt=0).order_by("index")[0]
    entries = row.qwen_counts
    entries["m"] += 1_000
    row.qwen_counts = entries
    row.save(update_fields=["qwen_counts"])
    steps = _strategy_tokens(user, transcript)
    assert steps[0] == _counted(transcript)[0] + 1_000


def test_a_transcript_imported_before_replays_as_counted(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    transcript.messages.update(qwen_counts=None)
    assert _strategy_tokens(user, transcript) == _counted(transcript)
