"""GitHub Copilot CLI session event log (``~/.copilot/session-state/<sessionId>/events.jsonl``;
older CLIs wrote ``~/.copilot/session-state/<sessionId>.jsonl``).

Shapes verified in github/copilot-sdk (MIT) at cc0438d66e3e68c333537cb935d9425d4e4ed8d5,
``python/copilot/generated/session_events.py`` (the CLI's own event schema, generated), and
in real logs (copilot-agent 1.0.49 and 1.0.55, qiaolei81/copilot-session-viewer, MIT).

One JSON object per line: ``{type, data, id, timestamp, parentId}`` (``agentId`` on the
events of a sub-agent). What reaches the model:

- ``session.start`` (``sessionId``, ``copilotVersion``, ``selectedModel``, ``context {cwd,
  branch, repository}``) and ``session.resume``: the conversation's id and metadata;
  ``session.model_change`` (``newModel``) the model from then on.
- ``system.message`` (``role`` system / developer, ``content``: the full system prompt): a
  system message. The CLI writes it again for each prompt; a copy identical to the system
  prompt in force is the same prompt, not a second one (not imported again); a changed one
  is imported where it is.
- ``user.message``: ``transformedContent`` when present (what the model was sent: the typed
  ``content`` with the CLI's date and reminders around it), else ``content``; attachments
  are listed on the block (``raw_type`` ``user.message``) by the text the CLI gives.
- ``assistant.message``: ``reasoningText`` as a thinking block, ``content`` as text, each of
  ``toolRequests[] {toolCallId, name, arguments}`` a tool call (``reasoningOpaque`` /
  ``encryptedContent``: an opaque block, size only).
- ``tool.execution_complete`` (``toolCallId``, ``success``, ``result.content`` = what the
  model reads, ``error.message`` on failure): the tool result. ``tool.execution_start``
  repeats the call's arguments and is not a message.
- ``assistant.usage`` (input, cache read / write, output tokens), when the log has it: the
  usage of the assistant message of the same ``apiCallId`` or, failing that, the last one.
- ``system.notification`` (``content``): a user message flagged ``meta`` (the runtime's
  ``<system_notification>`` messages).
- **Sub-agents** (``task`` tool): events carrying ``data.parentToolCallId`` (and
  ``agentId``) are the sub-agent's own context, not the main one's: each sub-agent is its own
  conversation (``parent_id`` the session), its first message the task's ``prompt``.
- **Compactions**: a successful ``session.compaction_complete`` (``summaryContent``,
  ``preCompactionTokens``, ``messagesRemoved``, ``trigger``, ...) becomes the summary as a
  user message (flags ``compact_summary``, ``meta``) and an ``OriginalCompaction(kind=
  "copilot_compaction")``; ``session.truncation`` (``preTruncationTokensInMessages``,
  ``tokensRemovedDuringTruncation``, ``messagesRemovedDuringTruncation``, ...) an
  ``OriginalCompaction(kind="copilot_truncation")``; ``session.context_cleared`` (``/clear``) one of
  kind ``copilot_context_cleared``. Older messages stay in the list, as in the file; a failed
  compaction is a warning.

Not the model's context, not imported: hooks (``hook.*``), turn markers, deltas, intents,
progress, session bookkeeping (``session.info`` / ``warning`` / ``error`` / ``idle`` /
``shutdown`` (its totals become metadata), ...). A type not known here is counted in an
``unknown-record`` warning. Bad lines are skipped with a located warning; a cut last line (a
session still being written) is left out. Tool-call ids are the CLI's own; none is made up.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from ._common import iter_jsonl_lenient, require_content
from ._kit import Warnings, as_dict, as_int, as_list, as_str, title_from

FORMAT = "copilot-cli"
LABEL = "GitHub Copilot CLI session"

_EXPECTED = (
    'Copilot CLI events.jsonl: one {"type", "data", "id", "timestamp"} event per line '
    "(session.start, user.message, assistant.message, tool.execution_complete, ...)"
)

# Event types that never reach the model (or only repeat what another event says).
_SILENT = frozenset(
    {
        "session.idle",
        "session.info",
        "session.warning",
        "session.error",
        "session.title_changed",
        "session.mode_changed",
        "session.plan_changed",
        "session.todos_changed",
        "session.workspace_file_changed",
        "session.handoff",
        "session.snapshot_rewind",
        "session.usage_checkpoint",
        "session.usage_info",
        "session.context_changed",
        "session.compaction_start",
        "session.task_complete",
        "session.tools_updated",
        "session.background_tasks_changed",
        "session.skills_loaded",
        "session.custom_agents_updated",
        "session.mcp_servers_loaded",
        "session.mcp_server_status_changed",
        "session.extensions_loaded",
        "session.remote_steerable_changed",
        "session.permissions_changed",
        "session.session_limits_changed",
        "session.schedule_created",
        "session.schedule_cancelled",
        "session.schedule_rearmed",
        "session.autopilot_objective_changed",
        "session.binary_asset",
        "session.custom_notification",
        "session.auto_mode_resolved",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.turn_retry",
        "assistant.intent",
        "assistant.idle",
        "assistant.server_tool_progress",
        "assistant.reasoning",
        "assistant.reasoning_delta",
        "assistant.tool_call_delta",
        "assistant.streaming_delta",
        "assistant.message_start",
        "assistant.message_delta",
        "tool.user_requested",
        "tool.execution_start",
        "tool.execution_partial_result",
        "tool.execution_progress",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
        "subagent.selected",
        "subagent.deselected",
        "hook.start",
        "hook.end",
        "hook.progress",
        "abort",
        "result",
    }
)

_TYPE = re.compile(rb'"type"\s*:\s*"(session\.start|session\.resume|user\.message|'
                   rb'assistant\.message|system\.message|tool\.execution_complete|'
                   rb'assistant\.turn_start|hook\.start)"')  # fmt: skip


def sniff(head: bytes, name: str) -> int:
    """A ``session.start`` of the CLI (``copilot-agent`` / ``copilotVersion``): sure; the
    event envelope (``"type"`` one of the CLI's event names with a ``"data"`` object)."""
    if not head.lstrip().startswith(b"{"):
        return 0
    compact = head.replace(b'": ', b'":')
    found = {m.group(1) for m in _TYPE.finditer(head)}
    if not found or b'"data":{' not in compact:
        return 0
    if b"session.start" in found and (
        b'"producer":"copilot-agent"' in compact or b'"copilotVersion"' in compact
    ):
        return 98
    if found & {b"session.start", b"session.resume"} or len(found) >= 2:
        return 92 if b'"toolRequests"' in compact or b'"parentId"' in compact else 75
    return 0


@dataclass(slots=True)
class _Thread:
    """The messages of one context: the session's or a sub-agent's."""

    messages: list[Message] = field(default_factory=list)
    compactions: list[OriginalCompaction] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)  # toolCallId -> tool name
    by_api_call: dict[str, int] = field(default_factory=dict)  # apiCallId -> message index
    system: str | None = None
    model: str = ""
    typed: list[Message] = field(default_factory=list)  # user messages as typed (titles)


