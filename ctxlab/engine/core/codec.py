"""Engine values <-> JSON-able dicts, compact and lossless.

The database stores message blocks (and whole conversations, in exports) through this
codec. A field equal to its dataclass default is left out, so a plain text block is just
``{"kind": "text", "text": "..."}``; decoding puts every default back. Invariant:
``x_from_dict(x_to_dict(v)) == v`` for every value the importers can build (tool inputs
are JSON values, as they come from JSON sources).
"""

from __future__ import annotations

from typing import Any

from .model import (
    Block,
    BlockKind,
    Conversation,
    ImportWarning,
    Message,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    ToolDef,
    Usage,
)

JSON = dict[str, Any]

# Block fields other than kind/parts, with their defaults, in declaration order.
_BLOCK_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("text", ""),
    ("tool_id", ""),
    ("tool_name", ""),
    ("tool_input", None),
    ("is_error", False),
    ("media_type", ""),
    ("size", 0),
    ("raw_type", ""),
    ("data", ""),
)
_USAGE_FIELDS = (
    "input_uncached",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "output",
    "reasoning",
)
_KINDS = {kind.value: kind for kind in BlockKind}
_ROLES = {role.value: role for role in Role}


# Blocks


def block_to_dict(block: Block) -> JSON:
    out: JSON = {"kind": block.kind.value}
    for name, default in _BLOCK_DEFAULTS:
        value = getattr(block, name)
        # `is not` for None/bools so that 0 == False style equalities never drop a value
        if value is default or (type(value) is type(default) and value == default):
            continue
        out[name] = value
    if block.parts:
        out["parts"] = [block_to_dict(part) for part in block.parts]
    return out


def block_from_dict(data: JSON) -> Block:
    fields = dict(data)
    kind = _KINDS[fields.pop("kind")]
    parts = fields.pop("parts", None)
    if parts:
        fields["parts"] = tuple(block_from_dict(part) for part in parts)
    return Block(kind, **fields)


def blocks_to_list(blocks: tuple[Block, ...]) -> list[JSON]:
    return [block_to_dict(block) for block in blocks]


def blocks_from_list(data: list[JSON]) -> tuple[Block, ...]:
    return tuple(block_from_dict(item) for item in data)


# Small values


def usage_to_dict(usage: Usage) -> JSON:
    out: JSON = {name: getattr(usage, name) for name in _USAGE_FIELDS if getattr(usage, name)}
    if usage.convention:
        out["convention"] = usage.convention
    return out


def usage_from_dict(data: JSON) -> Usage:
    return Usage(**data)


def source_to_dict(source: SourcePos) -> JSON:
    out: JSON = {}
    if source.file:
        out["file"] = source.file
    if source.line is not None:
        out["line"] = source.line
    if source.record is not None:
        out["record"] = source.record
    return out


def source_from_dict(data: JSON) -> SourcePos:
    return SourcePos(**data)


# Messages


def message_to_dict(message: Message) -> JSON:
    out: JSON = {"role": message.role.value, "blocks": blocks_to_list(message.blocks)}
    source = source_to_dict(message.source)
    if source:
        out["source"] = source
    if message.timestamp is not None:
        out["timestamp"] = message.timestamp
    for name in ("model", "id", "name"):
        value = getattr(message, name)
        if value:
            out[name] = value
    if message.usage is not None:
        out["usage"] = usage_to_dict(message.usage)
    if message.flags:
        out["flags"] = sorted(message.flags)
    return out


def message_from_dict(data: JSON) -> Message:
    usage = data.get("usage")
    return Message(
        role=_ROLES[data["role"]],
        blocks=blocks_from_list(data.get("blocks", [])),
        source=source_from_dict(data.get("source", {})),
        timestamp=data.get("timestamp"),
        model=data.get("model", ""),
        usage=None if usage is None else usage_from_dict(usage),
        id=data.get("id", ""),
        name=data.get("name", ""),
        flags=frozenset(data.get("flags", ())),
    )


# Conversation-level values


def tool_to_dict(tool: ToolDef) -> JSON:
    out: JSON = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["parameters"] = tool.parameters
    return out


