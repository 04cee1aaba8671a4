"""Cline and Roo Code task folders: ``tasks/<id>/api_conversation_history.json`` (what the
model was sent), ``ui_messages.json`` (what the chat showed, with each request's figures)
and ``task_metadata.json`` (files in context, models, environment).

Shapes verified in real task folders (Cline 3.51, an exported task of
gmfstu/Online-Card-Architecture) and in the agents' sources: Cline's ``ClineMessage``
(``conversationHistoryIndex``, ``conversationHistoryDeletedRange?: [number, number]``,
"for when conversation history is truncated for API requests"), its ``ContextManager``
(``getTruncatedMessages``: the range is inclusive, ``[...messages.slice(0, start),
...messages.slice(end + 1)]``) and ``HistoryItem``; Roo Code's ``ApiMessage``
(``task-persistence/apiMessages.ts``: ``ts``, ``isSummary``, ``condenseId``,
``condenseParent``, ``truncationId``, ``truncationParent``, ``isTruncationMarker``).

Two containers:

- the **task bundle** ``sources/cline.py`` makes of a folder: one JSON object
  ``{"cline_task": {"id", "agent", "files"}, "api_conversation_history": [...],
  "ui_messages": [...], "task_metadata": {...}}`` (each file's JSON as it was);
- a lone ``api_conversation_history.json`` (a JSON array of messages).

Messages: each entry of ``api_conversation_history`` is one message, in order (its index
is the message's index): Anthropic ``role`` / ``content`` (text, thinking, tool_use,
tool_result, image blocks); ``modelInfo.modelId`` is the message's model. Cline (3.x,
native tool calls) writes a tool's result as the next user message's text block
``[<tool> for '<argument>'] Result:`` (or ``[<tool>] Result:``; the argument may hold
brackets and newlines): such a block right after an assistant message calling ``<tool>``
is read as that call's result (its ``raw_type`` stays ``text``); a label that names no
pending call (a tool's description: ``[subagents]`` for ``use_subagents``) answers the
calls left, in order. A call the task was interrupted after (``[TASK RESUMPTION]``) has
no result, as in the file. Checked on two real tasks (Cline 3.x): every result found. A request's figures are those of its ``api_req_started`` UI message
(``tokensIn``, ``tokensOut``, ``cacheWrites``, ``cacheReads``), the usage of the assistant
message that answered it (``conversationHistoryIndex + 2``: that UI message is said before
the request's user message joins the history; checked against the assistant messages'
own ``metrics`` in the real task).

Original compactions:

- **Cline's truncation**: each new ``conversationHistoryDeletedRange`` ``[start, end]`` on
  the UI messages is an ``OriginalCompaction(kind="truncation")`` before the message that
  answered that request; ``detail``: ``deleted_range`` (message indexes, inclusive) and
  ``deleted_messages``. The deleted messages stay in the list, as in the file.
- **Roo Code's condense**: a message with ``isSummary`` is the summary (flags
  ``compact_summary``, ``meta``) and an ``OriginalCompaction(kind="condense")`` there;
  ``detail``: ``condense_id`` and ``condensed_messages`` (the messages whose
  ``condenseParent`` names it, as ``first-last`` runs); the n-th ``condense_context`` UI
  message (``contextCondense {prevContextTokens, newContextTokens}``) gives the n-th
  summary its ``pre_tokens`` and ``tokens_after``. A truncation marker
  (``isTruncationMarker``) is an ``OriginalCompaction(kind="truncation")`` with the
  ``hidden_messages`` whose ``truncationParent`` names it (flag ``meta``).
"""

from __future__ import annotations

import json
import re
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
from . import _anthropic_blocks as ab
from ._common import load_json, require_content
from ._kit import Warnings, as_dict, as_int, as_list, as_str, shorten, title_from

FORMAT = "cline"
LABEL = "Cline / Roo Code task"
BUNDLE_KEY = "cline_task"
HISTORY_FILE = "api_conversation_history.json"

