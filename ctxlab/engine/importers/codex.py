"""OpenAI Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Envelope form ``{timestamp, type, payload}`` (cli >= ~0.3) and the legacy form (a bare meta
object, then bare Responses items and ``record_type: state`` lines). ``response_item``
payloads are the model's context; ``event_msg`` lines duplicate them for the UI and are
only read for ``token_count`` (usage) and ``turn_aborted``. The shell tool's output is a
JSON string holding ``{"output", "metadata"}`` (double-encoded) and is decoded.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import (
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
from ._common import iter_jsonl
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_int,
    as_list,
    as_str,
    openai_usage,
    reject_empty,
    shorten,
    title_from,
)
from ._openai_items import ResponsesThread, output_text

FORMAT = "codex-rollout"
LABEL = "Codex CLI rollout"

_META_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
_IDE_REQUEST = "## My request for Codex:"


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
        self._seen: MessageBuilder | None = None  # last assistant group seen
        self._segment: MessageBuilder | None = None  # assistant group of the current request
        self._pending: Usage | None = None
        self._pending_abort = False

    def new_segment(self) -> None:
        """``turn_context`` is written once per model request: a usage boundary."""
        self.thread.close_group()
        self._segment = None
        self._pending = None
        self._pending_abort = False

    def item(self, payload: Any, where: SourcePos, ts: str | None) -> None:
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

    def event(self, payload: dict[str, Any], line: int) -> None:
        etype = payload.get("type")
        if etype == "token_count":
            usage = openai_usage(as_dict(payload.get("info")).get("last_token_usage"))
            if usage is None:
                return
            if self._segment is not None and self._segment.usage is None:
                self._segment.usage = usage
            else:
                self._pending = usage
        elif etype == "turn_aborted":
            self.aborted += 1
            if self._segment is not None:
                self._segment.flags.add("turn_aborted")
            else:
                self._pending_abort = True

    def compacted(self, payload: dict[str, Any], where: SourcePos, ts: str | None) -> None:
        self.thread.close_group()
        text = as_str(payload.get("message"))
        blocks = [Block(BlockKind.TEXT, text=text, raw_type="compacted")] if text else []
        self.thread.messages.append(
            MessageBuilder(Role.USER, blocks, where, ts, flags={"compact_summary", "meta"})
        )
        index = len(self.thread.messages) - 1
        self.thread.compactions.append(
            OriginalCompaction(
                before_index=index, kind="compacted", summary_index=index, source=where
            )
        )
        replaced = as_list(payload.get("replacement_history"))
        if replaced:
            self.meta.setdefault("replacement_history_items", 0)
            self.meta["replacement_history_items"] += len(replaced)

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
            "replacement_history_items": str(
                as_int(self.meta.get("replacement_history_items")) or ""
            ),
        }
        models = [m.model for m in messages if m.model]
        return Conversation(
            id=sid,
            title=_title(messages, sid),
            messages=tuple(m.build() for m in messages),
            compactions=tuple(self.thread.compactions),
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
    for line, rec in iter_jsonl(data, name):
        rollout.record(line, rec)
    if not rollout.recognised:
        raise TranscriptError(
            "no Codex rollout records found",
            file=name,
            expected="JSONL lines {timestamp, type: session_meta|response_item|…, payload}",
        )
    if not rollout.thread.messages:
        rollout.warnings.add("the rollout holds no response items (no messages)")
    return ParsedFile(FORMAT, (rollout.conversation(),), rollout.warnings.freeze())
