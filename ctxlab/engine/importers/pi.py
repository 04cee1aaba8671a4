"""pi coding agent session JSONL (``~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl``).

Read from badlogic/pi-mono (MIT) at 83378aad7e74a0e2bb8f37c007a9685fb4609d8a:
``packages/coding-agent/src/core/session-manager.ts`` (entries, versions, migrations,
``buildSessionContext``) and ``core/messages.ts`` (``convertToLlm``).

The file: a ``session`` header (``version`` 1 when absent, ``id``, ``cwd``, ``timestamp``),
then one entry per line: ``message`` (``message.role`` user / assistant / toolResult /
bashExecution / custom, ``hookMessage`` in version 2), ``model_change``,
``thinking_level_change``, ``compaction {summary, firstKeptEntryIndex (v1) |
firstKeptEntryId (v2+), tokensBefore, details {readFiles, modifiedFiles}, fromHook}``,
``branch_summary``, ``custom_message``, and entries that never reach the model
(``custom``, ``label``, ``session_info``).

- **Which entries.** Version 1 files are linear: every entry in file order. From version 2
  entries form a tree by ``id`` / ``parentId``; as pi's SessionManager does, the leaf is
  the last entry of the file and the conversation is its chain back to the root. Entries
  on other branches are counted in an ``off-branch-entries`` warning.
- **Messages as the model saw them** (``convertToLlm``): user and assistant messages as
  they are (assistant ``text`` / ``thinking`` / ``toolCall`` blocks; ``usage {input,
  output, cacheRead, cacheWrite}`` as ``Usage``, kept only when not all zero; a
  ``stopReason`` of ``aborted`` or ``error`` becomes the flag of that name); a
  ``toolResult`` is a tool message answering its ``toolCallId``; a ``!`` command
  (``bashExecution``) is a user message with ``bashExecutionToText``'s text, its block's
  ``raw_type`` ``bashExecution`` and ``size`` the UTF-16 length of command + output (pi's
  estimate counts those, not the wrapper); ``!!`` commands (``excludeFromContext``) never
  reach the model and are left out with a warning; custom messages are user messages
  (flags ``custom``, ``meta``; from a ``custom_message`` entry also ``custom_entry``); a
  ``branch_summary`` entry is a user message with pi's branch prefix (flags
  ``branch_summary``, ``meta``).
- **Compactions.** Each ``compaction`` entry becomes, where it sits, the user message pi
  puts into the model's context after compacting: ``COMPACTION_SUMMARY_PREFIX + summary +
  COMPACTION_SUMMARY_SUFFIX`` (flags ``compact_summary``, ``meta``), and an
  ``OriginalCompaction(kind="compaction", pre_tokens=tokensBefore)`` whose ``detail``
  holds ``first_kept`` (the index of the first message pi kept, ``firstKeptEntryIndex`` /
  ``firstKeptEntryId`` resolved), the number of read / modified files and ``from_hook``.
  The older messages stay in the list, as in the file.
- **Bad lines** (not JSON, not an object) are skipped with an ``unreadable-line`` warning
  naming the line, as pi's loader skips them; one bad line never refuses the file.

Tool-call ids are pi's own (``toolCall.id`` = ``toolResult.toolCallId``); none is made up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from ..strategies import _pi_rules as rules
from ..strategies._gemini_cli_rules import js_len
from ._common import _lines, decode_text, loads
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_int,
    as_list,
    as_str,
    base64_size,
    reject_empty,
    title_from,
)

FORMAT = "pi-session"
LABEL = "pi coding agent session"

_CONTEXT_FREE = {"custom", "label", "session_info"}  # entries buildSessionContext ignores
_SETTINGS = {"model_change", "thinking_level_change"}


def sniff(head: bytes, name: str) -> int:
    """A ``session`` header line with ``id`` first (``cwd`` too: sure); or pi's
    ``message`` entries with a ``toolResult``."""
    if not head.lstrip().startswith(b"{"):
        return 0
    compact = head.replace(b": ", b":")
    first = compact.lstrip().split(b"\n", 1)[0]
    if b'"type":"session"' in first and b'"id"' in first:
        return 97 if b'"cwd"' in first else 80
    if b'"type":"message"' in compact and (
        b'"role":"toolResult"' in compact or b'"toolCallId"' in compact
    ):
        return 90
    return 0


@dataclass(slots=True)
class _Entry:
    line: int
    rec: dict[str, Any]
    position: int  # index among the file's entries (header included), as pi's v1 counts


@dataclass(slots=True)
class _Reader:
    name: str
    warnings: Warnings = field(default_factory=Warnings)
    messages: list[MessageBuilder] = field(default_factory=list)
    compactions: list[OriginalCompaction] = field(default_factory=list)
    first_message_at: dict[int, int] = field(default_factory=dict)  # entry position -> msg
    model: str = ""
    provider: str = ""
    thinking_level: str = ""
    aborted: int = 0

    def where(self, line: int) -> SourcePos:
        return SourcePos(file=self.name, line=line)

    # --- entries --------------------------------------------------------------------------
    def entry(self, e: _Entry) -> None:
        rec, line = e.rec, e.line
        kind = as_str(rec.get("type"))
        self.first_message_at[e.position] = len(self.messages)
        ts = as_str(rec.get("timestamp")) or None
        if kind == "message":
            msg = rec.get("message")
            if not isinstance(msg, dict):
                self.warnings.add(
                    "message entry without a message object skipped", f"line {line}",
                    code="unreadable-line",
                )  # fmt: skip
                return
            self.message(msg, line, ts)
        elif kind == "compaction":
            self.compaction(rec, line, ts)
        elif kind == "branch_summary":
            summary = as_str(rec.get("summary"))
            if summary:  # buildSessionContext skips an empty one
                self.add(Role.USER, [_text(rules.branch_summary_text(summary), "branch_summary")],
                         line, ts, flags={"branch_summary", "meta"})  # fmt: skip
        elif kind == "custom_message":  # flag custom_entry: not a message entry for pi's cut
            self.add(Role.USER, _content_blocks(rec.get("content")), line, ts,
                     flags={"custom", "custom_entry", "meta"},
                     name=as_str(rec.get("customType")))  # fmt: skip
        elif kind == "model_change":
            self.model = as_str(rec.get("modelId")) or self.model
            self.provider = as_str(rec.get("provider")) or self.provider
        elif kind == "thinking_level_change":
            self.thinking_level = as_str(rec.get("thinkingLevel")) or self.thinking_level
        elif kind not in _CONTEXT_FREE:
            self.warnings.add(f"unknown entry type {kind[:40]!r} skipped", f"line {line}",
                              code="unknown-record")  # fmt: skip

    def add(
        self,
        role: Role,
        blocks: list[Block],
        line: int,
        ts: str | None,
        *,
        flags: set[str] | None = None,
        name: str = "",
        usage: Usage | None = None,
        model: str = "",
        msg_id: str = "",
    ) -> None:
        self.messages.append(
            MessageBuilder(
                role, blocks, self.where(line), ts, model=model, usage=usage, id=msg_id,
                name=name, flags=flags or set(),
            )
        )  # fmt: skip

    def message(self, msg: dict[str, Any], line: int, ts: str | None) -> None:
        role = as_str(msg.get("role"))
        if role == "user":
            self.add(Role.USER, _content_blocks(msg.get("content")), line, ts)
        elif role == "assistant":
            self.assistant(msg, line, ts)
        elif role == "toolResult":
            call_id = as_str(msg.get("toolCallId"))  # unpaired ones: importers.parse warns
            parts = _content_blocks(msg.get("content"))
            text = "".join(b.text for b in parts if b.kind is BlockKind.TEXT)
            result = Block(
                BlockKind.TOOL_RESULT, text=text, tool_id=call_id,
                tool_name=as_str(msg.get("toolName")), is_error=msg.get("isError") is True,
                parts=tuple(parts) if any(b.kind is not BlockKind.TEXT for b in parts) else (),
            )  # fmt: skip
            self.add(Role.TOOL, [result], line, ts, name=as_str(msg.get("toolName")))
        elif role == "bashExecution":
            command, output = as_str(msg.get("command")), as_str(msg.get("output"))
            if msg.get("excludeFromContext") is True:
                self.warnings.add("!! command kept out of the model's context: not imported",
                                  f"line {line}", code="excluded-from-context")  # fmt: skip
                return
            text = rules.bash_execution_text(
                command, output, msg.get("exitCode"), msg.get("cancelled") is True,
                msg.get("truncated") is True, as_str(msg.get("fullOutputPath")),
            )  # fmt: skip
            block = Block(BlockKind.TEXT, text=text, raw_type="bashExecution",
                          size=js_len(command) + js_len(output))  # fmt: skip
            self.add(Role.USER, [block], line, ts, flags={"bash_execution"})
        elif role in ("custom", "hookMessage"):
            self.add(Role.USER, _content_blocks(msg.get("content")), line, ts,
                     flags={"custom", "meta"}, name=as_str(msg.get("customType")))  # fmt: skip
        elif role in ("branchSummary", "compactionSummary"):
            summary = as_str(msg.get("summary"))
            text = (rules.branch_summary_text if role == "branchSummary"
                    else rules.compaction_summary_text)(summary)  # fmt: skip
            self.add(Role.USER, [_text(text, role)], line, ts, flags={"meta"})
        else:
            self.warnings.add(f"message with unknown role {role[:40]!r} skipped", f"line {line}",
                              code="unknown-record")  # fmt: skip

    def assistant(self, msg: dict[str, Any], line: int, ts: str | None) -> None:
        blocks: list[Block] = []
        for b in as_list(msg.get("content")):
            b = as_dict(b)
            btype = as_str(b.get("type"))
            if btype == "text":
                blocks.append(Block(BlockKind.TEXT, text=as_str(b.get("text"))))
            elif btype == "thinking":
                blocks.append(Block(BlockKind.THINKING, text=as_str(b.get("thinking"))))
            elif btype == "toolCall":
                call_id = as_str(b.get("id"))
                args = b.get("arguments")
                blocks.append(Block(BlockKind.TOOL_USE, tool_id=call_id,
                                    tool_name=as_str(b.get("name")),
                                    tool_input=args if args is not None else {}))  # fmt: skip
            else:
                self.warnings.add(f"assistant block of unknown type {btype[:40]!r} skipped",
                                  f"line {line}", code="unknown-record")  # fmt: skip
        stop = as_str(msg.get("stopReason"))
        flags = {stop} if stop in ("aborted", "error") else set()
        self.aborted += stop == "aborted"
        model = as_str(msg.get("model")) or self.model
        self.model = model or self.model
        self.provider = as_str(msg.get("provider")) or self.provider
        usage = _usage(msg.get("usage"))
        total = as_int(as_dict(msg.get("usage")).get("totalTokens"))
        if usage is not None and total and total != usage.context_tokens:
            self.warnings.add("usage totalTokens is not the sum of its parts: the parts kept",
                              f"line {line}", code="usage-total-differs")  # fmt: skip
        self.add(Role.ASSISTANT, blocks, line, ts, flags=flags, usage=usage, model=model,
                 msg_id=as_str(msg.get("responseId")))  # fmt: skip

    def compaction(self, rec: dict[str, Any], line: int, ts: str | None) -> None:
        summary = as_str(rec.get("summary"))
        index = len(self.messages)
        self.add(Role.USER, [_text(rules.compaction_summary_text(summary), "compactionSummary")],
                 line, ts, flags={"compact_summary", "meta"})  # fmt: skip
        details = as_dict(rec.get("details"))
        detail = [
            ("read_files", str(len(as_list(details.get("readFiles"))))),
            ("modified_files", str(len(as_list(details.get("modifiedFiles"))))),
        ]
        if rec.get("fromHook") is True:
            detail.append(("from_hook", "true"))
        kept = rec.get("firstKeptEntryId", rec.get("firstKeptEntryIndex"))
        detail.append(("first_kept_entry", str(kept)))
        self.compactions.append(
            OriginalCompaction(
                before_index=index, kind="compaction",
                pre_tokens=as_int(rec.get("tokensBefore")) if "tokensBefore" in rec else None,
                summary_index=index, source=self.where(line), detail=tuple(detail),
            )
        )  # fmt: skip


def _text(text: str, raw_type: str) -> Block:
    return Block(BlockKind.TEXT, text=text, raw_type=raw_type)


def _content_blocks(content: Any) -> list[Block]:
    """A user / tool-result / custom ``content``: a string or text / image blocks."""
    if isinstance(content, str):
        return [Block(BlockKind.TEXT, text=content)]
    out: list[Block] = []
    for b in as_list(content):
        b = as_dict(b)
        if b.get("type") == "image":
            data = as_str(b.get("data"))
            out.append(Block(BlockKind.MEDIA, media_type=as_str(b.get("mimeType")),
                             size=base64_size(data), data=data, raw_type="image"))  # fmt: skip
        elif b.get("type") == "text":
            out.append(Block(BlockKind.TEXT, text=as_str(b.get("text"))))
    return out


def _usage(value: Any) -> Usage | None:
    u = as_dict(value)
    usage = Usage(
        input_uncached=as_int(u.get("input")), cache_read=as_int(u.get("cacheRead")),
        cache_write_5m=as_int(u.get("cacheWrite")), output=as_int(u.get("output")),
        convention="pi",
    )  # fmt: skip
    return usage if usage.context_tokens else None


def _read(data: bytes, name: str, warnings: Warnings) -> list[_Entry]:
    """Every entry that parses, with its line; bad lines are warnings."""
    entries: list[_Entry] = []
    for number, (start, raw) in enumerate(_lines(data), start=1):
        if not raw.strip():
            continue
        try:
            text = decode_text(raw, name)
            value = loads(text, name=name, where=f"line {number}", line=number, start=start,
                          raw=raw)  # fmt: skip
        except (TranscriptError, json.JSONDecodeError):
            warnings.add("line is not valid JSON: skipped", f"line {number}",
                         code="unreadable-line")  # fmt: skip
            continue
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            warnings.add("line is not an entry object: skipped", f"line {number}",
                         code="unreadable-line")  # fmt: skip
            continue
        entries.append(_Entry(number, value, len(entries)))
    return entries


def _branch(entries: list[_Entry], warnings: Warnings) -> list[_Entry]:
    """The current branch: the last entry's chain of ``parentId`` back to the root."""
    by_id = {as_str(e.rec.get("id")): e for e in entries if as_str(e.rec.get("id"))}
    path: list[_Entry] = []
    seen: set[str] = set()
    current = entries[-1] if entries else None
    while current is not None:
        path.append(current)
        parent = current.rec.get("parentId")
        if not isinstance(parent, str) or parent in seen:
            break
        seen.add(parent)
        current = by_id.get(parent)
        if current is None:
            warnings.add("parentId names no entry of the file: the branch starts there",
                         f"line {path[-1].line}", code="parent-missing")  # fmt: skip
    path.reverse()
    off = len(entries) - len(path)
    if off:
        on = {e.position for e in path}
        first = next(e.line for e in entries if e.position not in on)
        warnings.add(f"{off} entries on other branches not imported", f"line {first}",
                     code="off-branch-entries", count=off)  # fmt: skip
    return path


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, "a pi session JSONL file")
    reader = _Reader(name)
    entries = _read(data, name, reader.warnings)
    header = next((e for e in entries if e.rec.get("type") == "session"), None)
    if header is None:
        raise TranscriptError("no session header", file=name, line=1,
                              expected='a first line {"type": "session", "id", "cwd", ...}')  # fmt: skip
    head = header.rec
    version = as_int(head.get("version")) or 1
    body = [e for e in entries if e is not header]
    if version >= 2 and any("id" in e.rec for e in body):
        body = _branch(body, reader.warnings)
    reader.model = as_str(head.get("modelId"))
    reader.provider = as_str(head.get("provider"))
    reader.thinking_level = as_str(head.get("thinkingLevel"))
    for e in body:
        reader.entry(e)
    if not reader.messages:
        raise TranscriptError("no messages", file=name, expected="pi message entries")
    compactions = _resolve_first_kept(reader, body, version)
    messages = [m.build() for m in reader.messages]
    sid = as_str(head.get("id")) or name or "pi"
    facts = {
        "session_id": sid,
        "cwd": as_str(head.get("cwd")),
        "session_version": str(version),
        "session_started": as_str(head.get("timestamp")),
        "provider": reader.provider,
        "thinking_level": reader.thinking_level,
        "parent_session": as_str(head.get("parentSession") or head.get("branchedFrom")),
        "aborted_responses": str(reader.aborted or ""),
    }
    conversation = Conversation(
        id=sid,
        title=title_from(reader.messages, fallback=f"pi session {sid[:8]}"),
        messages=tuple(messages),
        compactions=tuple(compactions),
        model=reader.model,
        metadata=tuple((k, v) for k, v in facts.items() if v),
        usage_convention="pi",
    )
    return ParsedFile(format=FORMAT, conversations=(conversation,),
                      warnings=reader.warnings.freeze())  # fmt: skip


def _resolve_first_kept(
    reader: _Reader, body: list[_Entry], version: int
) -> list[OriginalCompaction]:
    """``first_kept``: the message index of each compaction's first kept entry (v1 counts
    the file's entries with the header at 0; later versions name the entry's id)."""
    by_id = {as_str(e.rec.get("id")): e.position for e in body if as_str(e.rec.get("id"))}
    out: list[OriginalCompaction] = []
    for c in reader.compactions:
        detail = dict(c.detail)
        kept = detail.get("first_kept_entry", "None")
        position: int | None = None
        if kept in by_id:
            position = by_id[kept]
        elif kept.isdigit():
            position = int(kept)
        message = None
        if position is not None:
            message = next(
                (reader.first_message_at[p] for p in sorted(reader.first_message_at)
                 if p >= position), None,
            )  # fmt: skip
        if message is None or message > c.before_index:
            reader.warnings.add("compaction's first kept entry is not on this branch",
                                str(c.source), code="parent-missing")  # fmt: skip
        else:
            detail["first_kept"] = str(message)
        out.append(replace(c, detail=tuple(detail.items())))
    return out
