"""OpenAI Chat Completions messages: bare arrays, ``{"messages": [...]}``, chat.completion
responses, JSONL (one conversation or one message per line) and datasets holding many
conversations (tau-bench's ``[{task_id, traj: [...]}]``).

The message conversion here is shared by the SWE-agent and OpenHands importers, which embed
the same message shape.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
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
    ToolDef,
    TranscriptError,
    Usage,
)
from ._common import (
    WarningTally,
    decode_text,
    iter_jsonl,
    load_json,
    note,
    require_content,
    short_title,
)
from ._json_stream import array_items
from ._kit import as_int, data_url_base64
from ._stream import ConversationStream, StreamedFile

FORMAT = "openai-chat"
LABEL = "OpenAI Chat Completions messages"

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
_EXPECTED = (
    'OpenAI chat messages: a JSON array of {"role", "content"} objects, {"messages": [...]}, '
    "a list of such conversations, or JSONL of them"
)


# Small total conversions: untrusted values never raise.


def as_str(value: Any) -> str:
    """Text of a value that should be a string; other JSON values are dumped, None is ''."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def parse_arguments(raw: Any, *, what: str = "tool-call arguments") -> Any:
    """Tool-call arguments: a JSON string parsed when valid, else kept verbatim (noted)."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        if what == "tool-call arguments":
            code = "tool-arguments-not-json"
            message = "tool-call arguments are not valid JSON; kept as the raw string"
        else:
            code, message = "unreadable-json-text", f"{what} are not valid JSON"
        note(code, message, repr(raw[:60]))
        return raw


def openai_usage(raw: Any) -> Usage | None:
    """Usage in the OpenAI convention (``prompt_tokens`` includes cached tokens; LiteLLM adds
    Anthropic's ``cache_creation_input_tokens``, also inside ``prompt_tokens``) as disjoint
    buckets."""
    usage = as_dict(raw)
    if not usage or not any(
        k in usage for k in ("prompt_tokens", "completion_tokens", "input_tokens")
    ):
        return None
    prompt = as_int(usage.get("prompt_tokens", usage.get("input_tokens")))
    details = as_dict(usage.get("prompt_tokens_details") or usage.get("input_tokens_details"))
    cached = as_int(details.get("cached_tokens")) or as_int(usage.get("cache_read_input_tokens"))
    written = as_int(usage.get("cache_creation_input_tokens"))
    uncached = prompt - cached - written
    if uncached < 0:  # the writer did not fold cache writes into prompt_tokens
        uncached = max(prompt - cached, 0)
    out_details = as_dict(
        usage.get("completion_tokens_details") or usage.get("output_tokens_details")
    )
    return Usage(
        input_uncached=uncached,
        cache_read=cached,
        cache_write_5m=written,
        output=as_int(usage.get("completion_tokens", usage.get("output_tokens"))),
        reasoning=as_int(out_details.get("reasoning_tokens")),
        convention="openai",
    )


def _data_url_size(url: str) -> tuple[str, int]:
    """(media type, decoded byte size) of a ``data:`` URL; size of the URL when undecodable."""
    head, _, payload = url.partition(",")
    media_type = head[5:].split(";")[0] or "application/octet-stream"
    if head.endswith(";base64"):
        try:
            return media_type, len(base64.b64decode(payload, validate=False))
        except (binascii.Error, ValueError):
            return media_type, len(payload.encode())
    return media_type, len(payload.encode())


def media_block(url: str, *, default_type: str, raw_type: str) -> Block:
    """A media reference: data URLs keep only type and decoded size, other URLs are kept."""
    if url.startswith("data:"):
        media_type, size = _data_url_size(url)
        return Block(
            BlockKind.MEDIA,
            media_type=media_type,
            size=size,
            raw_type=raw_type,
            data=data_url_base64(url),
        )
    return Block(
        BlockKind.MEDIA,
        text=url,
        media_type=default_type,
        size=len(url.encode()),
        raw_type=raw_type,
    )


def content_blocks(content: Any, warn: WarningTally, where: str) -> list[Block]:
    """Chat ``content``: a string, null, or a list of typed parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Block(BlockKind.TEXT, text=content)] if content else []
    if isinstance(content, dict):  # a lone part instead of a list: seen in hand-made logs
        content = [content]
    if not isinstance(content, list):
        return [Block(BlockKind.TEXT, text=as_str(content))]
    blocks: list[Block] = []
    for part in content:
        if isinstance(part, str):
            blocks.append(Block(BlockKind.TEXT, text=part))
            continue
        part = as_dict(part)
        kind = as_str(part.get("type"))
        if kind in ("text", "input_text", "output_text"):
            blocks.append(Block(BlockKind.TEXT, text=as_str(part.get("text")), raw_type=kind))
        elif kind == "refusal":
            blocks.append(Block(BlockKind.TEXT, text=as_str(part.get("refusal")), raw_type=kind))
        elif kind == "image_url":
            image = part.get("image_url")
            url = as_str(as_dict(image).get("url") if isinstance(image, dict) else image)
            blocks.append(media_block(url, default_type="image", raw_type=kind))
        elif kind == "input_audio":
            audio = as_dict(part.get("input_audio"))
            data = as_str(audio.get("data"))
            fmt = as_str(audio.get("format")) or "audio"
            blocks.append(
                Block(
                    BlockKind.MEDIA,
                    media_type=f"audio/{fmt}",
                    size=len(data) * 3 // 4,
                    raw_type=kind,
                    data=data,
                )
            )
        elif kind == "file":
            file = as_dict(part.get("file"))
            data = as_str(file.get("file_data"))
            label = as_str(file.get("filename") or file.get("file_id"))
            blocks.append(
                Block(
                    BlockKind.MEDIA,
                    text=label,
                    media_type="file",
                    size=len(data) * 3 // 4,
                    raw_type=kind,
                    data=data_url_base64(data) if data.startswith("data:") else data,
                )
            )
        else:
            warn.add(f"unknown content part type {kind!r} kept as opaque", where)
            blocks.append(
                Block(
                    BlockKind.OPAQUE,
                    raw_type=kind or "unknown",
                    size=len(json.dumps(part, ensure_ascii=False).encode()),
                )
            )
    return blocks


