"""A modified message version is counted once when the context and the strategy both ask.

``ReplayContext._replace`` asks ``ReferenceTokens.message_of`` for the version a strategy
just made, and a strategy counting with the reference (``ReferenceEstimator``) asks again
for the same object: the second ask reads the last count (Vercel's request view and
observation masking counted every pruned version twice). Only the very object is read
back: an equal copy, or the next version, is counted.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Message
from ctxlab.engine.replay import run
from ctxlab.engine.tokens.cl100k import message_reference_tokens
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _pruned(message: Message) -> Message:
    kept = tuple(b for b in message.blocks if b.kind is not BlockKind.TOOL_USE)
    return replace(message, blocks=kept)


def test_the_last_version_is_read_back_and_only_that_object() -> None:
    conversation = synth.bench_conversation(CORPUS, messages=300, seed=4)
    reference = ReferenceTokens(conversation)
    calls: list[int] = []
    count = reference._from_kept_blocks

    def counted(message: Message) -> int | None:
        calls.append(1)
        return count(message)

    reference._from_kept_blocks = counted  # type: ignore[method-assign]
    source = next(
        m
        for m in conversation.messages
        if any(b.kind is BlockKind.TOOL_USE for b in m.blocks)
        and any(b.kind is not BlockKind.TOOL_USE for b in m.blocks)
    )
    version = _pruned(source)
    expected = message_reference_tokens(version)
    assert reference.message_of(version) == expected
    assert reference.message_of(version) == expected
    assert len(calls) == 1  # the second ask read the last count
    twin = _pruned(source)  # equal, another object: counted
    assert twin == version
    assert twin is not version
    assert reference.message_of(twin) == expected
    assert len(calls) == 2
    assert (
        reference.message_of(source) == reference.per_message[conversation.messages.index(source)]
    )
    assert len(calls) == 2  # an original is its stored count


def _block_counts(name: str, monkeypatch: pytest.MonkeyPatch, *, forget: bool) -> int:
    conversation = synth.bench_conversation(CORPUS, messages=600, seed=5)
    counted = {"n": 0}
    original = ReferenceTokens.message_of
    block = ReferenceTokens._block

    def message_of(self: ReferenceTokens, message: Message) -> int:
        if forget:  # as before the last version was kept
            self._last = None
        return original(self, message)

    def one_block(self: ReferenceTokens, b: Block) -> int:
        counted["n"] += 1
        return block(self, b)

    monkeypatch.setattr(ReferenceTokens, "message_of", message_of)
    monkeypatch.setattr(ReferenceTokens, "_block", one_block)
    result = run(conversation, name)
    pruned = [c for e in result.events for c in e.changes if c.message is not None]
    assert len(pruned) > 20
    return counted["n"]


@pytest.mark.parametrize("name", ["vercel_prune_messages", "observation_masking"])
def test_each_pruned_version_is_counted_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    once = _block_counts(name, monkeypatch, forget=False)
    twice = _block_counts(name, monkeypatch, forget=True)
    assert once > 0
    assert 2 * once <= twice  # the context and the estimator each asked for every version
