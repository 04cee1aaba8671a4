"""ShareGPT datasets: ``[{id?, conversations: [{from, value}], system?, tools?}]`` (also
JSONL), with LLaMA-Factory's ``function_call`` / ``observation`` turns, and the
messages-with-typed-content variant (``messages: [{role, content: str | [{type, text|value}]}]``).

There are no tool ids in these files: calls and results are linked by position, so ids are
synthesised (``<conversation>:call<n>``) and each result answers the oldest unanswered call.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ._common import WarningTally, iter_jsonl, load_json, require_content, short_title
from ._kit import title_from
from .openai_chat import _looks_like_jsonl, as_dict, as_list, as_str, parse_arguments, tool_defs

FORMAT = "sharegpt"
LABEL = "ShareGPT dataset"

_ROLES = {
    "human": Role.USER,
    "user": Role.USER,
    "gpt": Role.ASSISTANT,
    "assistant": Role.ASSISTANT,
    "bot": Role.ASSISTANT,
    "chatgpt": Role.ASSISTANT,
    "model": Role.ASSISTANT,
    "system": Role.SYSTEM,
    "function_call": Role.ASSISTANT,
    "tool_call": Role.ASSISTANT,
    "observation": Role.TOOL,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
_CALL_TURNS = {"function_call", "tool_call"}
_EXPECTED = (
    'ShareGPT records: a JSON array of {"conversations": [{"from", "value"}]} '
    'or {"messages": [{"role", "content"}]} objects'
)


class _Linker:
    """Synthesised tool ids, linked by adjacency."""

    def __init__(self, conv_id: str) -> None:
        self.conv_id = conv_id
        self.count = 0
        self.pending: deque[tuple[str, str]] = deque()

    def call(self, name: str) -> str:
        self.count += 1
        tool_id = f"{self.conv_id}:call{self.count}"
        self.pending.append((tool_id, name))
        return tool_id

    def result(self) -> tuple[str, str]:
        """(id, tool name) of the oldest unanswered call; empty when there is none."""
        return self.pending.popleft() if self.pending else ("", "")


def _call_blocks(value: Any, linker: _Linker, raw_type: str) -> list[Block]:
    """A ``function_call`` value: JSON ``{name, arguments}`` (or a list of them, for parallel
    calls), possibly as a string; anything else is kept as a call with the raw input."""
    parsed = parse_arguments(value)
    calls = parsed if isinstance(parsed, list) and parsed else [parsed]
    blocks = []
    for call in calls:
        if isinstance(call, dict):
            name = as_str(call.get("name"))
            args = call.get("arguments", call.get("parameters", call.get("args")))
            tool_input = parse_arguments(args)
        else:
            name, tool_input = "", call
        blocks.append(
            Block(
                BlockKind.TOOL_USE,
                tool_id=linker.call(name),
                tool_name=name,
                tool_input=tool_input,
                raw_type=raw_type,
            )
        )
    return blocks


def _typed_parts(content: Any, linker: _Linker, warn: WarningTally, where: str) -> list[Block]:
    """``content`` as a string or typed parts (``text``/``value`` keys)."""
    if isinstance(content, str) or content is None:
        return [Block(BlockKind.TEXT, text=content)] if content else []
    blocks: list[Block] = []
    for part in as_list(content) or [content]:
        part = as_dict(part)
        kind = as_str(part.get("type"))
        value = part.get("text", part.get("value"))
        if kind == "text":
            blocks.append(Block(BlockKind.TEXT, text=as_str(value), raw_type=kind))
        elif kind in ("reasoning", "thinking"):
            blocks.append(Block(BlockKind.THINKING, text=as_str(value), raw_type=kind))
        elif kind in ("tool_call", "function_call"):
            blocks.extend(_call_blocks(value, linker, kind))
        else:
            warn.add(f"unknown content part type {kind!r} kept as text", where)
            blocks.append(Block(BlockKind.TEXT, text=as_str(value), raw_type=kind or "unknown"))
    return blocks


def _message(turn: Any, linker: _Linker, pos: SourcePos, warn: WarningTally) -> Message | None:
    where = str(pos)
    if not isinstance(turn, dict):
        warn.add("skipped a turn that is not a JSON object", where)
        return None
    speaker = as_str(turn.get("from", turn.get("role")))
    role = _ROLES.get(speaker.lower())
    if role is None:
        warn.add(f"skipped a turn from unknown speaker {speaker!r}", where)
        return None
    value = turn.get("value", turn.get("content"))
    if value is None:
        warn.add("a turn without a value: kept as an empty message", where)
    if speaker in _CALL_TURNS:
        blocks = _call_blocks(value, linker, speaker)
    elif role is Role.TOOL:
        text = (
            as_str(value)
            if not isinstance(value, list)
            else "\n".join(b.text for b in _typed_parts(value, linker, warn, where))
        )
        tool_id, tool_name = linker.result()
        blocks = [
            Block(
                BlockKind.TOOL_RESULT,
                tool_id=tool_id,
                tool_name=tool_name,
                text=text,
                raw_type=speaker,
            )
        ]
    else:
        blocks = _typed_parts(value, linker, warn, where)
    return Message(role=role, blocks=tuple(blocks), source=pos, name=as_str(turn.get("name")))


def _conversation(
    record: Any, index: int, *, name: str, line: int | None, used: set[str], warn: WarningTally
) -> Conversation | None:
    where = f"line {line}" if line is not None else f"record {index}"
    if not isinstance(record, dict):
        warn.add("skipped a record that is not a JSON object", where)
        return None
    turns = record.get("conversations", record.get("messages"))
    if not isinstance(turns, list):
        warn.add("skipped a record with no conversations/messages list", where)
        return None
    source_id = as_str(record.get("id")) if isinstance(record.get("id"), (str, int)) else ""
    conv_id = source_id if source_id and source_id not in used else f"{name}#{index}"
    used.add(conv_id)
    linker = _Linker(conv_id)
    messages: list[Message] = []
    system = record.get("system")
    if isinstance(system, str) and system:
        pos = SourcePos(name, line=line) if line is not None else SourcePos(name, record=index)
        messages.append(Message(Role.SYSTEM, (Block(BlockKind.TEXT, text=system),), source=pos))
    for i, turn in enumerate(turns):
        pos = SourcePos(name, line=line) if line is not None else SourcePos(name, record=i)
        message = _message(turn, linker, pos, warn)
        if message is not None:
            messages.append(message)
    first_user = title_from(messages, fallback="")
    return Conversation(
        id=conv_id,
        title=short_title(first_user) if first_user else conv_id,
        messages=tuple(messages),
        tools=tool_defs(record.get("tools")),
        metadata=(("id", source_id),) if source_id else (),
    )


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    warn = WarningTally()
    records: list[tuple[int | None, Any]]
    if _looks_like_jsonl(data):
        records = [(n, v) for n, v in iter_jsonl(data, name)]
    else:
        value = load_json(data, name)
        records = [(None, v) for v in (value if isinstance(value, list) else [value])]
    used: set[str] = set()
    conversations = []
    for index, (line, record) in enumerate(records):
        conv = _conversation(record, index, name=name, line=line, used=used, warn=warn)
        if conv is not None and conv.messages:
            conversations.append(conv)
    if not conversations:
        raise TranscriptError("no ShareGPT conversations found", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, tuple(conversations), warn.freeze())


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if not text.startswith((b"[", b"{")):
        return 0
    if b'"conversations"' in text and b'"from"' in text and b'"value"' in text:
        return 90
    # LLaMA-Factory v1: typed parts carrying "value" instead of "text".
    if b'"messages"' in text and b'"role"' in text and b'"value"' in text and b'"type"' in text:
        return 60
    return 0
