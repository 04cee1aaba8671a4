"""ShareGPT datasets: ``[{id?, conversations: [{from, value}], system?, tools?}]`` (also
JSONL), with LLaMA-Factory's ``function_call`` / ``observation`` turns, and the
messages-with-typed-content variant (``messages: [{role, content: str | [{type, text|value}]}]``).

Calls and results are paired by id where the file has ids (a call's ``id``, a result's
``tool_call_id``/``call_id``/``id``), else by order within the turn: ids are synthesised
(``<conversation>:call<n>``) and a tool turn answers the calls of the call turn before it.
A tool turn carrying a JSON array after a turn of several calls (LLaMA-Factory's parallel
calls) is one result per element. Counts that do not match are warned
(``tool-results-paired-by-order``), never guessed silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    ImportWarning,
    Message,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ._common import WarningTally, iter_jsonl, load_json, require_content, short_title
from ._json_stream import array_items
from ._kit import title_from
from ._openai_messages import as_dict, as_list, as_str, parse_arguments, tool_defs
from ._stream import ConversationStream, StreamedFile, stream_of
from .openai_chat import _looks_like_jsonl

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
    """Tool ids: the call's own id when it has one, else synthesised; results pair with the
    calls of the latest call turn, by id where the result names one, else in order."""

    def __init__(self, conv_id: str, warn: WarningTally) -> None:
        self.conv_id = conv_id
        self.warn = warn
        self.count = 0
        self.turn: list[tuple[str, str]] = []  # the latest call turn's unanswered calls
        self.turn_where = ""

    def start_turn(self, where: str) -> None:
        """A new call turn: calls of the previous one still unanswered stay so."""
        if self.turn:
            self._unanswered(self.turn_where)
        self.turn = []
        self.turn_where = where

    def call(self, name: str, source_id: str = "") -> str:
        self.count += 1
        tool_id = source_id or f"{self.conv_id}:call{self.count}"
        self.turn.append((tool_id, name))
        return tool_id

    def calls_waiting(self) -> int:
        return len(self.turn)

    def waiting_ids(self) -> set[str]:
        return {tool_id for tool_id, _ in self.turn}

    def result(self, source_id: str = "", where: str = "") -> tuple[str, str]:
        """(id, tool name) of the call a result answers: the one it names, else the next
        unanswered call of the latest call turn; empty when there is none."""
        if source_id:
            for i, (tool_id, name) in enumerate(self.turn):
                if tool_id == source_id:
                    del self.turn[i]
                    return tool_id, name
            self.warn.add(
                "a tool result names a call id that no call of its turn has: kept, unpaired",
                where, code="tool-result-unknown-id",
            )  # fmt: skip
            return source_id, ""
        if self.turn:
            return self.turn.pop(0)
        self.warn.add(
            "a tool result with no unanswered call in the turn before it: kept, unpaired",
            where, code="tool-results-paired-by-order",
        )  # fmt: skip
        return "", ""

    def _unanswered(self, where: str) -> None:
        self.warn.add(
            "tool calls with no result in the turns after them",
            where, code="tool-results-paired-by-order", count=len(self.turn),
        )  # fmt: skip

    def finish(self) -> None:
        if self.turn:
            self._unanswered(self.turn_where)
        self.turn = []


_ID_KEYS = ("tool_call_id", "call_id")  # a result naming its call; a call's own: "id" too
_RESULT_KEYS = ("content", "result", "output", "value")


def _id_of(value: Any, keys: tuple[str, ...] = (*_ID_KEYS, "id")) -> str:
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), (str, int)) and value.get(key) != "":
                return str(value[key])
    return ""


def _result_id(value: Any, linker: _Linker) -> str:
    """The call a result names: ``tool_call_id``/``call_id``, or an ``id`` that is one of
    the waiting calls' (a result's own data may have an ``id`` of its own)."""
    named = _id_of(value, _ID_KEYS)
    if named:
        return named
    own = _id_of(value, ("id",))
    return own if own and own in linker.waiting_ids() else ""


def _result_text(value: Any, named: bool) -> str:
    if isinstance(value, str):
        return value
    if named and isinstance(value, dict):
        for key in _RESULT_KEYS:
            if key in value:
                return _result_text(value[key], False)
    return json.dumps(value, ensure_ascii=False)


def _json_or_none(text: str) -> Any:
    """A result's text parsed when it is a JSON array or object, else None (plain text)."""
    if not text.lstrip().startswith(("[", "{")):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _result_blocks(
    value: Any, text: str, linker: _Linker, raw_type: str, where: str, turn_id: str = ""
) -> list[Block]:
    """A tool turn: one result, or (when the call turn before it made several calls and
    the turn carries a JSON array) one result per element, paired by the id an element
    names, else in order within the turn; a count that does not match is warned."""
    parsed = _json_or_none(value) if isinstance(value, str) else value
    waiting = linker.calls_waiting()
    ids = [_result_id(p, linker) for p in parsed] if isinstance(parsed, list) else []
    if isinstance(parsed, list) and parsed and (waiting > 1 or all(ids)):
        if not all(ids) and len(parsed) != waiting:
            linker.warn.add(
                f"a tool turn carries {len(parsed)} results for {waiting} calls: paired in order",
                where, code="tool-results-paired-by-order",
            )  # fmt: skip
        items = [(i, _result_text(p, bool(i))) for i, p in zip(ids, parsed, strict=True)]
    elif _result_id(parsed, linker):
        items = [(_result_id(parsed, linker), _result_text(parsed, True))]
    else:  # one result (several calls may be answered by one turn each), or the turn's id
        items = [(turn_id, text)]
    blocks = []
    for source_id, result_text in items:
        tool_id, tool_name = linker.result(source_id, where)
        blocks.append(
            Block(
                BlockKind.TOOL_RESULT,
                tool_id=tool_id,
                tool_name=tool_name,
                text=result_text,
                raw_type=raw_type,
            )
        )
    return blocks


