"""Source messages as the message lists of agent frameworks hold them (Strands Agents'
``agent.messages``, AutoGen's model context).

A transcript may split one model response over several records (Claude Code writes one per
content block, with the response's id) and one tool result per record; the frameworks hold
one message per response and, after it, one message with every tool result it asked for.
So a *unit* is:

- consecutive assistant messages of one inference call (same non-empty id, as
  ``replay.call_starts`` decides), or
- consecutive messages that hold tool results only (role tool, or user with only
  tool_result blocks), or
- any other message alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.model import BlockKind, Message, Role


@dataclass(slots=True)
class Unit:
    """One framework message: its source indexes and what its content holds."""

    role: str  # "user" | "assistant"
    sources: list[int] = field(default_factory=list)
    tool_use: bool = False
    tool_result: bool = False
    results_only: bool = False  # every block is a tool result (a tool-result message)
    text: bool = False  # some text block
    call_id: str = ""  # the response id of an assistant unit


def results_only(message: Message) -> bool:
    return bool(message.blocks) and all(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


def continues(unit: Unit | None, message: Message) -> bool:
    """Whether ``message`` belongs to ``unit`` (the last one) rather than starting one."""
    if unit is None:
        return False
    if message.role is Role.ASSISTANT:
        return unit.role == "assistant" and bool(message.id) and unit.call_id == message.id
    return unit.results_only and results_only(message)


def add(units: list[Unit], message: Message, index: int, *, start: int = 0) -> Unit:
    """Put source message ``index`` into the last unit (from ``start`` on) or a new one."""
    last = units[-1] if len(units) > start else None
    if last is None or not continues(last, message):
        last = Unit(
            role="assistant" if message.role is Role.ASSISTANT else "user",
            call_id=message.id if message.role is Role.ASSISTANT else "",
            results_only=results_only(message),
        )
        units.append(last)
    last.sources.append(index)
    kinds = {b.kind for b in message.blocks}
    last.tool_use = last.tool_use or BlockKind.TOOL_USE in kinds
    last.tool_result = last.tool_result or BlockKind.TOOL_RESULT in kinds
    last.text = last.text or BlockKind.TEXT in kinds
    return last
