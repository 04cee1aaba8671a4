"""OpenAI Chat Completions messages: bare arrays, ``{"messages": [...]}``, chat.completion
responses, JSONL (one conversation or one message per line) and datasets holding many
conversations (tau-bench's ``[{task_id, traj: [...]}]``).

The message conversion itself (shared with the importers that embed the same message shape)
is ``_openai_messages``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import chain
from typing import Any

from ..core.model import (
    Conversation,
    ImportWarning,
    Message,
    ParsedFile,
    SourcePos,
    TranscriptError,
)
from ._common import (
    WarningTally,
    decode_text,
    iter_jsonl,
    load_json,
    require_content,
    short_title,
)
from ._json_stream import array_items
from ._kit import TitleFinder
from ._openai_messages import (
    MessageConverter,
    as_dict,
    as_str,
    build_conversation,
    tool_defs,
)
from ._stream import ConversationStream, StreamedFile

FORMAT = "openai-chat"
LABEL = "OpenAI Chat Completions messages"

_EXPECTED = (
    'OpenAI chat messages: a JSON array of {"role", "content"} objects, {"messages": [...]}, '
    "a list of such conversations, or JSONL of them"
)


# File shapes


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def _conversation_messages(value: Any) -> list[Any] | None:
    """The messages list of a conversation-like record, or None."""
    if not isinstance(value, dict):
        return None
    for key in ("messages", "traj", "trajectory", "conversation"):
        inner = value.get(key)
        if isinstance(inner, list) and (not inner or any(_is_message(m) for m in inner)):
            return inner
    return None


def _response_message(value: dict[str, Any]) -> list[Any] | None:
    """A chat.completion response body: its first choice's message, with usage and model."""
    choices = value.get("choices")
    if not isinstance(choices, list) or not choices:
        return None
    message = as_dict(as_dict(choices[0]).get("message"))
    if not message:
        return None
    return [
        {**message, "usage": value.get("usage"), "model": value.get("model"), "id": value.get("id")}
    ]


_META_KEYS = ("task_id", "trial", "reward", "id", "model", "instance_id")


