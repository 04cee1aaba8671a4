"""Claude Code auto-compact (closed source: every constant below is reverse-engineered).

Sources. [D] = documented by Anthropic or confirmed by maintainers; [R] = reverse-engineered
(decompiled ``cli.js`` or the 2.1.88 source tree published from its npm source map, March
2026, read at https://github.com/BelovedYaoo/claude-code-source commit 17bce739:
``src/services/compact/autoCompact.ts``, ``compact.ts``, ``prompt.ts``,
``src/utils/tokens.ts``; ``src/services/tokenEstimation.ts`` and ``microCompact.ts`` at
https://github.com/DroxKiwi/claude-code-leak-packaged and
https://github.com/WoodsCumming/claude-code-source-code).

- Threshold [R]: ``effectiveWindow = contextWindow - min(maxOutputTokens, 20_000)``
  (``MAX_OUTPUT_TOKENS_FOR_SUMMARY``, "p99.99 of compact summary output being 17,387
  tokens"); ``threshold = effectiveWindow - 13_000`` (``AUTOCOMPACT_BUFFER_TOKENS``,
  https://github.com/anthropics/claude-code/issues/12004): 167 000 of 200 000 (83.5%,
  https://github.com/anthropics/claude-code/issues/31806). Compared with ``>=``
  (``calculateTokenWarningState``: ``tokenUsage >= autoCompactThreshold``).
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` can only shrink the window (``Math.min``).
- ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` [R]: ``parseFloat``, used when ``0 < pct <= 100``:
  ``Math.min(floor(effectiveWindow * pct / 100), threshold)`` — it can only lower the
  threshold (#31806; https://github.com/anthropics/claude-code/issues/27189 gives the same
  formula). Reports that it is ignored on 1M windows in some 2.1.x builds (#53801, #63627,
  #57567) are version bugs, not modelled.
- Off switches [D/R]: ``DISABLE_AUTO_COMPACT`` (or ``DISABLE_COMPACT``) and the
  ``autoCompactEnabled`` setting (``isAutoCompactEnabled``; the setting and variables are
  named in the issues above).
- Token count [R]: ``tokenCountWithEstimation``: the last response's usage (input +
  cache creation + cache read + output; ``Usage.context_tokens`` here) plus
  ``roughTokenCountEstimation`` of the messages after it: ``Math.round(length / 4)`` per
  block (UTF-16 length, half up; tool_use = name + ``JSON.stringify(input)``; image /
  document 2 000; thinking text; tool_result content). Without any usage: the rough
  estimate of the messages alone (no system prompt, no tools). The transcript's usage
  describes the *original* requests, including context the transcript does not show
  (system prompt, tools, CLAUDE.md and other attachments): it is used as is while the
  replay's messages are the original's (``usage_source: reported``). After a compaction
  (this strategy's, or the original's ``compact_summary``) the count is this replay's
  messages under the estimate plus the overhead measured at the first reported response
  (its usage minus the estimate of the messages it covered) — ``usage_source: estimate``
  with ``overhead`` in the detail; with no reported usage at all the overhead is 0, as
  Claude Code's own fallback counts messages only.
- When [R]: ``autoCompactIfNeeded`` runs in the query loop before every model call
  (``before_call``).
- Compaction [R]: ``compactConversation``: the messages since the last boundary (our
  summary message + the live history) + one user message ``getCompactPrompt(custom)``
  (9 sections after an ``<analysis>`` pass; byte-exact in ``_claude_code_rules``, versions
  ``2.1.88`` and ``2.0`` as ``prompt_version``). Auto-compact passes no custom instructions;
  a PreCompact hook's ``newCustomInstructions`` (or ``/compact <instructions>``) are
  appended as ``\\n\\nAdditional Instructions:\\n…`` — the ``custom_instructions``
  parameter. The summary request shares the main system prompt (the cache-sharing forked
  agent, 2.1.88 default); ``2.0`` uses "You are a helpful AI assistant tasked with
  summarizing conversations." (also the 2.1.88 fallback; seen on the wire in
  ``claude-trace-req34-request.json``).
- New context [R; the on-disk shape is read by importers/claude_code.py]: the boundary marker (not sent) and
  one user message ``getCompactUserSummaryMessage(summary, suppressFollowUpQuestions=true,
  transcriptPath)``: "This session is being continued from a previous conversation that ran
  out of context. …", the ``<analysis>`` block stripped (2.1.88), the transcript path
  hint, "Continue the conversation from where it left off …". Every older message is
  SUMMARISED.
- Failure [R]: a summariser error or an empty summary ("Failed to generate conversation
  summary - response did not contain valid text content") throws; the context is kept and
  auto-compact retries before the next request; after 3 consecutive failures
  (``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES``) it stops for the session. No message at all:
  "Not enough messages to compact." (a failure too).

Not modelled: the re-attached context after a compaction (up to 5 recently read files,
50 000 tokens, 5 000 per file, re-read from disk; plan, skills, deferred tools, SessionStart
hook output: ``createPostCompactFileAttachments`` and friends) — the files' current
contents are not in the transcript; session-memory compaction (an experiment tried first);
the prompt-too-long retry that drops the oldest API rounds; microcompact: in 2.1.88 the
legacy path is removed, cached microcompact is ant-only (``CACHED_MICROCOMPACT``) and the
time-based one is configured by a remote flag (``getTimeBasedMCConfig``), so it cannot be
pinned. When the transcript holds Claude Code's own compactions, each compaction event
carries the nearest one's ``preTokens`` (``original_pre_tokens``) for comparison.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..findings import check_summary_size
from ..model import Block, BlockKind, Message, Role
from ..params import Param
from ..records import Fate
from ..stages.js_text import quarter_length_tokens
from ..summarizers import MaterialItem, PromptMessage, Section, SummaryRequest
from . import _claude_code_rules as rules
from ._gemini_cli_rules import js_json
from .base import Strategy

if TYPE_CHECKING:
    from ..context_view import ContextView

MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000
AUTOCOMPACT_BUFFER_TOKENS = 13_000
MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3
IMAGE_TOKENS = 2_000  # roughTokenCountEstimationForBlock: image / document
NOT_ENOUGH_MESSAGES = "Not enough messages to compact."
NO_SUMMARY = "Failed to generate conversation summary - response did not contain valid text content"
SECTIONS = (
    Section("1. Primary Request and Intent:", "goal"),
    Section("2. Key Technical Concepts:", "critical"),
    Section("3. Files and Code Sections:", "critical"),
    Section("4. Errors and fixes:", "blocked"),
    Section("5. Problem Solving:", "decisions"),
    Section("6. All user messages:", "constraints"),
    Section("7. Pending Tasks:", "next"),
    Section("8. Current Work:", "in_progress"),
    Section("9. Optional Next Step:", "next"),
)
_SLUG = re.compile(r"[^A-Za-z0-9]")


def rough_tokens(text: str) -> int:
    """``roughTokenCountEstimation``: ``Math.round(text.length / 4)`` (UTF-16 units), the
    rule OpenCode's ``Token.estimate`` uses too."""
    return quarter_length_tokens(text)


