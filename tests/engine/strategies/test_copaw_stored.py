"""CoPaw's Qwen2.5 counts stored at import (``strategies._copaw_stored``): each message's
count and its summariser text's count are the replay's own, a replay from them equals one
that counts everything and counts no original message again, a formatted count is used
only with the replay's tool names, entries of other messages are refused, and the texts'
entries of a transcript imported before still seed the counter as ``CoPaw.prepare``'s
pass would."""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import BlockKind, Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.stages import agentscope
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


def _entries(conversation: Conversation, batch: int = 300) -> list[dict[str, Any]]:
    """As the import computes them: a batch of messages at a time, the calls of the
    earlier batches passed on."""
    out: list[dict[str, Any]] = []
    messages = conversation.messages
    names: dict[str, str] = {}
    for start in range(0, len(messages), batch):
        entries = stored_mod.message_entries(messages[start : start + batch], names)
        assert entries is not None
        out.extend(entries)
    return out


def _text_entries(conversation: Conversation) -> list[list[Any]]:
    """What a transcript imported before the per-message counts stored: each text's
    ``QwenCounter.stored_entry``."""
    counter = qwen_tokens.QwenCounter()
    return [
        [counter.stored_entry(text, stored_mod.ENDS, head) for head, text in stored_mod._walk(m)]
        for m in conversation.messages
    ]


def test_the_stored_counts_are_the_replays_own() -> None:
    # Each message's count is CoPaw's, its formatted count the Qwen2.5 count of the
    # summariser's text with the names of the calls seen so far; batches change nothing.
    strategy = copaw.CoPaw()
    for conversation in _conversations():
        messages = conversation.messages
        entries = _entries(conversation)
        assert entries == stored_mod.message_entries(messages), conversation.title
        counter = qwen_tokens.QwenCounter()
        names: dict[str, str] = {}
        borrowed = 0
        for message, entry in zip(messages, entries, strict=True):
            for b in message.blocks:
                if b.kind is BlockKind.TOOL_USE:
                    names[b.tool_id] = b.tool_name
            assert entry["m"] == strategy.count_message(message)
            text = agentscope.format_message(
                message, style="reme", include_thinking=False, tool_names=names
            )
            assert entry["f"] == counter.count(text), (conversation.title, text[:80])
            assert entry["b"] == len(text.encode("utf-8"))
            assert entry.get("n", []) == [
                [b.tool_id, names.get(b.tool_id, "")]
                for b in message.blocks
                if b.kind is BlockKind.TOOL_RESULT and not b.tool_name
            ]
            borrowed += bool(entry.get("n"))
        assert borrowed, "some results name their tool by the call"


def test_a_replay_from_stored_counts_equals_a_counted_one() -> None:
    for conversation in _conversations():
        entries = _entries(conversation)
        for params in (
            {},
            {"max_input_length": 16_000},
            {"max_input_length": 16_000, "enable_tool_result_compact": True},
        ):
            qwen_tokens.qwen_counter().clear()
            counted = replay_run(conversation, "copaw", params=params)
            qwen_tokens.qwen_counter().clear()
            assert stored_mod.seed_stored_counts(conversation.messages, entries) == len(entries)
            seeded = replay_run(conversation, "copaw", params=params)
            assert plain(seeded) == plain(counted), (conversation.title, params)


def test_a_transcript_imported_before_seeds_its_texts() -> None:
    # Its texts' entries leave the counter as ``CoPaw.prepare``'s own pass would.
    for conversation in _conversations():
        primed = qwen_tokens.QwenCounter()
        primed.prime(copaw._texts(conversation.messages), ends=stored_mod.ENDS)
        primed.prime_joined(copaw._tool_inputs(conversation.messages), ends=stored_mod.ENDS)
        seeded = qwen_tokens.QwenCounter()
        entries = _text_entries(conversation)
        assert stored_mod.seed_stored_counts(conversation.messages, entries, seeded) == sum(
            1 for e in entries if e
        )
        assert seeded._memo == primed._memo, conversation.title
        assert seeded._tables == primed._tables, conversation.title
        assert seeded._tables, "long texts keep their cut tables"
        assert seeded.seeded_for(conversation.messages)
    qwen_tokens.qwen_counter().clear()
    counted = replay_run(conversation, "copaw", params={"max_input_length": 16_000})
    qwen_tokens.qwen_counter().clear()
    stored_mod.seed_stored_counts(conversation.messages, entries)
    seeded_run = replay_run(conversation, "copaw", params={"max_input_length": 16_000})
    assert plain(seeded_run) == plain(counted)


