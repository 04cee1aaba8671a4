"""OpenAI Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Envelope form ``{timestamp, type, payload}`` (cli >= ~0.3) and the legacy form (a bare meta
object, then bare Responses items and ``record_type: state`` lines). ``response_item``
payloads are the model's context; ``event_msg`` lines duplicate them for the UI and are
only read for ``token_count`` (usage), ``turn_aborted`` and the turn bounds. The shell tool's
output is a JSON string holding ``{"output", "metadata"}`` (double-encoded) and is decoded.

A ``compacted`` line is the agent's own compaction. What follows it is the model's context
from then on: its ``replacement_history`` (when present: the earlier user messages verbatim,
the re-injected developer / AGENTS.md messages and one encrypted ``compaction`` item) becomes
messages flagged ``replacement_history`` (+ ``meta``; the encrypted item an opaque block), then
the rollout goes on. Older rollouts carry a readable ``message`` (the summary): it is one
user message flagged ``compact_summary`` and the compaction's ``summary_index``. Codex 0.140 -
0.142.5 write ``message: ""``: no summary exists to show. ``OriginalCompaction.detail`` holds
the replaced item count, whether an encrypted item was there, the window chain (``window_id``,
``previous_window_id``, ``first_window_id``, ``window_number``) and ``post_tokens``: Codex's
own estimate of the new history (the ``token_count`` right after, input 0, total only), which
is not a response's usage and is not attached to one. ``trigger`` is ``manual`` for a turn that
holds nothing but the compaction (``/compact``), ``auto`` otherwise (mid-turn: after the turn's
tool outputs; pre-turn: before its user message). ``pre_tokens`` is the last reported
``last_token_usage.total_tokens`` before it. Codex 0.118 writes ``message: ""`` too, its
replacement history holding the earlier replies as well (and, in Entire's copies, no
encrypted item).

Codex 0.145 multi-agent rollouts add ``agent_message`` response items (a sub-agent's message
delivered into this agent's context: a user-role message named by its author, flagged
``agent_message``), ``world_state`` and ``inter_agent_communication_metadata`` records (known,
not context: see ``_STATE_RECORDS``).

One bad line does not refuse the rollout (``_common.iter_jsonl_lenient``): JSON records
written back to back on one line (0.118 rollouts hold a ``token_count`` and the next
``task_started`` so) are each read, any other unreadable line is skipped; both with a warning
naming the line. A file of which no line reads is refused with the first line's error.
"""

from __future__ import annotations

import json
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
from ._common import iter_jsonl_lenient
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_int,
    as_list,
    as_str,
    opaque,
    openai_usage,
    reject_empty,
    shorten,
    title_from,
)
from ._openai_items import ResponsesThread, content_blocks, output_text

FORMAT = "codex-rollout"
LABEL = "Codex CLI rollout"

_META_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
_IDE_REQUEST = "## My request for Codex:"
# 0.145 records that are not the model's context (raw lines stay in the upload):
# ``world_state`` ({full, state: {agents_md, host_skills, environments, ...}}) is the state the
# context messages render (its AGENTS.md and skills texts are in the developer / user messages
# already; a rollout's first request's reported input leaves no room for a second copy), and
# ``inter_agent_communication_metadata`` ({trigger_turn}) precedes an ``agent_message`` item.
_STATE_RECORDS = frozenset({"world_state", "inter_agent_communication_metadata"})


def sniff(head: bytes, name: str) -> int:
    if not head.lstrip().startswith(b"{"):
        return 0
    compact = head.replace(b": ", b":")
    if b'"type":"session_meta"' in compact:
        return 95
    if b'"payload"' in compact and (
        b'"type":"response_item"' in compact or b'"type":"turn_context"' in compact
    ):
        return 90
    first = compact.split(b"\n", 1)[0]
    if b'"instructions"' in first and b'"id"' in first and b'"payload"' not in first:
        return 60  # legacy: bare meta line first
    return 0


def decode_shell_output(output: Any) -> tuple[str, tuple[Block, ...], bool]:
    """cli 0.40 shell output: ``'{"output": "...", "metadata": {"exit_code": N}}'``."""
    if isinstance(output, str) and output.startswith('{"output"'):
        try:
            inner = json.loads(output)
        except ValueError:
            inner = None
        if isinstance(inner, dict) and isinstance(inner.get("output"), str):
            code = as_dict(inner.get("metadata")).get("exit_code")
            failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
            return inner["output"], (), failed
    text, parts = output_text(output)
    return text, parts, False


