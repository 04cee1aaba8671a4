"""A copy holding some of an original's very blocks is counted from the original's count.

A request view that prunes reasoning or tool parts (Vercel's ``pruneMessages``) keeps the
rest of a message's blocks as they were: its count is the original's (stored at import)
less the blocks it left out, when those are less text than the ones it kept; the kept
blocks are not tokenized again. Same count as counting the copy whole.
"""

from __future__ import annotations

import dataclasses

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.tokens.cl100k import message_reference_tokens
from ctxlab.engine.tokens.reference import ReferenceTokens

LONG = "\n".join(f"step {i}: read the file, then compare line {i} with the spec" for i in range(80))


def _conversation() -> Conversation:
    answer = Message(
        Role.ASSISTANT,
        (
            Block(BlockKind.THINKING, text="Let me check the file first."),
            Block(BlockKind.TEXT, text=LONG),
            Block(BlockKind.TOOL_USE, tool_id="t1", tool_name="read", tool_input={"path": "a"}),
        ),
    )
    return Conversation(
        id="kept",
        title="kept",
        messages=(Message(Role.USER, (Block(BlockKind.TEXT, text="Go."),)), answer),
    )


def _stored(conversation: Conversation) -> ReferenceTokens:
    counts = [message_reference_tokens(m) for m in conversation.messages]
    return ReferenceTokens(conversation, counts)


def test_a_pruned_copy_counts_as_counted_whole_without_its_kept_text() -> None:
    conversation = _conversation()
    original = conversation.messages[1]
    copy = dataclasses.replace(original, blocks=original.blocks[1:2])  # the long text only
    reference = _stored(conversation)
    assert reference.message_of(copy) == message_reference_tokens(copy)
    assert LONG not in reference._memo  # the kept text was not tokenized again
    assert "Let me check the file first." in reference._memo  # the left-out block was


def test_a_copy_keeping_less_text_than_it_left_out_is_counted_whole() -> None:
    conversation = _conversation()
    original = conversation.messages[1]
    reference = _stored(conversation)
    short = dataclasses.replace(original, blocks=original.blocks[:1])  # the reasoning only
    assert reference.message_of(short) == message_reference_tokens(short)
    assert LONG not in reference._memo


def test_a_copy_with_a_new_block_is_counted_whole() -> None:
    conversation = _conversation()
    original = conversation.messages[1]
    reference = _stored(conversation)
    other = Block(BlockKind.TEXT, text="[pruned]")
    mixed = dataclasses.replace(original, blocks=(original.blocks[1], other))
    assert reference.message_of(mixed) == message_reference_tokens(mixed)
    assert LONG in reference._memo
