"""CoPaw's Qwen2.5 counts stored at import (``strategies._copaw_stored``): seeding the
counter from them leaves it as ``CoPaw.prepare``'s own pass would (same counts, same cut
tables), a replay from them equals one that counts everything, and entries that do not
match their message's texts are refused."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import _copaw_stored as stored_mod
from ctxlab.engine.strategies import copaw
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens import qwen_tokens

pytestmark = pytest.mark.skipif(
    qwen_tokens._fast_count() is None, reason="needs the tiktoken-built Qwen2.5 counter"
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


@pytest.fixture(autouse=True)
def _cold_counter() -> Iterator[None]:
    """The shared counter is emptied around each test: a seeded (or corrupted) entry must
    not reach another test's replay."""
    qwen_tokens.qwen_counter().clear()
    yield
    qwen_tokens.qwen_counter().clear()


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:3]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=800, seed=4)]


def _entries(conversation: Conversation, batch: int = 300) -> list[list[object]]:
    """As the import computes them: a batch of messages at a time."""
    out: list[list[object]] = []
    messages = conversation.messages
    for start in range(0, len(messages), batch):
        entries = stored_mod.message_entries(messages[start : start + batch])
        assert entries is not None
        out.extend(entries)
    return out


def test_seeding_leaves_the_counter_as_prepare_primes_it() -> None:
    for conversation in _conversations():
        primed = qwen_tokens.QwenCounter()
        primed.prime(copaw._texts(conversation.messages), ends=stored_mod.ENDS)
        primed.prime_joined(copaw._tool_inputs(conversation.messages), ends=stored_mod.ENDS)
        seeded = qwen_tokens.QwenCounter()
        entries = _entries(conversation)
        assert len(entries) == len(conversation.messages)
        assert stored_mod.seed_stored_counts(conversation.messages, entries, seeded) == sum(
            1 for e in entries if e
        )
        assert seeded._memo == primed._memo, conversation.title
        assert seeded._tables == primed._tables, conversation.title
        assert seeded._tables, "long texts keep their cut tables"


def test_a_replay_from_stored_counts_equals_a_counted_one() -> None:
    for conversation in _conversations():
        entries = _entries(conversation)
        for params in ({}, {"max_input_length": 16_000}):
            qwen_tokens.qwen_counter().clear()
            counted = replay_run(conversation, "copaw", params=params)
            qwen_tokens.qwen_counter().clear()
            stored_mod.seed_stored_counts(conversation.messages, entries)
            seeded = replay_run(conversation, "copaw", params=params)
            assert plain(seeded) == plain(counted), (conversation.title, params)


def test_the_seeded_counts_are_the_ones_used() -> None:
    # A stored count changed by hand shows in the replay: prepare counted nothing again.
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=4)
    entries = _entries(conversation)
    first = next(i for i, e in enumerate(entries) if e and i > 0)
    entries[first][0][2] += 1_000  # type: ignore[index, operator]
    counted = replay_run(conversation, "copaw")
    qwen_tokens.qwen_counter().clear()
    stored_mod.seed_stored_counts(conversation.messages, entries)
    seeded = replay_run(conversation, "copaw")
    # the first step (later ones differ by compactions)
    assert seeded.steps[0].tokens.strategy == counted.steps[0].tokens.strategy + 1_000


def test_entries_of_other_texts_are_refused() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=200, seed=2)
    messages = conversation.messages
    entries = _entries(conversation)
    counter = qwen_tokens.QwenCounter()
    # shifted by one message: counts or lengths no longer match, nothing is seeded wrongly
    shifted = [entries[-1], *entries[:-1]]
    stored_mod.seed_stored_counts(messages, shifted, counter)
    for text, value in counter._memo.items():
        assert value == qwen_tokens.QwenCounter().count(text)
    # a list of another length, None (imported before), malformed entries
    fresh = qwen_tokens.QwenCounter()
    assert stored_mod.seed_stored_counts(messages, entries[:-1], fresh) == 0
    assert stored_mod.seed_stored_counts(messages, [None] * len(messages), fresh) == 0
    key = [3, zlib.crc32(b"abc")]
    assert fresh.seed("abc", [*key, 1]) and fresh.count("abc") == 1  # (a wrong count: seeded)
    fresh.clear()
    assert not fresh.seed("abc", [3]) and not fresh.seed("abd", [*key, 1])
    assert not fresh.seed("abc", [4, key[1], 1])
    x = "x" * 300
    assert not fresh.seed(x, [300, zlib.crc32(x.encode()), 5, [400], [3]])
    assert fresh.memoised() == 0


def test_no_entries_without_an_exact_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qwen_tokens, "_fast_count", lambda: None)
    monkeypatch.setattr(qwen_tokens, "_tokenizer", lambda: None)
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=50, seed=2)
    assert stored_mod.message_entries(conversation.messages) is None