_EXPECTED = (
    "a Cline / Roo Code task: its api_conversation_history.json (a JSON array of "
    'messages with "role" and "content"), or the task folder read as one bundle'
)
# The argument may hold brackets and newlines (a search regex, a question): up to the first
# "] Result:".
_RESULT = re.compile(r"^\[(?P<tool>[A-Za-z0-9_\-.:]+)(?: for .*?)?\] Result:", re.S)


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    compact = text[:4096].replace(b": ", b":")
    if text.startswith(b"{") and compact[1:].lstrip().startswith(b'"' + BUNDLE_KEY.encode()):
        return 99
    if not text.startswith(b"["):
        return 0
    if _UI_HEAD.match(compact[1:].lstrip()):
        return 60  # a task's ui_messages.json alone: named, then refused by ``parse``
    if not compact[1:].lstrip().startswith(b'{"role":'):
        return 0
    if name.rsplit("/", 1)[-1] == HISTORY_FILE:
        return 95
    markers = (b'"modelInfo"', b'"isSummary"', b'"condenseParent"', b'"condenseId"')
    return 85 if any(m in head for m in markers) else 0


# A ``ui_messages.json`` (``ClineMessage[]``): ``{"ts": <ms>, "type": "say" | "ask", ...}``.
_UI_HEAD = re.compile(rb'\{\s*"ts":\s*\d+\s*,\s*"type":\s*"(say|ask)"')


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    document = load_json(data, name)
    if isinstance(document, list) and _is_ui_messages(document):
        raise TranscriptError(
            "a Cline / Roo Code ui_messages.json: what the task's chat showed, not the "
            "messages the model was sent (those are its api_conversation_history.json)",
            file=name,
            expected="the task folder (tasks/<id>/), or its api_conversation_history.json",
        )
    task: dict[str, Any] = {}
    ui: list[Any] = []
    metadata: dict[str, Any] = {}
    if isinstance(document, dict) and BUNDLE_KEY in document:
        task = as_dict(document.get(BUNDLE_KEY))
        history = document.get("api_conversation_history")
        ui = as_list(document.get("ui_messages"))
        metadata = as_dict(document.get("task_metadata"))
    else:
        history = document
    if not isinstance(history, list):
        raise TranscriptError("no api_conversation_history array", file=name, expected=_EXPECTED)
    warnings = Warnings()
    conversation = _Reader(name, warnings).read(history, ui, task, metadata)
    return ParsedFile(FORMAT, (conversation,), warnings.freeze())


# Keys only Roo Code's ``ApiMessage`` has; Cline's own (``ClineStorageMessage``) are
# ``modelInfo`` and ``metrics`` on assistant messages. Both write ``ts`` (Cline 3.x does: a
# real task of Cline 3.x has it on every message), so ``ts`` alone names nobody.
_ROO_KEYS = ("isSummary", "condenseId", "condenseParent", "truncationId",
             "truncationParent", "isTruncationMarker")  # fmt: skip
_CLINE_KEYS = ("modelInfo", "metrics")


def _looks_like_roo(history: list[Any]) -> bool:
    """A lone history file (no folder to name its agent): Roo Code when a message has a key
    only Roo writes, Cline when one has Cline's own, else Roo when messages carry ``ts``."""
    head = [e for e in history[:50] if isinstance(e, dict)]
    if any(k in e for e in head for k in _ROO_KEYS):
        return True
    if any(k in e for e in head for k in _CLINE_KEYS):
        return False
    return any("ts" in e for e in head)


def _is_ui_messages(document: list[Any]) -> bool:
    head = [e for e in document[:20] if isinstance(e, dict)]
    return bool(head) and all(e.get("type") in ("say", "ask") and "role" not in e for e in head)