class _Rollout:
    def __init__(self, name: str) -> None:
        self.name = name
        self.warnings = Warnings()
        self.thread = ResponsesThread(
            self.warnings, decode_output=decode_shell_output, meta_prefixes=_META_PREFIXES
        )
        self.meta: dict[str, Any] = {}
        self.model = ""
        self.recognised = 0
        self.aborted = 0
        self.agent_messages = 0  # 0.145 multi-agent messages delivered into the context
        self._seen: MessageBuilder | None = None  # last assistant group seen
        self._segment: MessageBuilder | None = None  # assistant group of the current request
        self._pending: Usage | None = None
        self._pending_abort = False
        self._last_total: int | None = None  # last token_count's last_token_usage.total_tokens
        self.windows: dict[str, int] = {}  # model -> its reported model_context_window
        self._running_total = 0  # its total_token_usage.total_tokens (a repeat adds nothing)
        self._turn_items = 0  # response items since the turn started
        self._turn_user = False  # a user_message event in this turn
        self._compactions: list[dict[str, Any]] = []  # built into OriginalCompaction at the end
        self._open: dict[str, Any] | None = None  # the last compaction, while its turn is open

    def new_segment(self) -> None:
        """``turn_context`` is written once per model request: a usage boundary."""
        self.thread.close_group()
        self._segment = None
        self._pending = None
        self._pending_abort = False

    def item(self, payload: Any, where: SourcePos, ts: str | None) -> None:
        self._turn_items += 1
        if self._open is not None and self._open["trigger"] == "":
            self._open["trigger"] = "auto"  # the turn goes on after it: pre-turn, not /compact
        if as_dict(payload).get("type") == "agent_message":
            self._agent_message(as_dict(payload), where, ts)
            return
        if as_dict(payload).get("type") == "tool_search_output":
            # the client's answer to a tool_search_call (found tool definitions): context
            # the next request carries, kept whole as an opaque tool output
            self.thread.close_group()
            block = opaque("tool_search_output", payload, text="tool search results")
            self.thread.messages.append(MessageBuilder(Role.TOOL, [block], where, ts))
            self.recognised += 1
            return
        if self.thread.add(payload, where, ts):
            self.recognised += 1
        group = self.thread.messages[-1] if self.thread.messages else None
        if group is None or group.role is not Role.ASSISTANT or group is self._seen:
            return
        self._seen = self._segment = group
        group.model = self.model
        if self._pending is not None:
            group.usage, self._pending = self._pending, None
        if self._pending_abort:
            group.flags.add("turn_aborted")
            self._pending_abort = False

    def _agent_message(self, payload: dict[str, Any], where: SourcePos, ts: str | None) -> None:
        """0.145 multi-agent ("collaboration"): another agent's message delivered into this
        agent's context (``author`` -> ``recipient``, ``input_text`` parts and, in Entire's
        copies, a redacted ``encrypted_content`` part). The next request carries it (the
        reported input grows by it), so it is context: a user-role message named by its
        author, flagged ``agent_message`` + ``meta`` (not typed by the user: no user turn,
        no title)."""
        self.thread.close_group()
        blocks = content_blocks(payload.get("content"))
        builder = MessageBuilder(
            Role.USER, blocks, where, ts, id=as_str(payload.get("id")),
            flags={"agent_message", "meta"},
        )  # fmt: skip
        builder.name = as_str(payload.get("author"))
        self.thread.messages.append(builder)
        self.recognised += 1
        self.agent_messages += 1

    def event(self, payload: dict[str, Any], line: int) -> None:
        etype = payload.get("type")
        if etype == "token_count":
            info = as_dict(payload.get("info"))
            last = as_dict(info.get("last_token_usage"))
            window = as_int(info.get("model_context_window"))
            if window and "model_context_window" not in self.meta:
                self.meta["model_context_window"] = window
            if window and self.model:
                self.windows.setdefault(self.model, window)
            total = as_int(last.get("total_tokens"))
            if (
                last
                and not as_int(last.get("input_tokens"))
                and not as_int(last.get("output_tokens"))
            ):
                # recompute_token_usage after a compaction: Codex's estimate, not a response
                if self._compactions and "post_tokens" not in self._compactions[-1]:
                    self._compactions[-1]["post_tokens"] = total
                return
            usage = openai_usage(last or None)
            if usage is None:
                return
            running = as_int(as_dict(info.get("total_token_usage")).get("total_tokens"))
            if running and running == self._running_total:
                self.thread.close_group()  # the same count again (0.14x repeats it): no new
                self._segment = None  # response, but still after the one it counted
                return
            self._running_total = running
            self._last_total = total or usage.context_tokens
            if self._segment is not None and self._segment.usage is None:
                self._segment.usage = usage
            else:
                self._pending = usage
            # the count ends its response: what follows is the next response's (an item the
            # thread does not close a group on, e.g. tool_search_output, no longer joins two
            # responses into one message)
            self.thread.close_group()
            self._segment = None
        elif etype in ("task_started", "turn_started"):
            self._close_turn()
            self._turn_items = 0
            self._turn_user = False
        elif etype in ("task_complete", "turn_complete"):
            self._close_turn()
        elif etype == "user_message":
            self._turn_user = True
            if self._open is not None and self._open["trigger"] == "":
                self._open["trigger"] = "auto"
        elif etype == "turn_aborted":
            self.aborted += 1
            if self._segment is not None:
                self._segment.flags.add("turn_aborted")
            else:
                self._pending_abort = True

    def _close_turn(self) -> None:
        if self._open is not None and self._open["trigger"] == "":
            self._open["trigger"] = "manual"  # a turn of nothing but the compaction
        self._open = None

    def compacted(self, payload: dict[str, Any], where: SourcePos, ts: str | None) -> None:
        self.thread.close_group()
        self._segment = None
        messages = self.thread.messages
        first = len(messages)
        text = as_str(payload.get("message"))
        summary_index: int | None = None
        if text:
            block = Block(BlockKind.TEXT, text=text, raw_type="compacted")
            messages.append(
                MessageBuilder(Role.USER, [block], where, ts, flags={"compact_summary", "meta"})
            )
            summary_index = first
        replaced = as_list(payload.get("replacement_history"))
        encrypted = False
        for raw in replaced:
            item = as_dict(raw)
            if as_str(item.get("type")) in {"compaction", "compaction_summary"}:
                encrypted = True
                content = item.get("encrypted_content", item)
                opaque_block = opaque("compaction", content, text="encrypted compaction item")
                messages.append(
                    MessageBuilder(Role.USER, [opaque_block], where, ts,
                                   flags={"replacement_history", "meta", "compact_summary"})
                )  # fmt: skip
                continue
            before = len(messages)
            if as_str(item.get("type")) == "agent_message":
                self._agent_message(item, where, ts)
            else:
                self.thread.add(item, where, ts)
            self.thread.close_group()
            for builder in messages[before:]:
                builder.flags.update({"replacement_history", "meta"})
        detail: list[tuple[str, str]] = []
        if replaced:
            detail.append(("replacement_items", str(len(replaced))))
        if encrypted:
            detail.append(("encrypted", "1"))
        for key in ("window_id", "previous_window_id", "first_window_id", "window_number"):
            value = payload.get(key)
            if value is not None and value != "":
                detail.append((key, str(value)))
        if replaced:
            self.meta.setdefault("replacement_history_items", 0)
            self.meta["replacement_history_items"] += len(replaced)
        if not text and not replaced:  # nothing to show: keep the boundary visible
            messages.append(MessageBuilder(Role.USER, [], where, ts,
                                           flags={"compact_summary", "meta"}))  # fmt: skip
        record = {
            "before_index": first,
            "summary_index": summary_index,
            "source": where,
            "pre_tokens": self._last_total,
            "detail": detail,
            "trigger": "auto" if self._turn_items or self._turn_user else "",
        }
        self._compactions.append(record)
        self._open = record

    def record(self, line: int, rec: Any) -> None:
        if not isinstance(rec, dict):
            self.warnings.add("line is not a JSON object; skipped", f"line {line}")
            return
        where = SourcePos(file=self.name, line=line)
        ts = as_str(rec.get("timestamp")) or None
        rtype = rec.get("type")
        if "payload" in rec and isinstance(rtype, str):
            payload = as_dict(rec.get("payload"))
            if rtype == "session_meta":
                self.recognised += 1
                self.meta.update(payload)
            elif rtype == "turn_context":
                self.recognised += 1
                self.new_segment()
                self.model = as_str(payload.get("model")) or self.model
            elif rtype == "response_item":
                self.item(payload, where, ts)
            elif rtype == "event_msg":
                self.recognised += 1
                self.event(payload, line)
            elif rtype == "compacted":
                self.recognised += 1
                self.compacted(payload, where, ts)
            elif rtype in _STATE_RECORDS:
                self.recognised += 1  # bookkeeping, not context (see _STATE_RECORDS)
            else:
                self.warnings.add(f"unknown record type {rtype[:40]!r} skipped", f"line {line}")
            return
        # legacy (no envelope)
        if rec.get("record_type") == "state":
            self.recognised += 1
        elif not self.thread.messages and "type" not in rec and "id" in rec:
            self.recognised += 1
            self.meta.update(rec)
        else:
            self.item(rec, where, ts)

    def original_compactions(self) -> list[OriginalCompaction]:
        self._close_turn()
        version = as_str(self.meta.get("cli_version"))
        out = []
        for c in self._compactions:
            detail = list(c["detail"])
            if c.get("post_tokens") is not None:
                detail.append(("post_tokens", str(c["post_tokens"])))
            out.append(
                OriginalCompaction(
                    before_index=c["before_index"],
                    kind="compacted",
                    trigger=c["trigger"] or "auto",
                    pre_tokens=c["pre_tokens"],
                    summary_index=c["summary_index"],
                    source=c["source"],
                    agent_version=version,
                    detail=tuple(detail),
                )
            )
        return out

    def conversation(self) -> Conversation:
        messages = self.thread.messages
        sid = as_str(self.meta.get("id") or self.meta.get("session_id")) or self.name or "codex"
        git = as_dict(self.meta.get("git"))
        facts = {
            "session_id": sid,
            "cwd": as_str(self.meta.get("cwd")),
            "cli_version": as_str(self.meta.get("cli_version")),
            "originator": as_str(self.meta.get("originator")),
            "model_provider": as_str(self.meta.get("model_provider")),
            "git_branch": as_str(git.get("branch")),
            "git_commit": as_str(git.get("commit_hash")),
            "instructions_chars": str(len(as_str(self.meta.get("instructions"))) or ""),
            "turn_aborted": str(self.aborted or ""),
            "agent_messages": str(self.agent_messages or ""),
            "replacement_history_items": str(
                as_int(self.meta.get("replacement_history_items")) or ""
            ),
            "model_context_window": str(as_int(self.meta.get("model_context_window")) or ""),
            "model_context_windows": ";".join(f"{m}={w}" for m, w in self.windows.items()),
        }
        models = [m.model for m in messages if m.model]
        return Conversation(
            id=sid,
            title=_title(messages, sid),
            messages=tuple(m.build() for m in messages),
            compactions=tuple(
                sorted(
                    [*self.thread.compactions, *self.original_compactions()],
                    key=lambda c: c.before_index,
                )
            ),
            model=models[-1] if models else "",
            metadata=tuple((k, v) for k, v in facts.items() if v and v != "0"),
            usage_convention="openai",
        )


