"""Strands Agents' conversation managers, the rules shared by ``strands_sliding_window`` and
``strands_summarizing`` (strands-agents/sdk-python @ 1232230daa4385fd6470be29013eb2375d7a307c,
``v1.40.0`` + 2 commits; ``strands-agents==1.40.0`` on the package registry).

- ``src/strands/agent/conversation_manager/conversation_manager.py``:
  ``DEFAULT_COMPRESSION_THRESHOLD = 0.7``, ``DEFAULT_CONTEXT_WINDOW_LIMIT = 200_000``;
  proactive compression (off unless ``proactive_compression`` is given) calls
  ``reduce_context`` without an error when ``projected_input_tokens / context_window_limit
  >= threshold``, before every model call.
- ``src/strands/models/model.py``: ``Model.count_tokens`` (the projection's estimator):
  the heuristic ``_estimate_tokens_with_heuristic`` (the docstring names tiktoken, the code
  never imports it): ``ceil(len(text) / 4)`` per text, tool name, tool-result text item and
  reasoning text, ``ceil(len(json.dumps(obj)) / 2)`` per tool input and tool spec.
- The trim point of ``SlidingWindowConversationManager.reduce_context`` and the split point of
  ``SummarizingConversationManager._adjust_split_point_for_tool_pairs`` (below, as pure
  functions over each message's role and whether it holds a toolUse / toolResult).

A Strands message is one entry of ``agent.messages``. ctxlab's source messages map onto them
by :func:`ctxlab.engine.strategies._agent_units.units`: an assistant response split over
several records (same id) is one message, and the tool results answering one response are
one user message (Strands' event loop appends them together).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from ..core.model import Block, BlockKind, Message, ToolDef
from ..core.params import Param
from ..core.strategy import Strategy

if TYPE_CHECKING:
    from ..core.context_view import ContextView

DEFAULT_COMPRESSION_THRESHOLD = 0.7
DEFAULT_CONTEXT_WINDOW_LIMIT = 200_000
PRESERVE_CHARS = 200  # sliding_window_conversation_manager._PRESERVE_CHARS
TRUNCATION_MARKER = "... [truncated:"
SOURCE = "strands-agents/sdk-python @ 1232230 (v1.40.0)"


class StrandsMessage(Protocol):
    """What the trim and split rules read of a message."""

    @property
    def role(self) -> str: ...  # "user" | "assistant"

    @property
    def tool_use(self) -> bool: ...  # any content block is a toolUse

    @property
    def tool_result(self) -> bool: ...  # any content block is a toolResult


# --- the estimator (Model.count_tokens, heuristic) ------------------------------------------
def text_tokens(text: str) -> int:
    """``_heuristic_estimate_text``: ``math.ceil(len(text) / 4)`` (characters, not bytes)."""
    return math.ceil(len(text) / 4)


def json_tokens(value: Any) -> int:
    """``_heuristic_estimate_json``: ``math.ceil(len(json.dumps(obj)) / 2)``."""
    try:
        return math.ceil(len(json.dumps(value)) / 2)
    except (TypeError, ValueError):
        return 0


def result_items(block: Block) -> list[Block]:
    """A toolResult's ``content`` items: the source's list form, else its one text."""
    if block.parts:
        return list(block.parts)
    return [Block(BlockKind.TEXT, block.text)] if block.text else []


def block_tokens(block: Block) -> int:
    """``_count_content_block_tokens``: text, toolUse (name + input as JSON), toolResult
    (its text items only), reasoning text; images, documents and the rest count 0."""
    kind = block.kind
    if kind is BlockKind.TEXT:
        return text_tokens(block.text)
    if kind is BlockKind.TOOL_USE:
        value = block.tool_input if block.tool_input is not None else {}
        return text_tokens(block.tool_name) + json_tokens(value)
    if kind is BlockKind.TOOL_RESULT:
        return sum(text_tokens(p.text) for p in result_items(block) if p.kind is BlockKind.TEXT)
    if kind is BlockKind.THINKING:
        return text_tokens(block.text)
    return 0


def message_tokens(message: Message) -> int:
    return sum(block_tokens(b) for b in message.blocks)


def tools_tokens(tools: Sequence[ToolDef]) -> int:
    """Each tool spec as ``json.dumps`` / 2 (``ToolSpec``: name, description, inputSchema)."""
    return sum(
        json_tokens(
            {"name": t.name, "description": t.description, "inputSchema": {"json": t.parameters}}
        )
        for t in tools
    )


# --- SlidingWindowConversationManager.reduce_context: the trim point -------------------------
def trim_point(messages: Sequence[StrandsMessage], window_size: int) -> int | None:
    """How many of the oldest messages ``reduce_context`` removes (``trim_index``), or None
    when it finds no valid trim point (it then raises on overflow, else logs and returns).

    ``2`` when the history is within the window, else ``len - window_size``; then forward to
    a user message that holds no toolResult and no toolUse without a toolResult right after;
    failing that, the first assistant(toolUse) + user(toolResult) pair seen on the way."""
    n = len(messages)
    trim_index = 2 if n <= window_size else n - window_size
    fallback: int | None = None
    while trim_index < n:
        m = messages[trim_index]
        if m.role != "user":
            if (
                fallback is None
                and m.tool_use
                and trim_index + 1 < n
                and messages[trim_index + 1].role == "user"
                and messages[trim_index + 1].tool_result
            ):
                fallback = trim_index
            trim_index += 1
            continue
        if m.tool_result or (
            m.tool_use and not (trim_index + 1 < n and messages[trim_index + 1].tool_result)
        ):
            trim_index += 1
            continue
        return trim_index
    return fallback


# --- SummarizingConversationManager: how many of the oldest are summarised ------------------
class NoSplit(Exception):
    """``ContextWindowOverflowException`` raised by ``_summarize_oldest`` (the message)."""


def summarize_count(
    messages: Sequence[StrandsMessage], summary_ratio: float, preserve_recent: int
) -> int:
    """``_summarize_oldest``'s count, after ``_adjust_split_point_for_tool_pairs``; raises
    ``NoSplit`` with the original's message where it raises."""
    n = len(messages)
    count = max(1, int(n * summary_ratio))
    count = min(count, n - preserve_recent)
    if count <= 0:
        raise NoSplit("Cannot summarize: insufficient messages for summarization")
    count = adjust_split_point(messages, count)
    if count <= 0:
        raise NoSplit("Cannot summarize: insufficient messages for summarization")
    return count


