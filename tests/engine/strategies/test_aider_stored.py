"""Aider's per-message counts stored at import (``aider.stored_counts``, seeded into the
reference counts as ``ReferenceTokens.seed_rule(aider.STORED_RULE, ...)``): each is the
count Aider's own estimator gives the message, a replay from them equals one that counts
every message's JSON, the replay really reads them (an original is not tokenized again)
and counts that do not fit the conversation are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import aider
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.reference import ReferenceTokens, seed_reference_tokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
PARAMS = {"max_chat_history_tokens": 2_000, "weak_max_input_tokens": 6_000}


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:3]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=3)]


def _seeded(conversation: Conversation, counts: list[int]) -> ReferenceTokens:
    reference = seed_reference_tokens(conversation, ReferenceTokens(conversation).per_message)
    assert reference.seed_rule(aider.STORED_RULE, counts)
    return reference


def test_the_stored_counts_are_aiders_own() -> None:
    strategy = aider.AiderStrategy()
    for conversation in _conversations():
        counts = aider.stored_counts(conversation.messages)
        assert counts == [strategy.count_message(m) for m in conversation.messages]


def test_a_replay_from_stored_counts_equals_a_counted_one() -> None:
    for conversation in _conversations():
        counts = aider.stored_counts(conversation.messages)
        counted = replay_run(conversation, "aider", params=PARAMS)
        seeded = replay_run(
            conversation, "aider", params=PARAMS, reference=_seeded(conversation, counts)
        )
        assert plain(seeded) == plain(counted), conversation.title
        assert counted.summaries, "the parameters make Aider summarise"


def test_an_original_is_not_tokenized_again(monkeypatch: pytest.MonkeyPatch) -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=3)
    counts = aider.stored_counts(conversation.messages)
    reference = _seeded(conversation, counts)
    asked: list[str] = []
    real = aider.AiderStrategy.count_dict

    def spy(self: aider.AiderStrategy, role: str, content: str) -> int:
        asked.append(content)
        return real(self, role, content)

    monkeypatch.setattr(aider.AiderStrategy, "count_dict", spy)
    replay_run(conversation, "aider", params=PARAMS, reference=reference)
    originals = {aider.content_of(m) for m in conversation.messages}
    assert asked, "summaries are still counted"
    assert not [c for c in asked if c in originals and not c.startswith(aider.SUMMARY_PREFIX)]


def test_the_seeded_counts_are_the_ones_used() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=3)
    counts = aider.stored_counts(conversation.messages)
    counted = replay_run(conversation, "aider", params=PARAMS)
    changed = list(counts)
    first = next(i for i, m in enumerate(conversation.messages) if m.role.value != "system")
    changed[first] += 1_000  # (a system prompt is counted apart)
    seeded = replay_run(
        conversation, "aider", params=PARAMS, reference=_seeded(conversation, changed)
    )
    assert seeded.steps[0].tokens.strategy == counted.steps[0].tokens.strategy + 1_000


def test_counts_that_do_not_fit_are_refused() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=50, seed=2)
    counts = aider.stored_counts(conversation.messages)
    reference = ReferenceTokens(conversation)
    assert not reference.seed_rule(aider.STORED_RULE, counts[:-1])  # another length
    assert not reference.seed_rule(aider.STORED_RULE, [None, *counts[1:]])  # imported before
    assert reference.rule_of(aider.STORED_RULE, conversation.messages[0]) is None
    assert reference.seed_rule(aider.STORED_RULE, counts)
    first = conversation.messages[0]
    assert reference.rule_of(aider.STORED_RULE, first) == counts[0]
    # a copy of an original (a modified message) is counted, never given its stored count
    copy = type(first)(**{f: getattr(first, f) for f in first.__dataclass_fields__})
    assert reference.rule_of(aider.STORED_RULE, copy) is None
