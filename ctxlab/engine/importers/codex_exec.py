"""``codex exec --json`` event streams (stdout of a headless Codex run).

Events: ``thread.started{thread_id}``, ``turn.started``, ``item.started|updated|completed
{item}``, ``turn.completed{usage}``, ``turn.failed``, ``error``. Only the final state of
each item counts. The prompt is a CLI argument and is not in the stream, so conversations
start with the agent. A command execution becomes a call (the command) plus its result (the
aggregated output); a file change becomes a call plus a status result. Turn usage is the
sum over the turn's model requests and is put on the turn's last assistant message.
"""

from __future__ import annotations

from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ._common import iter_jsonl
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_str,
    opaque,
    openai_usage,
    reject_empty,
    shorten,
)

FORMAT = "codex-exec-json"
LABEL = "Codex exec --json stream"

_EVENTS = {
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
    "error",
}


def sniff(head: bytes, name: str) -> int:
    compact = head.replace(b": ", b":")
    if not compact.lstrip().startswith(b"{"):
        return 0
    if b'"type":"thread.started"' in compact or b'"type":"item.completed"' in compact:
        return 95
    if b'"type":"turn.started"' in compact or b'"type":"turn.completed"' in compact:
        return 80
    return 0


class _Thread:
    def __init__(self, thread_id: str, line: int) -> None:
        self.id = thread_id
        self.line = line
        self.messages: list[MessageBuilder] = []
        self.items: dict[tuple[int, str], tuple[int, dict[str, Any]]] = {}  # final state
        self.turn = 0
        self.turn_start = 0  # index in `messages` where the current turn began


def _item_messages(item: dict[str, Any]) -> list[MessageBuilder]:
    itype = as_str(item.get("type"))
    item_id = as_str(item.get("id"))
    text = as_str(item.get("text"))
    if itype == "agent_message":
        return [MessageBuilder(Role.ASSISTANT, [Block(BlockKind.TEXT, text=text, raw_type=itype)])]
    if itype == "reasoning":
        return [
            MessageBuilder(Role.ASSISTANT, [Block(BlockKind.THINKING, text=text, raw_type=itype)])
        ]
    if itype in {"command_execution", "file_change", "mcp_tool_call", "web_search"}:
        call_input: Any
        if itype == "command_execution":
            name, call_input = "shell", {"command": item.get("command")}
            code = item.get("exit_code")
            result_text = as_str(item.get("aggregated_output"))
            failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
        elif itype == "file_change":
            name, call_input = "apply_patch", {"changes": item.get("changes")}
            result_text = f"status: {as_str(item.get('status'))}"
            failed = item.get("status") == "failed"
        elif itype == "mcp_tool_call":
            name = f"{as_str(item.get('server'))}.{as_str(item.get('tool'))}".strip(".")
            call_input = item.get("arguments")
            result_text = as_str(item.get("result")) or f"status: {as_str(item.get('status'))}"
            failed = item.get("status") == "failed"
        else:
            name, call_input = "web_search", {"query": item.get("query")}
            result_text, failed = "", False
        call = Block(
            BlockKind.TOOL_USE, tool_id=item_id, tool_name=name, tool_input=call_input,
            raw_type=itype,
        )  # fmt: skip
        result = Block(
            BlockKind.TOOL_RESULT, text=result_text, tool_id=item_id, is_error=failed,
            raw_type=itype,
        )  # fmt: skip
        return [MessageBuilder(Role.ASSISTANT, [call]), MessageBuilder(Role.TOOL, [result])]
    if itype == "error":
        return [
            MessageBuilder(Role.ASSISTANT, [opaque(itype, item, text=as_str(item.get("message")))])
        ]
    return [MessageBuilder(Role.ASSISTANT, [opaque(itype, item)])]


def _flush_turn(thread: _Thread, name: str) -> None:
    """Turn the turn's final item states into messages, merging adjacent assistant parts."""
    for (_turn, _id), (line, item) in thread.items.items():
        for builder in _item_messages(item):
            builder.source = SourcePos(file=name, line=line)
            builder.id = as_str(item.get("id"))
            prev = thread.messages[-1] if len(thread.messages) > thread.turn_start else None
            if builder.role is Role.ASSISTANT and prev is not None and prev.role is Role.ASSISTANT:
                prev.blocks.extend(builder.blocks)
            else:
                thread.messages.append(builder)
    thread.items.clear()


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, "a codex exec --json event stream (JSONL)")
    warnings = Warnings()
    threads: list[_Thread] = []
    recognised = 0

    def current(line: int) -> _Thread:
        if not threads:
            threads.append(_Thread("", line))
        return threads[-1]

    for line, rec in iter_jsonl(data, name):
        event = as_dict(rec)
        etype = as_str(event.get("type"))
        if etype not in _EVENTS:
            warnings.add(f"unknown event type {etype[:40]!r} skipped", f"line {line}")
            continue
        recognised += 1
        if etype == "thread.started":
            if threads:
                _flush_turn(threads[-1], name)
            threads.append(_Thread(as_str(event.get("thread_id")), line))
        elif etype == "turn.started":
            thread = current(line)
            _flush_turn(thread, name)
            thread.turn += 1
            thread.turn_start = len(thread.messages)
        elif etype.startswith("item."):
            thread = current(line)
            item = as_dict(event.get("item"))
            key = (thread.turn, as_str(item.get("id")) or f"line{line}")
            first_line = thread.items.get(key, (line, item))[0]
            thread.items[key] = (first_line, item)  # latest state, first position
        elif etype in {"turn.completed", "turn.failed"}:
            thread = current(line)
            _flush_turn(thread, name)
            usage = openai_usage(event.get("usage"))
            turn_msgs = thread.messages[thread.turn_start :]
            last = next((m for m in reversed(turn_msgs) if m.role is Role.ASSISTANT), None)
            if usage is not None and last is not None:
                last.usage = usage
            if etype == "turn.failed":
                error = as_str(as_dict(event.get("error")).get("message"))
                warnings.add(f"turn failed: {shorten(error, 120)}", f"line {line}")
        elif etype == "error":
            warnings.add(
                f"stream error: {shorten(as_str(event.get('message')), 120)}", f"line {line}"
            )
    if not recognised:
        raise TranscriptError(
            "no codex exec events found",
            file=name,
            expected="JSONL events {type: thread.started|turn.started|item.completed|…}",
        )
    convs = []
    for index, thread in enumerate(threads):
        _flush_turn(thread, name)
        if not thread.messages:
            warnings.add("the stream holds no items (no messages)", f"line {thread.line}")
        first_text = next(
            (b.text for m in thread.messages for b in m.blocks if b.kind is BlockKind.TEXT), ""
        )
        conv_id = thread.id or f"{name or 'codex-exec'}#{index}"
        convs.append(
            Conversation(
                id=conv_id,
                title=shorten(first_text) if first_text else f"codex exec {conv_id}",
                messages=tuple(m.build() for m in thread.messages),
                metadata=(("thread_id", thread.id),) if thread.id else (),
                usage_convention="openai",
            )
        )
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())
