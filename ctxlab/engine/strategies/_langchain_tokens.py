"""LangChain's message utilities, ported for the two LangChain strategies.

Shared by ``langchain_summarization`` and ``langchain_trim`` so the estimator exists once:

- ``count_tokens_approximately``: langchain-core 1.x (the version with ``tokens_per_image``,
  per-block content-list counting and ``use_usage_metadata_scaling``; the 0.3 rule that
  counts ``repr(content)`` of a content list, langchain-core @ 911f4d4e, is
  ``content_rule="repr"``).
- ``trim_messages`` with ``_first_max_tokens`` / ``_last_max_tokens`` and the default text
  splitter: langchain-core ``messages/utils.py`` @ 911f4d4ebd56f591d10de3689fa97f3c57a1eb83.
- ``get_buffer_string``: the same file ("Human: ...", "AI: ...", "Tool: ...").

LangChain messages are pydantic objects; ``LcMessage`` holds what these functions read:
the type, the content (a string or a content list of str / dict blocks), an AI message's
``tool_calls``, a tool message's ``tool_call_id``, the name, and for AI messages
``usage_metadata["total_tokens"]`` and ``response_metadata["model_provider"]``.
``source`` / ``parts`` tie it back to the ctxlab message and blocks it came from.

``to_lc_messages`` renders one ctxlab message the way a LangChain agent holds it:
assistant -> ``AIMessage`` (``message_format="openai"``: text content + ``tool_calls``;
``"anthropic"``: a content list with text / thinking / tool_use blocks when there is more
than text, as ChatAnthropic returns it), each tool result -> a ``ToolMessage`` named after
its tool (ToolNode sets ``name``), other user content -> ``HumanMessage``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.model import Block, BlockKind, Message, Role, ToolDef

SYSTEM, HUMAN, AI, TOOL = "system", "human", "ai", "tool"
_OPENAI_ROLE = {SYSTEM: "system", HUMAN: "user", AI: "assistant", TOOL: "tool"}
_BUFFER_ROLE = {SYSTEM: "System", HUMAN: "Human", AI: "AI", TOOL: "Tool"}
REPLAY_PROVIDER = "replay"  # every replayed AI message comes from one provider

Content = str | tuple[Any, ...]
TokenCounter = Callable[[Sequence["LcMessage"]], int]


@dataclass(frozen=True, slots=True)
class LcMessage:
    type: str  # system | human | ai | tool
    content: Content = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_call_id: str = ""
    name: str = ""
    total_tokens: int | None = None  # usage_metadata["total_tokens"] (AI messages)
    model_provider: str | None = None  # response_metadata["model_provider"] (AI messages)
    source: int = -1  # ctxlab source index (-1: a message the strategy made)
    parts: tuple[int, ...] = field(default=(), compare=False)  # block positions in source

    @property
    def text(self) -> str:
        """``BaseMessage.text``: the string content, or the text blocks joined."""
        if isinstance(self.content, str):
            return self.content
        out: list[str] = []
        for block in self.content:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                out.append(str(block.get("text", "")))
        return "".join(out)


# --- count_tokens_approximately ---------------------------------------------------------


def message_chars(
    message: LcMessage, *, count_name: bool = True, content_rule: str = "blocks"
) -> tuple[int, int]:
    """(characters, image tokens) one message adds: content, tool calls (string content
    only), tool_call_id, role and name."""
    chars = 0
    images = 0
    content = message.content
    if isinstance(content, str):
        chars += len(content)
    elif content_rule == "repr":  # langchain-core 0.3: repr of the whole list
        chars += len(repr(list(content)))
    else:
        for block in content:
            if isinstance(block, str):
                chars += len(block)
            elif isinstance(block, dict):
                kind = block.get("type", "")
                if kind in {"image", "image_url"}:
                    images += 1
                elif kind == "text":
                    chars += len(block.get("text", ""))
                else:
                    chars += len(repr(block))
            else:
                chars += len(repr(block))
    # Anthropic-format content lists already hold the tool_use blocks.
    if message.type == AI and isinstance(content, str) and message.tool_calls:
        chars += len(repr(list(message.tool_calls)))
    if message.type == TOOL:
        chars += len(message.tool_call_id)
    chars += len(_OPENAI_ROLE[message.type])
    if message.name and count_name:
        chars += len(message.name)
    return chars, images


def message_tokens(
    message: LcMessage,
    *,
    chars_per_token: float = 4.0,
    extra_tokens_per_message: float = 3.0,
    tokens_per_image: int = 85,
    count_name: bool = True,
    content_rule: str = "blocks",
) -> float:
    """One message's share of the running count (rounded up per message, as upstream)."""
    chars, images = message_chars(message, count_name=count_name, content_rule=content_rule)
    return images * tokens_per_image + math.ceil(chars / chars_per_token) + extra_tokens_per_message