def _title(messages: list[MessageBuilder], fallback: str) -> str:
    for m in messages:
        if m.role is Role.USER and "meta" not in m.flags:
            text = next((b.text for b in m.blocks if b.kind is BlockKind.TEXT and b.text), "")
            if _IDE_REQUEST in text:  # the VS Code extension wraps the typed request
                return shorten(text.split(_IDE_REQUEST, 1)[1]) or shorten(text)
            if text:
                break
    return title_from(messages, shorten(fallback))


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, "a Codex rollout (JSONL)")
    rollout = _Rollout(name)
    # one bad line (two records run together, a torn write) does not refuse the file
    unreadable: list[TranscriptError] = []
    for line, rec in iter_jsonl_lenient(data, name, rollout.warnings, unreadable):
        rollout.record(line, rec)
    if not rollout.recognised and unreadable:
        raise unreadable[0]  # nothing read: the file's own first error says why
    if not rollout.recognised:
        raise TranscriptError(
            "no Codex rollout records found",
            file=name,
            expected="JSONL lines {timestamp, type: session_meta|response_item|…, payload}",
        )
    if not rollout.thread.messages:
        rollout.warnings.add("the rollout holds no response items (no messages)")
    return ParsedFile(FORMAT, (rollout.conversation(),), rollout.warnings.freeze())