def test_the_seeded_counts_are_the_ones_used(monkeypatch: pytest.MonkeyPatch) -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=4)
    entries = _entries(conversation)
    params = {"max_input_length": 16_000}
    counted = replay_run(conversation, "copaw", params=params)
    # No original message is counted again: neither its blocks nor its summariser text.
    formatted: list[int] = []
    real = copaw.formatted_count

    def spy(*args: Any, **kwargs: Any) -> int:
        formatted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(copaw, "formatted_count", spy)
    monkeypatch.setattr(copaw.CoPaw, "count_message", lambda self, m: pytest.fail("counted"))
    qwen_tokens.qwen_counter().clear()
    stored_mod.seed_stored_counts(conversation.messages, entries)
    seeded = replay_run(conversation, "copaw", params=params)
    assert len(seeded.summaries) >= 2 and not formatted
    assert plain(seeded) == plain(counted)
    monkeypatch.undo()
    # A stored count changed by hand shows in the first step.
    first = next(i for i, e in enumerate(entries) if i > 0)
    changed = [dict(e) for e in entries]
    changed[first]["m"] += 1_000
    qwen_tokens.qwen_counter().clear()
    stored_mod.seed_stored_counts(conversation.messages, changed)
    seeded = replay_run(conversation, "copaw", params=params)
    assert seeded.steps[0].tokens.strategy == counted.steps[0].tokens.strategy + 1_000


def test_a_formatted_count_is_used_only_with_the_same_tool_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A result whose call the import did not see (another batch, an id used twice) is
    # counted in the replay, with the replay's names.
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=4)
    params = {"max_input_length": 16_000}
    entries = [dict(e) for e in _entries(conversation)]
    borrowing = [i for i, e in enumerate(entries) if e.get("n")]
    assert borrowing
    for i in borrowing:
        entries[i]["n"] = [[tool_id, name + "?"] for tool_id, name in entries[i]["n"]]
        entries[i]["f"] += 7  # (would show if it were used)
        entries[i]["b"] += 7
    counted = replay_run(conversation, "copaw", params=params)
    calls: list[int] = []
    real = copaw.formatted_count

    def spy(*args: Any, **kwargs: Any) -> int:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(copaw, "formatted_count", spy)
    qwen_tokens.qwen_counter().clear()
    stored_mod.seed_stored_counts(conversation.messages, entries)
    seeded = replay_run(conversation, "copaw", params=params)
    assert plain(seeded) == plain(counted)
    assert 0 < len(calls) <= len(borrowing)


def test_a_stored_formatted_size_is_read_and_an_earlier_entry_without_it_is_counted() -> None:
    # The size of the summariser's input (its usage estimate) comes from the entries' "b"
    # when there (a wrong one shows), and from the messages when not (an earlier import).
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=4)
    params = {"max_input_length": 16_000}
    counted = plain(replay_run(conversation, "copaw", params=params))
    entries = _entries(conversation)
    for changed, same in (
        ([{k: v for k, v in e.items() if k != "b"} for e in entries], True),
        ([{**e, "b": e["b"] + 40} for e in entries], False),
    ):
        qwen_tokens.qwen_counter().clear()
        assert stored_mod.seed_stored_counts(conversation.messages, changed) == len(entries)
        seeded = plain(replay_run(conversation, "copaw", params=params))
        assert (seeded == counted) is same
        assert seeded["summaries"], "the replay summarises"


def test_entries_of_other_messages_are_refused() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=200, seed=2)
    messages = conversation.messages
    entries = _entries(conversation)
    counter = qwen_tokens.QwenCounter()
    # shifted by one message: their sizes no longer match, nothing is seeded wrongly
    shifted = [entries[-1], *entries[:-1]]
    stored_mod.seed_stored_counts(messages, shifted, counter)
    strategy = copaw.CoPaw()
    for message in messages:
        value = counter.message_value(message)
        assert value is None or value.tokens == strategy.count_message(message)
    # a list of another length, None (imported before), malformed entries
    fresh = qwen_tokens.QwenCounter()
    assert stored_mod.seed_stored_counts(messages, entries[:-1], fresh) == 0
    assert stored_mod.seed_stored_counts(messages, [None] * len(messages), fresh) == 0
    for broken in ({}, {"m": 1, "f": 2}, {**entries[0], "m": "1"}, {**entries[0], "n": [["x"]]}):
        assert not stored_mod.seed_stored_counts(messages[:1], [broken], fresh)
    assert stored_mod.seed_stored_counts(messages[:1], entries[:1], fresh) == 1
    # a seeded value is found for the very message object only
    assert fresh.message_value(messages[0]) is not None
    assert fresh.message_value(dataclasses.replace(messages[0])) is None
    fresh.clear()
    assert fresh.message_value(messages[0]) is None
    # a text entry of another text
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
