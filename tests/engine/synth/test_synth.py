from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.importers import openai_chat
from ctxlab.engine.tokens.cl100k import message_reference_tokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
TAU = CORPUS / "openai-chat" / "taubench-gpt-4o-airline.json"


@pytest.fixture(scope="module")
def tau() -> tuple[Conversation, ...]:
    return openai_chat.parse(TAU.read_bytes(), name=TAU.name).conversations


def assert_valid(conv: Conversation) -> None:
    """One system prompt first, unique tool ids, each result after its call, monotone time."""
    assert [i for i, m in enumerate(conv.messages) if m.role is Role.SYSTEM] in ([0], [])
    seen: set[str] = set()
    for message in conv.messages:
        for block in message.blocks:
            if block.kind is BlockKind.TOOL_USE:
                assert block.tool_id not in seen
                seen.add(block.tool_id)
            elif block.kind is BlockKind.TOOL_RESULT:
                assert block.tool_id in seen
    stamps = [m.timestamp for m in conv.messages]
    assert all(s is not None for s in stamps)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_join_conversations_same_seed_is_identical(tau: tuple[Conversation, ...]) -> None:
    a = synth.join_conversations(tau, target_messages=3000, seed=7)
    b = synth.join_conversations(tau, target_messages=3000, seed=7)
    c = synth.join_conversations(tau, target_messages=3000, seed=8)
    assert a == b
    assert a.messages != c.messages


@pytest.mark.parametrize("target", [1, 2, 57, 1000, 6000], ids=lambda t: f"n{t}")
def test_join_conversations_exact_message_target_keeps_pairs(
    tau: tuple[Conversation, ...], target: int
) -> None:
    conv = synth.join_conversations(tau, target_messages=target, seed=1)
    assert len(conv.messages) == target
    assert_valid(conv)
    # every call that made it into the result still has its result
    uses = {b.tool_id for m in conv.messages for b in m.tool_uses}
    results = {b.tool_id for m in conv.messages for b in m.tool_results}
    assert uses == results


def test_join_conversations_token_target_ends_on_clean_boundary(
    tau: tuple[Conversation, ...],
) -> None:
    conv = synth.join_conversations(tau, target_tokens=200_000, seed=3)
    total = sum(message_reference_tokens(m) for m in conv.messages)
    assert total >= 200_000
    assert total < 200_000 + 20_000  # stops soon after the target
    assert_valid(conv)
    assert conv.messages[0].role is Role.SYSTEM


def test_join_conversations_reused_source_ids_stay_paired(tau: tuple[Conversation, ...]) -> None:
    # tau-bench task 0 calls two tools with the same id; each result must follow its own call
    source = tau[0]
    conv = synth.join_conversations([source], target_messages=2 * len(source.messages), seed=0)
    assert_valid(conv)
    originals = [b.tool_name for m in source.messages for b in m.tool_results]
    by_id = {b.tool_id: b.tool_name for m in conv.messages for b in m.tool_uses}
    joined = [by_id[b.tool_id] for m in conv.messages for b in m.tool_results]
    assert joined[: len(originals)] == originals


def test_join_conversations_cut_call_is_removed() -> None:
    call = Block(BlockKind.TOOL_USE, tool_id="a", tool_name="ls", tool_input={})
    source = Conversation(
        id="s",
        title="s",
        messages=(
            Message(Role.USER, (Block(BlockKind.TEXT, text="go"),)),
            Message(Role.ASSISTANT, (call,)),
            Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id="a", text="x"),)),
        ),
    )
    conv = synth.join_conversations([source], target_messages=2)
    assert len(conv.messages) == 2
    assert not conv.messages[1].tool_uses
    assert "cut" in conv.messages[1].text


def test_join_conversations_requires_a_target(tau: tuple[Conversation, ...]) -> None:
    with pytest.raises(ValueError, match="target"):
        synth.join_conversations(tau)


def test_long_demo_conversation_meets_target() -> None:
    conv = synth.long_demo_conversation(CORPUS, target_tokens=300_000, seed=0)
    assert sum(message_reference_tokens(m) for m in conv.messages) >= 300_000
    assert_valid(conv)
    assert conv == synth.long_demo_conversation(CORPUS, target_tokens=300_000, seed=0)


def test_bench_conversation_holds_millions_of_tokens() -> None:
    conv = synth.bench_conversation(CORPUS, messages=20_000, seed=0)
    assert len(conv.messages) == 20_000
    assert sum(message_reference_tokens(m) for m in conv.messages) >= 5_000_000
    assert_valid(conv)
