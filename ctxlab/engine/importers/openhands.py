"""OpenHands event streams.

Accepted containers: a JSON array of events (``trajs/*.json``, the trajectory API), an object
``{"trajectory" | "history": [...]}``, and eval/resolver ``output.jsonl`` (one instance per
line, its events under ``history``; each instance is one conversation). Events are actions
(``action``, ``args``) and observations (``observation``, ``content``, ``extras``); an
observation answers the action whose ``id`` is its ``cause`` or that carries the same
``tool_call_metadata.tool_call_id``. 2024-era histories have flat events without ``source``/
``id`` (args at top level) or ``[action, observation]`` pairs: there observations answer the
oldest unanswered action.

Agent actions become assistant tool_use blocks (the LLM's function call when
``tool_call_metadata`` has it, else the action name with its args); actions produced by one
LLM response are merged into one assistant message carrying that response's usage.
Environment bookkeeping that never reaches the model (``agent_state_changed``,
``change_agent_state``, empty ``null`` observations, ``recall`` actions) is not a message.
``condensation`` actions are recorded as the original agent's compactions.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    ImportWarning,
    Message,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ._common import WarningTally, iter_jsonl, load_json, require_content, short_title
from ._json_stream import array_items
from ._kit import title_from
from ._openai_messages import as_dict, as_list, as_str, media_block, openai_usage, parse_arguments
from ._stream import ConversationStream, StreamedFile, stream_of
from .openai_chat import _looks_like_jsonl

FORMAT = "openhands"
LABEL = "OpenHands event stream"

_EXPECTED = (
    "OpenHands events: a JSON array of action/observation events, or output.jsonl "
    'instances with a "history" list'
)
_SILENT_ACTIONS = {"change_agent_state", "recall", "null", "condensation_request"}
_SILENT_OBSERVATIONS = {"agent_state_changed", "null"}
# Keys of a flat (2024-era) action that describe the event rather than the tool input.
_EVENT_KEYS = {
    "action",
    "observation",
    "thought",
    "source",
    "id",
    "timestamp",
    "message",
    "cause",
    "tool_call_metadata",
    "llm_metrics",
    "timeout",
    "action_risk",
    "is_confirmed",
    "confirmation_state",
    "security_risk",
}


def _is_kind(value: Any) -> bool:
    """Action/observation type names are identifiers (``run``, ``agent_state_changed``)."""
    return isinstance(value, str) and value.isidentifier()


def _event_fields(event: dict[str, Any]) -> dict[str, Any]:
    """An event's arguments: ``args``/``extras`` in the current shape, top-level keys in the
    flat 2024 shape."""
    nested = event.get("args") if "action" in event else event.get("extras")
    if isinstance(nested, dict):
        return nested
    skip = ("content",) if "observation" in event else ()  # an observation's content is its result
    return {k: v for k, v in event.items() if k not in _EVENT_KEYS and k not in skip}


@dataclass(slots=True)
class _Instance:
    """Builds one conversation from its events."""

    conv_id: str
    name: str
    warn: WarningTally
    line: int | None = None
    messages: list[Message] = field(default_factory=list)
    compactions: list[OriginalCompaction] = field(default_factory=list)
    by_event: dict[str, tuple[str, str]] = field(default_factory=dict)  # action id -> call
    by_call: dict[str, str] = field(default_factory=dict)  # tool id -> tool name
    pending: deque[tuple[str, str]] = field(default_factory=deque)  # flat shape: FIFO calls
    answered: set[str] = field(default_factory=set)
    last_response: str = ""  # model_response.id of the last assistant message
    seen_agent: bool = False
    counter: int = 0
    model: str = ""

    def pos(self, index: int) -> SourcePos:
        return SourcePos(self.name, line=self.line, record=index)

    def add(self, index: int, event: Any) -> None:
        if not isinstance(event, dict):
            self.warn.add("skipped an event that is not a JSON object", str(self.pos(index)))
            return
        if "role" in event:  # a chat message (SWE-agent history also has "action" keys)
            self.warn.add(
                "skipped a chat message where an event was expected", str(self.pos(index))
            )
        elif _is_kind(event.get("action")):
            self._action(index, event)
        elif _is_kind(event.get("observation")):
            self._observation(index, event)
        else:
            self.warn.add(
                "skipped an event that is neither an action nor an observation",
                str(self.pos(index)),
            )

    # actions

    def _action(self, index: int, event: dict[str, Any]) -> None:
        kind = event["action"]
        args = _event_fields(event)
        source = as_str(event.get("source"))
        pos = self.pos(index)
        stamp = as_str(event.get("timestamp")) or None
        event_id = as_str(event.get("id"))
        if kind in _SILENT_ACTIONS:
            return
        if kind == "condensation":
            self._condensation(index, args)
            return
        if kind == "system":
            text = as_str(args.get("content") or event.get("message"))
            self.messages.append(
                Message(
                    Role.SYSTEM,
                    (Block(BlockKind.TEXT, text=text),),
                    source=pos,
                    timestamp=stamp,
                    id=event_id,
                )
            )
            return
        metadata = as_dict(event.get("tool_call_metadata"))
        if kind == "message" and not metadata:
            if not source:  # flat shape: the task comes first, later messages are the agent's
                source = "agent" if self.seen_agent else "user"
            text = as_str(args.get("content", event.get("message")))
            blocks = [Block(BlockKind.TEXT, text=text)] if text else []
            for url in as_list(args.get("image_urls") or args.get("images_urls")):
                blocks.append(media_block(as_str(url), default_type="image", raw_type="image_url"))
            role = Role.USER if source == "user" else Role.ASSISTANT
            self.seen_agent |= role is Role.ASSISTANT
            self.messages.append(
                Message(
                    role,
                    tuple(blocks),
                    source=pos,
                    timestamp=stamp,
                    id=event_id,
                    flags=frozenset() if source in ("user", "agent") else frozenset({"meta"}),
                )
            )
            self.last_response = ""
            return
        self.seen_agent = True
        self._tool_action(kind, event, args, metadata, pos, stamp, event_id)

    def _tool_action(
        self,
        kind: str,
        event: dict[str, Any],
        args: dict[str, Any],
        metadata: dict[str, Any],
        pos: SourcePos,
        stamp: str | None,
        event_id: str,
    ) -> None:
        response = as_dict(metadata.get("model_response"))
        response_id = as_str(response.get("id"))
        tool_id = as_str(metadata.get("tool_call_id"))
        if not tool_id:
            self.counter += 1
            tool_id = f"{self.conv_id}:action{self.counter}"
        name = as_str(metadata.get("function_name")) or kind
        tool_input: Any = {k: v for k, v in args.items() if k != "thought"}
        reply = as_dict(
            as_dict(
                as_list(response.get("choices"))[0] if as_list(response.get("choices")) else {}
            ).get("message")
        )
        for call in as_list(reply.get("tool_calls")):
            call = as_dict(call)
            if as_str(call.get("id")) == tool_id:
                tool_input = parse_arguments(as_dict(call.get("function")).get("arguments"))
        use = Block(
            BlockKind.TOOL_USE,
            tool_id=tool_id,
            tool_name=name,
            tool_input=tool_input,
            raw_type=kind,
        )
        if event_id:
            self.by_event[event_id] = (tool_id, name)
        self.by_call[tool_id] = name
        self.pending.append((tool_id, name))
        model = as_str(response.get("model"))
        self.model = model or self.model
        last = self.messages[-1] if self.messages else None
        if response_id and response_id == self.last_response and last is not None:
            # another call from the same LLM response: same assistant message
            self.messages[-1] = Message(
                last.role,
                (*last.blocks, use),
                source=last.source,
                timestamp=last.timestamp,
                model=last.model,
                usage=last.usage,
                id=last.id,
                flags=last.flags,
            )
            return
        thought = as_str(args.get("thought") or event.get("thought")) or as_str(
            reply.get("content")
        )
        blocks = [Block(BlockKind.TEXT, text=thought)] if thought else []
        self.messages.append(
            Message(
                Role.ASSISTANT,
                (*blocks, use),
                source=pos,
                timestamp=stamp,
                model=model,
                usage=openai_usage(response.get("usage")),
                id=event_id,
            )
        )
        self.last_response = response_id

    def _condensation(self, index: int, args: dict[str, Any]) -> None:
        summary = as_str(args.get("summary"))
        summary_index = None
        if summary:
            summary_index = len(self.messages)
            self.messages.append(
                Message(
                    Role.USER,
                    (Block(BlockKind.TEXT, text=summary),),
                    source=self.pos(index),
                    flags=frozenset({"compact_summary"}),
                )
            )
        self.compactions.append(
            OriginalCompaction(
                before_index=summary_index if summary_index is not None else len(self.messages),
                kind="condensation",
                summary_index=summary_index,
                source=self.pos(index),
            )
        )
        self.last_response = ""

    # observations

    def _observation(self, index: int, event: dict[str, Any]) -> None:
        kind = event["observation"]
        content = as_str(event.get("content"))
        pos = self.pos(index)
        stamp = as_str(event.get("timestamp")) or None
        event_id = as_str(event.get("id"))
        call = self._link(event)
        if kind in _SILENT_OBSERVATIONS and not content.strip():
            return
        self.last_response = ""
        if call is None:
            if not content.strip():
                return
            # not an answer to a call (user-run command, recall context, error): the agent
            # sees it as a user-side message
            self.messages.append(
                Message(
                    Role.USER,
                    (Block(BlockKind.TEXT, text=content, raw_type=kind),),
                    source=pos,
                    timestamp=stamp,
                    id=event_id,
                    name=kind,
                    flags=frozenset({"meta"}),
                )
            )
            return
        # Command outputs reach the model wrapped in their metadata prefix/suffix
        # ("[The command completed with exit code 0.]").
        extra = as_dict(_event_fields(event).get("metadata"))
        prefix, suffix = extra.get("prefix"), extra.get("suffix")
        if isinstance(prefix, str) and isinstance(suffix, str):
            content = prefix + content + suffix
        result = Block(
            BlockKind.TOOL_RESULT,
            tool_id=call[0],
            tool_name=call[1],
            text=content,
            is_error=kind == "error",
            raw_type=kind,
        )
        self.messages.append(
            Message(Role.TOOL, (result,), source=pos, timestamp=stamp, id=event_id)
        )

    def _link(self, event: dict[str, Any]) -> tuple[str, str] | None:
        """The call an observation answers, or None."""
        call: tuple[str, str] | None = None
        tool_id = as_str(as_dict(event.get("tool_call_metadata")).get("tool_call_id"))
        cause = as_str(event.get("cause"))
        if tool_id and tool_id in self.by_call:
            call = (tool_id, self.by_call[tool_id])
        elif cause and cause in self.by_event:
            call = self.by_event[cause]
        elif "id" not in event and "cause" not in event:
            while self.pending and self.pending[0][0] in self.answered:
                self.pending.popleft()
            call = self.pending.popleft() if self.pending else None
        if call is None or call[0] in self.answered:
            return None
        self.answered.add(call[0])
        return call

    def conversation(
        self, *, title: str, metadata: tuple[tuple[str, str], ...], model: str
    ) -> Conversation:
        first_user = title_from(self.messages, fallback="")
        return Conversation(
            id=self.conv_id,
            title=title or (short_title(first_user) if first_user else self.conv_id),
            messages=tuple(self.messages),
            compactions=tuple(self.compactions),
            model=model or self.model,
            metadata=metadata,
            usage_convention="openai" if any(m.usage for m in self.messages) else "",
        )


def _events(history: list[Any]) -> list[Any]:
    """Flatten ``[action, observation]`` pairs (early eval outputs) into one event list."""
    out: list[Any] = []
    for item in history:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out


def _instance_meta(record: dict[str, Any]) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """(id, title, metadata) of an eval/resolver instance."""
    issue = as_dict(record.get("issue"))
    instance_id = (
        as_str(record.get("instance_id"))
        if isinstance(record.get("instance_id"), (str, int))
        else ""
    )
    if not instance_id and issue:
        instance_id = (
            f"{as_str(issue.get('owner'))}/{as_str(issue.get('repo'))}"
            f"#{as_str(issue.get('number'))}"
        )
    title = instance_id
    if issue.get("title"):
        title = short_title(f"{instance_id}: {as_str(issue.get('title'))}")
    meta: list[tuple[str, str]] = []
    if instance_id:
        meta.append(("instance_id", instance_id))
    metrics = as_dict(record.get("metrics"))
    if isinstance(metrics.get("accumulated_cost"), (int, float)):
        meta.append(("accumulated_cost", str(metrics["accumulated_cost"])))
    for key in ("success", "error"):
        if isinstance(record.get(key), (str, bool, int)):
            meta.append((key, as_str(record[key])))
    config = as_dict(as_dict(record.get("metadata")).get("llm_config"))
    if config.get("model"):
        meta.append(("model", as_str(config["model"])))
    return instance_id, title, tuple(meta)


def _from_instance(
    record: dict[str, Any],
    index: int,
    *,
    name: str,
    line: int | None,
    used: set[str],
    warn: WarningTally,
) -> Conversation | None:
    instance_id, title, meta = _instance_meta(record)
    conv_id = instance_id if instance_id and instance_id not in used else f"{name}#{index}"
    used.add(conv_id)
    builder = _Instance(conv_id, name, warn, line=line)
    for i, event in enumerate(_events(as_list(record.get("history")))):
        builder.add(i, event)
    model = dict(meta).get("model", "")
    conv = builder.conversation(title=title, metadata=meta, model=model)
    return conv if conv.messages else None


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    warn = WarningTally()
    conversations: list[Conversation] = []
    used: set[str] = set()
    if _looks_like_jsonl(data):
        for index, (line, record) in enumerate(iter_jsonl(data, name)):
            if not isinstance(record, dict) or not isinstance(record.get("history"), list):
                warn.add("skipped a line without a history list", f"line {line}")
                continue
            conv = _from_instance(record, index, name=name, line=line, used=used, warn=warn)
            if conv is not None:
                conversations.append(conv)
    else:
        value = load_json(data, name)
        if isinstance(value, dict) and isinstance(value.get("history"), list):
            conv = _from_instance(value, 0, name=name, line=None, used=used, warn=warn)
            conversations.extend([conv] if conv else [])
        else:
            events = value.get("trajectory") if isinstance(value, dict) else value
            if isinstance(events, list) and any(
                isinstance(e, dict)
                and "role" not in e
                and (_is_kind(e.get("action")) or _is_kind(e.get("observation")))
                for e in _events(events)
            ):
                builder = _Instance(name or "events", name, warn)
                for i, event in enumerate(_events(events)):
                    builder.add(i, event)
                conv = builder.conversation(title="", metadata=(), model="")
                conversations.extend([conv] if conv.messages else [])
    if not conversations:
        raise TranscriptError("no OpenHands events found", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, tuple(conversations), warn.freeze())


def stream(data: bytes, *, name: str) -> StreamedFile | None:
    """``parse`` without the whole document in memory (``importers.stream``): JSONL an
    instance (line) at a time, a top-level JSON array of events an event at a time
    (``_json_stream``; the conversation's messages are built as they come). None for a
    single JSON object (parsed whole)."""
    require_content(data, name, _EXPECTED)
    warn = WarningTally()
    found = 0
    conversations: Iterator[Conversation]
    if _looks_like_jsonl(data):
        conversations = _instances(data, name, warn)
    else:
        items = array_items(data)
        if items is None:
            return None
        conversations = _event_array(items, name, warn)

    def streams() -> Iterator[ConversationStream]:
        nonlocal found
        for conv in conversations:
            found += 1
            yield stream_of(conv)

    def finish() -> tuple[ImportWarning, ...]:
        if not found:
            raise TranscriptError("no OpenHands events found", file=name, expected=_EXPECTED)
        return warn.freeze()

    return StreamedFile(FORMAT, streams(), finish)


def _instances(data: bytes, name: str, warn: WarningTally) -> Iterator[Conversation]:
    used: set[str] = set()
    for index, (line, record) in enumerate(iter_jsonl(data, name)):
        if not isinstance(record, dict) or not isinstance(record.get("history"), list):
            warn.add("skipped a line without a history list", f"line {line}")
            continue
        conv = _from_instance(record, index, name=name, line=line, used=used, warn=warn)
        if conv is not None:
            yield conv


def _event_array(items: Iterator[Any], name: str, warn: WarningTally) -> Iterator[Conversation]:
    builder = _Instance(name or "events", name, warn)
    events = False  # parse's test: an action or observation event that is no chat message
    for i, event in enumerate(e for item in items for e in _events([item])):
        events = events or (
            isinstance(event, dict)
            and "role" not in event
            and (_is_kind(event.get("action")) or _is_kind(event.get("observation")))
        )
        builder.add(i, event)
    conv = builder.conversation(title="", metadata=(), model="")
    if events and conv.messages:
        yield conv


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if not text.startswith((b"[", b"{")):
        return 0
    action = b'"action":' in text or b'"action": ' in text
    observation = b'"observation":' in text
    if not (action or observation):
        return 0
    score = 0
    if b'"tool_call_metadata"' in text or b'"cause"' in text:
        score = 90
    elif (action and observation and b'"history"' in text) or (
        b'"source": "agent"' in text or b'"source": "environment"' in text
    ):
        score = 85
    elif action and observation:
        score = 40
    if b'"trajectory"' in text and b'"response"' in text:  # SWE-agent steps also say "action"
        score = min(score, 20)
    return score
