"""Reference counts seeded from the per-message counts stored at import (what the worker
does, ``replay_app.runs.executor``): no message is tokenized again, a long original's
running counts are built only when a copy of it is counted, and every replay equals one
over counts computed from scratch."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import PRESETS
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.reference import ReferenceTokens

pytestmark = pytest.mark.slow  # replays of real and realistic transcripts

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:2]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=1_500, seed=3)]


@pytest.mark.parametrize("strategy", [*PRESETS, "codex", "claude_code", "observation_masking"])
def test_seeded_counts_replay_as_counted_ones(strategy: str) -> None:
    for conversation in _conversations():
        counted = ReferenceTokens(conversation)
        seeded = ReferenceTokens(conversation, list(counted.per_message))
        assert seeded.per_message == counted.per_message
        assert seeded.tools == counted.tools
        fresh = replay_run(conversation, strategy, reference=ReferenceTokens(conversation))
        from_stored = replay_run(conversation, strategy, reference=seeded)
        assert plain(from_stored) == plain(fresh), (strategy, conversation.title)


def test_seeded_counts_count_copies_of_long_texts_exactly() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=1)
    counted = ReferenceTokens(conversation)
    seeded = ReferenceTokens(conversation, list(counted.per_message))
    long = [b.text for m in conversation.messages for b in m.blocks if len(b.text) >= 4096]
    assert long, "the realistic transcript has long tool outputs"
    for text in long[:40]:
        for copy in (text, text[: len(text) // 2], text[:1500] + "\n[cut]\n" + text[-1500:]):
            assert seeded.text(copy) == counted.text(copy)


def test_stored_counts_of_another_length_are_ignored() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=200, seed=2)
    counted = ReferenceTokens(conversation)
    short = ReferenceTokens(conversation, list(counted.per_message)[:-1])
    assert short.per_message == counted.per_message


def test_stored_zeros_were_never_counted() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=200, seed=2)
    counted = ReferenceTokens(conversation)
    zeros = ReferenceTokens(conversation, [0] * len(conversation.messages))
    assert zeros.per_message == counted.per_message


def test_an_original_is_tokenized_for_its_second_copy_only() -> None:
    """A first copy is counted whole (its original's running counts would cost a pass over
    the original, more than the copy); a second one builds them and is counted from them."""
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=1)
    counted = ReferenceTokens(conversation)
    seeded = ReferenceTokens(conversation, list(counted.per_message))
    text = next(b.text for m in conversation.messages for b in m.blocks if len(b.text) >= 8192)
    # (an original whose count its message's stored count gives is counted by difference,
    # test_copies_count_by_difference_without_a_table; this rule is for the others)
    seeded._wholes[text] = None
    first = text[: len(text) * 3 // 4] + "\n[truncated]\n"
    assert seeded.text(first) == counted.text(first)
    assert text not in seeded._tables
    second = text[: len(text) * 2 // 3] + "\n[cut again]\n"
    assert seeded.text(second) == counted.text(second)
    assert text in seeded._tables


def test_copies_count_by_difference_without_a_table() -> None:
    """An original alone in its message has its count from the stored one: a copy sharing
    most of it is that count less the original's differing middle plus the copy's."""
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=1)
    counted = ReferenceTokens(conversation)
    seeded = ReferenceTokens(conversation, list(counted.per_message))
    text = next(
        b.text for m in conversation.messages if len(m.blocks) == 1
        for b in m.blocks if len(b.text) >= 8192
    )  # fmt: skip
    for copy in (text[: len(text) * 3 // 4] + "\n[truncated]\n", text[:-900] + "\n[cut]\n"):
        assert seeded.text(copy) == counted.text(copy)
    assert seeded._wholes[text] == counted.text(text)
    assert text not in seeded._tables
