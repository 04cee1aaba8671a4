"""OpenHands V1 (software-agent-sdk) event logs: events with a ``kind``.

Shapes verified in OpenHands/software-agent-sdk (MIT) at
611629e6999ad398dc49c761721eefe18d5e6bd9: ``openhands-sdk/openhands/sdk/event/``
(``base.py``, ``condenser.py``, ``llm_convertible/{action,message,observation,system}.py``),
``llm/message.py`` and ``conversation/persistence_const.py``; a real log is its
``tests/sdk/conversation/goal/fixtures/events.jsonl``.

Containers: JSONL with one event per line (what ``events.jsonl`` exports and
``.openhands/conversations/<id>/events/event-<n>-<id>.json`` joined in order hold, see
``sources/openhands.py``), a JSON array of events, an object with the events under
``events`` / ``items`` (the server's search API) / ``history``, and eval ``output.jsonl``
whose lines hold an instance with a ``history`` of V1 events (one conversation each; a
history without the user's message, as some benchmarks write it, gets the line's
``instruction`` as its first user message, and ``metadata.llm.model`` is its model). A log
of a conversation tree (``parent_id``) is read along its active branch, as the SDK builds
the view: from the last event back to the root (see ``_active_branch``).

Events become messages as the SDK's ``events_to_messages`` builds them:

- ``SystemPromptEvent``: the system message (``system_prompt.text``, then
  ``dynamic_context.text``); its ``tools`` are the conversation's tools.
- ``MessageEvent``: ``llm_message`` (``role``, ``content`` text / ``image_urls``, then the
  event's ``extended_content``); the agent's ``reasoning_content`` a thinking block.
- ``ActionEvent``: an assistant message (``thought`` text, ``reasoning_content``) with the
  tool call (``tool_call {id, name, arguments}``, the arguments parsed from their JSON
  text); consecutive actions of one ``llm_response_id`` are one message (parallel calls).
- ``ObservationEvent`` (``observation.content``, the SDK's error header first when
  ``observation.is_error``), ``UserRejectObservation`` ("Action rejected: <reason>") and
  ``AgentErrorEvent`` (``error``): the tool result for ``tool_call_id``.
- ``Condensation`` (``forgotten_event_ids``, ``summary``, ``summary_offset``): an
  ``OriginalCompaction(kind="condensation")``. Its summary, when there is one, is the user
  message the SDK puts into the view (flags ``compact_summary``, ``meta``). ``detail``
  holds ``forgotten_events`` (how many ids), ``forgotten_messages`` (the indexes of the
  messages built from the forgotten events, as ``first-last`` runs), ``summary_offset``,
  the ids not in this log (``forgotten_not_in_log``) and ``requested`` when a
  ``CondensationRequest`` came before it (the context window was exceeded or the user asked:
  the log does not say which). The forgotten messages stay in
  the list, as the events stay in the log.

Not the model's context, not imported: ``CondensationRequest``, ``ConversationStateUpdateEvent``
(its last ``stats`` give the metadata's token totals), ``TokenEvent``,
``LLMCompletionLogEvent``, ``StreamingDeltaEvent``, ``PauseEvent``, ``InterruptEvent``,
``HookExecutionEvent``, ``ACPToolCallEvent``. A kind not known here is an
``unknown-record`` warning. Tool-call ids are the LLM's own; none is made up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
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
    ToolDef,
    TranscriptError,
)
from ._common import iter_jsonl_lenient, load_json, require_content
from ._kit import Warnings, as_dict, as_list, as_str, parse_arguments, title_from
from ._openai_messages import media_block

FORMAT = "openhands-v1"
LABEL = "OpenHands V1 (SDK) events"

_EXPECTED = (
    'OpenHands V1 events: JSON objects with a "kind" (SystemPromptEvent, MessageEvent, '
    "ActionEvent, ObservationEvent, Condensation, ...), one per line, in a JSON array, or "
    'under "history" in an eval output line'
)
ERROR_HEADER = "[An error occurred during execution.]\n"  # Observation.ERROR_MESSAGE_HEADER
_SILENT = frozenset(
    {
        "CondensationRequest",
        "ConversationStateUpdateEvent",
        "TokenEvent",
        "LLMCompletionLogEvent",
        "StreamingDeltaEvent",
        "PauseEvent",
        "InterruptEvent",
        "HookExecutionEvent",
        "ACPToolCallEvent",
        "ConversationErrorEvent",
    }
)
_KINDS = (
    b"SystemPromptEvent|MessageEvent|ActionEvent|ObservationEvent|Condensation|"
    b"CondensationRequest|AgentErrorEvent|UserRejectObservation|ConversationStateUpdateEvent"
)
_KIND = re.compile(rb'"kind"\s*:\s*"(' + _KINDS + rb')"')


def sniff(head: bytes, name: str) -> int:
    """Events whose ``kind`` is one of the SDK's event classes."""
    text = head.lstrip()
    if not text.startswith((b"{", b"[")):
        return 0
    found = {m.group(1) for m in _KIND.finditer(head)}
    if not found:
        return 0
    strong = found & {b"SystemPromptEvent", b"ActionEvent", b"ObservationEvent", b"MessageEvent",
                      b"Condensation", b"AgentErrorEvent"}  # fmt: skip
    if strong and (b'"source"' in head or b'"llm_response_id"' in head):
        return 96
    return 70 if strong else 40


