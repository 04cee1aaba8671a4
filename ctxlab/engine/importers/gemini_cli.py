"""Gemini CLI sessions: the single-JSON ``session-*.json`` of older releases, the append-only
``session-*.jsonl`` of newer ones, and ``/chat save`` checkpoints (raw ``Content[]``).

Gemini CLI stores each tool call together with its result inside the ``gemini`` message:
it is split into an assistant message (thoughts as thinking, text, tool_use blocks) followed
by a tool message holding the results, the order the model saw them in. ``info`` /
``warning`` / ``error`` records are UI notices the model never saw: skipped, counted.
JSONL: a record whose ``id`` was seen before replaces the earlier one in place;
``{"$rewindTo": id}`` drops that message and every later one (the user rewound to before it);
``{"$set": {...}}`` updates session metadata.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from ._common import WarningTally, iter_jsonl, load_json, require_content, short_title
from ._kit import as_int, base64_size, title_from
from ._openai_messages import as_dict, as_list, as_str
from .openai_chat import _looks_like_jsonl

FORMAT = "gemini-cli"
LABEL = "Gemini CLI session"

_EXPECTED = (
    'a Gemini CLI session: {"sessionId", "messages": [...]} JSON, session JSONL records, '
    'or a checkpoint list of {"role", "parts"}'
)
_UI_TYPES = {"info", "warning", "error"}
_META_KEYS = ("sessionId", "projectHash", "startTime", "lastUpdated", "kind")


def gemini_usage(raw: Any) -> Usage | None:
    """``tokens{input, output, cached, thoughts, tool}``: ``input`` includes ``cached``;
    ``thoughts`` are billed as output; ``tool`` (tool-use prompt) is prompt input."""
    tokens = as_dict(raw)
    if not tokens:
        return None
    cached = as_int(tokens.get("cached"))
    thoughts = as_int(tokens.get("thoughts"))
    return Usage(
        input_uncached=max(as_int(tokens.get("input")) - cached, 0) + as_int(tokens.get("tool")),
        cache_read=cached,
        output=as_int(tokens.get("output")) + thoughts,
        reasoning=thoughts,
        convention="gemini",
    )


def _part_blocks(parts: Any, warn: WarningTally, where: str) -> list[Block]:
    """Gemini ``PartListUnion``: a string, a part, or a list of parts/strings."""
    if parts is None:
        return []
    if isinstance(parts, str):
        return [Block(BlockKind.TEXT, text=parts)] if parts else []
    blocks: list[Block] = []
    for part in parts if isinstance(parts, list) else [parts]:
        if isinstance(part, str):
            blocks.append(Block(BlockKind.TEXT, text=part))
            continue
        part = as_dict(part)
        if "text" in part:
            kind = BlockKind.THINKING if part.get("thought") is True else BlockKind.TEXT
            blocks.append(Block(kind, text=as_str(part.get("text"))))
        elif "inlineData" in part:
            data = as_dict(part["inlineData"])
            blocks.append(
                Block(
                    BlockKind.MEDIA,
                    media_type=as_str(data.get("mimeType")) or "application/octet-stream",
                    size=base64_size(as_str(data.get("data"))),  # padding excluded
                    raw_type="inlineData",
                    data=as_str(data.get("data")),
                )
            )
        elif "fileData" in part:
            data = as_dict(part["fileData"])
            uri = as_str(data.get("fileUri"))
            blocks.append(
                Block(
                    BlockKind.MEDIA,
                    text=uri,
                    media_type=as_str(data.get("mimeType")) or "file",
                    size=len(uri.encode()),
                    raw_type="fileData",
                )
            )
        elif "functionResponse" in part:
            blocks.append(
                Block(BlockKind.TEXT, text=_response_text(part), raw_type="functionResponse")
            )
        else:
            key = next(iter(part), "unknown") if part else "unknown"
            warn.add(f"unknown Gemini part {key!r} kept as opaque", where)
            blocks.append(
                Block(
                    BlockKind.OPAQUE,
                    raw_type=key,
                    size=len(json.dumps(part, ensure_ascii=False).encode()),
                )
            )
    return blocks


def _response_text(part: dict[str, Any]) -> str:
    """The model-visible text of a ``functionResponse`` part."""
    response = as_dict(part.get("functionResponse")).get("response")
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if key in response:
                return as_str(response[key])
    return as_str(response)


def _result(call: dict[str, Any], tool_id: str, name: str) -> Block | None:
    """A tool call's stored result as a tool_result block (None when it has none)."""
    result = call.get("result")
    if result is None or result == []:
        return None
    texts, parts = [], []
    for part in result if isinstance(result, list) else [result]:
        if isinstance(part, dict) and "functionResponse" in part:
            texts.append(_response_text(part))
        elif isinstance(part, dict) and "text" in part:
            texts.append(as_str(part["text"]))
        elif isinstance(part, str):
            texts.append(part)
        else:
            parts.append(
                Block(
                    BlockKind.OPAQUE,
                    raw_type="part",
                    size=len(json.dumps(part, ensure_ascii=False).encode()),
                )
            )
    error = as_str(call.get("status")) in ("error", "cancelled")
    return Block(
        BlockKind.TOOL_RESULT,
        tool_id=tool_id,
        tool_name=name,
        text="\n".join(texts),
        is_error=error,
        parts=tuple(parts),
        raw_type="functionResponse",
    )