def tool_from_dict(data: JSON) -> ToolDef:
    return ToolDef(**data)


def compaction_to_dict(compaction: OriginalCompaction) -> JSON:
    out: JSON = {"before_index": compaction.before_index, "kind": compaction.kind}
    if compaction.trigger:
        out["trigger"] = compaction.trigger
    if compaction.pre_tokens is not None:
        out["pre_tokens"] = compaction.pre_tokens
    if compaction.summary_index is not None:
        out["summary_index"] = compaction.summary_index
    source = source_to_dict(compaction.source)
    if source:
        out["source"] = source
    if compaction.instructions:
        out["instructions"] = compaction.instructions
    if compaction.cleared_tool_ids:
        out["cleared_tool_ids"] = list(compaction.cleared_tool_ids)
    if compaction.tokens_saved is not None:
        out["tokens_saved"] = compaction.tokens_saved
    if compaction.agent_version:
        out["agent_version"] = compaction.agent_version
    if compaction.detail:
        out["detail"] = metadata_to_list(compaction.detail)
    return out


def compaction_from_dict(data: JSON) -> OriginalCompaction:
    fields = dict(data)
    fields["source"] = source_from_dict(fields.pop("source", {}))
    if "cleared_tool_ids" in fields:
        fields["cleared_tool_ids"] = tuple(fields["cleared_tool_ids"])
    if "detail" in fields:
        fields["detail"] = metadata_from_list(fields["detail"])
    return OriginalCompaction(**fields)


def metadata_to_list(metadata: tuple[tuple[str, str], ...]) -> list[list[str]]:
    # A list of pairs, not a dict: the order and any repeated key survive.
    return [[key, value] for key, value in metadata]


def metadata_from_list(data: list[list[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((key, value) for key, value in data)


def conversation_to_dict(conversation: Conversation) -> JSON:
    out: JSON = {
        "id": conversation.id,
        "title": conversation.title,
        "messages": [message_to_dict(m) for m in conversation.messages],
    }
    if conversation.tools:
        out["tools"] = [tool_to_dict(t) for t in conversation.tools]
    if conversation.parent_id is not None:
        out["parent_id"] = conversation.parent_id
    if conversation.compactions:
        out["compactions"] = [compaction_to_dict(c) for c in conversation.compactions]
    if conversation.model:
        out["model"] = conversation.model
    if conversation.metadata:
        out["metadata"] = metadata_to_list(conversation.metadata)
    if conversation.usage_convention:
        out["usage_convention"] = conversation.usage_convention
    return out


def conversation_from_dict(data: JSON) -> Conversation:
    return Conversation(
        id=data["id"],
        title=data["title"],
        messages=tuple(message_from_dict(m) for m in data.get("messages", [])),
        tools=tuple(tool_from_dict(t) for t in data.get("tools", [])),
        parent_id=data.get("parent_id"),
        compactions=tuple(compaction_from_dict(c) for c in data.get("compactions", [])),
        model=data.get("model", ""),
        metadata=metadata_from_list(data.get("metadata", [])),
        usage_convention=data.get("usage_convention", ""),
    )


def warning_to_dict(warning: ImportWarning) -> JSON:
    out: JSON = {"message": warning.message}
    if warning.where:
        out["where"] = warning.where
    if warning.count != 1:
        out["count"] = warning.count
    if warning.code:
        out["code"] = warning.code
    return out


def warning_from_dict(data: JSON) -> ImportWarning:
    return ImportWarning(**data)


def parsed_file_to_dict(parsed: ParsedFile) -> JSON:
    return {
        "format": parsed.format,
        "conversations": [conversation_to_dict(c) for c in parsed.conversations],
        "warnings": [warning_to_dict(w) for w in parsed.warnings],
    }


def parsed_file_from_dict(data: JSON) -> ParsedFile:
    return ParsedFile(
        format=data["format"],
        conversations=tuple(conversation_from_dict(c) for c in data.get("conversations", [])),
        warnings=tuple(warning_from_dict(w) for w in data.get("warnings", [])),
    )
