"""One message: its original text against the version a strategy sent."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from ctxlab.engine.core import codec
from ctxlab.engine.core.model import Message as EngineMessage
from ctxlab.engine.evaluate.lost import message_text as engine_message_text
from replay_app.models import Run, RunEvent
from replay_app.runs import textstore
from replay_app.steps.fatelog import fate_log
from sessions_app import huge
from sessions_app.models import Message

# --- one message: original vs modified --------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageDiff:
    index: int
    fate: str
    event: int | None
    reason: str
    offload_path: str
    original: str
    modified: str
    lines: list[tuple[str, str]]  # (css class, line)
    # This diff's URL (the same version): ``&full=original|modified`` serves a whole text.
    url: str = ""

    def full_text_url(self, which: str) -> str:
        return f"{self.url}{'&' if '?' in self.url else '?'}full={which}"

    @property
    def original_huge(self) -> dict[str, Any] | None:
        """Head/tail, size and full-text link of a huge original (else None): never
        written into the page or the JSON whole (sessions_app.huge)."""
        return huge.clip(self.original, self.full_text_url("original"))

    @property
    def modified_huge(self) -> dict[str, Any] | None:
        return huge.clip(self.modified, self.full_text_url("modified"))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "fate": self.fate,
            "event": self.event,
            "reason": self.reason,
            "offload_path": self.offload_path,
            "original": self.original,
            "modified": self.modified,
            "diff": [line for _, line in self.lines],
        }
        for key, clipped in (("original", self.original_huge), ("modified", self.modified_huge)):
            if clipped is not None:
                out[key] = clipped["head"]
                out.setdefault("truncated", {})[key] = {
                    k: v for k, v in clipped.items() if k != "head"
                }
        return out


def diff_lines(original: str, modified: str, *, context: int = 3) -> list[tuple[str, str]]:
    """Unified diff lines with a css class each (rendered escaped by the template)."""
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(
        original.splitlines(),
        modified.splitlines(),
        "original",
        "as sent",
        n=context,
        lineterm="",
    ):
        if line.startswith(("+++", "---")):
            cls = "diff-file"
        elif line.startswith("@@"):
            cls = "diff-hunk"
        elif line.startswith("+"):
            cls = "diff-add"
        elif line.startswith("-"):
            cls = "diff-del"
        else:
            cls = "diff-ctx"
        out.append((cls, line))
    return out


def message_diff(
    run: Run, index: int, *, step: int | None = None, event: int | None = None
) -> MessageDiff:
    """Original text of message ``index`` against the version a strategy sent: the one set
    by ``event`` (seq), else the one in force at ``step``, else the last one."""
    original_row = list(
        Message.objects.filter(transcript_id=run.transcript_id, index=index).values_list(
            "role", "blocks"
        )
    )
    if not original_row:
        raise LookupError(f"transcript has no message {index}")
    original = engine_message_text(_row_message(original_row[0]))
    if event is None:
        fates = fate_log(run).fates_at(step if step is not None else 10**12, (index,))
        event = fates[index][1] if index in fates else None
    change: dict[str, Any] = {}
    if event is not None:
        stored = list(RunEvent.objects.filter(run=run, seq=event).values_list("changes", flat=True))
        for item in next(iter(textstore.resolve_changes(run.transcript_id, stored)), []):
            if int(item["index"]) == index:
                change = item
    modified = original
    if change.get("message"):
        modified = engine_message_text(codec.message_from_dict(change["message"]))
    url = reverse("run-message-diff", args=[run.pk, index])
    if change:
        url += f"?event={event}"
    return MessageDiff(
        index=index,
        fate=change.get("fate", "kept"),
        event=event if change else None,
        reason=change.get("reason", ""),
        offload_path=change.get("offload_path", ""),
        original=original,
        modified=modified,
        lines=diff_lines(_shown(original), _shown(modified)) if modified != original else [],
        url=url,
    )


def _shown(text: str) -> str:
    """What of ``text`` is diffed: all of it, or a huge text's head and tail (a line diff
    of 30 MiB texts takes minutes and would be written into the page whole)."""
    if len(text) <= huge.HUGE_CHARS:
        return text
    gap = len(text) - huge.HEAD_CHARS - huge.TAIL_CHARS
    return f"{text[: huge.HEAD_CHARS]}\n… {gap:,} characters not compared …\n{text[-huge.TAIL_CHARS :]}"


def _row_message(row: tuple[str, list[Any]]) -> Any:
    from ctxlab.engine.core.model import Role

    role, blocks = row
    return EngineMessage(role=Role(role), blocks=codec.blocks_from_list(blocks))