def _texts(content: Any) -> str:
    return "".join(as_str(as_dict(c).get("text")) for c in as_list(content))


@dataclass(slots=True)
class _Builder:
    conv_id: str
    name: str
    warnings: Warnings
    line: int | None = None
    messages: list[Message] = field(default_factory=list)
    compactions: list[OriginalCompaction] = field(default_factory=list)
    tools: tuple[ToolDef, ...] = ()
    calls: dict[str, str] = field(default_factory=dict)  # tool_call_id -> tool name
    message_of: dict[str, int] = field(default_factory=dict)  # event id -> message index
    last_response: str = ""
    facts: dict[str, str] = field(default_factory=dict)
    seen: bool = False
    requested: bool = False  # a CondensationRequest since the last Condensation

    def pos(self, index: int, line: int | None) -> SourcePos:
        return SourcePos(self.name, line=line if line is not None else self.line, record=index)

    def add(self, index: int, event: Any, line: int | None = None) -> None:
        pos = self.pos(index, line)
        if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
            self.warnings.add("skipped an entry that is not an OpenHands V1 event", str(pos),
                              code="unknown-record")  # fmt: skip
            return
        kind = event["kind"]
        if kind in _SILENT:
            self.seen = True
            if kind == "CondensationRequest":
                self.requested = True
            if kind == "ConversationStateUpdateEvent" and event.get("key") == "stats":
                self._stats(event.get("value"))
            return
        handler = _HANDLERS.get(kind)
        if handler is None:
            self.warnings.add(f"event kind {kind[:60]!r} not known: skipped", str(pos),
                              code="unknown-record")  # fmt: skip
            return
        self.seen = True
        if kind != "ActionEvent":
            self.last_response = ""
        handler(self, event, pos)

    def _append(self, event: dict[str, Any], message: Message) -> None:
        event_id = as_str(event.get("id"))
        if event_id:
            self.message_of[event_id] = len(self.messages)
        self.messages.append(message)

    def _stats(self, value: Any) -> None:
        metrics = as_dict(as_dict(value).get("usage_to_metrics"))
        for key, item in metrics.items():
            item = as_dict(item)
            usage = as_dict(item.get("accumulated_token_usage"))
            if as_str(item.get("model_name")):
                self.facts[f"model {key}"] = as_str(item.get("model_name"))
            parts = [f"{k} {v}" for k, v in usage.items()
                     if k.endswith("_tokens") and isinstance(v, int) and v]  # fmt: skip
            if parts:
                self.facts[f"tokens {key}"] = ", ".join(parts)
            cost = item.get("accumulated_cost")
            if isinstance(cost, (int, float)) and cost:
                self.facts[f"cost {key}"] = str(cost)

    # --- events ---------------------------------------------------------------------------

    def _system(self, event: dict[str, Any], pos: SourcePos) -> None:
        prompt = event.get("system_prompt")
        text = as_str(prompt) if isinstance(prompt, str) else as_str(as_dict(prompt).get("text"))
        blocks = [Block(BlockKind.TEXT, text=text, raw_type="system_prompt")]
        dynamic = as_str(as_dict(event.get("dynamic_context")).get("text"))
        if dynamic:
            blocks.append(Block(BlockKind.TEXT, text=dynamic, raw_type="dynamic_context"))
        self.tools = self.tools or _tools(event.get("tools"))
        self._append(event, Message(Role.SYSTEM, tuple(blocks), source=pos,
                                    timestamp=_stamp(event), id=as_str(event.get("id"))))  # fmt: skip

    def _message(self, event: dict[str, Any], pos: SourcePos) -> None:
        llm = as_dict(event.get("llm_message"))
        source = as_str(event.get("source"))
        role_name = as_str(llm.get("role")) or ("user" if source == "user" else "assistant")
        role = {"user": Role.USER, "system": Role.SYSTEM, "tool": Role.TOOL}.get(
            role_name, Role.ASSISTANT
        )
        blocks: list[Block] = []
        reasoning = as_str(llm.get("reasoning_content"))
        if reasoning:
            blocks.append(Block(BlockKind.THINKING, text=reasoning, raw_type="reasoning_content"))
        blocks.extend(_content(llm.get("content")))
        blocks.extend(_content(event.get("extended_content"), raw_type="extended_content"))
        for call in as_list(llm.get("tool_calls")):
            blocks.append(self._call(as_dict(call)))
        flags = frozenset({"meta"}) if source not in ("user", "agent") else frozenset()
        self._append(event, Message(role, tuple(blocks), source=pos, timestamp=_stamp(event),
                                    id=as_str(event.get("id")),
                                    name=as_str(event.get("sender")), flags=flags))  # fmt: skip

    def _call(self, call: dict[str, Any]) -> Block:
        tool_id, name = as_str(call.get("id")), as_str(call.get("name"))
        self.calls[tool_id] = name
        return Block(BlockKind.TOOL_USE, tool_id=tool_id, tool_name=name,
                     tool_input=parse_arguments(call.get("arguments")), raw_type="tool_call")  # fmt: skip

    def _action(self, event: dict[str, Any], pos: SourcePos) -> None:
        call = as_dict(event.get("tool_call"))
        if not call:
            call = {"id": event.get("tool_call_id"), "name": event.get("tool_name"),
                    "arguments": json.dumps(as_dict(event.get("action")))}  # fmt: skip
        use = self._call(call)
        response = as_str(event.get("llm_response_id"))
        last = self.messages[-1] if self.messages else None
        if response and response == self.last_response and last is not None:
            self.messages[-1] = Message(
                last.role, (*last.blocks, use), source=last.source, timestamp=last.timestamp,
                id=last.id, flags=last.flags,
            )  # fmt: skip
            self.message_of[as_str(event.get("id"))] = len(self.messages) - 1
            return
        blocks: list[Block] = []
        reasoning = as_str(event.get("reasoning_content"))
        if reasoning:
            blocks.append(Block(BlockKind.THINKING, text=reasoning, raw_type="reasoning_content"))
        thought = _texts(event.get("thought"))
        if thought:
            blocks.append(Block(BlockKind.TEXT, text=thought, raw_type="thought"))
        self._append(event, Message(Role.ASSISTANT, (*blocks, use), source=pos,
                                    timestamp=_stamp(event), id=as_str(event.get("id"))))  # fmt: skip
        self.last_response = response

    def _result(self, event: dict[str, Any], pos: SourcePos, text: str, error: bool) -> None:
        tool_id = as_str(event.get("tool_call_id"))
        name = as_str(event.get("tool_name")) or self.calls.get(tool_id, "")
        self._append(event, Message(
            Role.TOOL,
            (Block(BlockKind.TOOL_RESULT, tool_id=tool_id, tool_name=name, text=text,
                   is_error=error, raw_type=as_str(event.get("kind"))),),
            source=pos, timestamp=_stamp(event), id=as_str(event.get("id")),
        ))  # fmt: skip

    def _observation(self, event: dict[str, Any], pos: SourcePos) -> None:
        observation = as_dict(event.get("observation"))
        error = observation.get("is_error") is True
        text = (ERROR_HEADER if error else "") + _texts(observation.get("content"))
        text += _texts(event.get("extended_content"))
        self._result(event, pos, text, error)

    def _reject(self, event: dict[str, Any], pos: SourcePos) -> None:
        self._result(event, pos, f"Action rejected: {as_str(event.get('rejection_reason'))}", False)

    def _error(self, event: dict[str, Any], pos: SourcePos) -> None:
        self._result(event, pos, as_str(event.get("error")), True)

    def _condensation(self, event: dict[str, Any], pos: SourcePos) -> None:
        forgotten = [as_str(x) for x in as_list(event.get("forgotten_event_ids"))]
        indexes = sorted({self.message_of[x] for x in forgotten if x in self.message_of})
        missing = sum(1 for x in forgotten if x not in self.message_of)
        summary = as_str(event.get("summary"))
        summary_index = None
        if summary:
            summary_index = len(self.messages)
            self._append(event, Message(
                Role.USER, (Block(BlockKind.TEXT, text=summary, raw_type="Condensation"),),
                source=pos, timestamp=_stamp(event), id=f"{as_str(event.get('id'))}-summary",
                flags=frozenset({"compact_summary", "meta"}),
            ))  # fmt: skip
        detail = [("forgotten_events", str(len(forgotten))),
                  ("forgotten_messages", _runs(indexes))]  # fmt: skip
        offset = event.get("summary_offset")
        if isinstance(offset, int) and not isinstance(offset, bool):
            detail.append(("summary_offset", str(offset)))
        if missing:
            detail.append(("forgotten_not_in_log", str(missing)))
        if self.requested:  # asked for (context window exceeded, or conversation.condense())
            detail.append(("requested", "CondensationRequest"))
        self.requested = False
        self.compactions.append(
            OriginalCompaction(
                before_index=summary_index if summary_index is not None else len(self.messages),
                kind="condensation",
                trigger="auto",
                summary_index=summary_index,
                source=pos,
                detail=tuple((k, v) for k, v in detail if v),
            )
        )

    def conversation(
        self, *, title: str = "", metadata: Iterable[tuple[str, str]] = ()
    ) -> Conversation:
        facts = dict(metadata)
        facts.update(self.facts)
        model = facts.get("model default", "") or facts.get("model", "")
        return Conversation(
            id=self.conv_id,
            title=title or title_from(self.messages, fallback=f"OpenHands {self.conv_id[:12]}"),
            messages=tuple(self.messages),
            tools=self.tools,
            compactions=tuple(self.compactions),
            model=model,
            metadata=tuple((k, v) for k, v in facts.items() if v),
        )


