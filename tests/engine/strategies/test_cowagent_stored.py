"""CowAgent's per-message estimates stored at import (``cow.stored_counts``, seeded into the
reference counts as ``ReferenceTokens.seed_rule(cow.STORED_RULE, ...)``): each is the
estimate the replay gives the message, a replay from them equals one that estimates every
message, the replay really reads them (no original's tool input is dumped to JSON again)
and a modified message is still estimated."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import BlockKind, Conversation, Message
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import _cowagent_rules as cow
from ctxlab.engine.strategies.cowagent import CowAgentStrategy
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.reference import ReferenceTokens, seed_reference_tokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
# small budgets: trims, drops, flushes, injections and cuts all happen
PARAMS = {"agent_max_context_tokens": 6_000, "agent_max_context_turns": 6,
          "history_result_max_chars": 500}  # fmt: skip


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:2]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=3)]


def _seeded(conversation: Conversation, counts: list[int]) -> ReferenceTokens:
    reference = seed_reference_tokens(conversation, ReferenceTokens(conversation).per_message)
    assert reference.seed_rule(cow.STORED_RULE, counts)
    return reference


def test_the_stored_counts_are_cowagents_own() -> None:
    strategy = CowAgentStrategy()
    for conversation in _conversations():
        counts = cow.stored_counts(conversation.messages)
        assert counts == [strategy.count_message(m) for m in conversation.messages]


def test_a_replay_from_stored_counts_equals_an_estimated_one() -> None:
    for conversation in _conversations():
        counts = cow.stored_counts(conversation.messages)
        counted = replay_run(conversation, "cowagent", params=PARAMS)
        seeded = replay_run(
            conversation, "cowagent", params=PARAMS, reference=_seeded(conversation, counts)
        )
        assert plain(seeded) == plain(counted), conversation.title
    kinds = {e.kind for e in counted.events}
    assert {"drop", "truncate", "summary_injected"} <= kinds, kinds


def test_no_original_is_estimated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=3)
    reference = _seeded(conversation, cow.stored_counts(conversation.messages))
    asked: list[Message] = []  # kept alive: their ids stay theirs
    real = cow.estimate_message

    def spy(message: Message) -> int:
        asked.append(message)
        return real(message)

    monkeypatch.setattr(cow, "estimate_message", spy)
    result = replay_run(conversation, "cowagent", params=PARAMS, reference=reference)
    originals = {id(m) for m in conversation.messages}
    again = [m for m in asked if id(m) in originals]
    # only an injection estimates an original: its target before and after the summary
    injections = sum(e.kind == "summary_injected" for e in result.events)
    assert injections and len(again) <= injections
    assert len(asked) > len(again), "modified messages (cut results, injections) are counted"
    assert len(asked) < len(conversation.messages) // 2


def test_the_seeded_counts_are_the_ones_used() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=3)
    counts = cow.stored_counts(conversation.messages)
    counted = replay_run(conversation, "cowagent", params=PARAMS)
    changed = list(counts)
    first = next(
        i
        for i, m in enumerate(conversation.messages)
        if m.role.value != "system" and any(b.kind is BlockKind.TEXT for b in m.blocks)
    )
    changed[first] += 1_000  # (a system prompt is counted apart)
    seeded = replay_run(
        conversation, "cowagent", params=PARAMS, reference=_seeded(conversation, changed)
    )
    assert seeded.steps[0].tokens.strategy == counted.steps[0].tokens.strategy + 1_000
