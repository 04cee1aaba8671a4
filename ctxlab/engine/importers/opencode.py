"""OpenCode sessions: the ``opencode export <sessionID>`` JSON.

``{"info": <session>, "messages": [{"info": <message>, "parts": [<part>, ...]}, ...]}``
(``JSON.stringify(…, null, 2)``; newer releases add ``todos``), also with the
"Exporting session: ..." line the command writes to stderr before it, or the messages
alone (``[{"info", "parts"}]``, the server's ``GET /session/<id>/message``). The storage folder
(``~/.local/share/opencode/storage/``) and the SQLite ``opencode.db`` hold the same
objects; ``ctxlab.engine.sources.opencode`` reads them into this shape, so one parser
handles all three.

Shapes verified against anomalyco/opencode (the former sst/opencode):
``packages/opencode/src/session/message-v2.ts`` @ ``007a9409bafea06d6b9084ff1f6d1fe9f5e3a803``
(the part and message schemas, ``toModelMessages``, ``filterCompacted``),
``packages/opencode/src/cli/cmd/export.ts`` @ ``07fa81066b429d56c0e74a51d201010efb586b63``
and real exports of OpenCode 1.2.5 (victoryforphil/dark-factory, MIT; see
``tests/data/opencode/README.md``).

What the model saw, as ``toModelMessages`` builds it:

- **User messages**: ``text`` parts (not ``ignored``; ``synthetic`` ones too: OpenCode's
  own text such as a read file's content), ``file`` parts other than ``text/plain`` and
  directories (whose content is already a synthetic text part) as media, a ``compaction``
  part as the text "What did we do so far?", a ``subtask`` part as "The following tool
  was executed by the user". ``agent`` parts are not sent. A message whose texts are all
  synthetic (the "Continue if you have next steps ..." after an auto-compaction) is
  flagged ``meta``.
- **Assistant messages**: split at each ``step-start`` into one assistant message per step
  (one inference call: ``reasoning`` as thinking, ``text``, each ``tool`` part's call) and
  a tool message with that step's results, as the AI SDK sends them. A ``tool`` part holds
  call and result (``callID``, ``tool``, ``state{status, input, output, error}``): a
  completed one answers with its ``output`` (attachments as media parts), an ``error`` one
  with its ``error`` (or the output an interrupted call kept), a ``pending`` / ``running``
  one with "[Tool execution was interrupted]". The step's ``step-finish`` tokens are its
  usage (``input`` excludes the cache buckets; ``reasoning`` is part of ``output``); a
  message without one falls back to the message's ``tokens`` when it is one step.
  ``step-start`` / ``step-finish`` / ``patch`` / ``snapshot`` / ``retry`` parts are
  bookkeeping. An assistant message with an ``error`` is left out (OpenCode never sends it
  again) unless it was aborted after producing content; counted in an
  ``excluded-from-context`` warning.
- **Compactions**: a user message with a ``compaction`` part (``auto``, ``overflow``)
  followed by the summary assistant message (``summary: true``, agent ``compaction``)
  becomes an ``OriginalCompaction(kind="opencode_compaction")``: ``before_index`` is that user
  message (the next request starts there, as ``filterCompacted`` keeps it), the summary
  message (flag ``compact_summary``) its ``summary_index``, ``pre_tokens`` the last
  reported context before it. A compaction whose summary did not finish (an error, or
  none) changed nothing and is not recorded.

OpenCode keeps a pruned tool output in the file (``state.time.compacted`` is set); it is
imported as written and counted in the metadata ``pruned_tool_outputs``. Each prune pass
(``compaction.ts`` ``prune``, when a prompt loop ends) is also an
``OriginalCompaction(kind="microcompact")``, as Claude Code's in-place clearing is: the
results it cleared (``cleared_tool_ids``) and, as ``before_index``, the first message
created after its stamps (the next request is the first to send "[Old tool result content
cleared]"). A pass stamps its parts one by one with ``Date.now()``, so one pass's stamps
all fall between the same two messages; a pass after the file's last message is outside it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..core.model import (
    UNSENT_USER_TURN,
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
from ._common import load_json, require_content
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_int,
    as_list,
    as_str,
    data_url_base64,
    data_url_size,
    title_from,
)

FORMAT = "opencode"
LABEL = "OpenCode session"

_EXPECTED = 'an OpenCode export: {"info": {"id": "ses_..."}, "messages": [{"info", "parts"}]}'
COMPACTION_TEXT = "What did we do so far?"  # message-v2.ts toModelMessages
SUBTASK_TEXT = "The following tool was executed by the user"
INTERRUPTED_TEXT = "[Tool execution was interrupted]"
_TEXT_FILES = ("text/plain", "application/x-directory")
_BOOKKEEPING = {"step-start", "step-finish", "patch", "snapshot", "retry", "agent"}
_DEFAULT_TITLE = re.compile(r"^(New session|Child session) - \d{4}-\d\d-\d\dT")

_HEAD = re.compile(rb'^\s*\{\s*"info"\s*:\s*\{')
_LIST_HEAD = re.compile(rb'^\s*\[\s*\{\s*"info"\s*:\s*\{')
_STDERR_LINE = re.compile(rb"\A\s*Exporting session: [^\n]{0,200}\n")
_SESSION_ID = re.compile(rb'"id"\s*:\s*"ses_')
_PART_KEYS = (b'"sessionID"', b'"messageID"', b'"parts"')


def sniff(head: bytes, name: str) -> int:
    """An export starts with the session's ``info`` (``"id": "ses_..."``, ``projectID``);
    a head cut inside a long first message still shows message parts' ids. The messages
    alone (the server's ``GET /session/<id>/message``: ``[{"info", "parts"}]``) count too."""
    head = _body(head)
    if _LIST_HEAD.match(head):
        return 90 if b'"sessionID"' in head and b'"parts"' in head else 0
    if not head.lstrip().startswith(b"{"):
        return 0
    if _HEAD.match(head) and _SESSION_ID.search(head[:4096]):
        return 97 if b'"projectID"' in head[:4096] or b'"slug"' in head[:4096] else 90
    if b'"messages"' in head and all(k in head for k in _PART_KEYS) and b'"providerID"' in head:
        return 88
    return 0


def _body(data: bytes) -> bytes:
    """``data`` without the line ``opencode export`` writes to stderr ("Exporting session:
    ses_..."), kept when both streams were saved to the file."""
    found = _STDERR_LINE.match(data)
    return data[found.end() :] if found else data


def _iso(ms: Any) -> str | None:
    if isinstance(ms, bool) or not isinstance(ms, int | float) or ms <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def step_usage(tokens: Any) -> Usage | None:
    """OpenCode's ``tokens{input, output, reasoning, cache{read, write}}``: ``input`` is
    already without the cache buckets (``getUsage``); ``reasoning`` is counted in
    ``output`` (the AI SDK's output tokens). None when all are zero."""
    t = as_dict(tokens)
    cache = as_dict(t.get("cache"))
    output = as_int(t.get("output"))
    usage = Usage(
        input_uncached=as_int(t.get("input")),
        cache_read=as_int(cache.get("read")),
        cache_write_5m=as_int(cache.get("write")),
        output=output,
        reasoning=min(as_int(t.get("reasoning")), output),
        convention="opencode",
    )
    return usage if usage.context_tokens else None


def _context_tokens(tokens: Any) -> int | None:
    """What OpenCode's overflow check counts: ``total`` or the sum of the buckets."""
    t = as_dict(tokens)
    total = as_int(t.get("total"))
    if total:
        return total
    usage = step_usage(t)
    return usage.context_tokens if usage else None


def _media(part: dict[str, Any], raw_type: str = "file") -> Block:
    url = as_str(part.get("url"))
    media_type, size = data_url_size(url)
    data = data_url_base64(url)
    return Block(
        BlockKind.MEDIA,
        text="" if data else url,
        media_type=as_str(part.get("mime")) or media_type or "application/octet-stream",
        size=size,
        raw_type=raw_type,
        data=data,
    )


@dataclass(slots=True)
class _Reader:
    name: str
    warnings: Warnings = field(default_factory=Warnings)
    messages: list[MessageBuilder] = field(default_factory=list)
    compactions: list[OriginalCompaction] = field(default_factory=list)
    pending: dict[str, tuple[int, dict[str, Any], SourcePos]] = field(default_factory=dict)
    last_tokens: int | None = None
    pruned: int = 0
    # each message's creation stamp (ms) with the index of its first imported message, and
    # each pruned output's stamp with its call: where the prune passes fall
    starts: list[tuple[int, int]] = field(default_factory=list)
    prunes: list[tuple[int, str]] = field(default_factory=list)
    # indexes of the first message after a user message that sent the model nothing
    unsent_turns: list[int] = field(default_factory=list)
    model: str = ""
    provider: str = ""

    def where(self, index: int) -> SourcePos:
        return SourcePos(file=self.name, record=index)

    def message(self, index: int, entry: Any) -> None:
        entry = as_dict(entry)
        info = as_dict(entry.get("info"))
        parts = [as_dict(p) for p in as_list(entry.get("parts"))]
        role = as_str(info.get("role"))
        created = as_dict(info.get("time")).get("created")
        if isinstance(created, int):
            self.starts.append((created, len(self.messages)))
        if role == "user":
            self.user(index, info, parts)
        elif role == "assistant":
            self.assistant(index, info, parts)
        else:
            self.warnings.add(f"message with unknown role {role[:40]!r} skipped",
                              f"record {index}", code="unknown-record")  # fmt: skip

    # --- user -------------------------------------------------------------------------------
    def user(self, index: int, info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        blocks: list[Block] = []
        texts = synthetic = 0
        compaction: dict[str, Any] | None = None
        for part in parts:
            kind = as_str(part.get("type"))
            if kind == "text":
                if part.get("ignored") is True:
                    self.warnings.add("text part marked ignored (never sent to the model): "
                                      "not imported", f"record {index}",
                                      code="excluded-from-context")  # fmt: skip
                    continue
                texts += 1
                synthetic += part.get("synthetic") is True
                blocks.append(Block(BlockKind.TEXT, text=as_str(part.get("text"))))
            elif kind == "file":
                if as_str(part.get("mime")) not in _TEXT_FILES:
                    blocks.append(_media(part))
            elif kind == "compaction":
                compaction = part
                blocks.append(Block(BlockKind.TEXT, text=COMPACTION_TEXT, raw_type="compaction"))
            elif kind == "subtask":
                blocks.append(Block(BlockKind.TEXT, text=SUBTASK_TEXT, raw_type="subtask"))
            elif kind not in _BOOKKEEPING:
                self.warnings.add(f"user part of unknown type {kind[:40]!r} skipped",
                                  f"record {index}", code="unknown-record")  # fmt: skip
        if not blocks:
            # Not sent, yet still a user message of the session: OpenCode's prune counts its
            # turns by stored user messages (a plugin's notice of only ``ignored`` text
            # starts a loop the model sees as the previous turn's continuation).
            self.unsent_turns.append(len(self.messages))
            return
        flags = {"meta"} if compaction is not None or (texts and synthetic == texts) else set()
        msg_id = as_str(info.get("id"))
        if compaction is not None and msg_id:
            self.pending[msg_id] = (len(self.messages), compaction, self.where(index))
        self.messages.append(
            MessageBuilder(
                Role.USER,
                blocks,
                self.where(index),
                _iso(as_dict(info.get("time")).get("created")),
                id=msg_id,
                flags=flags,
            )  # fmt: skip
        )

    # --- assistant --------------------------------------------------------------------------
    def assistant(self, index: int, info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        error = as_dict(info.get("error"))
        if error and not (
            as_str(error.get("name")) == "MessageAbortedError"
            and any(as_str(p.get("type")) not in ("step-start", "reasoning") for p in parts)
        ):
            self.warnings.add("assistant message that ended in an error (OpenCode never sends "
                              "it again): not imported", f"record {index}",
                              code="excluded-from-context")  # fmt: skip
            return
        model = as_str(info.get("modelID"))
        self.model = model or self.model
        self.provider = as_str(info.get("providerID")) or self.provider
        summary = info.get("summary") is True
        steps: list[list[dict[str, Any]]] = [[]]
        for part in parts:
            if as_str(part.get("type")) == "step-start" and steps[-1]:
                steps.append([])
            steps[-1].append(part)
        stamp = _iso(as_dict(info.get("time")).get("created"))
        msg_id = as_str(info.get("id"))
        first = len(self.messages)
        for n, step in enumerate(steps):
            finish = next((p for p in step if as_str(p.get("type")) == "step-finish"), None)
            tokens = finish.get("tokens") if finish is not None else None
            if tokens is None and len(steps) == 1:
                tokens = info.get("tokens")
            calls, results = self.step_blocks(index, step)
            if not calls:
                continue
            self.messages.append(
                MessageBuilder(
                    Role.ASSISTANT, calls, self.where(index), stamp, model=model,
                    usage=step_usage(tokens), id=msg_id if n == 0 else f"{msg_id}#{n}",
                    name=as_str(info.get("agent")),
                    flags={"compact_summary"} if summary else set(),
                )
            )  # fmt: skip
            if results:
                self.messages.append(MessageBuilder(Role.TOOL, results, self.where(index), stamp))
            if not summary and (counted := _context_tokens(tokens)) is not None:
                self.last_tokens = counted
        if summary:
            self.summary(index, info, first)

    def step_blocks(
        self, index: int, step: list[dict[str, Any]]
    ) -> tuple[list[Block], list[Block]]:
        calls: list[Block] = []
        results: list[Block] = []
        for part in step:
            kind = as_str(part.get("type"))
            if kind == "text":
                calls.append(Block(BlockKind.TEXT, text=as_str(part.get("text"))))
            elif kind == "reasoning":
                text = as_str(part.get("text"))
                if text:
                    calls.append(Block(BlockKind.THINKING, text=text))
            elif kind == "tool":
                call, result = self.tool(part)
                calls.append(call)
                results.append(result)
            elif kind == "file":
                calls.append(_media(part))
            elif kind not in _BOOKKEEPING and kind not in ("compaction", "subtask"):
                self.warnings.add(f"assistant part of unknown type {kind[:40]!r} skipped",
                                  f"record {index}", code="unknown-record")  # fmt: skip
        return calls, results

    def tool(self, part: dict[str, Any]) -> tuple[Block, Block]:
        state = as_dict(part.get("state"))
        call_id = as_str(part.get("callID")) or as_str(part.get("id"))
        name = as_str(part.get("tool"))
        tool_input = state.get("input")
        call = Block(BlockKind.TOOL_USE, tool_id=call_id, tool_name=name,
                     tool_input=tool_input if tool_input is not None else {})  # fmt: skip
        status = as_str(state.get("status"))
        is_error = True
        media: tuple[Block, ...] = ()
        if status == "completed":
            text, is_error = as_str(state.get("output")), False
            media = tuple(_media(as_dict(a)) for a in as_list(state.get("attachments")))
            pruned_at = as_dict(state.get("time")).get("compacted")
            self.pruned += bool(pruned_at)
            if isinstance(pruned_at, int) and pruned_at > 0:
                self.prunes.append((pruned_at, call_id))
        elif status == "error":
            kept = as_dict(state.get("metadata"))
            interrupted = kept.get("interrupted") is True and isinstance(kept.get("output"), str)
            text = as_str(kept.get("output")) if interrupted else as_str(state.get("error"))
            is_error = not interrupted
        else:  # pending / running: OpenCode answers the call so the request stays valid
            text = INTERRUPTED_TEXT
        result = Block(BlockKind.TOOL_RESULT, tool_id=call_id, tool_name=name, text=text,
                       is_error=is_error, parts=media, raw_type=status or "tool")  # fmt: skip
        return call, result

    def summary(self, index: int, info: dict[str, Any], first: int) -> None:
        parent = as_str(info.get("parentID"))
        pending = self.pending.pop(parent, None)
        if pending is None:
            self.warnings.add("summary message without the compaction request it answers",
                              f"record {index}", code="parent-missing")  # fmt: skip
            return
        at, part, source = pending
        if not as_str(info.get("finish")) or first >= len(self.messages):
            return  # an unfinished summary: filterCompacted ignores it, nothing was cut
        detail = [("overflow", "true")] if part.get("overflow") is True else []
        if as_str(part.get("tail_start_id")):
            detail.append(("tail_start_id", as_str(part.get("tail_start_id"))))
        self.compactions.append(
            OriginalCompaction(
                before_index=at, kind="opencode_compaction",
                trigger="auto" if part.get("auto") is True else "manual",
                pre_tokens=self.last_tokens, summary_index=first, source=source,
                detail=tuple(detail),
            )
        )  # fmt: skip


def _prune_passes(reader: _Reader, version: str) -> list[OriginalCompaction]:
    """The prune passes (see the module): the pruned outputs grouped by the first message
    created after their stamps."""
    stamps = sorted(reader.starts)
    created = [s for s, _ in stamps]
    passes: dict[int, list[str]] = {}
    for at, call_id in sorted(reader.prunes):
        k = bisect_right(created, at)
        before = stamps[k][1] if k < len(stamps) else len(reader.messages)
        passes.setdefault(before, []).append(call_id)
    return [
        OriginalCompaction(
            before_index=before,
            kind="microcompact",
            trigger="auto",
            cleared_tool_ids=tuple(ids),
            agent_version=version,
            detail=(("agent_kind", "opencode_prune"),),
        )
        for before, ids in sorted(passes.items())
    ]


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    doc = load_json(_body(data), name)
    if isinstance(doc, list):  # the messages alone: the session is named by their sessionID
        first = as_dict(as_dict(doc[0]).get("info")) if doc else {}
        doc = {"info": {"id": as_str(first.get("sessionID"))}, "messages": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise TranscriptError("no OpenCode messages", file=name, expected=_EXPECTED)
    session = as_dict(doc.get("info"))
    reader = _Reader(name)
    for index, entry in enumerate(doc["messages"]):
        reader.message(index, entry)
    if not reader.messages:
        raise TranscriptError("no messages the model saw", file=name, expected=_EXPECTED)
    sid = as_str(session.get("id")) or name or "opencode"
    title = as_str(session.get("title"))
    if not title or _DEFAULT_TITLE.match(title):
        title = title_from(reader.messages, fallback=f"OpenCode session {sid[-8:]}")
    time = as_dict(session.get("time"))
    facts = {
        "session_id": sid,
        "slug": as_str(session.get("slug")),
        "project_id": as_str(session.get("projectID")),
        "directory": as_str(session.get("directory")),
        "opencode_version": as_str(session.get("version")),
        "session_started": _iso(time.get("created")) or "",
        "provider": reader.provider,
        "pruned_tool_outputs": str(reader.pruned or ""),
    }
    for index in reader.unsent_turns:
        if index < len(reader.messages):
            reader.messages[index].flags.add(UNSENT_USER_TURN)
    conversation = Conversation(
        id=sid,
        title=title,
        messages=tuple(m.build() for m in reader.messages),
        parent_id=as_str(session.get("parentID")) or None,
        compactions=tuple(
            sorted(
                reader.compactions + _prune_passes(reader, facts["opencode_version"]),
                key=lambda c: c.before_index,
            )
        ),
        model=reader.model,
        metadata=tuple((k, v) for k, v in facts.items() if v),
        usage_convention="opencode",
    )
    return ParsedFile(FORMAT, (conversation,), reader.warnings.freeze())