def flatten_result(content: Any, warn: WarningTally, where: str) -> tuple[str, tuple[Block, ...]]:
    """A tool reply's content as (text, parts); parts only when the source used a list."""
    if isinstance(content, list):
        parts = tuple(content_blocks(content, warn, where))
        return "\n".join(b.text for b in parts if b.kind is BlockKind.TEXT), parts
    return as_str(content), ()


def tool_call_blocks(raw: Any, *, synth_id: Callable[[], str]) -> list[Block]:
    """Assistant ``tool_calls`` as tool_use blocks (ids synthesised when missing)."""
    blocks = []
    for call in as_list(raw):
        call = as_dict(call)
        function = as_dict(call.get("function"))
        blocks.append(
            Block(
                BlockKind.TOOL_USE,
                tool_id=as_str(call.get("id")) or synth_id(),
                tool_name=as_str(function.get("name") or call.get("name")),
                tool_input=parse_arguments(function.get("arguments", call.get("arguments"))),
                raw_type=as_str(call.get("type")) or "function",
            )
        )
    return blocks


def tool_defs(raw: Any) -> tuple[ToolDef, ...]:
    """``tools`` as ``[{type: function, function: {...}}]`` or bare function schemas; also a
    JSON string of either (ShareGPT datasets)."""
    if isinstance(raw, str):
        raw = parse_arguments(raw, what="tool definitions (a JSON string); skipped, they")
    out = []
    for tool in as_list(raw):
        tool = as_dict(tool)
        spec = as_dict(tool.get("function")) or tool
        name = as_str(spec.get("name"))
        if name:
            out.append(
                ToolDef(
                    name=name,
                    description=as_str(spec.get("description")),
                    parameters=spec.get("parameters", spec.get("input_schema")),
                )
            )
    return tuple(out)


