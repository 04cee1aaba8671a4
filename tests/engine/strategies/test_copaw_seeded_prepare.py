"""CoPaw's ``prepare`` primes nothing when every message of the transcript was seeded from
the counts stored at import (``QwenCounter.mark_seeded``/``seeded_for``): each message's
count is there and none of its texts is tokenized, and the replay equals one that counts
everything. A transcript seeded only in part, another message sequence or a cleared
counter primes as before."""

from __future__ import annotations

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
    qwen_tokens.qwen_counter().clear()
    yield
    qwen_tokens.qwen_counter().clear()


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:2]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=6)]


def _entries(conversation: Conversation) -> list[list[object] | None]:
    entries = stored_mod.message_entries(conversation.messages)
    assert entries is not None
    return list(entries)


def test_a_fully_seeded_transcript_has_nothing_left_to_prime() -> None:
    strategy = copaw.CoPaw()
    for conversation in _conversations():
        messages = conversation.messages
        counter = qwen_tokens.QwenCounter()
        stored_mod.seed_stored_counts(messages, _entries(conversation), counter)
        assert counter.seeded_for(messages), conversation.title
        # every message's count is there, none of its texts was tokenized
        for message in messages:
            assert counter.message_value(message).tokens == strategy.count_message(message)
        assert counter.memoised() == 0
        counter.clear()
        assert not counter.seeded_for(messages)


def test_a_partly_seeded_transcript_is_not_marked() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=2)
    messages = conversation.messages
    entries = _entries(conversation)
    with_text = next(i for i, e in enumerate(entries) if e)
    for broken in (
        [*entries[:with_text], None, *entries[with_text + 1 :]],  # imported before
        [*entries[:with_text], [[1, 2, 3]], *entries[with_text + 1 :]],  # another text's
    ):
        counter = qwen_tokens.QwenCounter()
        stored_mod.seed_stored_counts(messages, broken, counter)
        assert not counter.seeded_for(messages)
    counter = qwen_tokens.QwenCounter()
    stored_mod.seed_stored_counts(messages, entries, counter)
    assert counter.seeded_for(messages)
    assert not counter.seeded_for((*messages,))  # another sequence, equal messages


def test_prepare_skips_priming_and_the_replay_is_the_counted_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conversation = _conversations()[-1]
    entries = _entries(conversation)  # (as the import: before the spy)
    params = {"max_input_length": 16_000}
    gathered: list[int] = []  # prepare gathers the transcript's texts only to prime them
    real_texts = copaw._texts

    def spy(messages: tuple[object, ...]) -> list[str]:
        gathered.append(len(messages))
        return real_texts(messages)  # type: ignore[arg-type]

    monkeypatch.setattr(copaw, "_texts", spy)
    counted = replay_run(conversation, "copaw", params=params)
    assert gathered == [len(conversation.messages)]  # not seeded: primed
    qwen_tokens.qwen_counter().clear()
    stored_mod.seed_stored_counts(conversation.messages, entries)
    seeded = replay_run(conversation, "copaw", params=params)
    assert gathered == [len(conversation.messages)]  # seeded: nothing gathered
    assert len(seeded.summaries) >= 2
    assert plain(seeded) == plain(counted)