def _record_messages(
    record: dict[str, Any], pos: SourcePos, warn: WarningTally, conv_id: str, counter: list[int]
) -> list[Message]:
    """One message record as one or two messages (assistant + its tool results)."""
    kind = as_str(record.get("type"))
    where = str(pos)
    stamp = as_str(record.get("timestamp")) or None
    msg_id = as_str(record.get("id"))
    if kind == "user":
        blocks = _part_blocks(record.get("content"), warn, where)
        return [Message(Role.USER, tuple(blocks), source=pos, timestamp=stamp, id=msg_id)]
    if kind != "gemini":
        warn.add(
            "UI notices (info/warning/error) are not model context: skipped"
            if kind in _UI_TYPES
            else f"skipped a message of unknown type {kind!r}",
            where,
        )
        return []
    blocks = []
    for thought in as_list(record.get("thoughts")):
        thought = as_dict(thought)
        subject, text = as_str(thought.get("subject")), as_str(thought.get("description"))
        blocks.append(Block(BlockKind.THINKING, text=f"{subject}\n{text}" if subject else text))
    blocks.extend(_part_blocks(record.get("content"), warn, where))
    results = []
    for call in as_list(record.get("toolCalls")):
        call = as_dict(call)
        tool_id = as_str(call.get("id"))
        if not tool_id:
            counter[0] += 1
            tool_id = f"{conv_id}:call{counter[0]}"
        name = as_str(call.get("name"))
        blocks.append(
            Block(
                BlockKind.TOOL_USE,
                tool_id=tool_id,
                tool_name=name,
                tool_input=call.get("args", {}),
                raw_type="functionCall",
            )
        )
        if (result := _result(call, tool_id, name)) is not None:
            results.append(result)
    model = as_str(record.get("model"))
    out = [
        Message(
            Role.ASSISTANT,
            tuple(blocks),
            source=pos,
            timestamp=stamp,
            model=model,
            usage=gemini_usage(record.get("tokens")),
            id=msg_id,
        )
    ]
    if results:
        calls = as_list(record.get("toolCalls"))
        when = as_str(as_dict(calls[-1]).get("timestamp")) or stamp if calls else stamp
        out.append(Message(Role.TOOL, tuple(results), source=pos, timestamp=when))
    return out


def _session(
    records: list[tuple[SourcePos, dict[str, Any]]],
    meta: dict[str, Any],
    *,
    name: str,
    warn: WarningTally,
) -> Conversation:
    conv_id = as_str(meta.get("sessionId")) or name or "session"
    counter = [0]
    messages = [
        m for pos, record in records for m in _record_messages(record, pos, warn, conv_id, counter)
    ]
    if not messages:
        raise TranscriptError("no user or gemini messages", file=name, expected=_EXPECTED)
    first_user = title_from(messages, fallback="")
    summary = as_str(meta.get("summary"))
    models = [m.model for m in messages if m.model]
    return Conversation(
        id=conv_id,
        title=short_title(summary or first_user) or conv_id,
        messages=tuple(messages),
        model=models[-1] if models else "",
        metadata=tuple((k, as_str(meta[k])) for k in _META_KEYS if isinstance(meta.get(k), str)),
        usage_convention="gemini" if any(m.usage for m in messages) else "",
    )


