"""Calibration points read the replay's per-message reference counts instead of tokenizing the
conversation again: the points are the ones the explicit counter gives, on every corpus
conversation that reports usage."""

from __future__ import annotations

from pathlib import Path

from ctxlab.engine import synth
from ctxlab.engine.cost.calibration import points_from_conversation
from ctxlab.engine.tokens.cl100k import reference_counter

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def test_points_match_a_fresh_count_on_the_corpus() -> None:
    checked = 0
    for conversation in synth.corpus_conversations(CORPUS):
        shared = points_from_conversation(conversation)
        fresh = points_from_conversation(conversation, reference_counter())
        assert shared == fresh, conversation.id
        checked += bool(fresh)
    assert checked >= 5, "several corpus sessions report usage"