def _record_meta(record: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(
        (key, as_str(record[key]))
        for key in _META_KEYS
        if key in record and isinstance(record[key], (str, int, float))
    )


def _record_title(record: dict[str, Any], messages: list[Any], index: int) -> str:
    if isinstance(record.get("title"), str) and record["title"].strip():
        return short_title(record["title"])
    if "task_id" in record and isinstance(record["task_id"], (str, int)):
        first = next(
            (as_str(m.get("content")) for m in messages if _is_message(m) and m["role"] == "user"),
            "",
        )
        head = f"task {record['task_id']}"
        if isinstance(record.get("trial"), int):
            head += f" trial {record['trial']}"
        return short_title(f"{head}: {first}" if first else head)
    return ""


def _from_records(
    records: list[tuple[SourcePos, Any]], *, name: str, warn: WarningTally, by_line: bool
) -> list[Conversation]:
    """Many conversation records (JSON list items or JSONL lines)."""
    conversations = []
    used: set[str] = set()
    for index, (pos, record) in enumerate(records):
        messages = _conversation_messages(record)
        if messages is None:
            warn.add("skipped a record with no messages list", str(pos))
            continue
        assert isinstance(record, dict)
        source_id = as_str(record.get("id")) if isinstance(record.get("id"), (str, int)) else ""
        conv_id = source_id if source_id and source_id not in used else f"{name}#{index}"
        used.add(conv_id)
        line = pos.line

        def position(i: int, line: int | None = line, index: int = index) -> SourcePos:
            # JSONL: the conversation's line; JSON: the message's index in its record.
            return SourcePos(name, line=line) if by_line else SourcePos(name, record=i)

        conversations.append(
            build_conversation(
                conv_id,
                messages,
                warn=warn,
                position=position,
                title=_record_title(record, messages, index),
                tools=tool_defs(record.get("tools")),
                metadata=_record_meta(record),
                model=as_str(record.get("model")),
            )
        )
    return conversations


def conversations_from_value(value: Any, *, name: str, warn: WarningTally) -> list[Conversation]:
    """Every shape of a whole-file JSON document."""
    single = name or "conversation"
    if isinstance(value, list):
        if any(_is_message(v) for v in value):
            return [
                build_conversation(
                    single, value, warn=warn, position=lambda i: SourcePos(name, record=i)
                )
            ]
        return _from_records(
            [(SourcePos(name, record=i), v) for i, v in enumerate(value)],
            name=name,
            warn=warn,
            by_line=False,
        )
    if isinstance(value, dict):
        messages = _conversation_messages(value) or _response_message(value)
        if messages is not None:
            return [
                build_conversation(
                    as_str(value.get("id")) if isinstance(value.get("id"), str) else single,
                    messages,
                    warn=warn,
                    position=lambda i: SourcePos(name, record=i),
                    title=_record_title(value, messages, 0),
                    tools=tool_defs(value.get("tools")),
                    metadata=_record_meta(value),
                    model=as_str(value.get("model")),
                )
            ]
    return []


def _jsonl_head(data: bytes, name: str) -> tuple[list[tuple[int, Any]], Iterator[tuple[int, Any]]]:
    """The lines up to the first object (which says the file's shape), and the rest."""
    lines = iter_jsonl(data, name)
    head: list[tuple[int, Any]] = []
    for number, value in lines:
        head.append((number, value))
        if isinstance(value, dict):
            break
    return head, lines


def _from_jsonl(data: bytes, *, name: str, warn: WarningTally) -> list[Conversation]:
    head, lines = _jsonl_head(data, name)
    first = head[-1][1] if head and isinstance(head[-1][1], dict) else None
    if not _is_message(first):
        return _from_records(
            [(SourcePos(name, line=n), v) for n, v in chain(head, lines)],
            name=name,
            warn=warn,
            by_line=True,
        )
    reader = _MessageLines(name, chain(head, lines))
    conversation = reader.conversation(tuple(reader.messages()))
    for found in reader.warnings():
        warn.add(found.message, found.where, code=found.code, count=found.count)
    return [conversation]


class _MessageLines:
    """JSONL with one message per line: the file is one conversation. Each line is
    converted as it is read (a million parsed lines never sit beside their messages), and
    ``stream`` hands the messages on one at a time."""

    def __init__(self, name: str, values: Iterator[tuple[int, Any]]) -> None:
        self.name, self._values = name, values
        self._converted = WarningTally()
        self._skipped: list[int] = []
        self._line = 0
        self._converter = MessageConverter(
            name or "conversation", self._converted, lambda i: SourcePos(name, line=self._line)
        )
        self._title = TitleFinder()
        self._model = ""
        self._usage = False
        self.count = 0

    def messages(self) -> Iterator[Message]:
        index = 0
        for number, value in self._values:
            if not _is_message(value):
                self._skipped.append(number)
                continue
            self._line = number
            message = self._converter.convert(index, value)
            index += 1
            if message is None:
                continue
            self.count += 1
            # build_conversation's title, model and usage convention, as they come
            self._title.feed(message)
            self._model = message.model or self._model
            self._usage = self._usage or message.usage is not None
            yield message

    def conversation(self, messages: tuple[Message, ...] = ()) -> Conversation:
        conv_id = self.name or "conversation"
        return Conversation(
            id=conv_id,
            title=self._title.title(conv_id),
            messages=messages,
            model=self._model,
            usage_convention="openai" if self._usage else "",
        )

    def warnings(self) -> tuple[ImportWarning, ...]:
        """In the order of a whole-file pass: the skipped lines, then what converting said."""
        warn = WarningTally()
        for number in self._skipped:
            warn.add("skipped a line that is not a chat message", f"line {number}")
        for found in self._converted.freeze():
            warn.add(found.message, found.where, code=found.code, count=found.count)
        return warn.freeze()


def _array_stream(data: bytes, name: str) -> StreamedFile | None:
    """A JSON array of chat messages, one item at a time (``_json_stream``): what
    ``conversations_from_value`` makes of it whole, message for message."""
    items = array_items(data)
    if items is None:
        return None
    first = next(items, None)
    if not _is_message(first):
        return None  # records, or an empty array: parsed whole
    warn = WarningTally()
    conv_id = name or "conversation"
    converter = MessageConverter(conv_id, warn, lambda i: SourcePos(name, record=i))
    seen: dict[str, Any] = {"count": 0, "model": "", "usage": False}
    title = TitleFinder()

    def messages() -> Iterator[Message]:
        for i, raw in enumerate(chain([first], items)):
            message = converter.convert(i, raw)
            if message is None:
                continue
            seen["count"] += 1
            title.feed(message)
            seen["model"] = message.model or seen["model"]
            seen["usage"] = seen["usage"] or message.usage is not None
            yield message

    def finish() -> Conversation:
        if not seen["count"]:
            raise TranscriptError("no chat messages found", file=name, expected=_EXPECTED)
        return Conversation(
            id=conv_id,
            title=title.title(conv_id),
            messages=(),
            model=seen["model"],
            usage_convention="openai" if seen["usage"] else "",
        )

    return StreamedFile(FORMAT, iter([ConversationStream(messages(), finish)]), warn.freeze)


def stream(data: bytes, *, name: str) -> StreamedFile | None:
    """One-message-per-line JSONL, or a JSON array of messages, read incrementally
    (``importers.stream``); None for every other shape (parsed whole)."""
    require_content(data, name, _EXPECTED)
    if not _looks_like_jsonl(data):
        return _array_stream(data, name)
    head, lines = _jsonl_head(data, name)
    first = head[-1][1] if head and isinstance(head[-1][1], dict) else None
    if not _is_message(first):
        return None
    reader = _MessageLines(name, chain(head, lines))

    def finish() -> Conversation:
        if not reader.count:
            raise TranscriptError("no chat messages found", file=name, expected=_EXPECTED)
        return reader.conversation()

    return StreamedFile(
        FORMAT, iter([ConversationStream(reader.messages(), finish)]), reader.warnings
    )


def _looks_like_jsonl(data: bytes) -> bool:
    first, _, rest = data.strip().partition(b"\n")
    if not rest.strip():
        return False
    try:
        json.loads(decode_text(first))
    except (ValueError, TranscriptError, RecursionError):
        return False
    return True


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    warn = WarningTally()
    if _looks_like_jsonl(data):
        conversations = _from_jsonl(data, name=name, warn=warn)
    else:
        conversations = conversations_from_value(load_json(data, name), name=name, warn=warn)
    if not any(c.messages for c in conversations):
        raise TranscriptError("no chat messages found", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, tuple(c for c in conversations if c.messages), warn.freeze())


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()[:65536]
    if not text.startswith((b"[", b"{")):
        return 0
    has_role = b'"role"' in text
    if not has_role:
        return 0
    # Markers of other formats that also carry "role".
    if b'"conversations"' in text and b'"from"' in text:
        return 0
    if b'"tool_use"' in text or b'"tool_result"' in text or b'"anthropic_version"' in text:
        return 5
    if b'"history"' in text and (b'"trajectory"' in text or b'"instance_id"' in text):
        return 5
    if b'"trajectory"' in text and b'"observation"' in text:
        return 5  # SWE-agent steps
    if b'"tool_call_metadata"' in text or (b'"observation"' in text and b'"action"' in text):
        return 5  # OpenHands events embed chat.completion responses
    if b'"type": "message"' in text or b'"type":"message"' in text:
        return 10  # Responses API items
    score = 40
    if b'"traj"' in text:
        score = 90
    if b'"tool_calls"' in text or b'"tool_call_id"' in text or b'"function_call"' in text:
        score = max(score, 75)
    if b'"role": "system"' in text or b'"role":"system"' in text:
        score = max(score, 60)
    if b'"chat.completion"' in text:
        score = max(score, 80)
    return score
