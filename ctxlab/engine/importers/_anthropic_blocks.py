"""Anthropic Messages API shapes -> engine values (shared by Claude Code, Anthropic bodies,
proxy logs and cassettes): content blocks, usage, request bodies, SSE reassembly."""

from __future__ import annotations

import json
from typing import Any

from ..core.model import Block, BlockKind, Role, SourcePos, ToolDef, Usage
from ._common import note
from ._kit import (
    MessageBuilder,
    as_dict,
    as_int,
    as_list,
    as_str,
    base64_size,
    json_size,
    opaque,
)

_TOOL_USE_TYPES = {"tool_use", "server_tool_use", "mcp_tool_use"}


def usage(value: Any) -> Usage | None:
    """Anthropic convention: ``input_tokens`` excludes both cache buckets."""
    u = as_dict(value)
    if not u:
        return None
    write_total = as_int(u.get("cache_creation_input_tokens"))
    split = as_dict(u.get("cache_creation"))
    w5 = as_int(split.get("ephemeral_5m_input_tokens"))
    w1 = as_int(split.get("ephemeral_1h_input_tokens"))
    if w5 + w1 < write_total:  # no split reported (or a partial one): the rest is 5m, the default
        w5 += write_total - w5 - w1
    return Usage(
        input_uncached=as_int(u.get("input_tokens")),
        cache_read=as_int(u.get("cache_read_input_tokens")),
        cache_write_5m=w5,
        cache_write_1h=w1,
        output=as_int(u.get("output_tokens")),
        convention="anthropic",
    )


def _media(block: dict[str, Any], kind: str) -> Block:
    source = as_dict(block.get("source"))
    stype = as_str(source.get("type"))
    media_type = as_str(source.get("media_type")) or kind
    if stype == "base64":
        return Block(
            BlockKind.MEDIA,
            media_type=media_type,
            size=base64_size(as_str(source.get("data"))),
            raw_type=kind,
            data=as_str(source.get("data")),
        )
    if stype == "url":
        url = as_str(source.get("url"))
        return Block(BlockKind.MEDIA, text=url, media_type=media_type, size=len(url), raw_type=kind)
    if stype == "text":
        data = as_str(source.get("data"))
        return Block(
            BlockKind.MEDIA, media_type=media_type or "text/plain", size=len(data.encode()),
            raw_type=kind,
        )  # fmt: skip
    return Block(BlockKind.MEDIA, media_type=media_type, size=json_size(source), raw_type=kind)


def _result_parts(content: Any) -> tuple[str, tuple[Block, ...]]:
    if isinstance(content, str):
        return content, ()
    parts = tuple(block(p) for p in as_list(content))
    text = "\n".join(p.text for p in parts if p.kind is BlockKind.TEXT)
    return text, parts


def block(value: Any) -> Block:
    """One content block; unknown or malformed blocks become opaque (size kept)."""
    if isinstance(value, str):
        return Block(BlockKind.TEXT, text=value, raw_type="text")
    b = as_dict(value)
    kind = as_str(b.get("type"))
    if kind == "text":
        return Block(BlockKind.TEXT, text=as_str(b.get("text")), raw_type=kind)
    if kind == "thinking":
        return Block(BlockKind.THINKING, text=as_str(b.get("thinking")), raw_type=kind)
    if kind == "redacted_thinking":
        return opaque(kind, b.get("data"))
    if kind in _TOOL_USE_TYPES:
        return Block(
            BlockKind.TOOL_USE,
            tool_id=as_str(b.get("id")),
            tool_name=as_str(b.get("name")),
            tool_input=b.get("input"),
            raw_type=kind,
        )
    if kind == "tool_result" or kind.endswith("_tool_result"):
        text, parts = _result_parts(b.get("content"))
        return Block(
            BlockKind.TOOL_RESULT,
            text=text,
            tool_id=as_str(b.get("tool_use_id")),
            parts=parts,
            is_error=b.get("is_error") is True,
            raw_type=kind,
        )
    if kind in {"image", "document"}:
        return _media(b, kind)
    if kind == "compaction":
        # Anthropic's server-side compaction summary is readable text the model sees again
        # next turn; it stays an opaque block (state handed back verbatim) carrying the text.
        content = b.get("content")
        return opaque(kind, content, text=content if isinstance(content, str) else "")
    return opaque(kind or type(value).__name__, value)


def blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block(BlockKind.TEXT, text=content, raw_type="text")] if content else []
    if content is None:
        return []
    if isinstance(content, dict):
        return [block(content)]
    return [block(b) for b in as_list(content)]


def role_of(value: Any) -> Role | None:
    return {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}.get(
        as_str(value)
    )


def system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(as_str(as_dict(b).get("text")) for b in as_list(system))


def tools(value: Any) -> tuple[ToolDef, ...]:
    out = []
    for t in as_list(value):
        d = as_dict(t)
        name = as_str(d.get("name"))
        if name:
            out.append(
                ToolDef(
                    name=name,
                    description=as_str(d.get("description")),
                    parameters=d.get("input_schema", d.get("parameters")),
                )
            )
    return tuple(out)


def request_messages(body: dict[str, Any], source: SourcePos) -> list[MessageBuilder]:
    """A request body's system prompt and messages, in order."""
    out: list[MessageBuilder] = []
    system = system_text(body.get("system"))
    if system:
        out.append(
            MessageBuilder(
                Role.SYSTEM, [Block(BlockKind.TEXT, text=system, raw_type="system")], source
            )
        )
    for raw in as_list(body.get("messages")):
        m = as_dict(raw)
        role = role_of(m.get("role"))
        if role is None:
            note(
                "unknown-record",
                f"message with unknown role {str(m.get('role'))[:30]!r} skipped",
                str(source),
            )
            continue
        out.append(MessageBuilder(role, blocks(m.get("content")), source))
    return out


def response_message(body: dict[str, Any], source: SourcePos) -> MessageBuilder:
    return MessageBuilder(
        Role.ASSISTANT,
        blocks(body.get("content")),
        source,
        model=as_str(body.get("model")),
        usage=usage(body.get("usage")),
        id=as_str(body.get("id")),
    )


def is_response(body: Any) -> bool:
    d = as_dict(body)
    return d.get("type") == "message" and d.get("role") == "assistant"


def is_request(body: Any) -> bool:
    d = as_dict(body)
    return isinstance(d.get("messages"), list) and ("model" in d or "max_tokens" in d)


def sse_events(text: str, place: str = "") -> list[dict[str, Any]]:
    """The JSON ``data:`` payloads of an SSE stream, in order (malformed events skipped).
    ``place`` names where the stream is (the file, a record): a skipped event's warning
    says which line of it, e.g. a stream cut off in its last event."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            value = json.loads(payload)
        except ValueError:
            note(
                "unreadable-json-text",
                "a stream event is not valid JSON; skipped",
                f"{place + ', ' if place else ''}stream line {number}: {payload[:60]!r}",
            )
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def reassemble(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Rebuild one Messages response from stream events; ``None`` when there is no start."""
    message: dict[str, Any] | None = None
    content: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for ev in events:
        etype = ev.get("type")
        if etype == "message_start":
            message = dict(as_dict(ev.get("message")))
            message.setdefault("content", [])
        elif etype == "content_block_start":
            index = as_int(ev.get("index"))
            content[index] = dict(as_dict(ev.get("content_block")))
        elif etype == "content_block_delta":
            index = as_int(ev.get("index"))
            target = content.setdefault(index, {"type": "text", "text": ""})
            delta = as_dict(ev.get("delta"))
            dtype = as_str(delta.get("type"))
            if dtype == "input_json_delta":
                partial.setdefault(index, []).append(as_str(delta.get("partial_json")))
                continue
            for key, value in delta.items():  # text_delta{text}, thinking_delta{thinking} ...
                if key != "type" and isinstance(value, str):
                    before = target.get(key)
                    target[key] = (before if isinstance(before, str) else "") + value
        elif etype == "message_delta" and message is not None:
            delta = as_dict(ev.get("delta"))
            message.update({k: v for k, v in delta.items() if v is not None})
            merged = dict(as_dict(message.get("usage")))
            merged.update({k: v for k, v in as_dict(ev.get("usage")).items() if v is not None})
            message["usage"] = merged
    if message is None:
        return None
    for index, pieces in partial.items():
        joined = "".join(pieces)
        try:
            content[index]["input"] = json.loads(joined) if joined else {}
        except ValueError:
            note(
                "tool-arguments-not-json",
                "tool-call arguments are not valid JSON; kept as the raw string",
                repr(joined[:60]),
            )
            content[index]["input"] = joined
    message["content"] = [content[i] for i in sorted(content)]
    return message