def tools_tokens(tools: Sequence[ToolDef], *, chars_per_token: float = 4.0) -> int:
    """The ``tools=`` term: ceil of the JSON length of each OpenAI tool schema, summed."""
    chars = sum(len(json.dumps(openai_tool(t))) for t in tools)
    return math.ceil(chars / chars_per_token) if tools else 0


def openai_tool(tool: ToolDef) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters or {},
        },
    }


def count_tokens_approximately(
    messages: Sequence[LcMessage],
    *,
    chars_per_token: float = 4.0,
    extra_tokens_per_message: float = 3.0,
    count_name: bool = True,
    tokens_per_image: int = 85,
    use_usage_metadata_scaling: bool = False,
    tools: Sequence[ToolDef] = (),
    content_rule: str = "blocks",
) -> int:
    """langchain-core ``count_tokens_approximately``, rule for rule."""
    token_count = 0.0
    if tools:
        token_count += tools_tokens(tools, chars_per_token=chars_per_token)
    provider: str | None = None
    mixed_providers = False
    last_ai_total: int | None = None
    approx_at_last_ai: float | None = None
    for message in messages:
        token_count += message_tokens(
            message,
            chars_per_token=chars_per_token,
            extra_tokens_per_message=extra_tokens_per_message,
            tokens_per_image=tokens_per_image,
            count_name=count_name,
            content_rule=content_rule,
        )
        if use_usage_metadata_scaling and message.type == AI:
            if provider is None:
                provider = message.model_provider
            elif message.model_provider != provider:
                mixed_providers = True
            if message.total_tokens is not None:
                last_ai_total = message.total_tokens
                approx_at_last_ai = token_count
    if (
        use_usage_metadata_scaling
        and len(messages) > 1
        and not mixed_providers
        and provider is not None
        and last_ai_total is not None
        and approx_at_last_ai
        and approx_at_last_ai > 0
    ):
        token_count *= usage_scale(last_ai_total, approx_at_last_ai)
    return math.ceil(token_count)


def usage_scale(reported_total: int, approx: float) -> float:
    """The usage-metadata scale factor, clamped to [1.0, 1.25] as upstream."""
    return min(1.25, max(1.0, reported_total / approx))


# --- trim_messages ----------------------------------------------------------------------


def default_text_splitter(text: str) -> list[str]:
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def is_type(message: LcMessage, types: str | Sequence[str]) -> bool:
    wanted = (types,) if isinstance(types, str) else tuple(types)
    return message.type in wanted


def trim_messages(
    messages: Sequence[LcMessage],
    *,
    max_tokens: int,
    token_counter: TokenCounter,
    strategy: str = "last",
    allow_partial: bool = False,
    end_on: str | Sequence[str] | None = None,
    start_on: str | Sequence[str] | None = None,
    include_system: bool = False,
    text_splitter: Callable[[str], list[str]] = default_text_splitter,
) -> list[LcMessage]:
    """``trim_messages`` (strategy first / last), with its argument checks."""
    if start_on and strategy == "first":
        raise ValueError("start_on parameter is only valid with strategy='last'")
    if include_system and strategy == "first":
        raise ValueError("include_system parameter is only valid with strategy='last'")
    if strategy == "first":
        return first_max_tokens(
            messages,
            max_tokens=max_tokens,
            token_counter=token_counter,
            text_splitter=text_splitter,
            partial_strategy="first" if allow_partial else None,
            end_on=end_on,
        )
    if strategy == "last":
        return last_max_tokens(
            messages,
            max_tokens=max_tokens,
            token_counter=token_counter,
            allow_partial=allow_partial,
            include_system=include_system,
            start_on=start_on,
            end_on=end_on,
            text_splitter=text_splitter,
        )
    raise ValueError(
        f"Unrecognized strategy={strategy!r}. Supported strategies are 'last' and 'first'."
    )