def _from_jsonl(data: bytes, *, name: str, warn: WarningTally) -> Conversation:
    meta: dict[str, Any] = {}
    order: list[str] = []
    by_id: dict[str, tuple[SourcePos, dict[str, Any]]] = {}
    anonymous = 0
    for line, record in iter_jsonl(data, name):
        pos = SourcePos(name, line=line)
        if not isinstance(record, dict):
            warn.add("skipped a line that is not a JSON object", str(pos))
        elif "$rewindTo" in record:
            target = as_str(record["$rewindTo"])
            if target in by_id:
                cut = order.index(target)
                for key in order[cut:]:
                    del by_id[key]
                del order[cut:]
            else:
                warn.add("a rewind names a message that is not in the file", str(pos))
        elif "$set" in record:
            meta.update(as_dict(record["$set"]))
        elif "type" in record:
            key = as_str(record.get("id"))
            if not key:
                anonymous += 1
                key = f"\x00{anonymous}"
            if key not in by_id:
                order.append(key)
            by_id[key] = (pos, record)
        elif "sessionId" in record:
            meta.update(record)
        else:
            warn.add("skipped a record of unknown shape", str(pos))
    return _session([by_id[k] for k in order], meta, name=name, warn=warn)


def _from_checkpoint(contents: list[Any], *, name: str, warn: WarningTally) -> Conversation:
    """``/chat save`` checkpoints: raw Gemini ``Content[]``; calls and responses are linked by
    id when present, else by name in order."""
    conv_id = name or "checkpoint"
    messages: list[Message] = []
    pending: list[tuple[str, str]] = []
    for i, content in enumerate(contents):
        pos = SourcePos(name, record=i)
        content = as_dict(content)
        role = as_str(content.get("role"))
        uses: list[Block] = []
        results: list[Block] = []
        others: list[Block] = []
        for part in as_list(content.get("parts")):
            part = as_dict(part)
            if "functionCall" in part:
                call = as_dict(part["functionCall"])
                tool_id = as_str(call.get("id")) or f"{conv_id}:call{len(pending) + len(uses) + i}"
                uses.append(
                    Block(
                        BlockKind.TOOL_USE,
                        tool_id=tool_id,
                        tool_name=as_str(call.get("name")),
                        tool_input=call.get("args", {}),
                        raw_type="functionCall",
                    )
                )
            elif "functionResponse" in part:
                response = as_dict(part["functionResponse"])
                fname = as_str(response.get("name"))
                tool_id = as_str(response.get("id"))
                match = next(
                    (p for p in pending if p[0] == tool_id or (not tool_id and p[1] == fname)),
                    None,
                )
                if match:
                    pending.remove(match)
                    tool_id = match[0]
                results.append(
                    Block(
                        BlockKind.TOOL_RESULT,
                        tool_id=tool_id,
                        tool_name=fname,
                        text=_response_text(part),
                        raw_type="functionResponse",
                    )
                )
            else:
                others.extend(_part_blocks(part, warn, str(pos)))
        pending.extend((b.tool_id, b.tool_name) for b in uses)
        if results:
            messages.append(Message(Role.TOOL, tuple(results), source=pos))
        if role == "model" and (others or uses):
            messages.append(Message(Role.ASSISTANT, (*others, *uses), source=pos))
        elif others:
            messages.append(Message(Role.USER, tuple(others), source=pos))
    if not messages:
        raise TranscriptError("no Gemini contents", file=name, expected=_EXPECTED)
    first_user = title_from(messages, fallback="")
    return Conversation(
        id=conv_id, title=short_title(first_user) or conv_id, messages=tuple(messages)
    )


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    warn = WarningTally()
    if _looks_like_jsonl(data):
        conversation = _from_jsonl(data, name=name, warn=warn)
    else:
        doc = load_json(data, name)
        if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            records = []
            for i, record in enumerate(doc["messages"]):
                if isinstance(record, dict):
                    records.append((SourcePos(name, record=i), record))
                else:
                    warn.add("skipped a message that is not a JSON object", f"record {i}")
            conversation = _session(records, doc, name=name, warn=warn)
        elif isinstance(doc, list) and any(
            isinstance(c, dict) and isinstance(c.get("parts"), list) for c in doc
        ):
            conversation = _from_checkpoint(doc, name=name, warn=warn)
        else:
            raise TranscriptError("no Gemini CLI messages", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, (conversation,), warn.freeze())


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if not text.startswith((b"{", b"[")):
        return 0
    if b'"projectHash"' in text and b'"sessionId"' in text:
        return 95
    if b'"type": "gemini"' in text or b'"type":"gemini"' in text:
        return 90
    if b'"parts"' in text and (b'"role": "model"' in text or b'"role":"model"' in text):
        return 80
    return 0
