"""The import stores the running cl100k counts of each long text
(``reference_stored.stored_counts``) and the worker counts copies of those texts from them:
the stored entries are the ones a fresh pass gives, a run from them equals a replay that
counts everything, and a changed entry shows in the run (the worker reads them)."""

from __future__ import annotations

from typing import Any

import pytest
from replay_testdata import (
    FULL_SESSION_FOUR,
    afresh_step_tokens,
    import_transcript,
    worker_step_column,
)

from ctxlab.engine.tokens.reference_stored import stored_counts

pytestmark = pytest.mark.django_db

SESSION = FULL_SESSION_FOUR
PARAMS = {"max_input_length": 12_000, "pruning_old_msg_max_bytes": 1500}


def _reference_tokens(user: Any, transcript: Any) -> list[int]:
    return worker_step_column(user, transcript, "qwenpaw", PARAMS, "tokens_reference")


def _counted(transcript: Any) -> list[int]:
    return afresh_step_tokens(transcript, "qwenpaw", PARAMS, "reference")


def test_the_import_stores_the_running_counts(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    rows = transcript.messages.order_by("index").values_list("reference_tokens", "reference_tables")
    totals, tables = stored_counts(transcript.to_conversation().messages)
    assert [r[0] for r in rows] == totals
    assert [r[1] for r in rows] == tables
    assert sum(1 for t in tables if t) > 3


def test_a_run_from_the_stored_tables_matches_a_counted_replay(user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    steps = _reference_tokens(user, transcript)
    assert len(steps) > 10
    assert steps == _counted(transcript)


def test_the_worker_reads_the_stored_tables(user: Any) -> None:
    # Every running count of the long texts raised by hand: the copies QwenPaw truncates
    # from them count more in the run than in a replay that counts them.
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    changed = []
    for row in transcript.messages.filter(reference_tables__isnull=False):
        row.reference_tables = [
            [*e[:3], e[3], [c + 1_000 for c in e[4]]] for e in row.reference_tables
        ]
        changed.append(row)
    assert changed
    type(changed[0]).objects.bulk_update(changed, ["reference_tables"])
    steps = _reference_tokens(user, transcript)
    counted = _counted(transcript)
    assert len(steps) == len(counted)
    assert any(a > b for a, b in zip(steps, counted, strict=True))
