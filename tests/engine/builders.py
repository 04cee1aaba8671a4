"""Tiny builders for engine tests: user("q"), assistant("a"), tool_use(...), tool_result(...)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role, ToolDef, Usage
from ctxlab.engine.core.records import Event, RangeChunks, ReplayResult
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse


def system(text: str = "You are a helpful agent.") -> Message:
    return Message(Role.SYSTEM, (Block(BlockKind.TEXT, text=text),))


def user(text: str, **kw: Any) -> Message:
    return Message(Role.USER, (Block(BlockKind.TEXT, text=text),), **kw)


def assistant(text: str = "", *uses: Block, thinking: str = "", **kw: Any) -> Message:
    blocks: list[Block] = []
    if thinking:
        blocks.append(Block(BlockKind.THINKING, text=thinking))
    if text:
        blocks.append(Block(BlockKind.TEXT, text=text))
    blocks.extend(uses)
    return Message(Role.ASSISTANT, tuple(blocks), **kw)


def tool_use(tool_id: str, name: str = "bash", **tool_input: Any) -> Block:
    return Block(BlockKind.TOOL_USE, tool_id=tool_id, tool_name=name, tool_input=tool_input or {})


def call(tool_id: str, name: str = "bash", text: str = "", **tool_input: Any) -> Message:
    """An assistant message with one tool_use."""
    return assistant(text, tool_use(tool_id, name, **tool_input))


def tool_result(
    tool_id: str, output: str = "ok", *, role: Role = Role.USER, name: str = ""
) -> Message:
    """A message carrying one tool_result (user role as Anthropic does; TOOL for OpenAI)."""
    block = Block(BlockKind.TOOL_RESULT, tool_id=tool_id, text=output, tool_name=name)
    return Message(role, (block,))


def results(*pairs: tuple[str, str]) -> Message:
    blocks = tuple(Block(BlockKind.TOOL_RESULT, tool_id=t, text=o) for t, o in pairs)
    return Message(Role.USER, blocks)


def usage(prompt: int) -> Usage:
    return Usage(input_uncached=prompt)


def conv(*messages: Message, tools: tuple[ToolDef, ...] = ()) -> Conversation:
    return Conversation(id="t", title="test", messages=tuple(messages), tools=tools)


def cycle(n: int, size: int = 400, *, start: int = 0) -> list[Message]:
    """``n`` user -> tool call -> result -> reply turns with ``size``-char outputs."""
    out: list[Message] = []
    for k in range(start, start + n):
        out += [
            user(f"task {k}: please fix file src/mod{k}.py"),
            call(f"t{k}", "bash", cmd=f"cat src/mod{k}.py"),
            tool_result(f"t{k}", (f"line {k}\n" * (size // 7 + 1))[:size]),
            assistant(f"done {k}"),
        ]
    return out


# Windows small enough that the seed presets act on the short real corpus sessions (golden
# replays, perf digests, the stored-run analysis tests).
SMALL_WINDOWS: dict[str, dict[str, Any]] = {
    "qwenpaw": {"max_input_length": 4096},
    "copaw": {"max_input_length": 4096, "token_counter": "bytes4"},
    "cowagent": {"agent_max_context_tokens": 300, "agent_max_context_turns": 2},
    "picoclaw": {"max_tokens": 1024, "context_window": 3000, "summarize_message_threshold": 4},
    "baseagent": {"model_context_limit": 8000, "output_token_max": 1000},
}


class EchoSummarizer:
    """Answers every summary request with ``text`` and keeps the requests it saw."""

    name = "echo"

    def __init__(self, text: str = "SUM") -> None:
        self.text = text
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return SummaryResponse(text=self.text)


def events_of(result: ReplayResult, kind: str) -> list[Event]:
    return [e for e in result.events if e.kind == kind]


def plain(value: Any, *, later_fields: Mapping[tuple[str, str], Any] | None = None) -> Any:
    """Dataclasses, enums and containers as JSON-ready values, for comparing results.
    ``later_fields``: (class name, field) -> default; a field at that default is left out
    (fields added after a golden digest was pinned)."""
    later = later_fields or {}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value).__name__
        return {
            f.name: plain(getattr(value, f.name), later_fields=later)
            for f in dataclasses.fields(value)
            if later.get((kind, f.name), ...) != getattr(value, f.name)
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):  # (dicts, and a result's PackedTexts offloads)
        return {str(k): plain(v, later_fields=later) for k, v in value.items()}
    if isinstance(value, (list, tuple, RangeChunks)):  # (a step's many context ranges)
        return [plain(v, later_fields=later) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v, later_fields=later) for v in value)
    return value