_HANDLERS = {
    "SystemPromptEvent": _Builder._system,
    "MessageEvent": _Builder._message,
    "ActionEvent": _Builder._action,
    "ObservationEvent": _Builder._observation,
    "UserRejectObservation": _Builder._reject,
    "AgentErrorEvent": _Builder._error,
    "Condensation": _Builder._condensation,
}


def _stamp(event: dict[str, Any]) -> str | None:
    return as_str(event.get("timestamp")) or None


def _content(content: Any, raw_type: str = "") -> list[Block]:
    blocks: list[Block] = []
    for part in as_list(content):
        part = as_dict(part)
        if part.get("type") == "image":
            for url in as_list(part.get("image_urls")):
                blocks.append(media_block(as_str(url), default_type="image", raw_type="image_url"))
        elif as_str(part.get("text")):
            blocks.append(Block(BlockKind.TEXT, text=as_str(part.get("text")), raw_type=raw_type))
    return blocks


def _tools(raw: Any) -> tuple[ToolDef, ...]:
    tools: list[ToolDef] = []
    for item in as_list(raw):
        item = as_dict(item)
        name = as_str(item.get("name") or item.get("title") or item.get("kind"))
        if name:
            schema = item.get("parameters") or item.get("action_type")
            tools.append(ToolDef(name=name, description=as_str(item.get("description")),
                                 parameters=schema if isinstance(schema, dict) else None))  # fmt: skip
    return tuple(tools)