def first_max_tokens(
    messages: Sequence[LcMessage],
    *,
    max_tokens: int,
    token_counter: TokenCounter,
    text_splitter: Callable[[str], list[str]],
    partial_strategy: str | None = None,
    end_on: str | Sequence[str] | None = None,
) -> list[LcMessage]:
    """``_first_max_tokens``: the longest prefix within ``max_tokens`` (binary search),
    optionally plus part of the next message, then cut back to ``end_on``."""
    msgs = list(messages)
    if not msgs:
        return msgs
    if token_counter(msgs) <= max_tokens:
        if end_on:
            for _ in range(len(msgs)):
                if not is_type(msgs[-1], end_on):
                    msgs.pop()
                else:
                    break
        return msgs
    left, right = 0, len(msgs)
    for _ in range(len(msgs).bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        if token_counter(msgs[:mid]) <= max_tokens:
            left = mid
        else:
            right = mid - 1
    idx = left
    if partial_strategy and idx < len(msgs):
        msgs, idx = _partial(msgs, idx, max_tokens, token_counter, text_splitter, partial_strategy)
    if end_on:
        for _ in range(idx):
            if idx > 0 and not is_type(msgs[idx - 1], end_on):
                idx -= 1
            else:
                break
    return msgs[:idx]


def _partial(
    msgs: list[LcMessage],
    idx: int,
    max_tokens: int,
    token_counter: TokenCounter,
    text_splitter: Callable[[str], list[str]],
    partial_strategy: str,
) -> tuple[list[LcMessage], int]:
    """Fit part of ``msgs[idx]``: whole content blocks first (list content), else the
    first text split into lines (the content becomes a string)."""
    excluded = msgs[idx]
    content = excluded.content
    if not isinstance(content, str):
        blocks = list(content)
        parts = list(excluded.parts) if len(excluded.parts) == len(blocks) else []
        if partial_strategy == "last":
            blocks.reverse()
            parts.reverse()
        for _ in range(1, len(content)):
            blocks = blocks[:-1]
            parts = parts[:-1]
            trial = replace(excluded, content=tuple(blocks))
            if token_counter([*msgs[:idx], trial]) <= max_tokens:
                if partial_strategy == "last":  # upstream reverses the kept object back
                    blocks.reverse()
                    parts.reverse()
                kept = replace(
                    excluded, content=tuple(blocks), parts=tuple(parts) or excluded.parts
                )
                return [*msgs[:idx], kept], idx + 1
        # Upstream goes on with the shrunk copy: its first remaining block is the text.
        content = tuple(blocks)
        if parts:
            excluded = replace(excluded, parts=tuple(parts))
    text = _first_text(content)
    if not text:
        return msgs, idx
    splits = text_splitter(text)
    base = token_counter(msgs[:idx])
    if partial_strategy == "last":
        splits = list(reversed(splits))
    left, right = 0, len(splits)
    for _ in range(len(splits).bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        if base + token_counter([replace(excluded, content="".join(splits[:mid]))]) <= max_tokens:
            left = mid
        else:
            right = mid - 1
    if left > 0:
        kept_splits = splits[:left]
        if partial_strategy == "last":
            kept_splits = list(reversed(kept_splits))
        return [*msgs[:idx], replace(excluded, content="".join(kept_splits))], idx + 1
    return msgs, idx


def _first_text(content: Content) -> str | None:
    if isinstance(content, str):
        return content
    for block in content:
        if isinstance(block, str):
            return block
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            return text if isinstance(text, str) else None
    return None


def last_max_tokens(
    messages: Sequence[LcMessage],
    *,
    max_tokens: int,
    token_counter: TokenCounter,
    text_splitter: Callable[[str], list[str]],
    allow_partial: bool = False,
    include_system: bool = False,
    start_on: str | Sequence[str] | None = None,
    end_on: str | Sequence[str] | None = None,
) -> list[LcMessage]:
    """``_last_max_tokens``: cut to ``end_on`` from the end, keep a leading system message
    aside, then ``_first_max_tokens`` over the reversed list with ``end_on=start_on``."""
    msgs = list(messages)
    if not msgs:
        return []
    if end_on:
        for _ in range(len(msgs)):
            if not is_type(msgs[-1], end_on):
                msgs.pop()
            else:
                break
    system: LcMessage | None = None
    if include_system and msgs and msgs[0].type == SYSTEM:
        system = msgs[0]
        msgs = msgs[1:]
    remaining = max_tokens
    if system is not None:
        remaining = max(0, max_tokens - token_counter([system]))
    kept = first_max_tokens(
        msgs[::-1],
        max_tokens=remaining,
        token_counter=token_counter,
        text_splitter=text_splitter,
        partial_strategy="last" if allow_partial else None,
        end_on=start_on,
    )[::-1]
    return [system, *kept] if system is not None else kept


def get_buffer_string(messages: Sequence[LcMessage]) -> str:
    return "\n".join(f"{_BUFFER_ROLE[m.type]}: {m.text}" for m in messages)


# --- ctxlab message -> LangChain messages ---------------------------------------------------


def to_lc_messages(
    message: Message,
    source: int,
    *,
    tool_names: Mapping[str, str],
    message_format: str = "openai",
) -> list[LcMessage]:
    """The LangChain messages one ctxlab message becomes (tool results first, in order)."""
    if message.role is Role.SYSTEM:
        return [LcMessage(SYSTEM, message.text, source=source, parts=_all(message))]
    if message.role is Role.ASSISTANT:
        return [_ai(message, source, message_format)]
    out: list[LcMessage] = []
    rest: list[int] = []
    for pos, block in enumerate(message.blocks):
        if block.kind is BlockKind.TOOL_RESULT:
            name = tool_names.get(block.tool_id) or block.tool_name
            out.append(LcMessage(TOOL, block.text, tool_call_id=block.tool_id, name=name,
                                 source=source, parts=(pos,)))  # fmt: skip
        else:
            rest.append(pos)
    if rest or not out:
        out.append(_human(message, source, rest))
    return out


def _all(message: Message) -> tuple[int, ...]:
    return tuple(range(len(message.blocks)))


def _human(message: Message, source: int, positions: list[int]) -> LcMessage:
    blocks = [message.blocks[p] for p in positions]
    if len(blocks) == 1 and blocks[0].kind is BlockKind.TEXT:
        return LcMessage(HUMAN, blocks[0].text, source=source, parts=tuple(positions))
    if not blocks:
        return LcMessage(HUMAN, "", source=source)
    content = tuple(_content_block(b) for b in blocks)
    return LcMessage(HUMAN, content, source=source, parts=tuple(positions))


def _content_block(block: Block) -> dict[str, Any]:
    if block.kind is BlockKind.TEXT:
        return {"type": "text", "text": block.text}
    if block.kind is BlockKind.THINKING:
        return {"type": "thinking", "thinking": block.text}
    if block.kind is BlockKind.TOOL_USE:
        return {"type": "tool_use", "id": block.tool_id, "name": block.tool_name,
                "input": block.tool_input}  # fmt: skip
    if block.kind is BlockKind.MEDIA and block.media_type.startswith("image"):
        return {"type": "image", "mime_type": block.media_type}
    if block.kind is BlockKind.MEDIA:
        return {"type": "file", "mime_type": block.media_type, "size": block.size}
    return {"type": block.raw_type or block.kind.value, "size": block.size}


def tool_call(block: Block) -> dict[str, Any]:
    """A ``ToolCall`` dict as AIMessage holds it (key order name, args, id, type)."""
    args = block.tool_input if isinstance(block.tool_input, dict) else {}
    return {"name": block.tool_name, "args": args, "id": block.tool_id, "type": "tool_call"}


def _ai(message: Message, source: int, message_format: str) -> LcMessage:
    uses = [b for b in message.blocks if b.kind is BlockKind.TOOL_USE]
    usage = message.usage
    common: dict[str, Any] = {
        "tool_calls": tuple(tool_call(b) for b in uses),
        "total_tokens": usage.context_tokens if usage is not None else None,
        "model_provider": REPLAY_PROVIDER,
        "source": source,
    }
    texts = [p for p, b in enumerate(message.blocks) if b.kind is BlockKind.TEXT]
    rich = [p for p, b in enumerate(message.blocks) if b.kind is not BlockKind.TEXT]
    if message_format == "anthropic" and rich:
        content = tuple(_content_block(b) for b in message.blocks)
        return LcMessage(AI, content, parts=_all(message), **common)
    text = "".join(message.blocks[p].text for p in texts)
    return LcMessage(AI, text, parts=tuple(texts) + tuple(
        p for p in rich if message.blocks[p].kind is BlockKind.TOOL_USE), **common)  # fmt: skip


def from_lc_partial(original: Message, kept: LcMessage) -> Message:
    """The ctxlab message showing what a partially kept LangChain message still holds."""
    if isinstance(kept.content, str):
        blocks: list[Block] = []
        placed = False
        for pos in kept.parts:
            block = original.blocks[pos]
            if block.kind is BlockKind.TOOL_USE:
                blocks.append(block)
            elif not placed:
                blocks.append(replace(block, text=kept.content, parts=()))
                placed = True
        if not placed:
            blocks.insert(0, Block(BlockKind.TEXT, text=kept.content))
        return replace(original, blocks=tuple(blocks))
    return replace(original, blocks=tuple(original.blocks[p] for p in kept.parts))


def role_of(message: LcMessage) -> str:
    return "assistant" if message.type == AI else "user"
