"""QwenPaw's positional builders make what ``dataclasses.replace`` makes."""

from __future__ import annotations

from dataclasses import replace

from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.strategies import qwenpaw


def test_with_text_is_replace() -> None:
    block = Block(
        BlockKind.TOOL_RESULT, "long output", tool_id="t1", tool_name="bash", is_error=True,
        raw_type="tool_result", parts=(Block(BlockKind.TEXT, "p"),),
    )  # fmt: skip
    made = qwenpaw._with_text(block, "cut")
    assert made == replace(block, text="cut")
    assert type(made) is Block


def test_new_message_is_replace() -> None:
    msg = Message(Role.USER, (Block(BlockKind.TEXT, "a"),), timestamp="t", id="x", name="n")
    blocks = (Block(BlockKind.TEXT, "b"),)
    made = qwenpaw._new_message(
        msg.role, blocks, msg.source, msg.timestamp, msg.model, msg.usage, msg.id, msg.name,
        msg.flags,
    )  # fmt: skip
    assert made == replace(msg, blocks=blocks)