def _call_blocks(value: Any, linker: _Linker, raw_type: str) -> list[Block]:
    """A ``function_call`` value: JSON ``{name, arguments}`` (or a list of them, for parallel
    calls), possibly as a string; anything else is kept as a call with the raw input."""
    parsed = parse_arguments(value)
    calls = parsed if isinstance(parsed, list) and parsed else [parsed]
    blocks = []
    for call in calls:
        if isinstance(call, dict):
            function = as_dict(call.get("function")) if "function" in call else call
            name = as_str(function.get("name"))
            args = function.get("arguments", function.get("parameters", function.get("args")))
            tool_input = parse_arguments(args)
        else:
            name, tool_input = "", call
        blocks.append(
            Block(
                BlockKind.TOOL_USE,
                tool_id=linker.call(name, _id_of(call)),
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
        linker.start_turn(where)
        blocks = _call_blocks(value, linker, speaker)
    elif role is Role.TOOL:
        typed = isinstance(value, list) and all(isinstance(p, dict) and "type" in p for p in value)
        if typed:  # typed parts: one result's text
            text = "\n".join(b.text for b in _typed_parts(value, linker, warn, where))
            value = text
        else:
            text = as_str(value)
        turn_id = _id_of(turn, _ID_KEYS)  # {"role": "tool", "tool_call_id": ...}
        blocks = _result_blocks(value, text, linker, speaker, where, turn_id)
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
    linker = _Linker(conv_id, warn)
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
    linker.finish()
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


def stream(data: bytes, *, name: str) -> StreamedFile | None:
    """``parse`` a record at a time (``importers.stream``): JSONL lines, or the items of
    a JSON array (``_json_stream``); each record is one conversation, built whole. None for
    a file that must be read whole (a single record, anything ``array_items`` refuses)."""
    require_content(data, name, _EXPECTED)
    records: Iterator[tuple[int | None, Any]]
    if _looks_like_jsonl(data):
        records = iter_jsonl(data, name)
    else:
        items = array_items(data)
        if items is None:
            return None
        records = ((None, v) for v in items)
    warn = WarningTally()
    found = 0

    def conversations() -> Iterator[ConversationStream]:
        nonlocal found
        used: set[str] = set()
        for index, (line, record) in enumerate(records):
            conv = _conversation(record, index, name=name, line=line, used=used, warn=warn)
            if conv is not None and conv.messages:
                found += 1
                yield stream_of(conv)

    def finish() -> tuple[ImportWarning, ...]:
        if not found:
            raise TranscriptError("no ShareGPT conversations found", file=name, expected=_EXPECTED)
        return warn.freeze()

    return StreamedFile(FORMAT, conversations(), finish)


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
