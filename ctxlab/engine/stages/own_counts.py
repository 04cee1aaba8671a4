"""The agents' own counts that their replay strategy and a session view both read.

One rule each, written once here and imported by both sides (stdlib only: ``ctxlab
statusline`` loads this module in a fresh interpreter at every call, so nothing of the
engine's values, ``dataclasses`` or the strategy registry is imported):

- Claude Code's ``roughTokenCountEstimationForBlock`` (``block_tokens``): the
  ``claude_code`` strategy counts the engine's blocks with it, the status line the raw
  content blocks of a response line (``RawBlock``: a block of Claude Code's JSON read as
  ``importers._anthropic_blocks.block`` reads it, without building the engine's value);
- Codex's reasoning tally (``ReasoningTally``): which replies' encrypted reasoning
  ``get_non_last_reasoning_items_tokens`` adds to the count Codex checks, kept by the
  ``codex`` strategy's state and by *Your session, now* (``evaluate.session_now``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .js_text import js_json, quarter_length_tokens

if TYPE_CHECKING:  # (a class made at import: the status line's start pays for it)
    from collections.abc import Sequence
    from typing import Protocol

    class BlockLike(Protocol):
        """What ``block_tokens`` reads of a block: the engine's ``core.model.Block`` (whose
        ``kind`` is a ``BlockKind``, a string) or a ``RawBlock``."""

        @property
        def kind(self) -> str: ...
        @property
        def text(self) -> str: ...
        @property
        def tool_name(self) -> str: ...
        @property
        def tool_input(self) -> Any: ...
        @property
        def size(self) -> int: ...
        @property
        def parts(self) -> Sequence[BlockLike]: ...


IMAGE_TOKENS = 2_000  # roughTokenCountEstimationForBlock: image / document


def block_tokens(block: BlockLike) -> int:
    """``roughTokenCountEstimationForBlock``: a tool call is its name and its input as
    ``JSON.stringify`` writes it, an image or document ``IMAGE_TOKENS``, a tool result the
    sum of its parts (its text when it has none), an opaque payload (redacted thinking, a
    server compaction, an unknown block) its bytes / 4, anything else its text; each text
    ``Math.round(length / 4)``."""
    kind = block.kind
    if kind == "tool_use":
        raw = block.tool_input
        # ``JSON.stringify``: no spaces, non-ASCII kept
        stringified = raw if isinstance(raw, str) else js_json(raw if raw is not None else {})
        return quarter_length_tokens(block.tool_name + stringified)
    if kind == "media":
        return IMAGE_TOKENS
    if kind == "tool_result" and block.parts:
        return sum(block_tokens(part) for part in block.parts)
    if kind == "opaque":
        return (block.size + 2) // 4  # redacted_thinking data / stringified payloads
    return quarter_length_tokens(block.text)


_TOOL_USE_TYPES = ("tool_use", "server_tool_use", "mcp_tool_use")


def _json_size(value: Any) -> int:
    """``importers._kit.json_size``: bytes of a payload as compact JSON (a string's own)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    try:
        return len(js_json(value).encode())
    except (TypeError, ValueError):
        return 0


class RawBlock:
    """A content block of Claude Code's JSON, read as the importer reads it
    (``importers._anthropic_blocks.block``): its kind, text, tool name and input, opaque
    size and parts, what ``block_tokens`` reads (tests/engine/test_statusline_count.py
    checks the two readings count the same on every vendored session's blocks)."""

    __slots__ = ("kind", "parts", "size", "text", "tool_input", "tool_name")

    def __init__(self, value: Any) -> None:
        self.text = self.tool_name = ""
        self.tool_input: Any = None
        self.size = 0
        self.parts: tuple[RawBlock, ...] = ()
        if isinstance(value, str):
            self.kind, self.text = "text", value
            return
        found = value.get("type") if isinstance(value, dict) else None
        raw_type = found if isinstance(found, str) else ""
        if raw_type in ("text", "thinking"):
            self.kind = raw_type
            self.text = _text(value.get(raw_type))
        elif raw_type in _TOOL_USE_TYPES:
            self.kind = "tool_use"
            self.tool_name, self.tool_input = _text(value.get("name")), value.get("input")
        elif raw_type == "tool_result" or raw_type.endswith("_tool_result"):
            self.kind = "tool_result"
            content = value.get("content")
            if isinstance(content, str):
                self.text = content
            elif isinstance(content, list):  # (a result with parts is counted by them)
                self.parts = tuple(RawBlock(part) for part in content)
        elif raw_type in ("image", "document"):
            self.kind = "media"
        else:
            self.kind = "opaque"
            if raw_type == "redacted_thinking":
                self.size = _json_size(value.get("data"))
            elif raw_type == "compaction":
                self.size = _json_size(value.get("content"))
            else:
                self.size = _json_size(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ReasoningTally:
    """Codex's count of encrypted reasoning (``get_non_last_reasoning_items_tokens``): the
    reasoning of the replies before the turn's last real user message since the last
    compaction is counted, the replies since are not yet. A reply adds to ``open``; a real
    user message settles it (``settled``; ``previous`` keeps what was settled before, for a
    check made before that message was recorded); a compaction clears all. ``guessed_*``
    tally, beside each estimate, the reported reasoning tokens behind it where the rollout
    kept no encrypted length (the count's uncertain part)."""

    __slots__ = ("guessed_open", "guessed_previous", "guessed_settled", "open", "previous",
                 "settled")  # fmt: skip

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A compaction: the earlier replies' reasoning is gone."""
        self.settled = self.previous = self.open = 0
        self.guessed_settled = self.guessed_previous = self.guessed_open = 0

    def reply(self, tokens: int, guessed: int = 0) -> None:
        """A reply whose reasoning is ``tokens`` (``codex.reasoning_tokens``), ``guessed``
        of them reported tokens times a factor."""
        self.open += tokens
        self.guessed_open += guessed

    def user(self) -> None:
        """A real user message (``codex.is_real_user_message``): the replies before it are
        no longer the last turn's."""
        self.previous = self.settled
        self.settled += self.open
        self.open = 0
        self.guessed_previous = self.guessed_settled
        self.guessed_settled += self.guessed_open
        self.guessed_open = 0
