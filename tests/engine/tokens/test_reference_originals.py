"""An original message (the very object of the conversation) is counted from its
per-message count, stored at import or computed once: the strategies that estimate with
the reference (``ReferenceEstimator``) and the worker's seeded counts tokenize no original
again, and the count is the one a fresh count of the message gives."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import synth
from ctxlab.engine.strategies import make_strategy
from ctxlab.engine.tokens import reference as reference_mod
from ctxlab.engine.tokens.cl100k import reference_counter
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
REFERENCE_STRATEGIES = (
    "anthropic_edits",
    "observation_masking",
    "complexity_trap_summary",
    "openhands_condenser",
    "anthropic_server_compaction",
)


def _conversation() -> Any:
    return max(synth.corpus_conversations(CORPUS), key=lambda c: len(c.messages))


def _refuse(*_: Any, **__: Any) -> Any:
    raise AssertionError("an original message was tokenized again")


@pytest.mark.parametrize("name", REFERENCE_STRATEGIES)
def test_originals_are_read_from_the_stored_counts(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = _conversation()
    counted = ReferenceTokens(conversation)
    fresh = [counted.message_of(dataclasses.replace(m)) for m in conversation.messages]
    assert fresh == counted.per_message  # a copy (another object) is counted: the same
    seeded = ReferenceTokens(conversation, list(counted.per_message))
    monkeypatch.setattr(seeded, "_count", _refuse)
    monkeypatch.setattr(seeded, "_count_distinct", _refuse)
    monkeypatch.setattr(reference_mod, "counted_in_pieces", _refuse)
    reference_counter().count.cache_clear()  # type: ignore[attr-defined]
    strategy = make_strategy(name)
    count = strategy.message_counter(seeded, strategy.State())
    got = [count(m) for m in conversation.messages]
    assert got == [strategy.scale(n) for n in counted.per_message]  # type: ignore[attr-defined]


def test_a_modified_message_is_still_counted() -> None:
    conversation = _conversation()
    seeded = ReferenceTokens(conversation, list(ReferenceTokens(conversation).per_message))
    message = next(m for m in conversation.messages if m.text)
    block = next(b for b in message.blocks if b.text)
    changed = dataclasses.replace(
        message, blocks=(dataclasses.replace(block, text=block.text + " and more words"),)
    )
    assert seeded.message_of(changed) != seeded.message_of(message)
