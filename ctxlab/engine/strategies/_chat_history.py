"""A transcript's messages as a framework's chat history of OpenAI-style messages.

Shared by the strategies that port a history reducer working on whole chat messages
(Semantic Kernel's reducers, AG2's transforms): each keeps its own list of ``Chat``
entries (what the framework's history holds), decides on that list, and the replay shows
a source message whole, in part (some of its entries gone) or not at all.

``split``: one entry per OpenAI chat message (Semantic Kernel's connectors add one
``TOOL`` message per function result): a source message's tool results become one
``tool`` entry each, its other blocks one ``user`` entry after them. ``whole``: one entry
per source message (AG2 keeps a batch of tool responses as one ``tool`` message).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.model import BlockKind, Message, Role


@dataclass(slots=True, eq=False)
class Chat:
    """One message of the framework's history (identity matters, not value)."""

    role: str  # "system" | "user" | "assistant" | "tool"
    source: int  # the source message it comes from (-1: made by the strategy)
    parts: tuple[int, ...] = ()  # the source message's block positions it holds
    calls: tuple[str, ...] = ()  # function call ids (assistant)
    results: tuple[str, ...] = ()  # function result ids (tool)
    summary: bool = False  # a summary the reducer made (metadata __summary__)
    text: str = ""  # a summary's text


def _role(message: Message) -> str:
    if message.role is Role.SYSTEM:
        return "system"
    return "assistant" if message.role is Role.ASSISTANT else "user"


def split(message: Message, source: int) -> list[Chat]:
    """One chat message per OpenAI message: tool results first (one each), then the rest."""
    role = _role(message)
    blocks = message.blocks
    if message.role is Role.TOOL:  # a tool message holding text only is a TOOL message too
        results = tuple(b.tool_id for b in blocks if b.kind is BlockKind.TOOL_RESULT)
        if not results:
            return [Chat("tool", source, tuple(range(len(blocks))))]
    if role != "user":
        calls = tuple(b.tool_id for b in blocks if b.kind is BlockKind.TOOL_USE)
        return [Chat(role, source, tuple(range(len(blocks))), calls=calls)]
    out: list[Chat] = []
    rest: list[int] = []
    for pos, block in enumerate(blocks):
        if block.kind is BlockKind.TOOL_RESULT:
            out.append(Chat("tool", source, (pos,), results=(block.tool_id,)))
        else:
            rest.append(pos)
    if rest or not out:
        out.append(Chat("user", source, tuple(rest)))
    return out


def whole(message: Message, source: int) -> Chat:
    """One chat message for the whole source message (``tool`` when it holds results)."""
    role = _role(message)
    blocks = message.blocks
    calls = tuple(b.tool_id for b in blocks if b.kind is BlockKind.TOOL_USE)
    results = tuple(b.tool_id for b in blocks if b.kind is BlockKind.TOOL_RESULT)
    if role == "user" and (results or message.role is Role.TOOL):
        role = "tool"
    return Chat(role, source, tuple(range(len(blocks))), calls=calls, results=results)


def shown(original: Message, entries: list[Chat]) -> Message:
    """The part of ``original`` its remaining entries hold (blocks in source order)."""
    keep = sorted({p for e in entries for p in e.parts})
    return replace(original, blocks=tuple(original.blocks[p] for p in keep))


def gone_sources(
    old: list[Chat], new: list[Chat], remaining: dict[int, int]
) -> tuple[list[int], list[int]]:
    """Sources whose entries left the history between ``old`` and ``new``: (whole ones,
    partly kept ones); ``remaining`` (source -> entries still held) is updated."""
    kept = {id(e) for e in new}
    touched: set[int] = set()
    for e in old:
        if id(e) not in kept and e.source >= 0:
            remaining[e.source] -= 1
            touched.add(e.source)
    whole_gone = sorted(s for s in touched if remaining[s] == 0)
    partly = sorted(s for s in touched if remaining[s] > 0)
    return whole_gone, partly
