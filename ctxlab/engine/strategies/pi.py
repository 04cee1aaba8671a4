"""pi coding agent auto-compaction (badlogic/pi-mono, MIT).

Pinned: badlogic/pi-mono at 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (2026-03-15),
``packages/coding-agent/src/core/compaction/compaction.ts`` (``shouldCompact``,
``estimateTokens``, ``findCutPoint``, ``prepareCompaction``, ``compact``,
``generateSummary``), ``compaction/utils.ts`` (serialisation, file lists, system prompt),
``core/agent-session.ts`` (``_checkCompaction``: when it runs) and ``core/messages.ts``
(the summary message). Prompts byte for byte in ``_pi_rules``.

What it does, as pi does:

- **When.** pi checks after an agent run ends (``agent_end``) and again before the next
  prompt is sent, both with the run's last assistant message. In a transcript that is
  the moment the first user-side message (a prompt, a ``!`` command, a compaction) follows
  an assistant message: the check runs then, on the history *before* that message (pi
  compacted before it was typed; it stays, kept). Not after every model call.
- **Trigger.** ``contextTokens > contextWindow - reserveTokens`` (``shouldCompact``,
  strict). ``contextTokens`` is ``calculateContextTokens`` of that assistant's usage
  (``totalTokens``, else input + output + cacheRead + cacheWrite); an aborted message
  counts its own usage (the pre-prompt check includes it; no usage: 0); after an error
  reply pi estimates: the last good usage plus ``estimateTokens`` of the messages after
  it. While the replay's context differs from the original's (after a compaction that
  kept other messages, or one the original did not make), the reported usage is corrected
  by the difference of pi's own estimates of the two contexts at that response
  (``delta``), converted at the original's ratio of reported to estimated tokens there
  (``usage / estimate``, system prompt and tools included, so a little high): pi would
  have seen the API's count of the replay's context, which the transcript cannot give.
  Compactions of the replay or the original are not followed by a check
  until a newer response (pi's "assistant older than the compaction" guard holds by
  construction).
- **Cut** (``findCutPoint``): walk back from the newest message summing ``estimateTokens``
  (``ceil(chars / 4)``; tool call = name + ``JSON.stringify(arguments)``; an image in a
  tool result 4 800 chars; user images not counted; a ``!`` command = command + output)
  until ``keepRecentTokens``, cut at the next user / assistant / bashExecution / custom /
  summary message at or after it, never at a tool result. A cut at anything but a user
  message splits a turn: the turn's prefix (from its user or ``!`` message) gets its own
  summary with ``TURN_PREFIX_SUMMARIZATION_PROMPT`` (``maxTokens = 0.5 * reserve``) and is
  appended after ``---`` / ``**Turn Context (split turn):**``; the history before the turn
  is summarised (``No prior history.`` when there is none).
- **Summary** (``generateSummary``): one user message ``<conversation>`` +
  ``serializeConversation`` (tool results cut at 2 000 chars) + ``</conversation>``, then,
  when an earlier compaction exists, ``<previous-summary>`` and the anchored UPDATE prompt
  (merge into it), else the initial structured prompt; system
  ``SUMMARIZATION_SYSTEM_PROMPT``; ``maxTokens = floor(0.8 * reserveTokens)``. Then the
  read-only and modified file lists (read / write / edit tool calls of the summarised
  messages plus the previous compaction's lists) as ``<read-files>`` /
  ``<modified-files>``.
- **New context** (``buildSessionContext``): the summary as one user message
  (``COMPACTION_SUMMARY_PREFIX`` + summary + ``</summary>``) then the kept messages.
  A failed summary call: nothing changes ("Auto-compaction failed: ..."); the next run's
  end checks again.

What a later compaction leaves: pi's ``prepareCompaction`` cuts and summarises only the
entries after the previous compaction (``boundaryStart``); the messages that compaction
kept are neither summarised again nor kept (``DROPPED``, ``dropped_kept`` in the event;
reported as badlogic/pi-mono#2608). Modelled as the code does it.

Versions (``rules``). A pi session names no pi version. ``2026-03`` is the pinned commit;
``0.14`` is pi v0.10-v0.16 (``compaction.ts`` at tag v0.14.2, 33a2bcf2, December 2025):
the check after *every* response (``message_end``), with the last non-aborted response's
usage (error replies included), the cut at the last user message at or before the newest
response kept once usages differ by ``keepRecentTokens`` (differences of reported usage, no
split turns), one summary request of the messages themselves (the previous summary first
as ``Previous session summary:``), no system prompt, no file lists. ``auto`` (default)
picks ``0.14`` for sessions started before v0.17.0's release (2025-12-09T20:47:39Z, the
first with the rules above), by the importer's ``session_started``.

Following the original (``follow_originals``). A pi transcript holds pi's own
compactions (the summary message at each, see importers/pi.py). pi does not record
whether one was automatic or the user's ``/compact``. At each, when this replay's trigger
fires there, the replay compacts as the original did: the original's first kept message
as the cut and, with the ``recorded`` summariser, the original's summary (already whole:
its turn context and file lists included, so nothing is added), so the reported usage
after it still describes the replay's context. With ``all`` (default) the replay also
follows those its trigger does not explain (``trigger: original`` in the event: a manual
``/compact``, an overflow retry, or different settings); ``triggered`` follows only
the ones it explains; ``none`` applies pi's rules alone, and the original's summary
message stays in the history as the message it is. Where the replay compacts on its own,
it uses its own cut. The cut pi would have chosen is always in the event
(``pi_first_kept``).

Not modelled: the overflow path (a context-overflow error reply: compact and retry;
the error text is not imported), extensions' ``session_before_compact`` hooks, the
``reasoning: "high"`` option of the summary call, branch summarisation (``/tree``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Conversation, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..stages.js_text import js_json
from ..stages.originals import OriginalIndex, first_kept, recorded_summaries
from . import _pi_rules as rules
from ._gemini_cli_rules import js_len

if TYPE_CHECKING:
    from ..core.context_view import ContextView

SECTIONS = (
    Section("## Goal", "goal"),
    Section("## Constraints & Preferences", "constraints"),
    Section("### Done", "done"),
    Section("### In Progress", "in_progress"),
    Section("### Blocked", "blocked"),
    Section("## Key Decisions", "decisions"),
    Section("## Next Steps", "next"),
    Section("## Critical Context", "critical"),
)
V014_SECTIONS = (
    Section("Current progress and key decisions made", "decisions"),
    Section("Important context, constraints, or user preferences", "constraints"),
    Section("Absolute file paths of any relevant files that were read or modified", "critical"),
    Section("What remains to be done (clear next steps)", "next"),
    Section("Any critical data, examples, or references needed to continue", "critical"),
)
TURN_SECTIONS = (
    Section("## Original Request", "goal"),
    Section("## Early Progress", "done"),
    Section("## Context for Suffix", "critical"),
)
_PREFIX_LEN = len(rules.COMPACTION_SUMMARY_PREFIX) + len(rules.COMPACTION_SUMMARY_SUFFIX)
_BRANCH_LEN = len(rules.BRANCH_SUMMARY_PREFIX) + len(rules.BRANCH_SUMMARY_SUFFIX)


def pi_role(message: Message) -> str:
    """The pi message role an imported message stands for."""
    if message.role is Role.ASSISTANT:
        return "assistant"
    if message.role is Role.TOOL or (message.blocks and all(
        b.kind is BlockKind.TOOL_RESULT for b in message.blocks
    )):  # fmt: skip
        return "toolResult"
    flags = message.flags
    if "compact_summary" in flags:
        return "compactionSummary"
    if "branch_summary" in flags:
        return "branchSummary"
    if "bash_execution" in flags:
        return "bashExecution"
    if "custom" in flags:
        return "custom"
    first = message.blocks[0].raw_type if message.blocks else ""
    if first in ("compactionSummary", "branchSummary", "bashExecution"):
        return first
    return "user"


def entry_kind(message: Message) -> str:
    """What pi's cut search sees: a message's role, or for what came from a
    ``branch_summary`` / ``custom_message`` entry that entry type (a valid cut point and a
    turn start, not summed in the keep-recent walk)."""
    if "branch_summary" in message.flags:
        return "branch_summary"
    if "custom_entry" in message.flags:
        return "custom_message"
    return pi_role(message)


def estimate_chars(message: Message) -> int:
    """The characters ``estimateTokens`` counts for one message."""
    role = pi_role(message)
    chars = 0
    if role == "assistant":
        for b in message.blocks:
            if b.kind in (BlockKind.TEXT, BlockKind.THINKING):
                chars += js_len(b.text)
            elif b.kind is BlockKind.TOOL_USE:
                args = b.tool_input
                chars += js_len(b.tool_name) + js_len(
                    args if isinstance(args, str) else js_json(args)
                )
        return chars
    if role == "bashExecution":
        return sum(b.size for b in message.blocks)
    if role in ("compactionSummary", "branchSummary"):
        overhead = _PREFIX_LEN if role == "compactionSummary" else _BRANCH_LEN
        return max(0, sum(js_len(b.text) for b in message.blocks) - overhead)
    images = role in ("toolResult", "custom")
    for b in message.blocks:
        for part in b.parts or (b,):
            if part.kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT):
                chars += js_len(part.text)
            elif part.kind is BlockKind.MEDIA and images:
                chars += rules.IMAGE_CHARS
    return chars


def serial(message: Message) -> rules.Serial:
    """A message as ``serializeConversation`` reads it after ``convertToLlm``."""
    if message.role is Role.ASSISTANT:
        return rules.Serial(
            "assistant",
            texts=tuple(b.text for b in message.blocks if b.kind is BlockKind.TEXT),
            thinking=tuple(b.text for b in message.blocks if b.kind is BlockKind.THINKING),
            tool_calls=tuple(
                (b.tool_name, b.tool_input) for b in message.blocks if b.kind is BlockKind.TOOL_USE
            ),
        )
    if pi_role(message) == "toolResult":
        texts = []
        for b in message.blocks:
            for part in b.parts or (b,):
                if part.kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT):
                    texts.append(part.text)
        return rules.Serial("toolResult", texts=tuple(texts))
    return rules.Serial(
        "user", texts=tuple(b.text for b in message.blocks if b.kind is BlockKind.TEXT)
    )


@dataclass(slots=True)
class _State:
    usage: int | None = None  # calculateContextTokens of the last good response
    delta: int = 0  # replay estimate - original estimate at that response
    last_delta: int = 0  # the same difference at the newest assistant message
    ratio: float = 1.0  # reported tokens per estimated token of the original there
    est_at_usage: int = 0  # the replay's estimate at that response
    orig_est: int = 0  # pi's estimate of the original's own context, message by message
    last_assistant: int | None = None  # the newest assistant message appended
    pending: int | None = None  # an original summary message being handled right now
    summary: str = ""  # the replay's last summary (the UPDATE prompt merges into it)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    compacted_at: int = -1  # source index of this replay's last compaction
    usage_at: int = -1  # source index of the last good usage
    originals: OriginalIndex | None = None  # the transcript's own compactions (prepare)
    rules: str = "2026-03"  # the rule set in force (``rules``, resolved in prepare)
    rules_reason: str = ""


class PiStrategy(Strategy):
    name: ClassVar[str] = "pi"
    State = _State
    label: ClassVar[str] = "pi coding agent auto-compaction (pi-mono 83378aad)"
    description: ClassVar[str] = (
        "badlogic/pi-mono compaction.ts: when an agent run ends with contextTokens (the last "
        "response's usage) > contextWindow - reserveTokens (16 384), pi keeps the newest "
        "~keepRecentTokens (20 000, chars/4 estimate) from a user or assistant message "
        "(never a tool result), summarises the rest with a structured context-checkpoint "
        "prompt (an UPDATE prompt merging into the previous summary when there is one), "
        "summarises a split turn's prefix separately, and appends the read and modified "
        "file lists. Follows the transcript's own pi compactions where they happened."
    )
    estimator: ClassVar[str] = (
        "estimateTokens: ceil(chars / 4) per message (tool call = name + JSON.stringify(args), "
        "tool-result image 4 800 chars); the trigger reads the last response's reported usage"
    )
    WINDOW = "contextWindow"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "contextWindow",
            200_000,
            "The model's context window (pi's model registry: 200 000 for Claude models).",
            min=1_000,
            origin="models.json contextWindow (model.contextWindow)",
        ),
        Param(
            "enabled",
            True,
            "Auto-compaction on (/autocompact toggles it).",
            "bool",
            origin="settings.json compaction.enabled",
        ),
        Param(
            "reserveTokens",
            16_384,
            "Compact when contextTokens > contextWindow - reserveTokens; the summary may use "
            "0.8 of it, a split turn's prefix summary 0.5.",
            min=0,
            origin="settings.json compaction.reserveTokens",
        ),
        Param(
            "keepRecentTokens",
            20_000,
            "Estimated tokens of recent messages kept after a compaction.",
            min=0,
            origin="settings.json compaction.keepRecentTokens",
        ),
        Param(
            "rules",
            "auto",
            "Which pi: 2026-03 = the pinned commit; 0.14 = pi v0.10-v0.16 (December 2025: a "
            "check after every response, a cut at a user message by usage differences, one "
            "summary of the messages themselves); auto = 0.14 for sessions started before "
            "v0.17.0 (2025-12-09T20:47Z), else 2026-03.",
            "str",
            choices=("auto", "2026-03", "0.14"),
            origin="pi version (compaction.ts at 83378aad / at tag v0.14.2)",
        ),
        Param(
            "follow_originals",
            "all",
            "At the transcript's own pi compactions: all = compact there as the original "
            "did (its cut; its summary with the recorded summariser), also where pi's "
            "trigger would not fire (a manual /compact); triggered = only where it fires; "
            "none = pi's rules alone.",
            "str",
            choices=("all", "triggered", "none"),
            origin="ctxlab (replay option)",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return rules.quarter_ceil(js_len(text))

    def count_message(self, message: Message) -> int:
        return rules.quarter_ceil(estimate_chars(message))

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["contextWindow"])

    def threshold(self, ctx: ContextView) -> int | None:
        if not self.params["enabled"]:
            return None
        return int(self.params["contextWindow"]) - int(self.params["reserveTokens"])

    def output_reserve(self, ctx: ContextView) -> int:
        return int(self.params["reserveTokens"])

    def reserved_recent(self, ctx: ContextView) -> int:
        """About ``keepRecentTokens`` of the newest messages stay (the cut then moves to the
        next valid cut point, so a little more or less)."""
        return min(int(self.params["keepRecentTokens"]), ctx.history_tokens)

    def _estimate(self, ctx: ContextView) -> int:
        """pi's estimate of the replay's context (summary + live messages), leaving out an
        original summary message being handled."""
        st: _State = ctx.state
        total = ctx.summary_tokens + ctx.history_tokens
        if st.pending is not None and ctx.alive[st.pending]:
            total -= ctx.tokens(st.pending)
        return total

    def compared_tokens(self, ctx: ContextView) -> int | None:
        """``estimateContextTokens`` of the replay: the last good usage plus the estimate of
        what the replay holds beyond the original's context at that response (the newer
        messages, and any difference a compaction made); the plain estimate before any
        usage."""
        st: _State = ctx.state
        if st.usage is None:
            return self._estimate(ctx)
        return self._corrected(st) + self._estimate(ctx) - st.est_at_usage

    @staticmethod
    def _corrected(st: _State) -> int:
        """The last good usage as it would be for the replay's context: the estimate
        difference to the original's context at that response, at the original's own
        ratio of reported to estimated tokens."""
        assert st.usage is not None
        return st.usage + round(st.ratio * st.delta)

    # --- hooks --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if ctx.conversation.compactions:
            st.originals = OriginalIndex(ctx.conversation)
        st.rules = self.resolved_rules(ctx.conversation)
        st.rules_reason = self.rules_reason(ctx.conversation, st.rules)

    def rules_reason(self, conversation: Conversation, chosen: str) -> str:
        """Why ``chosen`` ran (the run page shows it beside each compaction)."""
        if self.params["rules"] != "auto":
            return f"set: rules={self.params['rules']}"
        started = dict(conversation.metadata).get("session_started", "")
        if not started:
            return "auto: the transcript gives no pi session start; the pinned commit's rules"
        when = "before" if chosen == "0.14" else "not before"
        return (
            f"auto: the session started {started}, {when} pi v0.17.0 "
            f"({rules.V014_RELEASED_BEFORE}), the first release with the newer rules"
        )

    def resolved_rules(self, conversation: Conversation) -> str:
        """``rules``, with ``auto`` decided by the session's start (the pi importer's
        ``session_started``): a pi session names no version, its date tells the release."""
        chosen = str(self.params["rules"])
        if chosen != "auto":
            return chosen
        started = dict(conversation.metadata).get("session_started", "")
        return "0.14" if started and _before(started, rules.V014_RELEASED_BEFORE) else "2026-03"

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        role = pi_role(msg)
        # The context has just counted this message with ``count_message`` (the default
        # message counter): its count is read back, not estimated again.
        tokens = ctx.tokens(index) if ctx.message(index) is msg else self.count_message(msg)
        if role == "compactionSummary" and "compact_summary" in msg.flags:
            original = st.originals.at(index) if st.originals is not None else None
            kept_from = first_kept(original) if original is not None else None
            if kept_from is not None:
                st.orig_est = tokens + sum(
                    self.count_message(ctx.original(j)) for j in range(kept_from, index)
                )
            else:
                st.orig_est = tokens
        else:
            st.orig_est += tokens
        if role == "assistant":
            st.last_assistant = index
            st.last_delta = self._estimate(ctx) - st.orig_est
            usage = msg.usage
            # v0.14 skipped aborted responses only; later pi skips errors too
            bad = {"aborted"} if st.rules == "0.14" else {"aborted", "error"}
            if usage is not None and usage.context_tokens and not (bad & msg.flags):
                st.usage = usage.context_tokens
                st.usage_at = index
                st.est_at_usage = self._estimate(ctx)
                st.delta = st.last_delta
                st.ratio = st.usage / st.orig_est if st.orig_est > 0 else 1.0
            return
        at_end = st.last_assistant is not None and st.last_assistant == index - 1
        opens_original = st.originals is not None and st.originals.at(index) is not None
        if st.rules != "0.14" and role == "toolResult":
            at_end = False  # a run goes on after a tool result (v0.14 checked every response)
        if not (at_end or opens_original):
            return
        self._agent_end(ctx, index, at_end=at_end)

    def _agent_end(self, ctx: ContextView, index: int, *, at_end: bool) -> None:
        """pi's check at a run's end (``at_end``), and the transcript's own compaction at
        ``index`` (which may follow a ``!`` command instead: no check there)."""
        st: _State = ctx.state
        original = st.originals.at(index) if st.originals is not None else None
        follow = str(self.params["follow_originals"])
        if original is not None and follow == "none":
            original = None  # pi's rules alone: the original's summary is just a message
        if original is not None:
            st.pending = index
        try:
            tokens, source = self._context_tokens(ctx, index)
            limit = self.threshold(ctx)
            # pi's guard: a response older than the last compaction triggers nothing
            fresh = at_end and st.last_assistant is not None and st.last_assistant > st.compacted_at
            fires = (
                fresh
                and limit is not None
                and rules.should_compact(
                    tokens, int(self.params["contextWindow"]), int(self.params["reserveTokens"])
                )
            )
            detail: dict[str, Any] = {"contextTokens": tokens, "usage_source": source,
                                      "threshold": limit}  # fmt: skip
            if original is not None and (fires or follow == "all"):
                detail["trigger"] = "threshold" if fires else "original"
                detail["original_tokens_before"] = original.pre_tokens
                self._compact(ctx, index, first_kept(original), detail)
            elif fires:
                detail["trigger"] = "threshold"
                self._compact(ctx, index, None, detail)
        finally:
            st.pending = None

    def _context_tokens(self, ctx: ContextView, index: int) -> tuple[int, str]:
        """``_checkCompaction``'s contextTokens for the run's last assistant message (the
        message at ``index`` arrived after the run and is not counted)."""
        st: _State = ctx.state
        if st.rules == "0.14":  # the last non-aborted response's usage
            if st.usage is None:
                return 0, "no usage"
            return self._corrected(st), "reported" if not st.delta else "reported + estimate delta"
        last = ctx.original(st.last_assistant) if st.last_assistant is not None else None
        if last is not None and "aborted" in last.flags:
            usage = last.usage.context_tokens if last.usage is not None else 0
            if usage:  # corrected like any usage (the ratio of the last good one)
                usage += round(st.ratio * st.last_delta)
            return usage, "aborted reply's own usage"
        if st.usage is None:
            return 0, "no usage"
        if last is not None and "error" in last.flags:
            if st.usage_at < st.compacted_at:  # only a kept pre-compaction usage: stale
                return 0, "stale usage (before the last compaction)"
            newer = ctx.tokens(index) if st.pending is None and ctx.alive[index] else 0
            count = self._corrected(st) + self._estimate(ctx) - st.est_at_usage - newer
            return count, "last usage + estimate (error reply)"
        return self._corrected(st), "reported" if not st.delta else "reported + estimate delta"

    # --- compaction ---------------------------------------------------------------------
    def _compact(
        self, ctx: ContextView, index: int, kept_from: int | None, detail: dict[str, Any]
    ) -> None:
        """``prepareCompaction`` + ``compact`` over the history before message ``index``;
        ``kept_from``: the original's first kept message when following it."""
        st: _State = ctx.state
        # pi's boundaryStart: only what came after the previous compaction is cut or
        # summarised; what that one kept leaves the context unsummarised (pi-mono #2608)
        start = max(st.compacted_at, 0)
        stale = [j for j in ctx.live if j < start]
        live = [j for j in ctx.live if start <= j < index]
        entries = [
            rules.Entry(entry_kind(ctx.message(j)), self.count_message(ctx.message(j)))
            for j in live
        ]
        keep = int(self.params["keepRecentTokens"])
        if st.rules == "0.14":
            usages = [_v014_usage(ctx.message(j)) for j in live]
            own_pos = rules.v014_find_cut_point([e.kind == "user" for e in entries], usages, keep)
            own = rules.CutPoint(own_pos, -1, False)
        else:
            own = rules.find_cut_point(entries, 0, len(entries), keep)
        detail["rules_version"] = st.rules
        detail["rules_reason"] = st.rules_reason
        detail["pi_first_kept"] = live[own.first_kept] if own.first_kept < len(live) else index
        if stale:
            detail["dropped_kept"] = len(stale)
        # pi's own tokensBefore (estimateContextTokens then): without the message that
        # arrived after the run
        newer = ctx.tokens(index) if st.pending is None and ctx.alive[index] else 0
        detail["tokensBefore"] = (self.compared_tokens(ctx) or 0) - newer
        if kept_from is not None:
            pos = next((k for k, j in enumerate(live) if j >= kept_from), len(live))
            is_user = pos < len(live) and entries[pos].kind == "user"
            turn = (
                -1
                if is_user or pos >= len(live) or st.rules == "0.14"
                else rules.find_turn_start(entries, pos, 0)
            )
            cut = rules.CutPoint(pos, turn, not is_user and turn != -1)
            detail["original_first_kept"] = kept_from
        else:
            cut = own
        history_end = cut.turn_start if cut.split_turn else cut.first_kept
        summarise = live[:history_end]
        prefix = live[cut.turn_start : cut.first_kept] if cut.split_turn else []
        detail["split_turn"] = cut.split_turn
        ops = rules.FileOps(set(st.read_files), set(), set(st.modified_files))
        for j in (*summarise, *prefix):
            for b in ctx.message(j).tool_uses:
                ops.add_call(b.tool_name, b.tool_input)
        if st.rules == "0.14":
            summary = self._summary_v014(ctx, summarise, detail)
        else:
            summary = self._summaries(ctx, summarise, prefix, detail)
        if summary is None:
            return
        text, summary_id, whole = summary
        read_files, modified_files = rules.compute_file_lists(ops)
        if not whole and st.rules != "0.14":  # v0.14 kept no file lists
            text += rules.format_file_operations(read_files, modified_files)
        rendered = rules.compaction_summary_text(text)
        previous_ref = ctx.summary_ref
        removed = [*summarise, *prefix]
        with ctx.action(
            "summarise", reason="pi compaction: older messages replaced by the summary",
            always=True, keepRecentTokens=keep, **detail,
        ) as act:  # fmt: skip
            act.remove(stale, Fate.DROPPED,
                       reason="kept by the previous compaction, outside this one's range "
                       "(pi's boundaryStart): not summarised again")  # fmt: skip
            act.remove(removed, Fate.SUMMARISED)
            if st.pending is not None:
                act.remove([st.pending], Fate.DROPPED,
                           reason="the original's summary message: this compaction stands "
                           "for it")  # fmt: skip
            ctx.set_summary(text, tokens=self.count_text(text), rendered=rendered,
                            summary_id=summary_id)  # fmt: skip
            act.summary_id = summary_id
        st.summary = text
        st.read_files, st.modified_files = read_files, modified_files
        st.compacted_at = index
        check_summary_size(ctx, summary_rendered=rendered, replaced=removed,
                           summary_id=summary_id, previous_ref=previous_ref)  # fmt: skip

    def _summaries(
        self, ctx: ContextView, summarise: list[int], prefix: list[int], detail: dict[str, Any]
    ) -> tuple[str, int | None, bool] | None:
        """The history summary and, for a split turn, the prefix summary joined as pi
        joins them; (text, summary id, whole): ``whole`` when the answer is an original
        compaction's own summary (the recorded summariser), used as it is."""
        st: _State = ctx.state
        reserve = int(self.params["reserveTokens"])
        originals = recorded_summaries(ctx.conversation)
        history: str | None = None
        summary_id: int | None = None
        if summarise or not prefix:
            text = rules.serialize_conversation(serial(ctx.message(j)) for j in summarise)
            request = SummaryRequest(
                strategy=self.name,
                system=rules.SUMMARIZATION_SYSTEM_PROMPT,
                messages=(PromptMessage("user", rules.summary_prompt_text(text, st.summary)),),
                max_output_tokens=rules.summary_max_tokens(reserve),
                style="sections",
                sections=SECTIONS,
                material=tuple(_material(ctx, summarise)),
                previous_summary=st.summary,
                purpose="merge" if st.summary else "compact",
            )
            record = ctx.summarize(request, messages=summarise)
            if record.error:
                self._failed(ctx, summarise, record.id, record.error, detail)
                return None
            history, summary_id = record.output, record.id
            if history in originals:
                return history, summary_id, True
        if not prefix:
            return history or "", summary_id, False
        text = rules.serialize_conversation(serial(ctx.message(j)) for j in prefix)
        request = SummaryRequest(
            strategy=self.name,
            system=rules.SUMMARIZATION_SYSTEM_PROMPT,
            messages=(PromptMessage("user", rules.turn_prefix_prompt_text(text)),),
            max_output_tokens=rules.turn_prefix_max_tokens(reserve),
            style="sections",
            sections=TURN_SECTIONS,
            material=tuple(_material(ctx, prefix)),
            purpose="turn_prefix",
        )
        record = ctx.summarize(request, messages=prefix)
        if record.error:
            self._failed(ctx, prefix, record.id, record.error, detail)
            return None
        if record.output in originals:
            return record.output, record.id, True
        head = history if history is not None else rules.NO_PRIOR_HISTORY
        return head + rules.TURN_CONTEXT_SEPARATOR + record.output, record.id, False

    def _summary_v014(
        self, ctx: ContextView, summarise: list[int], detail: dict[str, Any]
    ) -> tuple[str, int | None, bool] | None:
        """v0.14.2 ``generateSummary``: the messages themselves (the previous summary first,
        as a user message) + the CONTEXT CHECKPOINT prompt; no system prompt."""
        st: _State = ctx.state
        previous = (
            (PromptMessage("user", rules.V014_PREVIOUS_SUMMARY + st.summary),) if st.summary else ()
        )
        history = tuple(_prompt_message(ctx.message(j)) for j in summarise)
        request = SummaryRequest(
            strategy=self.name,
            system="",
            messages=(*previous, *history, PromptMessage("user", rules.V014_SUMMARIZATION_PROMPT)),
            max_output_tokens=rules.summary_max_tokens(int(self.params["reserveTokens"])),
            style="sections",
            sections=V014_SECTIONS,
            material=tuple(_material(ctx, summarise)),
            previous_summary=st.summary,
        )
        record = ctx.summarize(request, messages=summarise)
        if record.error:
            self._failed(ctx, summarise, record.id, record.error, detail)
            return None
        return record.output, record.id, record.output in recorded_summaries(ctx.conversation)

    def _failed(
        self, ctx: ContextView, messages: list[int], summary_id: int, error: str,
        detail: dict[str, Any],
    ) -> None:  # fmt: skip
        ctx.emit("compact_failed", messages=messages, summary_id=summary_id, error=error,
                 outcome="context kept; pi shows 'Auto-compaction failed' and the next run's "
                 "end checks again", **detail)  # fmt: skip


