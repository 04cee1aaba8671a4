"""The original agent's own compactions, as a strategy that follows them reads them.

Shared by the strategies whose agent leaves its compactions in the transcript
(``claude_code``, ``pi``; ``codex`` may reuse it). Reads only, no replay state:

- ``OriginalIndex(conversation)``: which ``OriginalCompaction`` a source message opens.
  ``at(i)`` is the compaction whose summary message (``summary_index``) is message ``i``,
  or, for one without a summary message, whose first message after the boundary
  (``before_index``) is ``i``; ``None`` otherwise. A strategy calls it in
  ``after_append(ctx, i)`` to decide at the original's own boundary. Compactions that
  open the file (``before_index == 0``: the file starts after one) are left out: the replay
  never saw what they compacted. ``microcompactions`` lists the ``kind == "microcompact"``
  ones by the message they precede.
- ``starts_after_compaction(conversation)``: the file begins after a compaction, so the
  first reported usage counts context that is not in the file: metadata
  ``("continued", "1")``, an original compaction at index 0, or a first message that is a
  compaction summary (flag ``compact_summary`` or Claude Code's "This session is being
  continued from a previous conversation" text).
- ``first_kept(compaction)``: the first message the original kept after compacting, when
  its importer knows it (``detail`` ``first_kept``: pi's ``firstKeptEntryId``); a
  strategy that follows the original cuts there so later reported usage still fits.
- ``recorded_summaries(conversation)``: the originals' summaries as the ``recorded``
  summariser answers them, so a strategy can tell an original's whole summary (to use it
  as it is) from a stand-in's.
- ``outside_context(reported, covered, continued, overhead, max_overhead=)``: splits what a reported
  usage counts beyond the estimate of the messages it covered into the fixed overhead
  (system prompt, tool definitions, attachments) and the context not in this file.
  ``OutsideContext.as_detail()`` is what events and pages show.

Invariant: nothing here changes a context; the functions read the conversation only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import Conversation, OriginalCompaction, Role

# The text Claude Code's compaction summary message starts with (every version seen,
# 2.0.76 … 2.1.88; ``getCompactUserSummaryMessage``).
CONTINUED_TEXT = "This session is being continued from a previous conversation"
MICROCOMPACT = "microcompact"


class OriginalIndex:
    """The original's compactions by the source message that opens each (see module)."""

    __slots__ = ("_at", "microcompactions")

    def __init__(self, conversation: Conversation) -> None:
        self._at: dict[int, OriginalCompaction] = {}
        self.microcompactions: dict[int, list[OriginalCompaction]] = {}
        for c in conversation.compactions:
            if c.kind == MICROCOMPACT:
                self.microcompactions.setdefault(c.before_index, []).append(c)
                continue
            if c.before_index <= 0:
                continue  # the file starts after it: nothing before it was replayed
            opens = c.summary_index if c.summary_index is not None else c.before_index
            self._at.setdefault(opens, c)

    def at(self, index: int) -> OriginalCompaction | None:
        return self._at.get(index)

    def __len__(self) -> int:
        return len(self._at)


def first_kept(compaction: OriginalCompaction) -> int | None:
    """The source index of the first message the original kept (see module)."""
    value = dict(compaction.detail).get("first_kept", "")
    return int(value) if value.isdigit() else None


def recorded_summaries(conversation: Conversation) -> set[str]:
    """Every original compaction's summary as ``recorded.summary_text`` gives it."""
    from ..summarize.recorded import summary_text

    return {t for c in conversation.compactions if (t := summary_text(conversation, c))}


def first_message_index(conversation: Conversation) -> int | None:
    """The first non-system message (the system prompt is never appended)."""
    return next((i for i, m in enumerate(conversation.messages) if m.role is not Role.SYSTEM), None)


def starts_after_compaction(conversation: Conversation) -> str:
    """Why the file starts after a compaction ("" when it does not): the reason is shown."""
    if dict(conversation.metadata).get("continued") == "1":
        return "the importer marks the file as continued"
    if any(c.kind != MICROCOMPACT and c.before_index == 0 for c in conversation.compactions):
        return "the transcript opens with the original's compaction"
    first = first_message_index(conversation)
    if first is None:
        return ""
    message = conversation.messages[first]
    if "compact_summary" in message.flags or message.text.lstrip().startswith(CONTINUED_TEXT):
        return "the first message is a compaction summary"
    return ""


@dataclass(frozen=True, slots=True)
class OutsideContext:
    """What a reported usage counts beyond the messages of this file that it covered."""

    reported: int  # the first reported usage (the agent's own count)
    covered: int  # estimate of the file's messages that request held
    overhead: int  # system prompt, tools, attachments (fixed per request)
    not_in_file: int  # earlier conversation the file does not hold (continued files)
    reason: str = ""  # why the file counts as continued ("" = it does not)

    def as_detail(self) -> dict[str, int | str]:
        out: dict[str, int | str] = {"overhead": self.overhead}
        if self.not_in_file:
            out["not_in_file"] = self.not_in_file
            out["not_in_file_reason"] = self.reason
        return out


def outside_context(
    reported: int,
    covered: int,
    continued: str = "",
    overhead: int | None = None,
    *,
    max_overhead: int | None = None,
) -> OutsideContext:
    """Split ``reported - covered`` (never below 0). In a file that does not continue an
    earlier one it is all fixed overhead. In a continued file (``continued`` = the reason)
    ``overhead`` (the agent's fixed overhead, when the caller knows or assumes it) is
    taken out first and the rest is context not in this file; without it all of it is
    (the system prompt is not in the file either). ``max_overhead``: the most a fixed
    overhead ever is for this agent; a file whose first request counts more beyond its
    messages than that is continued too (a checkpoint slice that starts mid-session)."""
    beyond = max(0, reported - covered)
    if not continued and max_overhead is not None and beyond > max_overhead:
        continued = (
            f"the first reported usage counts {beyond:,} tokens beyond this file's messages, "
            f"more than the agent's fixed overhead ({max_overhead:,} at most)"
        )
    if not continued:
        return OutsideContext(reported, covered, beyond, 0)
    fixed = 0 if overhead is None else min(beyond, max(0, overhead))
    return OutsideContext(reported, covered, fixed, beyond - fixed, continued)
