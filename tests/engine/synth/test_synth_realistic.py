"""The realistic benchmark transcript: the same real sessions and mix as the repeated-text one,
message for message, with repeated copies rewritten so their texts are new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_synth import assert_valid

from ctxlab.engine import synth
from ctxlab.engine.core.model import BlockKind, Conversation
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.cl100k import block_text

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
MESSAGES = 6_000


def _keys(value: object) -> object:
    """A tool input's structure: keys and container shapes, no string values."""
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys(v) for v in value]
    return type(value).__name__


def _distinct_share(conversation: Conversation) -> float:
    texts = [t for m in conversation.messages for b in m.blocks if (t := block_text(b))]
    return len(set(texts)) / len(texts)


@pytest.fixture(scope="module")
def pair() -> tuple[Conversation, Conversation]:
    corpus = synth.joined_sources(CORPUS)
    plain = synth.bench_conversation(CORPUS, messages=MESSAGES, conversations=corpus)
    real = synth_realistic.realistic_bench_conversation(CORPUS, messages=MESSAGES)
    return plain, real


def test_same_sessions_and_mix_message_for_message(pair: tuple[Conversation, ...]) -> None:
    plain, real = pair
    assert len(real.messages) == len(plain.messages) == MESSAGES
    assert_valid(real)
    changed = 0
    for a, b in zip(plain.messages, real.messages, strict=True):
        assert (a.role, a.id, a.timestamp, len(a.blocks)) == (b.role, b.id, b.timestamp,
                                                              len(b.blocks))  # fmt: skip
        for x, y in zip(a.blocks, b.blocks, strict=True):
            assert (x.kind, x.tool_id, x.tool_name, x.is_error) == (
                y.kind, y.tool_id, y.tool_name, y.is_error)  # fmt: skip
            # same-length replacements: every text keeps its size (hence the token mix)
            assert len(x.text) == len(y.text)
            if x.kind is BlockKind.TOOL_USE:
                assert _keys(x.tool_input) == _keys(y.tool_input)
                json.loads(y.input_json)
            changed += block_text(x) != block_text(y)
    assert changed > MESSAGES // 2, "most repeated copies are rewritten"


def test_repeated_copies_become_distinct(pair: tuple[Conversation, ...]) -> None:
    plain, real = pair
    assert _distinct_share(plain) < 0.5  # the cycled sources repeat themselves
    assert _distinct_share(real) >= 0.95


def test_first_copy_of_each_source_is_verbatim(pair: tuple[Conversation, ...]) -> None:
    plain, real = pair
    first = [i for i, m in enumerate(plain.messages) if m.id.endswith("~1")]
    assert first and all(plain.messages[i] == real.messages[i] for i in first)


def test_deterministic() -> None:
    a = synth_realistic.realistic_bench_conversation(CORPUS, messages=800, seed=3)
    b = synth_realistic.realistic_bench_conversation(CORPUS, messages=800, seed=3)
    assert a == b