def _v014_usage(message: Message) -> int | None:
    """A response's reported usage as v0.14.2's cut search reads it (aborted: none)."""
    usage = message.usage
    if message.role is not Role.ASSISTANT or usage is None or "aborted" in message.flags:
        return None
    return usage.context_tokens


def _prompt_message(message: Message) -> PromptMessage:
    """An LLM message of the v0.14 request, as text (tool calls and results spelled out)."""
    parts: list[str] = []
    for b in message.blocks:
        if b.kind is BlockKind.TOOL_USE:
            parts.append(f"[tool call {b.tool_name}] {b.input_json}")
        elif b.kind is BlockKind.TOOL_RESULT:
            parts.append(f"[tool result {b.tool_id}] {b.text}")
        elif b.kind in (BlockKind.TEXT, BlockKind.THINKING) and b.text:
            parts.append(b.text)
    return PromptMessage(
        "assistant" if message.role is Role.ASSISTANT else "user", "\n".join(parts)
    )


def _before(iso: str, limit: str) -> bool:
    """``iso`` is earlier than ``limit`` (ISO-8601 times; an unreadable one is not)."""
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")) < datetime.fromisoformat(
            limit.replace("Z", "+00:00")
        )
    except ValueError:
        return False


def _material(ctx: ContextView, indexes: list[int]) -> list[MaterialItem]:
    out = []
    for j in indexes:
        m = ctx.message(j)
        out.append(MaterialItem("assistant" if m.role is Role.ASSISTANT else "user", m.text, j))
    return out


STRATEGY = PiStrategy
