"""OpenAI shapes -> engine values: Responses API items (shared by Codex rollouts, Responses
bodies and cassettes) and Chat Completions messages (for cassettes).

Responses items are one-per-call/per-output; consecutive model-side items of one response
(reasoning, function calls, assistant text) are grouped into one assistant message, and each
tool output becomes a ``tool`` message, as in Chat Completions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core.model import Block, BlockKind, OriginalCompaction, Role, SourcePos, ToolDef
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_list,
    as_str,
    base64_size,
    data_url_base64,
    data_url_size,
    json_size,
    opaque,
    parse_arguments,
)

_ROLES = {
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "computer_call_output",
}
# Server-side tool items: call and result live in one item the model produced.
_SERVER_TOOLS = {
    "web_search_call",
    "file_search_call",
    "computer_call",
    "image_generation_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "tool_search_call",
}
_NOT_CONTEXT = {"ghost_snapshot", "item_reference"}


def content_block(part: Any) -> Block:
    """One content part of a Responses or Chat Completions message."""
    if isinstance(part, str):
        return Block(BlockKind.TEXT, text=part, raw_type="text")
    p = as_dict(part)
    ptype = as_str(p.get("type"))
    if ptype in {"input_text", "output_text", "text", "summary_text", "reasoning_text"}:
        return Block(BlockKind.TEXT, text=as_str(p.get("text")), raw_type=ptype)
    if ptype == "refusal":
        return Block(BlockKind.TEXT, text=as_str(p.get("refusal")), raw_type=ptype)
    if ptype in {"input_image", "image_url"}:
        url = p.get("image_url")
        url = as_str(as_dict(url).get("url")) if isinstance(url, dict) else as_str(url)
        if url:
            media_type, size = data_url_size(url)
            text = "" if url.startswith("data:") else url
            return Block(
                BlockKind.MEDIA, text=text, media_type=media_type or "image", size=size,
                raw_type=ptype, data=data_url_base64(url),
            )  # fmt: skip
        return Block(BlockKind.MEDIA, media_type="image", size=json_size(p), raw_type=ptype)
    if ptype in {"input_file", "file"}:
        f = as_dict(p.get("file")) or p
        data = as_str(f.get("file_data"))
        media_type, size = data_url_size(data) if data.startswith("data:") else ("", 0)
        size = size or (base64_size(data) if data else json_size(f))
        return Block(
            BlockKind.MEDIA, text=as_str(f.get("filename")), media_type=media_type or "file",
            size=size, raw_type=ptype,
            data=data_url_base64(data) if data.startswith("data:") else data,
        )  # fmt: skip
    if ptype in {"input_audio"}:
        audio = as_dict(p.get("input_audio"))
        return Block(
            BlockKind.MEDIA, media_type="audio/" + (as_str(audio.get("format")) or "unknown"),
            size=base64_size(as_str(audio.get("data"))), raw_type=ptype,
            data=as_str(audio.get("data")),
        )  # fmt: skip
    return opaque(ptype or type(part).__name__, part)


def content_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block(BlockKind.TEXT, text=content, raw_type="text")] if content else []
    if content is None:
        return []
    if isinstance(content, dict):
        return [content_block(content)]
    return [content_block(p) for p in as_list(content)]


def output_text(output: Any) -> tuple[str, tuple[Block, ...]]:
    """A tool output: a string, or a list of content parts (kept in ``parts``)."""
    if isinstance(output, str):
        return output, ()
    if output is None:
        return "", ()
    if isinstance(output, list):
        parts = tuple(content_block(p) for p in output)
        return "\n".join(p.text for p in parts if p.kind is BlockKind.TEXT), parts
    return json.dumps(output, ensure_ascii=False), ()


def tool_defs(value: Any) -> tuple[ToolDef, ...]:
    out = []
    for t in as_list(value):
        d = as_dict(t)
        fn = as_dict(d.get("function")) or d
        name = as_str(fn.get("name")) or as_str(d.get("type"))
        if name:
            out.append(
                ToolDef(
                    name=name,
                    description=as_str(fn.get("description")),
                    parameters=fn.get("parameters", fn.get("input_schema")),
                )
            )
    return tuple(out)


OutputDecoder = Callable[[Any], tuple[str, tuple[Block, ...], bool]]


def _plain_output(output: Any) -> tuple[str, tuple[Block, ...], bool]:
    text, parts = output_text(output)
    return text, parts, False


class ResponsesThread:
    """Accumulates Responses items into messages (single pass)."""

    def __init__(
        self,
        warnings: Warnings,
        *,
        decode_output: OutputDecoder = _plain_output,
        meta_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.messages: list[MessageBuilder] = []
        self.compactions: list[OriginalCompaction] = []
        self.warnings = warnings
        self._group: MessageBuilder | None = None
        self._decode_output = decode_output
        self._meta_prefixes = meta_prefixes

    def close_group(self) -> None:
        self._group = None

    def _assistant(self, source: SourcePos, timestamp: str | None, item_id: str) -> MessageBuilder:
        if self._group is None:
            self._group = MessageBuilder(Role.ASSISTANT, [], source, timestamp, id=item_id)
            self.messages.append(self._group)
        elif not self._group.id:
            self._group.id = item_id
        return self._group

    def add(self, raw: Any, source: SourcePos, timestamp: str | None = None) -> bool:
        """Add one item; ``False`` when it was not a recognisable item (skipped, warned)."""
        item = as_dict(raw)
        itype = as_str(item.get("type")) or ("message" if "role" in item else "")
        item_id = as_str(item.get("id"))
        if itype == "message":
            role = _ROLES.get(as_str(item.get("role")))
            if role is None:
                self.warnings.add("message item with an unknown role skipped", str(source))
                return False
            blocks = content_blocks(item.get("content"))
            if role is Role.ASSISTANT:
                self._assistant(source, timestamp, item_id).blocks.extend(blocks)
                return True
            self.close_group()
            builder = MessageBuilder(role, blocks, source, timestamp, id=item_id)
            if as_str(item.get("role")) == "developer":
                builder.name = "developer"
            first = blocks[0].text.lstrip() if blocks else ""
            if self._meta_prefixes and first.startswith(self._meta_prefixes):
                builder.flags.add("meta")
            self.messages.append(builder)
            return True
        if itype == "reasoning":
            group = self._assistant(source, timestamp, item_id)
            summary = "\n\n".join(
                as_str(as_dict(s).get("text")) for s in as_list(item.get("summary"))
            )
            if summary:
                group.blocks.append(Block(BlockKind.THINKING, text=summary, raw_type="reasoning"))
            raw_content = "\n\n".join(
                as_str(as_dict(s).get("text")) for s in as_list(item.get("content"))
            )
            if raw_content:
                group.blocks.append(
                    Block(BlockKind.THINKING, text=raw_content, raw_type="reasoning_text")
                )
            encrypted = item.get("encrypted_content")
            if isinstance(encrypted, str) and encrypted:
                group.blocks.append(opaque("reasoning", encrypted, text="encrypted reasoning"))
            return True
        if itype in _CALLS:
            call_input = (
                parse_arguments(item.get("arguments"))
                if "arguments" in item
                else item.get("input", item.get("action"))
            )
            name = as_str(item.get("name")) or (
                "local_shell" if itype == "local_shell_call" else ""
            )
            self._assistant(source, timestamp, item_id).blocks.append(
                Block(
                    BlockKind.TOOL_USE,
                    tool_id=as_str(item.get("call_id")) or item_id,
                    tool_name=name,
                    tool_input=call_input,
                    raw_type=itype,
                )
            )
            return True
        if itype in _OUTPUTS:
            self.close_group()
            text, parts, is_error = self._decode_output(item.get("output"))
            result = Block(
                BlockKind.TOOL_RESULT,
                text=text,
                tool_id=as_str(item.get("call_id")),
                parts=parts,
                is_error=is_error,
                raw_type=itype,
            )
            self.messages.append(MessageBuilder(Role.TOOL, [result], source, timestamp, id=item_id))
            return True
        if itype in _SERVER_TOOLS:
            self._assistant(source, timestamp, item_id).blocks.append(opaque(itype, item))
            return True
        if itype in {"compaction", "compaction_summary"}:
            self.add_compaction(item, source, timestamp)
            return True
        if itype in _NOT_CONTEXT:
            return True
        self.warnings.add(f"unknown item type {itype[:40]!r} skipped", str(source))
        return False

    def add_compaction(self, item: dict[str, Any], source: SourcePos, ts: str | None) -> None:
        """A server compaction item: opaque state replacing everything before it."""
        self.close_group()
        payload = item.get("encrypted_content", item.get("summary", item))
        block = opaque("compaction", payload, text="server compaction (encrypted)")
        self.messages.append(
            MessageBuilder(
                Role.ASSISTANT,
                [block],
                source,
                ts,
                id=as_str(item.get("id")),
                flags={"compact_summary"},
            )
        )
        index = len(self.messages) - 1
        self.compactions.append(
            OriginalCompaction(
                before_index=index + 1,
                kind="server_compaction",
                summary_index=index,
                source=source,
            )
        )


def chat_messages(value: Any, source: SourcePos, warnings: Warnings) -> list[MessageBuilder]:
    """Chat Completions ``messages`` -> builders (one message each)."""
    out: list[MessageBuilder] = []
    for raw in as_list(value):
        m = as_dict(raw)
        role = _ROLES.get(as_str(m.get("role")))
        if role is None:
            warnings.add("chat message with an unknown role skipped", str(source))
            continue
        out.append(chat_message(m, role, source))
    return out


def chat_message(m: dict[str, Any], role: Role, source: SourcePos) -> MessageBuilder:
    if role is Role.TOOL:
        text, parts = output_text(m.get("content"))
        block = Block(
            BlockKind.TOOL_RESULT,
            text=text,
            tool_id=as_str(m.get("tool_call_id")),
            parts=parts,
            raw_type="tool",
        )
        return MessageBuilder(role, [block], source, name=as_str(m.get("name")))
    blocks = content_blocks(m.get("content"))
    if isinstance(m.get("refusal"), str) and m["refusal"]:
        blocks.append(Block(BlockKind.TEXT, text=m["refusal"], raw_type="refusal"))
    calls = as_list(m.get("tool_calls"))
    if isinstance(m.get("function_call"), dict):
        calls = [*calls, {"type": "function", "function": m["function_call"]}]
    for call in calls:
        c = as_dict(call)
        fn = as_dict(c.get("function"))
        blocks.append(
            Block(
                BlockKind.TOOL_USE,
                tool_id=as_str(c.get("id")),
                tool_name=as_str(fn.get("name")),
                tool_input=parse_arguments(fn.get("arguments")),
                raw_type=as_str(c.get("type")) or "function",
            )
        )
    builder = MessageBuilder(role, blocks, source, name=as_str(m.get("name")))
    if as_str(m.get("role")) == "developer":
        builder.name = "developer"
    return builder
