"""Tool-output pruning: OpenCode's ``prune`` walk and the placeholder replacement.

Shared by the ``opencode`` strategy and the ``custom`` strategy's ``prune_tool_outputs``
stage, so both walk the history the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..core.model import UNSENT_USER_TURN, Block, BlockKind, Message
from ..core.tool_pairs import is_user_query

if TYPE_CHECKING:
    from ..core.context_view import ContextView

# (message index, block position, block) -> bool
PartTest = Callable[[int, int, Block], bool]


@dataclass
class PruneScan:
    """What one walk found: tool-output tokens seen, tokens past the protected budget and
    the (message index, block position) parts holding them, newest first."""

    total: int = 0
    pruned: int = 0
    queued: list[tuple[int, int]] = field(default_factory=list)

    def by_message(self) -> dict[int, set[int]]:
        out: dict[int, set[int]] = {}
        for index, pos in self.queued:
            out.setdefault(index, set()).add(pos)
        return out


def _never(index: int, pos: int, block: Block) -> bool:
    return False


def scan_tool_outputs(
    ctx: ContextView,
    *,
    protect_turns: int,
    protect_tokens: int,
    count: Callable[[str], int],
    skip: PartTest = _never,
    stop: PartTest = _never,
) -> PruneScan:
    """OpenCode ``prune``'s walk over the live history, newest message and block first.

    User turns are counted before the skip test (``if (turns < 2) continue``), so the
    newest ``protect_turns`` user turns are never touched; a turn whose user message sent
    nothing (``UNSENT_USER_TURN`` on its first message) counts too, as OpenCode counts
    stored user messages. Completed (non-error) tool
    outputs are summed with ``count``; once the sum is past ``protect_tokens`` each
    further output (the one crossing included) is queued. ``skip`` leaves a part out of
    the sum (protected tools); ``stop`` ends the walk (a part pruned earlier: older ones
    were handled then)."""
    scan = PruneScan()
    turns = 0
    for index in reversed(ctx.live):
        msg = ctx.message(index)
        if is_user_query(msg):
            turns += 1
        if turns >= protect_turns:
            for pos in range(len(msg.blocks) - 1, -1, -1):
                block = msg.blocks[pos]
                if block.kind is not BlockKind.TOOL_RESULT or block.is_error:
                    continue  # only completed tool parts (an error result is not completed)
                if skip(index, pos, block):
                    continue
                if stop(index, pos, block):
                    return scan
                tokens = count(block.text)
                scan.total += tokens
                if scan.total > protect_tokens:
                    scan.pruned += tokens
                    scan.queued.append((index, pos))
        if UNSENT_USER_TURN in msg.flags:
            turns += 1  # the turn's user message, not imported, stood just before this one
    return scan


def clear_blocks(message: Message, positions: set[int], placeholder: str) -> Message:
    """``message`` with the tool outputs at ``positions`` as ``placeholder``, their
    attachments (the result's parts) dropped."""
    blocks = tuple(
        replace(b, text=placeholder, parts=()) if pos in positions else b
        for pos, b in enumerate(message.blocks)
    )
    return replace(message, blocks=blocks)
