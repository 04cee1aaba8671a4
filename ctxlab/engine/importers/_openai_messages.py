"""OpenAI Chat Completions messages to engine messages: the conversion the ``openai-chat``
importer shares with the SWE-agent, OpenHands, ShareGPT and Gemini CLI importers, which
embed the same message shape (roles, content parts, tool calls, usage).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    Role,
    SourcePos,
    ToolDef,
    Usage,
)
from ._common import (
    WarningTally,
    note,
)
from ._kit import as_int, data_url_base64, title_from

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}

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


def title_of(messages: Sequence[Message], fallback: str) -> str:
    """The one title rule (``_kit.title_from``)."""
    return title_from(messages, fallback)


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