@dataclass(slots=True)
class MessageConverter:
    """Converts one conversation's chat messages; keeps the state that links legacy
    ``function_call``s to their ``function`` replies."""

    conv_id: str
    warn: WarningTally
    position: Callable[[int], SourcePos]
    _pending_legacy: list[str] = field(default_factory=list)
    _names: dict[str, str] = field(default_factory=dict)  # tool id -> tool name, for results
    _counter: int = 0

    def synth_id(self) -> str:
        self._counter += 1
        return f"{self.conv_id}:call{self._counter}"

    def convert(
        self, index: int, raw: Any, *, flags: frozenset[str] = frozenset()
    ) -> Message | None:
        pos = self.position(index)
        where = str(pos)
        if not isinstance(raw, dict):
            self.warn.add("skipped a message that is not a JSON object", where)
            return None
        role_name = as_str(raw.get("role"))
        role = _ROLES.get(role_name)
        if role is None:
            self.warn.add(f"skipped a message with unknown role {role_name!r}", where)
            return None
        blocks: list[Block] = []
        if role is Role.TOOL:
            text, parts = flatten_result(raw.get("content"), self.warn, where)
            if role_name == "function":
                tool_id = self._pending_legacy.pop(0) if self._pending_legacy else self.synth_id()
            else:
                ids = [as_str(i) for i in as_list(raw.get("tool_call_ids"))]
                tool_id = as_str(raw.get("tool_call_id")) or (ids[0] if ids else "")
                if len(ids) > 1:
                    self.warn.add(
                        "a tool message answers several calls: linked to the first", where
                    )
            blocks.append(
                Block(
                    BlockKind.TOOL_RESULT,
                    tool_id=tool_id,
                    tool_name=as_str(raw.get("name")) or self._names.get(tool_id, ""),
                    text=text,
                    parts=parts,
                    raw_type=role_name,
                )
            )
        else:
            reasoning = raw.get("reasoning_content") or raw.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                blocks.append(Block(BlockKind.THINKING, text=reasoning, raw_type="reasoning"))
            blocks.extend(content_blocks(raw.get("content"), self.warn, where))
            if isinstance(raw.get("refusal"), str) and raw["refusal"]:
                blocks.append(Block(BlockKind.TEXT, text=raw["refusal"], raw_type="refusal"))
            blocks.extend(tool_call_blocks(raw.get("tool_calls"), synth_id=self.synth_id))
            if any(b.kind is BlockKind.TOOL_USE and not b.tool_name for b in blocks):
                self.warn.add("a tool call without a function name: kept unnamed", where)
            legacy = raw.get("function_call")
            if isinstance(legacy, dict):
                call_id = self.synth_id()
                self._pending_legacy.append(call_id)
                blocks.append(
                    Block(
                        BlockKind.TOOL_USE,
                        tool_id=call_id,
                        tool_name=as_str(legacy.get("name")),
                        tool_input=parse_arguments(legacy.get("arguments")),
                        raw_type="function_call",
                    )
                )
        if not blocks and "content" not in raw:  # not null (allowed): absent
            self.warn.add("a message without a content key: kept empty", where)
        for block in blocks:
            if block.kind is BlockKind.TOOL_USE:
                self._names[block.tool_id] = block.tool_name
        return Message(
            role=role,
            blocks=tuple(blocks),
            source=pos,
            timestamp=as_str(raw.get("timestamp")) or None,
            model=as_str(raw.get("model")),
            usage=openai_usage(raw.get("usage")),
            id=as_str(raw.get("id")),
            name=as_str(raw.get("name")),
            flags=flags | {"demonstration"} if raw.get("is_demo") is True else flags,
        )


def title_of(messages: Iterable[Message], fallback: str) -> str:
    for message in messages:
        if message.role is Role.USER and message.text.strip():
            return short_title(message.text)
    return fallback


def build_conversation(
    conv_id: str,
    raw_messages: Iterable[Any],
    *,
    warn: WarningTally,
    position: Callable[[int], SourcePos],
    title: str = "",
    tools: tuple[ToolDef, ...] = (),
    metadata: tuple[tuple[str, str], ...] = (),
    model: str = "",
) -> Conversation:
    converter = MessageConverter(conv_id, warn, position)
    messages = [m for i, raw in enumerate(raw_messages) if (m := converter.convert(i, raw))]
    models = [m.model for m in messages if m.model]
    return Conversation(
        id=conv_id,
        title=title or title_of(messages, conv_id),
        messages=tuple(messages),
        tools=tools,
        model=model or (models[-1] if models else ""),
        metadata=metadata,
        usage_convention="openai" if any(m.usage for m in messages) else "",
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
        self._title: str | None = None
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
            # build_conversation's title_of, model and usage convention, as they come
            if self._title is None and message.role is Role.USER and message.text.strip():
                self._title = short_title(message.text)
            self._model = message.model or self._model
            self._usage = self._usage or message.usage is not None
            yield message

    def conversation(self, messages: tuple[Message, ...] = ()) -> Conversation:
        conv_id = self.name or "conversation"
        return Conversation(
            id=conv_id,
            title=self._title or conv_id,
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
    seen: dict[str, Any] = {"count": 0, "title": None, "model": "", "usage": False}

    def messages() -> Iterator[Message]:
        for i, raw in enumerate(chain([first], items)):
            message = converter.convert(i, raw)
            if message is None:
                continue
            seen["count"] += 1
            if seen["title"] is None and message.role is Role.USER and message.text.strip():
                seen["title"] = short_title(message.text)
            seen["model"] = message.model or seen["model"]
            seen["usage"] = seen["usage"] or message.usage is not None
            yield message

    def finish() -> Conversation:
        if not seen["count"]:
            raise TranscriptError("no chat messages found", file=name, expected=_EXPECTED)
        return Conversation(
            id=conv_id,
            title=seen["title"] or conv_id,
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
