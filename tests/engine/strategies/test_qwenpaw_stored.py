"""QwenPaw's per-message estimates stored at import (``qwenpaw.stored_counts``, seeded into
the reference counts as ``ReferenceTokens.seed_rule(qwenpaw.STORED_RULE, ...)``): each is
the estimate the replay gives the message, a replay from them equals one that estimates
every message, the replay really reads them (no original is estimated again), a modified
message (a truncated tool result) is still estimated, and another divisor ignores them."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import plain

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation, Message
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import qwenpaw
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.reference import ReferenceTokens, seed_reference_tokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
PARAMS = {"max_input_length": 16_000, "pruning_old_msg_max_bytes": 600}  # prunes, compacts


def _conversations() -> list[Conversation]:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:2]
    return [*real, synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=3)]


def _seeded(conversation: Conversation, counts: list[int]) -> ReferenceTokens:
    reference = seed_reference_tokens(conversation, ReferenceTokens(conversation).per_message)
    assert reference.seed_rule(qwenpaw.STORED_RULE, counts)
    return reference


def test_the_stored_counts_are_qwenpaws_own() -> None:
    strategy = qwenpaw.QwenPaw()
    for conversation in _conversations():
        counts = qwenpaw.stored_counts(conversation.messages)
        assert counts == [strategy.count_message(m) for m in conversation.messages]


def test_a_replay_from_stored_counts_equals_an_estimated_one() -> None:
    for conversation in _conversations():
        counts = qwenpaw.stored_counts(conversation.messages)
        for params in ({}, PARAMS):
            counted = replay_run(conversation, "qwenpaw", params=params)
            seeded = replay_run(
                conversation, "qwenpaw", params=params, reference=_seeded(conversation, counts)
            )
            assert plain(seeded) == plain(counted), (conversation.title, params)
    kinds = {e.kind for e in counted.events}
    assert {"summarise", "offload"} <= kinds, kinds


def test_no_original_is_estimated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=300, seed=3)
    counts = qwenpaw.stored_counts(conversation.messages)
    asked: list[Message] = []  # kept alive: their ids stay theirs
    real = qwenpaw.QwenPaw.count_message

    def spy(self: qwenpaw.QwenPaw, message: Message) -> int:
        asked.append(message)
        return real(self, message)

    monkeypatch.setattr(qwenpaw.QwenPaw, "count_message", spy)
    replay_run(conversation, "qwenpaw", params=PARAMS, reference=_seeded(conversation, counts))
    originals = {id(m) for m in conversation.messages}
    assert asked, "truncated tool results are estimated"
    assert not [m for m in asked if id(m) in originals]
    # another divisor: the stored estimates are not its own, every message is estimated
    asked.clear()
    other = {**PARAMS, "token_count_estimate_divisor": 3.0}
    changed = [c + 1_000 for c in counts]  # (would show if they were read)
    seeded = replay_run(
        conversation, "qwenpaw", params=other, reference=_seeded(conversation, changed)
    )
    assert plain(seeded) == plain(replay_run(conversation, "qwenpaw", params=other))
    assert len([m for m in asked if id(m) in originals]) >= len(conversation.messages) - 1


def test_the_rule_reader_reads_originals_only() -> None:
    """``ReferenceTokens.rule_reader`` (what QwenPaw's counter reads every message with) is
    ``rule_of`` bound to the rule: an original's stored count, None for a copy, no reader
    for a rule never seeded."""
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=80, seed=4)
    counts = qwenpaw.stored_counts(conversation.messages)
    reference = ReferenceTokens(conversation)
    assert reference.rule_reader(qwenpaw.STORED_RULE) is None
    assert reference.seed_rule(qwenpaw.STORED_RULE, counts)
    read = reference.rule_reader(qwenpaw.STORED_RULE)
    assert read is not None
    for message in conversation.messages:
        assert read(message) == reference.rule_of(qwenpaw.STORED_RULE, message)
    assert [read(m) for m in conversation.messages] == counts
    first = conversation.messages[0]
    copy = type(first)(**{f: getattr(first, f) for f in first.__dataclass_fields__})
    assert read(copy) is None
    # the counter reads the stored counts through it (a wrong stored count shows)
    strategy = qwenpaw.QwenPaw()
    changed = [c + 7 for c in counts]
    counted = strategy.message_counter(_seeded(conversation, changed), None)
    assert counted(first) == changed[0] and counted(copy) == strategy.count_message(first)


def test_the_stored_formatted_sizes_are_the_summarisers_own() -> None:
    """``stored_formatted`` plus the borrowed names is ``formatted_size`` with the names a
    replay has seen (the tool results naming their tool by its call included)."""
    from ctxlab.engine.core.model import BlockKind
    from ctxlab.engine.stages import agentscope

    for conversation in _conversations():
        sizes = qwenpaw.stored_formatted(conversation.messages)
        names = {
            b.tool_id: b.tool_name + "é"  # (a name's bytes, not its characters)
            for m in conversation.messages
            for b in m.blocks
            if b.kind is BlockKind.TOOL_USE
        }
        for message, size in zip(conversation.messages, sizes, strict=True):
            whole = agentscope.formatted_size(
                message, style="qwenpaw", include_thinking=True, tool_names=names
            )
            assert size + qwenpaw._borrowed_names_size(message, names) == whole


def test_a_replay_from_stored_formatted_sizes_equals_one_that_formats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seeded, no original is formatted again for the summariser's cap; the replay is the
    same (and without thinking shown the stored sizes are not read)."""
    from ctxlab.engine.stages import agentscope

    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=3)
    counts = qwenpaw.stored_counts(conversation.messages)
    sizes = qwenpaw.stored_formatted(conversation.messages)
    formatted: list[Message] = []
    real = agentscope.formatted_size

    def spy(message: Message, **kwargs: object) -> int:
        formatted.append(message)
        return real(message, **kwargs)  # type: ignore[arg-type]

    for params in (PARAMS, {**PARAMS, "compact_with_thinking_block": False}):
        counted = replay_run(conversation, "qwenpaw", params=params)
        reference = _seeded(conversation, counts)
        assert reference.seed_rule(qwenpaw.FORMATTED_RULE, sizes)
        monkeypatch.setattr(agentscope, "formatted_size", spy)
        formatted.clear()
        seeded = replay_run(conversation, "qwenpaw", params=params, reference=reference)
        monkeypatch.setattr(agentscope, "formatted_size", real)
        assert plain(seeded) == plain(counted), params
        originals = {id(m) for m in conversation.messages}
        again = [m for m in formatted if id(m) in originals]
        if params.get("compact_with_thinking_block", True):
            assert formatted and not again  # (truncated copies are still formatted)
        else:
            assert again
    assert {"summarise", "offload"} <= {e.kind for e in counted.events}