class _Reader:
    def __init__(self, name: str, warnings: Warnings) -> None:
        self.name = name
        self.warnings = warnings
        self.messages: list[Message] = []
        self.compactions: list[OriginalCompaction] = []

    def read(
        self,
        history: list[Any],
        ui: list[Any],
        task: dict[str, Any],
        metadata: dict[str, Any],
    ) -> Conversation:
        usage = _usage_by_index(ui)
        roo = task.get("agent") == "roo" or _looks_like_roo(history)
        pending: list[tuple[str, str]] = []  # the last assistant message's (name, id) calls
        condensed: dict[str, list[int]] = {}
        hidden: dict[str, list[int]] = {}
        for index, raw in enumerate(history):
            entry = as_dict(raw)
            pos = SourcePos(file=self.name, record=index)
            role = ab.role_of(entry.get("role"))
            if role is None:
                self.warnings.add(
                    f"message with unknown role {str(entry.get('role'))[:30]!r} kept as user",
                    str(pos), code="unknown-record",
                )  # fmt: skip
                role = Role.USER
            blocks = ab.blocks(entry.get("content"))
            if not blocks and entry.get("type") == "reasoning":
                text = as_str(entry.get("text")) or "\n".join(
                    as_str(as_dict(s).get("text")) for s in as_list(entry.get("summary"))
                )
                blocks = [Block(BlockKind.THINKING, text=text, raw_type="reasoning")]
            if role is Role.USER and pending:
                blocks = _results(blocks, pending)
            pending = (
                [
                    (b.tool_name or "", b.tool_id or "")
                    for b in blocks
                    if b.kind is BlockKind.TOOL_USE
                ]
                if role is Role.ASSISTANT
                else []
            )
            flags: set[str] = set()
            if entry.get("isSummary") is True:
                flags |= {"compact_summary", "meta"}
            if entry.get("isTruncationMarker") is True:
                flags.add("meta")
            if parent := as_str(entry.get("condenseParent")):
                condensed.setdefault(parent, []).append(index)
            if parent := as_str(entry.get("truncationParent")):
                hidden.setdefault(parent, []).append(index)
            model = as_str(as_dict(entry.get("modelInfo")).get("modelId"))
            self.messages.append(
                Message(
                    role, tuple(blocks), source=pos, timestamp=_stamp(entry.get("ts")),
                    model=model if role is Role.ASSISTANT else "",
                    usage=usage.get(index) if role is Role.ASSISTANT else None,
                    flags=frozenset(flags),
                )
            )  # fmt: skip
        condenses = [  # Roo's "condense_context" UI messages, one per condense, in order
            as_dict(as_dict(u).get("contextCondense"))
            for u in ui
            if as_dict(u).get("say") == "condense_context"
        ]
        for index, raw in enumerate(history):
            entry = as_dict(raw)
            self._roo_compaction(index, entry, condensed, hidden, condenses)
        self._cline_truncations(ui)
        self.compactions.sort(key=lambda c: c.before_index)
        task_id = as_str(task.get("id"))
        agent = as_str(task.get("agent")) or ("roo" if roo else "cline")
        facts = [("agent", agent)]
        if task_id:
            facts.append(("task", task_id))
        models = [as_str(as_dict(m).get("model_id")) for m in as_list(metadata.get("model_usage"))]
        environment = [as_dict(e) for e in as_list(metadata.get("environment_history"))]
        if environment:
            version = as_str(environment[-1].get("cline_version"))
            if version:
                facts.append(("cline version", version))
        files = as_list(metadata.get("files_in_context"))
        if files:
            facts.append(("files in context", str(len(files))))
        model = next((m for m in reversed(models) if m), "") or next(
            (m.model for m in reversed(self.messages) if m.model), ""
        )
        label = "Roo Code" if agent == "roo" else "Cline"
        return Conversation(
            id=task_id,
            title=_title(ui, self.messages) or f"{label} task {task_id}".strip(),
            messages=tuple(self.messages),
            compactions=tuple(self.compactions),
            model=model,
            metadata=tuple(facts),
            usage_convention="anthropic",
        )

    def _roo_compaction(
        self,
        index: int,
        entry: dict[str, Any],
        condensed: dict[str, list[int]],
        hidden: dict[str, list[int]],
        condenses: list[dict[str, Any]],
    ) -> None:
        pos = SourcePos(file=self.name, record=index)
        if entry.get("isSummary") is True:
            condense_id = as_str(entry.get("condenseId"))
            shown = condenses.pop(0) if condenses else {}
            detail = [("condense_id", condense_id),
                      ("condensed_messages", _runs(condensed.get(condense_id, []))),
                      ("tokens_after", str(as_int(shown.get("newContextTokens")) or ""))]  # fmt: skip
            before = as_int(shown.get("prevContextTokens"))
            self.compactions.append(OriginalCompaction(
                before_index=index, kind="condense", summary_index=index, source=pos,
                pre_tokens=before or None, detail=tuple((k, v) for k, v in detail if v),
            ))  # fmt: skip
        if entry.get("isTruncationMarker") is True:
            truncation_id = as_str(entry.get("truncationId"))
            detail = [("truncation_id", truncation_id),
                      ("hidden_messages", _runs(hidden.get(truncation_id, [])))]  # fmt: skip
            self.compactions.append(OriginalCompaction(
                before_index=index, kind="truncation", source=pos,
                detail=tuple((k, v) for k, v in detail if v),
            ))  # fmt: skip

    def _cline_truncations(self, ui: list[Any]) -> None:
        previous: tuple[int, int] | None = None
        for number, raw in enumerate(ui):
            item = as_dict(raw)
            deleted = as_list(item.get("conversationHistoryDeletedRange"))
            if len(deleted) != 2 or not all(isinstance(x, int) for x in deleted):
                continue
            current = (int(deleted[0]), int(deleted[1]))
            if current == previous:
                continue
            previous = current
            start, end = current
            # the request this range was first sent with: its answer is the first assistant
            # message after the message current when this UI message was said
            after = max(_index(item.get("conversationHistoryIndex")) + 1, end + 1)
            while after < len(self.messages) and self.messages[after].role is not Role.ASSISTANT:
                after += 1
            before_index = min(after, len(self.messages))
            self.compactions.append(OriginalCompaction(
                before_index=before_index, kind="truncation", trigger="auto",
                source=SourcePos(file=f"{self.name}#ui_messages", record=number),
                detail=(("deleted_range", f"{start}-{end}"),
                        ("deleted_messages", str(max(0, end - start + 1)))),
            ))  # fmt: skip