def adjust_split_point(messages: Sequence[StrandsMessage], split_point: int) -> int:
    """``_adjust_split_point_for_tool_pairs``: forward past a toolResult, and past a toolUse
    whose next message holds no toolResult."""
    n = len(messages)
    if split_point > n:
        raise NoSplit("Split point exceeds message array length")
    if split_point == n:
        return split_point
    while split_point < n:
        m = messages[split_point]
        if m.tool_result or (
            m.tool_use and split_point + 1 < n and not messages[split_point + 1].tool_result
        ):
            split_point += 1
        else:
            return split_point
    raise NoSplit("Unable to trim conversation context!")


# --- SlidingWindowConversationManager._truncate_tool_results -------------------------------
def truncate_text(text: str) -> str | None:
    """The text item cut to its first and last 200 characters, or None when it is not cut
    (already truncated, or at most 400 characters)."""
    if TRUNCATION_MARKER in text or len(text) <= 2 * PRESERVE_CHARS:
        return None
    removed = len(text) - 2 * PRESERVE_CHARS
    return (
        f"{text[:PRESERVE_CHARS]}...\n\n... [truncated: {removed} chars removed] ...\n\n"
        f"...{text[-PRESERVE_CHARS:]}"
    )


def image_placeholder(block: Block) -> str:
    """``[image: {format}, {bytes} bytes]`` (Strands' format is the subtype: png, jpeg)."""
    media_type = block.media_type.split("/")[-1] if block.media_type else "unknown"
    return f"[image: {media_type}, {block.size if block.size else 0} bytes]"


def truncate_results(message: Message) -> Message | None:
    """The message with each toolResult's images replaced by a placeholder and each text
    item over 400 characters cut to its head and tail; None when nothing changed."""
    changed = False
    blocks: list[Block] = []
    for block in message.blocks:
        if block.kind is not BlockKind.TOOL_RESULT:
            blocks.append(block)
            continue
        items: list[Block] = []
        item_changed = False
        for item in result_items(block):
            if item.kind is BlockKind.MEDIA and item.media_type.startswith("image"):
                items.append(Block(BlockKind.TEXT, image_placeholder(item)))
                item_changed = True
                continue
            if item.kind is BlockKind.TEXT:
                cut = truncate_text(item.text)
                if cut is not None:
                    items.append(replace(item, text=cut))
                    item_changed = True
                    continue
            items.append(item)
        if item_changed:
            text = "\n".join(i.text for i in items if i.kind is BlockKind.TEXT)
            parts = tuple(items) if block.parts else ()
            blocks.append(replace(block, text=text, parts=parts))
            changed = True
        else:
            blocks.append(block)
    return replace(message, blocks=tuple(blocks)) if changed else None


# The model's window, as both conversation managers declare it.
CONTEXT_WINDOW_LIMIT = Param(
    "context_window_limit",
    DEFAULT_CONTEXT_WINDOW_LIMIT,
    "The model's context window; a request over it overflows "
    "(DEFAULT_CONTEXT_WINDOW_LIMIT when the model config sets none).",
    min=1_000,
    origin="model config context_window_limit",
)


class StrandsStrategy(Strategy):
    """What both Strands conversation managers share: Strands' own estimate (characters / 4,
    JSON / 2) and the window geometry (``context_window_limit``, the optional proactive
    threshold)."""

    def count_text(self, text: str) -> int:
        return text_tokens(text)

    def count_message(self, message: Message) -> int:
        return message_tokens(message)

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return tools_tokens(tools)

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window_limit"])

    def threshold(self, ctx: ContextView) -> int | None:
        share = float(self.params["proactive_compression"])
        return int(share * self.window(ctx)) if share > 0 else None