def _runs(indexes: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5,9"``."""
    runs: list[str] = []
    start = prev = None
    for i in indexes:
        if start is not None and prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            runs.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = i
    if start is not None:
        runs.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(runs)


ROOT_PARENT_ID = "__root__"  # event/types.py: an explicit root
_NOT_TREE = frozenset({"ConversationStateUpdateEvent", "ConversationErrorEvent"})


def _active_branch(
    items: list[tuple[int | None, Any]], warnings: Warnings, where: str
) -> list[tuple[int, int | None, Any]]:
    """The events on the active branch, root first, as ``(index, line, event)``: as the
    SDK's ``EventLog.path_to_root`` from the last tree event (state updates and errors are
    no tree nodes); an event's parent is its ``parent_id`` (``__root__``: none), or, for
    events written before the tree, the event before it. Events off that branch (a
    conversation navigated back and continued elsewhere) are counted in a warning. A log
    without ``parent_id`` is one linear branch: every event, in order."""
    events = [(i, line, e) for i, (line, e) in enumerate(items)]
    if not any(isinstance(e, dict) and e.get("parent_id") for _, _, e in events):
        return events
    position: dict[str, int] = {}
    for i, _line, e in events:
        if isinstance(e, dict) and isinstance(e.get("id"), str):
            position.setdefault(e["id"], i)
    leaf = next((i for i, _line, e in reversed(events)
                 if isinstance(e, dict) and e.get("kind") not in _NOT_TREE), None)  # fmt: skip
    keep: set[int] = set()
    current = leaf
    while current is not None and current not in keep:
        keep.add(current)
        event = events[current][2]
        parent = event.get("parent_id") if isinstance(event, dict) else None
        if parent == ROOT_PARENT_ID:
            current = None
        elif isinstance(parent, str) and parent:
            current = position.get(parent)
        else:
            current = current - 1 if current > 0 else None
    off = [i for i, _line, e in events
           if i not in keep and isinstance(e, dict) and e.get("kind") not in _SILENT]  # fmt: skip
    if off:
        warnings.add(f"{len(off)} event(s) on another branch of the conversation tree left out",
                     where, code="off-branch-entries", count=len(off))  # fmt: skip
    return [(i, line, e) for i, line, e in events
            if i in keep or not isinstance(e, dict) or e.get("kind") in _SILENT]  # fmt: skip


def _feed(builder: _Builder, items: list[tuple[int | None, Any]], warnings: Warnings) -> None:
    for index, line, event in _active_branch(items, warnings, builder.name):
        builder.add(index, event, line)


def _from_user(event: Any) -> bool:
    event = as_dict(event)
    return event.get("kind") == "MessageEvent" and (
        event.get("source") == "user" or as_dict(event.get("llm_message")).get("role") == "user"
    )


def _instruction_event(text: str, after: list[Any]) -> dict[str, Any]:
    """The user MessageEvent ``send_message(instruction)`` made, for a history without it;
    its time is that of the event it came before, where there is one."""
    event: dict[str, Any] = {
        "kind": "MessageEvent",
        "source": "user",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }
    stamp = as_str(as_dict(after[0]).get("timestamp")) if after else ""
    if stamp:
        event["timestamp"] = stamp
    return event


def _instance(record: dict[str, Any], index: int, name: str, line: int | None,
              warnings: Warnings, used: set[str]) -> Conversation | None:  # fmt: skip
    instance_id = as_str(record.get("instance_id")) or as_str(record.get("id"))
    conv_id = instance_id if instance_id and instance_id not in used else f"{name}#{index}"
    used.add(conv_id)
    builder = _Builder(conv_id, name, warnings, line=line)
    history = as_list(record.get("history"))
    items: list[tuple[int | None, Any]] = [(None, e) for e in history]
    meta = [("instance_id", instance_id)] if instance_id else []
    instruction = as_str(record.get("instruction"))
    if instruction and not any(_from_user(e) for e in history):
        # The benchmarks send the instruction with ``conversation.send_message`` and keep
        # the events their callback saw: some runs' histories start at the first action.
        # The model was sent it, after the system prompt: it is the first user message.
        at = next((n for n, e in enumerate(history)
                   if as_dict(e).get("kind") != "SystemPromptEvent"), len(history))  # fmt: skip
        items.insert(at, (None, _instruction_event(instruction, history[at:])))
        meta.append(("instruction", "the eval line's (not in its history)"))
    model = as_str(as_dict(as_dict(record.get("metadata")).get("llm")).get("model"))
    if model:  # the eval's LLM config (``metadata.llm``); stats in the history say it better
        meta.append(("model", model))
    _feed(builder, items, warnings)
    conv = builder.conversation(title=instance_id, metadata=meta)
    return conv if conv.messages else None


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    warnings = Warnings()
    conversations: list[Conversation] = []
    stem = re.sub(r"(\.events)?\.(jsonl?|json)$", "", name.rsplit("/", 1)[-1]) or "openhands"
    text = data.lstrip()
    if text.startswith(b"[") or (text.startswith(b"{") and b"\n{" not in text.rstrip()):
        value = load_json(data, name)
        if isinstance(value, dict) and isinstance(value.get("history"), list):
            conv = _instance(value, 0, name, None, warnings, set())
            conversations.extend([conv] if conv else [])
            value = None
        elif isinstance(value, dict):
            value = value.get("events", value.get("items", [value]))
        if isinstance(value, list):
            builder = _Builder(stem, name, warnings)
            _feed(builder, [(None, e) for e in value], warnings)
            if builder.seen and builder.messages:
                conversations.append(builder.conversation())
    else:
        builder = _Builder(stem, name, warnings)
        used: set[str] = set()
        events: list[tuple[int | None, Any]] = []
        for index, (line, record) in enumerate(iter_jsonl_lenient(data, name, warnings)):
            if isinstance(record, dict) and isinstance(record.get("history"), list):
                conv = _instance(record, index, name, line, warnings, used)
                conversations.extend([conv] if conv else [])
            else:
                events.append((line, record))
        _feed(builder, events, warnings)
        if builder.seen and builder.messages:
            conversations.insert(0, builder.conversation())
    if not conversations:
        raise TranscriptError("no OpenHands V1 events found", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, tuple(conversations), warnings.freeze())