def block_tokens(block: Block) -> int:
    """``roughTokenCountEstimationForBlock``."""
    if block.kind is BlockKind.TOOL_USE:
        raw = block.tool_input
        # ``JSON.stringify``: no spaces, non-ASCII kept
        stringified = raw if isinstance(raw, str) else js_json(raw if raw is not None else {})
        return rough_tokens(block.tool_name + stringified)
    if block.kind is BlockKind.MEDIA:
        return IMAGE_TOKENS
    if block.kind is BlockKind.TOOL_RESULT and block.parts:
        return sum(block_tokens(part) for part in block.parts)
    if block.kind is BlockKind.OPAQUE:
        return (block.size + 2) // 4  # redacted_thinking data / stringified payloads
    return rough_tokens(block.text)


@dataclass(slots=True)
class _State:
    reported: tuple[int, int] | None = None  # (usage total, message index)
    tail: int = 0  # estimate of the messages after that response
    seen: int = 0  # estimate of every message appended so far
    overhead: int | None = None  # first usage minus the messages it covered
    diverged: bool = False  # the replay's messages are no longer the original's
    failures: int = 0
    stopped: bool = False


class ClaudeCodeStrategy(Strategy):
    name: ClassVar[str] = "claude_code"
    State = _State
    label: ClassVar[str] = "Claude Code auto-compact (reverse-engineered, 2.1.88)"
    description: ClassVar[str] = (
        "Claude Code's auto-compact: before every model call, when the last reported usage "
        "plus a chars/4 estimate of the newer messages reaches context window - 20 000 - "
        "13 000 (167 000 of 200 000; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE can only lower it), the "
        "whole conversation is summarised with the 9-section compact prompt and replaced by "
        "one 'This session is being continued from a previous conversation…' user message. "
        "Closed source: constants from issue threads and the published 2.1.88 source map."
    )
    estimator: ClassVar[str] = (
        "roughTokenCountEstimation: round(UTF-16 length / 4) per block (images 2 000); the "
        "trigger reads the last reported usage plus that estimate of newer messages"
    )
    WINDOW = "context_window"
    WINDOW_FOLLOWS = {
        "output_reserve": 20_000 / 200_000,
        "autocompact_buffer_tokens": 13_000 / 200_000,
    }
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "context_window",
            200_000,
            "Model context window (200 000; 1 000 000 for the [1m] / 1M-beta variants).",
            min=1_000,
            origin="getContextWindowForModel (model; 1M with the context-1m beta)",
        ),
        Param(
            "auto_compact_window",
            0,
            "Caps the window used for the threshold (Math.min with the model window); 0 = unset.",
            min=0,
            origin="env CLAUDE_CODE_AUTO_COMPACT_WINDOW",
        ),
        Param(
            "output_reserve",
            MAX_OUTPUT_TOKENS_FOR_SUMMARY,
            "Reserved for the summary output: min(model max output tokens, 20 000).",
            min=0,
            origin="autoCompact.ts MAX_OUTPUT_TOKENS_FOR_SUMMARY",
        ),
        Param(
            "autocompact_buffer_tokens",
            AUTOCOMPACT_BUFFER_TOKENS,
            "Threshold = effective window - this.",
            min=0,
            origin="autoCompact.ts AUTOCOMPACT_BUFFER_TOKENS",
        ),
        Param(
            "autocompact_pct_override",
            0.0,
            "Percent of the effective window; used when 0 < value <= 100 and only if lower "
            "than the default threshold (Math.min). 0 = unset.",
            "float",
            min=0,
            max=100,
            origin="env CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
        ),
        Param(
            "auto_compact_enabled",
            True,
            "Auto-compact on (settings; /config).",
            "bool",
            origin="~/.claude.json / settings autoCompactEnabled",
        ),
        Param(
            "disable_auto_compact",
            False,
            "Turns auto-compact off whatever the setting says (DISABLE_COMPACT does too).",
            "bool",
            origin="env DISABLE_AUTO_COMPACT",
        ),
        Param(
            "prompt_version",
            "2.1.88",
            "2.1.88: no-tools preamble + 9 sections + trailer, analysis stripped from the "
            "summary; 2.0: the 2025 9-section prompt, analysis kept, 'summarized below:'.",
            "str",
            choices=rules.VERSIONS,
            origin="services/compact/prompt.ts (per version)",
        ),
        Param(
            "custom_instructions",
            "",
            "Appended as 'Additional Instructions:' (a PreCompact hook's instructions, or "
            "/compact <instructions>); auto-compact itself passes none.",
            "str",
            origin="/compact [instructions]; PreCompact hook newCustomInstructions",
        ),
        Param(
            "transcript_path",
            "auto",
            "Path quoted in the 2.1.88 summary message: auto = ~/.claude/projects/<cwd "
            "slug>/<session id>.jsonl from the transcript; empty = no hint.",
            "str",
            origin="getTranscriptPath()",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return rough_tokens(text)

    def count_message(self, message: Message) -> int:
        return sum(block_tokens(b) for b in message.blocks)

    # --- geometry -----------------------------------------------------------------------
    def enabled(self) -> bool:
        return bool(self.params["auto_compact_enabled"]) and not self.params["disable_auto_compact"]

    def effective_window(self) -> int:
        """``getEffectiveContextWindowSize``."""
        window = int(self.params["context_window"])
        cap = int(self.params["auto_compact_window"])
        if cap > 0:
            window = min(window, cap)
        return window - int(self.params["output_reserve"])

    def auto_compact_threshold(self) -> int:
        """``getAutoCompactThreshold``."""
        effective = self.effective_window()
        threshold = effective - int(self.params["autocompact_buffer_tokens"])
        pct = float(self.params["autocompact_pct_override"])
        if 0 < pct <= 100:
            return min(math.floor(effective * (pct / 100)), threshold)
        return threshold

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        return self.auto_compact_threshold() if self.enabled() else None

    def output_reserve(self, ctx: ContextView) -> int:
        return int(self.params["output_reserve"])

    # --- state --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        # The context has just counted this message with ``count_message`` (the default
        # message counter): its count is read back, not estimated again.
        tokens = ctx.tokens(index) if ctx.message(index) is msg else self.count_message(msg)
        st.seen += tokens
        if "compact_summary" in msg.flags:
            st.diverged = True  # the original compacted: its usage no longer matches
        usage = msg.usage
        if msg.role is Role.ASSISTANT and usage is not None and usage.context_tokens:
            st.reported, st.tail = (usage.context_tokens, index), 0
            if st.overhead is None:
                st.overhead = max(0, usage.context_tokens - st.seen)
        else:
            st.tail += tokens

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if not self.enabled() or st.stopped:
            return
        tokens, detail = self.token_count(ctx)
        threshold = self.auto_compact_threshold()
        if tokens >= threshold:
            self._compact(ctx, {"tokens": tokens, "threshold": threshold, **detail})

    def token_count(self, ctx: ContextView) -> tuple[int, dict[str, Any]]:
        """``tokenCountWithEstimation`` for this replay's request (see the docstring)."""
        st: _State = ctx.state
        if st.reported is not None and not st.diverged:
            reported, at = st.reported
            return reported + st.tail, {
                "usage_source": "reported",
                "reported": reported,
                "usage_message": at,
                "estimated_tail": st.tail,
            }
        overhead = st.overhead or 0
        messages = ctx.summary_tokens + ctx.history_tokens
        return overhead + messages, {"usage_source": "estimate", "overhead": overhead}

    def compared_tokens(self, ctx: ContextView) -> int | None:
        """``token_count`` without its detail: the reported usage includes the system
        prompt, tools and attachments a Claude Code log does not carry."""
        st: _State = ctx.state
        if st.reported is not None and not st.diverged:
            return st.reported[0] + st.tail
        return (st.overhead or 0) + ctx.summary_tokens + ctx.history_tokens

    # --- compaction ---------------------------------------------------------------------
    def _compact(self, ctx: ContextView, detail: dict[str, Any]) -> None:
        st: _State = ctx.state
        detail.update(_original_compaction(ctx))
        compacted = list(ctx.live)
        if not compacted and not ctx.summary:
            self._fail(ctx, NOT_ENOUGH_MESSAGES, compacted, None, detail)
            return
        version = str(self.params["prompt_version"])
        prompt = rules.compact_prompt(version, str(self.params["custom_instructions"]))
        history = [_prompt_message(ctx.message(i)) for i in compacted]
        previous = (PromptMessage("user", ctx.summary),) if ctx.summary else ()
        request = SummaryRequest(
            strategy=self.name,
            system=ctx.system_text if version == "2.1.88" else rules.SUMMARY_SYSTEM,
            messages=(*previous, *history, PromptMessage("user", prompt)),
            style="sections",
            sections=SECTIONS,
            material=tuple(
                MaterialItem(m.role, m.text, i) for i, m in zip(compacted, history, strict=True)
            ),
            previous_summary=ctx.summary,
        )
        record = ctx.summarize(request, messages=compacted)
        if record.error or not record.output.strip():
            self._fail(ctx, record.error or NO_SUMMARY, compacted, record.id, detail)
            return
        text = rules.summary_message(version, record.output, self._transcript_path(ctx))
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact", reason="auto-compact: conversation replaced by its summary",
            always=True, prompt_version=version, **detail,
        ) as act:  # fmt: skip
            act.remove(compacted, Fate.SUMMARISED)
            ctx.set_summary(text, tokens=self.count_text(text), rendered=text,
                            summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
            st.diverged = True  # before the scope ends: tokens_after is the new count
        st.failures = 0
        check_summary_size(ctx, summary_rendered=text, replaced=compacted,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip

    def _fail(
        self,
        ctx: ContextView,
        error: str,
        messages: list[int],
        summary_id: int | None,
        detail: dict[str, Any],
    ) -> None:
        st: _State = ctx.state
        st.failures += 1
        st.stopped = st.failures >= MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES
        ctx.emit(
            "compact_failed", messages=messages, summary_id=summary_id, error=error,
            consecutive_failures=st.failures, circuit_breaker=st.stopped,
            outcome="context kept; auto-compact retries before the next request"
            if not st.stopped else "context kept; auto-compact stops for this session",
            **detail,
        )  # fmt: skip

    def _transcript_path(self, ctx: ContextView) -> str:
        path = str(self.params["transcript_path"])
        if path != "auto":
            return path
        meta = dict(ctx.conversation.metadata)
        slug = _SLUG.sub("-", meta.get("cwd", ""))
        session = meta.get("session_id") or ctx.conversation.id
        return f"~/.claude/projects/{slug}/{session}.jsonl"


def _original_compaction(ctx: ContextView) -> dict[str, Any]:
    """The transcript's own compaction nearest to this request, for comparison."""
    here = ctx.source_index
    known = [c for c in ctx.conversation.compactions if c.pre_tokens is not None]
    if not known:
        return {}
    nearest = min(known, key=lambda c: (abs(c.before_index - here), c.before_index))
    return {
        "original_pre_tokens": nearest.pre_tokens,
        "original_before_index": nearest.before_index,
    }


def _prompt_message(message: Message) -> PromptMessage:
    parts: list[str] = []
    for b in message.blocks:
        if b.kind is BlockKind.TOOL_USE:
            parts.append(f"[tool_use {b.tool_name}] {b.input_json}")
        elif b.kind is BlockKind.TOOL_RESULT:
            parts.append(f"[tool_result {b.tool_id}] {b.text}")
        elif b.kind in (BlockKind.TEXT, BlockKind.THINKING) and b.text:
            parts.append(b.text)
    return PromptMessage(
        "assistant" if message.role is Role.ASSISTANT else "user", "\n".join(parts)
    )


STRATEGY = ClaudeCodeStrategy
