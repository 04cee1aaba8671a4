"""The reference counts an import stores (``reference_stored.stored_counts``): the same
per-message counts as counting each message, and the running counts of long texts, which
``ReferenceTokens(conversation, stored, tables)`` reads back so that a copy of a long text
is counted from them. Replays from them equal replays that count everything; entries that
are not their block's text are ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import PRESETS
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.cl100k import _encoding
from ctxlab.engine.tokens.reference import HEAD_KEY, ReferenceTokens
from ctxlab.engine.tokens.reference_stored import stored_counts

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:2]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=800, seed=6)]


def test_stored_counts_are_the_per_message_counts() -> None:
    for conversation in _conversations():
        totals, tables = stored_counts(conversation.messages)
        assert totals == ReferenceTokens(conversation).per_message, conversation.title
        assert len(tables) == len(conversation.messages)
    assert any(tables), "the realistic transcript has long texts"


@pytest.mark.parametrize("strategy", PRESETS)
def test_a_replay_from_stored_tables_equals_a_counted_one(strategy: str) -> None:
    for conversation in _conversations():
        totals, tables = stored_counts(conversation.messages)
        seeded = ReferenceTokens(conversation, totals, tables)
        assert seeded._pending, "running counts read back (read when a copy is counted)"
        counted = replay_run(conversation, strategy, reference=ReferenceTokens(conversation))
        from_stored = replay_run(conversation, strategy, reference=seeded)
        assert plain(from_stored) == plain(counted), (strategy, conversation.title)


def test_a_copy_is_counted_from_the_stored_running_counts() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=400, seed=6)
    totals, tables = stored_counts(conversation.messages)
    seeded = ReferenceTokens(conversation, totals, tables)
    text = max((b.text for m in conversation.messages for b in m.blocks), key=len)
    assert len(text) > 6000
    seen: list[int] = []
    count = seeded._count
    seeded._count = lambda t: seen.append(len(t)) or count(t)  # type: ignore[method-assign]
    copy = text[:3000] + "<<<TRUNCATED>>>\nThe output above was truncated."
    assert seeded.text(copy) == len(_encoding().encode_ordinary(copy))
    assert sum(seen) < 1500  # the part after the last safe point before the cut


def test_entries_of_other_texts_are_ignored() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=400, seed=6)
    totals, tables = stored_counts(conversation.messages)

    def text_of(i: int) -> str:
        return conversation.messages[i].blocks[tables[i][0][0]].text  # type: ignore[index]

    held = [i for i, t in enumerate(tables) if t]
    k = next(i for i in held if sum(text_of(j) == text_of(i) for j in held) == 1)
    entry = tables[k][0]  # type: ignore[index]
    wrong = [
        [entry[0], entry[1] ^ 1, *entry[2:]],  # checksum
        [entry[0] + 99, *entry[1:]],  # block
        [entry[0], entry[1], entry[2], [], []],  # no points
        [entry[0], entry[1], entry[2], [10**9], [1]],  # past the end
        entry[:3],
    ]
    for bad in wrong:
        changed = list(tables)
        changed[k] = [bad]
        seeded = ReferenceTokens(conversation, totals, changed)
        seeded._seed_head(text_of(k)[:HEAD_KEY])
        assert text_of(k) not in seeded._tables, bad
    seeded = ReferenceTokens(conversation, totals, tables)
    seeded._seed_head(text_of(k)[:HEAD_KEY])
    assert text_of(k) in seeded._tables  # the right entry is read
    other = ReferenceTokens(conversation, totals, tables[:-1])  # another length
    assert not other._pending
    assert not other._tables


def test_stored_running_counts_are_read_only_for_the_texts_a_copy_starts_as() -> None:
    """Reading back (checksum, memo) every long text's running counts up front cost each
    replay ~40 ms at 20k messages: only the entries of the texts sharing a counted copy's
    first characters are read, and the counts are those of the texts."""
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=400, seed=6)
    totals, tables = stored_counts(conversation.messages)
    seeded = ReferenceTokens(conversation, totals, tables)
    assert not seeded._tables
    assert not seeded._memo
    waiting = sum(map(len, seeded._pending.values()))
    assert waiting > 20
    longest = max((b.text for m in conversation.messages for b in m.blocks), key=len)
    encode = _encoding().encode_ordinary
    copy = longest[:4000] + "\n[truncated: see the full output]"
    assert seeded.text(copy) == len(encode(copy))
    assert longest in seeded._tables  # read for the copy
    assert seeded._memo[longest] == len(encode(longest))
    assert longest[:HEAD_KEY] not in seeded._pending
    assert 0 < waiting - sum(map(len, seeded._pending.values())) < waiting / 4
    # an original counted as a text is its stored count, read then
    other = next(t for t, _ in (e for es in seeded._pending.values() for e in es) if t != longest)
    assert seeded.text(other) == len(encode(other))
    assert seeded._memo[other] == len(encode(other))