_TASK = re.compile(r"<task>\s*(?P<text>.*?)\s*</task>", re.S)


def _title(ui: list[Any], messages: list[Message]) -> str:
    """The task as the user typed it: the chat's first text, else the first message's
    ``<task>`` (the one title rule over the messages otherwise)."""
    for raw in ui[:5]:
        item = as_dict(raw)
        if item.get("say") == "text" and as_str(item.get("text")).strip():
            return shorten(as_str(item.get("text")))
    for message in messages[:1]:
        match = _TASK.search(message.text)
        if match and match.group("text"):
            return shorten(match.group("text"))
    return title_from(messages, fallback="")


def _results(blocks: list[Block], pending: list[tuple[str, str]]) -> list[Block]:
    """``[<label>] Result:`` text blocks answering the calls just made: a label naming a
    pending call's tool answers the first such call; the others (a label that is the
    tool's description, ``[subagents]`` for ``use_subagents``) answer the calls left, in
    order."""
    results = [
        (n, match.group("tool"))
        for n, block in enumerate(blocks)
        if block.kind is BlockKind.TEXT and (match := _RESULT.match(block.text))
    ]
    calls = list(pending)
    answer: dict[int, str] = {}
    for n, label in results:
        named = next((c for c in calls if c[0] == label), None)
        if named is not None:
            calls.remove(named)
            answer[n] = named[1]
    for n, _label in results:
        if n not in answer and calls:
            answer[n] = calls.pop(0)[1]
    return [
        Block(BlockKind.TOOL_RESULT, text=block.text, tool_id=answer[n], raw_type="text")
        if n in answer
        else block
        for n, block in enumerate(blocks)
    ]


def _usage_by_index(ui: list[Any]) -> dict[int, Usage]:
    """Each request's figures (its ``api_req_started`` message) by the index of the
    assistant message that answered it."""
    found: dict[int, Usage] = {}
    for raw in ui:
        item = as_dict(raw)
        if item.get("say") != "api_req_started":
            continue
        try:
            info = as_dict(json.loads(as_str(item.get("text")) or "{}"))
        except ValueError:
            continue
        if not any(k in info for k in ("tokensIn", "tokensOut")):
            continue
        # Said before the request's user message joins the history: that message is
        # ``conversationHistoryIndex + 1``, the answer the one after it.
        index = _index(item.get("conversationHistoryIndex")) + 2
        found[index] = Usage(
            input_uncached=as_int(info.get("tokensIn")),
            cache_read=as_int(info.get("cacheReads")),
            cache_write_5m=as_int(info.get("cacheWrites")),
            output=as_int(info.get("tokensOut")),
            convention="anthropic",
        )
    return found


def _index(value: Any) -> int:
    """A ``conversationHistoryIndex`` (-1 before the first message joined the history)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _stamp(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        from datetime import UTC, datetime

        return datetime.fromtimestamp(value / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
    return None


def _runs(indexes: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``1-3,7``."""
    runs: list[str] = []
    for i in sorted(set(indexes)):
        if runs and runs[-1].split("-")[-1] == str(i - 1):
            runs[-1] = f"{runs[-1].split('-')[0]}-{i}"
        else:
            runs.append(str(i))
    return ",".join(runs)