@dataclass(slots=True)
class _Reader:
    name: str
    warnings: Warnings = field(default_factory=Warnings)
    session_id: str = ""
    facts: dict[str, str] = field(default_factory=dict)
    main: _Thread = field(default_factory=_Thread)
    subagents: dict[str, _Thread] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)  # task toolCallId -> its prompt
    model: str = ""
    seen: bool = False

    def pos(self, line: int) -> SourcePos:
        return SourcePos(self.name, line=line)

    def thread(self, data: dict[str, Any], event: dict[str, Any]) -> _Thread:
        parent = as_str(data.get("parentToolCallId")) or as_str(event.get("agentId"))
        if not parent:
            return self.main
        thread = self.subagents.get(parent)
        if thread is None:
            thread = self.subagents[parent] = _Thread()
            prompt = self.prompts.get(parent, "")
            if prompt:
                thread.messages.append(
                    Message(Role.USER, (Block(BlockKind.TEXT, text=prompt, raw_type="task"),),
                            source=SourcePos(self.name), id=f"{parent}:prompt")
                )  # fmt: skip
        return thread

    def add(self, line: int, event: Any) -> None:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            self.warnings.add("skipped a line that is not a Copilot CLI event", f"line {line}",
                              code="unknown-record")  # fmt: skip
            return
        kind = event["type"]
        data = as_dict(event.get("data"))
        if kind in _SILENT:
            self.seen = True
            return
        handler = _HANDLERS.get(kind)
        if handler is None:
            self.warnings.add(f"event type {kind[:60]!r} not known: skipped", f"line {line}",
                              code="unknown-record")  # fmt: skip
            return
        self.seen = True
        handler(self, line, event, data)

    # --- session facts --------------------------------------------------------------------

    def _start(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        self.session_id = self.session_id or as_str(data.get("sessionId"))
        context = as_dict(data.get("context"))
        for key, value in (
            ("copilot_version", data.get("copilotVersion")),
            ("producer", data.get("producer")),
            ("cwd", context.get("cwd")),
            ("branch", context.get("branch")),
            ("repository", context.get("repository")),
            ("started", data.get("startTime")),
        ):
            if as_str(value) and key not in self.facts:
                self.facts[key] = as_str(value)
        self.model = as_str(data.get("selectedModel")) or self.model

    def _model_change(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        self.model = as_str(data.get("newModel")) or self.model

    def _shutdown(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        premium = data.get("totalPremiumRequests")
        if isinstance(premium, (int, float)):
            self.facts["premium_requests"] = str(premium)
        metrics = as_dict(data.get("modelMetrics"))
        for model, values in metrics.items():
            usage = as_dict(as_dict(values).get("usage"))
            self.facts[f"tokens {model}"] = ", ".join(
                f"{k} {as_int(v)}" for k, v in usage.items() if isinstance(v, int)
            )
        self.model = as_str(data.get("currentModel")) or self.model

    # --- messages -------------------------------------------------------------------------

    def _system(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        text = as_str(data.get("content"))
        if text == thread.system:
            return  # the prompt in force, written again for the next prompt
        thread.system = text
        thread.messages.append(
            Message(Role.SYSTEM, (Block(BlockKind.TEXT, text=text, raw_type="system.message"),),
                    source=self.pos(line), timestamp=_stamp(event), id=as_str(event.get("id")),
                    name=as_str(data.get("role")))
        )  # fmt: skip

    def _user(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        typed = as_str(data.get("content"))
        text = as_str(data.get("transformedContent")) or typed
        blocks = [Block(BlockKind.TEXT, text=text, raw_type="user.message")]
        for item in as_list(data.get("attachments")):
            item = as_dict(item)
            label = as_str(item.get("displayName") or item.get("path") or item.get("type"))
            if label:
                blocks.append(Block(BlockKind.TEXT, text=f"[attachment: {label}]",
                                    raw_type="attachment"))  # fmt: skip
        thread.typed.append(Message(Role.USER, (Block(BlockKind.TEXT, text=typed),)))
        thread.messages.append(
            Message(Role.USER, tuple(blocks), source=self.pos(line), timestamp=_stamp(event),
                    id=as_str(event.get("id")))
        )  # fmt: skip

    def _notification(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        text = as_str(data.get("content"))
        if not text:
            return
        thread.messages.append(
            Message(Role.USER, (Block(BlockKind.TEXT, text=text, raw_type="system.notification"),),
                    source=self.pos(line), timestamp=_stamp(event), id=as_str(event.get("id")),
                    flags=frozenset({"meta"}))
        )  # fmt: skip

    def _assistant(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        blocks: list[Block] = []
        reasoning = as_str(data.get("reasoningText"))
        if reasoning:
            blocks.append(Block(BlockKind.THINKING, text=reasoning, raw_type="reasoningText"))
        for key in ("reasoningOpaque", "encryptedContent"):
            opaque = as_str(data.get(key))
            if opaque:
                blocks.append(Block(BlockKind.OPAQUE, size=len(opaque), raw_type=key))
        text = as_str(data.get("content"))
        if text:
            blocks.append(Block(BlockKind.TEXT, text=text))
        for request in as_list(data.get("toolRequests")):
            request = as_dict(request)
            tool_id = as_str(request.get("toolCallId"))
            name = as_str(request.get("name"))
            arguments = request.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    self.warnings.add("tool-call arguments are not JSON: kept as text",
                                      f"line {line}", code="tool-arguments-not-json")  # fmt: skip
            thread.calls[tool_id] = name
            if name == "task" and isinstance(arguments, dict):
                self.prompts[tool_id] = as_str(arguments.get("prompt"))
            blocks.append(Block(BlockKind.TOOL_USE, tool_id=tool_id, tool_name=name,
                                tool_input=arguments, raw_type=as_str(request.get("type"))))  # fmt: skip
        model = as_str(data.get("model")) or self.model
        thread.model = thread.model or model
        api_call = as_str(data.get("apiCallId"))
        if api_call:
            thread.by_api_call[api_call] = len(thread.messages)
        thread.messages.append(
            Message(Role.ASSISTANT, tuple(blocks), source=self.pos(line), timestamp=_stamp(event),
                    model=model, id=as_str(data.get("messageId") or event.get("id")))
        )  # fmt: skip

    def _usage(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        index = thread.by_api_call.get(as_str(data.get("apiCallId")))
        if index is None:
            index = next((i for i in range(len(thread.messages) - 1, -1, -1)
                          if thread.messages[i].role is Role.ASSISTANT), None)  # fmt: skip
        if index is None:
            return
        read, write = as_int(data.get("cacheReadTokens")), as_int(data.get("cacheWriteTokens"))
        usage = Usage(
            input_uncached=max(as_int(data.get("inputTokens")) - read - write, 0),
            cache_read=read,
            cache_write_5m=write,
            output=as_int(data.get("outputTokens")),
            reasoning=as_int(data.get("reasoningTokens")),
            convention="openai",
        )
        old = thread.messages[index]
        thread.messages[index] = Message(
            old.role, old.blocks, source=old.source, timestamp=old.timestamp, model=old.model,
            usage=usage, id=old.id, name=old.name, flags=old.flags,
        )  # fmt: skip

    def _tool_result(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        tool_id = as_str(data.get("toolCallId"))
        ok = data.get("success") is not False
        result = as_dict(data.get("result"))
        text = as_str(result.get("content"))
        if not ok and not text:
            text = as_str(as_dict(data.get("error")).get("message"))
        name = thread.calls.get(tool_id, "")
        thread.messages.append(
            Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id=tool_id, tool_name=name,
                                      text=text, is_error=not ok,
                                      raw_type="tool.execution_complete"),),
                    source=self.pos(line), timestamp=_stamp(event), id=as_str(event.get("id")))
        )  # fmt: skip

    # --- compactions ----------------------------------------------------------------------

    def _compaction(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        if data.get("success") is False:
            self.warnings.add("a compaction the CLI reports as failed: nothing compacted",
                              f"line {line}: {as_str(data.get('error'))[:120]}")  # fmt: skip
            return
        summary = as_str(data.get("summaryContent"))
        summary_index = None
        if summary:
            summary_index = len(thread.messages)
            thread.messages.append(
                Message(Role.USER, (Block(BlockKind.TEXT, text=summary, raw_type="summaryContent"),),
                        source=self.pos(line), timestamp=_stamp(event),
                        id=as_str(event.get("id")), flags=frozenset({"compact_summary", "meta"}))
            )  # fmt: skip
        detail = _details(data, (
            ("messages_removed", "messagesRemoved"),
            ("pre_messages", "preCompactionMessagesLength"),
            ("post_tokens", "postCompactionTokens"),
            ("tokens_removed", "tokensRemoved"),
            ("token_limit", "tokenLimit"),
            ("checkpoint", "checkpointNumber"),
        ))  # fmt: skip
        thread.compactions.append(
            OriginalCompaction(
                before_index=summary_index if summary_index is not None else len(thread.messages),
                kind="copilot_compaction",
                trigger=_trigger(as_str(data.get("trigger"))),
                pre_tokens=_opt_int(data.get("preCompactionTokens")),
                summary_index=summary_index,
                source=self.pos(line),
                instructions=as_str(data.get("customInstructions")),
                tokens_saved=_opt_int(data.get("tokensRemoved")),
                agent_version=self.facts.get("copilot_version", ""),
                detail=detail,
            )
        )

    def _truncation(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        thread.compactions.append(
            OriginalCompaction(
                before_index=len(thread.messages),
                kind="copilot_truncation",
                trigger="auto",
                pre_tokens=_opt_int(data.get("preTruncationTokensInMessages")),
                source=self.pos(line),
                tokens_saved=_opt_int(data.get("tokensRemovedDuringTruncation")),
                agent_version=self.facts.get("copilot_version", ""),
                detail=_details(data, (
                    ("messages_removed", "messagesRemovedDuringTruncation"),
                    ("pre_messages", "preTruncationMessagesLength"),
                    ("post_messages", "postTruncationMessagesLength"),
                    ("post_tokens", "postTruncationTokensInMessages"),
                    ("token_limit", "tokenLimit"),
                    ("performed_by", "performedBy"),
                )),
            )
        )  # fmt: skip

    def _cleared(self, line: int, event: dict[str, Any], data: dict[str, Any]) -> None:
        thread = self.thread(data, event)
        thread.compactions.append(
            OriginalCompaction(
                before_index=len(thread.messages), kind="copilot_context_cleared", trigger="manual",
                source=self.pos(line), agent_version=self.facts.get("copilot_version", ""),
                detail=_details(data, (("messages_removed", "messagesCleared"),)),
            )
        )  # fmt: skip


_HANDLERS = {
    "session.start": _Reader._start,
    "session.resume": _Reader._start,
    "session.model_change": _Reader._model_change,
    "session.shutdown": _Reader._shutdown,
    "system.message": _Reader._system,
    "system.notification": _Reader._notification,
    "user.message": _Reader._user,
    "assistant.message": _Reader._assistant,
    "assistant.usage": _Reader._usage,
    "tool.execution_complete": _Reader._tool_result,
    "session.compaction_complete": _Reader._compaction,
    "session.truncation": _Reader._truncation,
    "session.context_cleared": _Reader._cleared,
}


def _stamp(event: dict[str, Any]) -> str | None:
    return as_str(event.get("timestamp")) or None


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _trigger(value: str) -> str:
    return {"threshold": "auto", "context_limit_retry": "auto"}.get(value, value)


def _details(
    data: dict[str, Any], keys: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str], ...]:
    return tuple((ours, str(data[theirs])) for ours, theirs in keys
                 if isinstance(data.get(theirs), (str, int)) and data[theirs] != "")  # fmt: skip


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    reader = _Reader(name)
    for line, event in iter_jsonl_lenient(data, name, reader.warnings):
        reader.add(line, event)
    if not reader.seen:
        raise TranscriptError("no Copilot CLI events found", file=name, expected=_EXPECTED)
    sid = reader.session_id or name or "copilot-session"
    main = reader.main
    facts = {k: v for k, v in reader.facts.items() if v}
    conversations = [
        Conversation(
            id=sid,
            title=title_from(
                main.typed or main.messages, fallback=f"Copilot CLI session {sid[:8]}"
            ),
            messages=tuple(main.messages),
            compactions=tuple(main.compactions),
            model=main.model or reader.model,
            metadata=tuple(facts.items()),
            usage_convention="openai" if any(m.usage for m in main.messages) else "",
        )
    ]
    for tool_id, thread in reader.subagents.items():
        if not thread.messages:
            continue
        conversations.append(
            Conversation(
                id=f"{sid}:{tool_id}",
                title=title_from(thread.messages, fallback=f"sub-agent {tool_id[:16]}"),
                messages=tuple(thread.messages),
                parent_id=sid,
                compactions=tuple(thread.compactions),
                model=thread.model,
                metadata=(("task_call", tool_id),),
                usage_convention="openai" if any(m.usage for m in thread.messages) else "",
            )
        )
    if not any(c.messages for c in conversations):
        raise TranscriptError("no Copilot CLI messages found", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, tuple(conversations), reader.warnings.freeze())
