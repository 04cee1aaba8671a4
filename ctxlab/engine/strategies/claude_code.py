"""Claude Code auto-compact (closed source: every constant below is reverse-engineered).

Sources. [D] = documented by Anthropic or confirmed by maintainers; [R] = reverse-engineered
(decompiled ``cli.js`` or the 2.1.88 source tree published from its npm source map, March
2026, read at https://github.com/BelovedYaoo/claude-code-source commit 17bce739:
``src/services/compact/autoCompact.ts``, ``compact.ts``, ``prompt.ts``,
``src/utils/tokens.ts``; ``src/services/tokenEstimation.ts`` and ``microCompact.ts`` at
https://github.com/DroxKiwi/claude-code-leak-packaged and
https://github.com/WoodsCumming/claude-code-source-code).

- Versions [data/notes/R]: the rules run are those of the transcript's CLI version
  (``agent_version`` auto; each original compaction's own version from there on; a user
  can pin one), from the table in ``_claude_code_versions`` (each range with its sources:
  123 real sessions' boundaries, the CHANGELOG, the 2.1.88 code). ``describe_rules()``
  is that table for the pages; every compaction event names the range and why
  (``rules_version``, ``rules_range``, ``rules_reason``).
- Threshold [R + data]: ``effectiveWindow = contextWindow - reserve``, ``threshold =
  effectiveWindow - 13_000`` (``AUTOCOMPACT_BUFFER_TOKENS``,
  https://github.com/anthropics/claude-code/issues/12004). The reserve is
  ``min(maxOutputTokens, 20_000)`` from 2.1.21 (``MAX_OUTPUT_TOKENS_FOR_SUMMARY``; 167 000
  of 200 000) and the model's whole max output, 32 000, before (155 000 of 200 000;
  CHANGELOG 2.1.21 "Fixed auto-compact triggering too early on models with large output
  token limits"; every real boundary of 2.0.76-2.1.20 lies at 155 031-176 700, of
  2.1.25-2.1.42 at 167 038-176 700). ``output_reserve`` / ``autocompact_buffer_tokens``
  left at the value the window gives them follow the version; set otherwise they are
  pinned. Compared with ``>=`` (``calculateTokenWarningState``).
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` can only shrink the window (``Math.min``).
- ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` [R]: ``parseFloat``, used when ``0 < pct <= 100``:
  ``Math.min(floor(effectiveWindow * pct / 100), threshold)`` — it can only lower the
  threshold (#31806; https://github.com/anthropics/claude-code/issues/27189 gives the same
  formula). Reports that it is ignored on 1M windows in some 2.1.x builds (#53801, #63627,
  #57567) are version bugs, not modelled.
- Off switches [D/R]: ``DISABLE_AUTO_COMPACT`` (or ``DISABLE_COMPACT``) and the
  ``autoCompactEnabled`` setting (``isAutoCompactEnabled``; the setting and variables are
  named in the issues above).
- Token count [R + data]: ``tokenCountWithEstimation``: the last response's usage (input
  + cache creation + cache read + output; ``Usage.context_tokens`` here) plus
  ``roughTokenCountEstimation`` of the messages after it: ``Math.round(length / 4)`` per
  block (UTF-16 length, half up; tool_use = name + ``JSON.stringify(input)``; image /
  document 2 000; thinking text; tool_result content). The importer merges one response's
  lines into one message, so the messages after it are the tool results interleaved with
  its lines and everything later (the 2.1.88 walk back to the response's first line);
  up to 2.1.42 the response's own later blocks are not added again (its output counts
  them: 55 of 131 real 2.0.76-2.1.42 boundaries match ``preTokens`` exactly this way, none
  when they are added), nor up to 2.1.63 or in 2.1.67-2.1.68 (their cli.js); in 2.1.64 and
  from 2.1.69 (``later_blocks`` in the version table) they are, as the 2.1.88 code does (a
  2.1.81 boundary matches exactly). A tool call of the last
  response whose result the file never writes before the original's compaction (2.1.49:
  only its hook lines remain) was counted too: its size is unknown. The
  transcript's usage line may be the one written when the stream started (output 1-25):
  where the version counted the final output (``final_output`` in the table), the
  response's own estimate stands in for it and the count is a range (``count_range``,
  up to 32 000 more): the trigger fires only on its certain part, and at an original
  compaction either unknown (output, unwritten results) lets the original settle it
  (``decided_by``). Without any usage: the
  rough estimate of the messages alone (no system prompt, no tools). The usage describes
  the *original* requests, including context the transcript does not show (system
  prompt, tools, CLAUDE.md, attachments; and in a file that starts after a compaction or
  mid-session, earlier conversation: ``not_in_file``, beyond a typical 40 500-token
  overhead, see ``stages.originals``): it is used as is while the replay's messages are
  the original's (``usage_source: reported``), and again after the replay followed one of
  the original's compactions (corrected by the difference of the two summaries as sent).
  After a compaction of the replay's own, the count is its messages under the estimate
  plus the overhead measured at the first reported response (``usage_source: estimate``).
- The original's compactions: at the summary message of each, the replay decides with the
  count before it: it compacts there when that count reaches the threshold (or, where the
  count is a range, the original's act settles it: ``decided_by``), or when the user ran
  ``/compact`` (``follow_manual_compactions``, the focus text as custom instructions); the
  original's summary message is DROPPED (this replay's summary stands in its place).
  Where it does not, ``compact_skipped`` says so and the count becomes the estimate.
- Microcompact: where the transcript names the cleared results (``microcompact_boundary``
  ``compactedToolIds``), they are replaced by ``[Old tool result content cleared]``
  (``microCompact.ts``) before the next request (TRUNCATED, ``clear_tool_uses``). Its
  trigger is not modelled: no published source pins the 2.1.x legacy one; in 2.1.88 it is
  removed, cached microcompact is ant-only and the time-based one is set by a remote flag.
- When [R]: ``autoCompactIfNeeded`` runs in the query loop before every model call
  (``before_call``).
- Compaction [R]: ``compactConversation``: the messages since the last boundary (our
  summary message + the live history) + one user message ``getCompactPrompt(custom)``
  (9 sections after an ``<analysis>`` pass; byte-exact in ``_claude_code_rules``, versions
  ``2.1.88`` and ``2.0`` as ``prompt_version``; ``2.1`` for the summary message real
  2.1.7-2.1.42 transcripts hold). Auto-compact passes no custom instructions;
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
the prompt-too-long retry that drops the oldest API rounds; microcompact's trigger (see
above). When the transcript holds Claude Code's own compactions, each compaction event
carries the nearest one's ``preTokens`` (``original_pre_tokens``) for comparison.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Conversation, Message, OriginalCompaction, Role
from ..core.params import Param
from ..core.records import Fate, Zones
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..stages.js_text import quarter_length_tokens
from ..stages.originals import (
    OriginalIndex,
    OutsideContext,
    first_kept,
    outside_context,
    starts_after_compaction,
)
from ..stages.own_counts import block_tokens as block_tokens  # (the status line counts by it)
from . import _claude_code_rules as rules
from . import _claude_code_versions as versions
from ._claude_code_versions import VersionRules

if TYPE_CHECKING:
    from ..core.context_view import ContextView

MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000
AUTOCOMPACT_BUFFER_TOKENS = 13_000
MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3
NOT_ENOUGH_MESSAGES = "Not enough messages to compact."
NO_SUMMARY = "Failed to generate conversation summary - response did not contain valid text content"
# microCompact.ts (2.1.88) TIME_BASED_MC_CLEARED_MESSAGE: what a cleared tool result reads.
CLEARED_MARKER = "[Old tool result content cleared]"
# The fixed part of a request (system prompt, tools, CLAUDE.md, attachments) in a file that
# starts after a compaction or mid-session, where it cannot be measured: the median
# first-request overhead of the 99 real sessions (entireio/cli checkpoints) whose file starts
# at the session's first line (40,554); the largest of them was 42,713, so a first request
# counting more than MAX_OVERHEAD beyond the file's messages holds context not in the file.
TYPICAL_OVERHEAD = 40_500
MAX_OVERHEAD = 45_000
DEFAULT_WINDOW = 200_000
# Claude Code's 1M-token windows ([1m] model ids, the context-1m beta; Opus 4.6/4.7 sessions
# of 2.1.x CLIs): what a session ran with when it grew past a 200K window's compaction point
# (see ``window_shown``).
LARGE_WINDOW = 1_000_000
# The usage convention of transcripts whose usage Claude reported (Claude Code sessions and
# their HTTP traffic): only their requests show Claude Code's window.
CLAUDE_USAGE = "anthropic"
STREAM_START_OUTPUT = versions.STREAM_START_OUTPUT  # (the count rule: _claude_code_versions)
# What the unrecorded final output of one response can add at most (the default max
# output tokens of these models in Claude Code, CLAUDE_CODE_MAX_OUTPUT_TOKENS).
MAX_OUTPUT_TOKENS = 32_000
# What one tool result can add at most (2.1.88 ``constants/toolLimits.ts``
# MAX_TOOL_RESULT_TOKENS): the bound on a result the agent counted but never wrote.
MAX_TOOL_RESULT_TOKENS = 100_000
# What one line the agent counted and never wrote can add at most (a prompt just sent, with
# its images): no limit of its own is known, so one tool result's. A bound all the same: a
# replay with a far larger window (1M) must not follow the original's 200k compaction.
MAX_UNWRITTEN_LINE_TOKENS = MAX_TOOL_RESULT_TOKENS
DROPPED_ORIGINAL_SUMMARY = (
    "the original's summary message: this replay's own summary stands in its place"
)
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
_HOME = re.compile(r"^(?:/Users|/home)/[^/]+|^/root(?=/|$)")


def rough_tokens(text: str) -> int:
    """``roughTokenCountEstimation``: ``Math.round(text.length / 4)`` (UTF-16 units), the
    rule OpenCode's ``Token.estimate`` uses too."""
    return quarter_length_tokens(text)


def later_tokens(message: Message) -> int:
    """The estimate of a response's lines after its first (one block each), which
    ``tokenCountWithEstimation`` counts on top of its usage in 2.1.64 and from 2.1.69
    (``versions.count_after_response``)."""
    return sum(block_tokens(b) for b in message.blocks[1:])


@dataclass(slots=True)
class _State:
    reported: tuple[int, int] | None = None  # (usage total, message index)
    tail: int = 0  # estimate of the messages after that response
    seen: int = 0  # estimate of every message appended so far
    overhead: int | None = None  # first usage minus the messages it covered
    not_in_file: int = 0  # ... of which context the file does not hold (continued files)
    outside: OutsideContext | None = None
    continued: str = ""  # why the file starts after a compaction ("" = it does not)
    diverged: bool = False  # the replay's messages are no longer the original's
    compacted: bool = False  # this replay has compacted (the earlier context is gone)
    correction: int = 0  # replay summary - original summary, after following a compaction
    hold: int = 0  # a message appended but not yet counted (the original's summary)
    # The last usage line holds the stream's first output, not the final one the agent
    # counted (``final_output``): the count adds the response's own estimate instead
    # (``estimated_output``), and is only known to lie between the count without it and
    # that plus the model's max output.
    unrecorded_output: bool = False
    estimated_output: int = 0
    # Tool calls of the last response with no result in the file yet: a call that ran
    # before a compaction has its result counted by the agent, though the transcript may
    # never write it (2.1.49: the result is summarised away, only its hook lines remain).
    open_calls: set[str] = field(default_factory=set)
    failures: int = 0
    stopped: bool = False
    rules: VersionRules = versions.RANGES[-1]
    version: str = versions.CURRENT
    version_reason: str = ""
    originals: OriginalIndex | None = None
    results: dict[str, int] = field(default_factory=dict)  # tool id -> message holding it
    micro_done: int = 0  # microcompactions replayed (in before_index order)
    window: int = 0  # the window the transcript shows (0: the model parameter's)
    window_reason: str = ""


class ClaudeCodeStrategy(Strategy):
    name: ClassVar[str] = "claude_code"
    State = _State
    label: ClassVar[str] = "Claude Code auto-compact (reverse-engineered, by CLI version)"
    description: ClassVar[str] = (
        "Claude Code's auto-compact as the transcript's CLI version had it: before every "
        "model call, when the last reported usage plus a chars/4 estimate of the newer "
        "messages reaches context window - reserve - 13 000 (155 000 of 200 000 up to "
        "2.1.20, 167 000 from 2.1.21; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE can only lower it), "
        "the whole conversation is summarised with the 9-section compact prompt and replaced "
        "by one 'This session is being continued from a previous conversation…' user "
        "message. Where the transcript holds Claude Code's own compactions the replay decides "
        "at each one (and follows manual /compact), and replays the microcompactions it "
        "names. Closed source: constants from real boundaries, release notes and the "
        "published 2.1.88 source map."
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
            "Reserved for the summary output: min(model max output tokens, 20 000) from CLI "
            "2.1.21, the whole max output (32 000) before. At the value the window gives it "
            "(20 000 of 200 000) it follows agent_version; any other value pins it.",
            min=0,
            origin="autoCompact.ts MAX_OUTPUT_TOKENS_FOR_SUMMARY",
        ),
        Param(
            "autocompact_buffer_tokens",
            AUTOCOMPACT_BUFFER_TOKENS,
            "Threshold = effective window - this (13 000 in every version seen; at the "
            "window's value it follows agent_version, any other value pins it).",
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
            "agent_version",
            "auto",
            "The Claude Code version whose rules run: auto = the transcript's version (each "
            "original compaction's own version from there on); or a version such as 2.1.7.",
            "str",
            origin="the transcript's version field (every Claude Code line carries it)",
        ),
        Param(
            "prompt_version",
            "auto",
            "auto: as the agent version had it (2.0 up to 2.1.6, 2.1 for 2.1.7-2.1.42, 2.1.88 "
            "after); 2.1.88: no-tools preamble + 9 sections + trailer, analysis stripped from "
            "the summary; 2.1: the 2.1.88 prompt, analysis kept, 'Please continue…' closing "
            "(real 2.1.7-2.1.42 summaries); 2.0: the 2025 9-section prompt, analysis kept, "
            "'summarized below:'.",
            "str",
            choices=("auto", *rules.VERSIONS),
            origin="services/compact/prompt.ts (per version)",
        ),
        Param(
            "window_from_transcript",
            True,
            "With the default 200 000 window, use the window the transcript shows: a request "
            "over it, or two requests in a row over its auto-compact threshold with no "
            "compaction between them, means the session ran on a 1M window ([1m] models, "
            "the context-1m beta). A window you set is used as set.",
            "bool",
            origin="getContextWindowForModel ([1m] suffix / context-1m beta), shown by usage",
        ),
        Param(
            "follow_manual_compactions",
            True,
            "Compact where the original's user ran /compact (with its focus text as custom "
            "instructions): a manual compaction cannot be predicted, only followed.",
            "bool",
            origin="/compact [instructions] in the transcript (compact_boundary trigger manual)",
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
            "Path quoted in the summary message (2.1 and later): auto = <home>/.claude/"
            "projects/<cwd slug>/<session id>.jsonl from the transcript (home read off the "
            "cwd, else ~); empty = no hint.",
            "str",
            origin="getTranscriptPath()",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return rough_tokens(text)

    def count_message(self, message: Message) -> int:
        return sum(block_tokens(b) for b in message.blocks)

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        pinned = str(self.params["agent_version"]).strip()
        if pinned != "auto" and not versions.is_version(pinned):
            raise ValueError(
                f"claude_code: agent_version must be 'auto' or a Claude Code version such as "
                f"2.1.7, not {pinned!r}"
            )

    # --- version -------------------------------------------------------------------------
    def resolve_rules(self, version: str, why: str) -> tuple[VersionRules, str, str]:
        """(rules, version, reason) for a transcript ``version`` found ``why``; a pinned
        ``agent_version`` wins."""
        pinned = str(self.params["agent_version"]).strip()
        if pinned != "auto":
            return versions.rules_for(pinned), pinned, "pinned (agent_version)"
        if versions.is_version(version):
            return versions.rules_for(version), version, why
        return (
            versions.RANGES[-1],
            versions.CURRENT,
            f"no version in the transcript: the newest rules ({versions.CURRENT})",
        )

    def prompt_version(self, rules_: VersionRules) -> str:
        pinned = str(self.params["prompt_version"])
        return rules_.prompt_version if pinned == "auto" else pinned

    def _follows_window(self, name: str) -> bool:
        """The parameter holds the value the model window gives it (not pinned by the
        user): the version's own value applies, at the same share of the window."""
        window = int(self.params["context_window"])
        return int(self.params[name]) == round(window * self.WINDOW_FOLLOWS[name])

    def _by_version(self, name: str, value: int) -> int:
        if not self._follows_window(name):
            return int(self.params[name])
        return round(int(self.params["context_window"]) * value / DEFAULT_WINDOW)

    # --- geometry -----------------------------------------------------------------------
    def enabled(self) -> bool:
        return bool(self.params["auto_compact_enabled"]) and not self.params["disable_auto_compact"]

    def reserve(self, rules_: VersionRules | None = None) -> int:
        """Tokens reserved for the summary's output: the version's (at the window's share)
        unless ``output_reserve`` is pinned."""
        rules_ = rules_ or self.resolve_rules("", "")[0]
        return self._by_version("output_reserve", rules_.output_reserve)

    def effective_window(
        self, rules_: VersionRules | None = None, window: int | None = None
    ) -> int:
        """``getEffectiveContextWindowSize`` (of the model window, else ``window``)."""
        window = int(self.params["context_window"]) if window is None else window
        cap = int(self.params["auto_compact_window"])
        if cap > 0:
            window = min(window, cap)
        return window - self.reserve(rules_)

    def auto_compact_threshold(
        self, rules_: VersionRules | None = None, window: int | None = None
    ) -> int:
        """``getAutoCompactThreshold`` under ``rules_`` (default: the pinned version's, else
        the newest) for the model window (or ``window``, the one the transcript shows)."""
        rules_ = rules_ or self.resolve_rules("", "")[0]
        effective = self.effective_window(rules_, window)
        threshold = effective - self._by_version("autocompact_buffer_tokens", rules_.buffer)
        pct = float(self.params["autocompact_pct_override"])
        if 0 < pct <= 100:
            return min(math.floor(effective * (pct / 100)), threshold)
        return threshold

    def window(self, ctx: ContextView) -> int:
        st: _State = ctx.state
        return st.window or int(self.params["context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        st: _State = ctx.state
        return self.auto_compact_threshold(st.rules, st.window or None) if self.enabled() else None

    def window_shown(self, conversation: Conversation, rules_: VersionRules) -> tuple[int, str]:
        """(window, why) when the transcript proves the session ran on a larger window than
        the model parameter: a request over the window itself, or two requests in a row
        over its auto-compact threshold with no compaction between them (after the first,
        the agent's next check would have compacted). Else (0, "")."""
        configured = int(self.params["context_window"])
        # A window the user chose (a budget, a sweep) is theirs: only the model default
        # is open to what the transcript shows.
        if not self.params["window_from_transcript"] or configured != DEFAULT_WINDOW:
            return 0, ""
        window, why = self._window_evidence(conversation, rules_, configured)
        if window and conversation.usage_convention != CLAUDE_USAGE:
            # Another agent's usage (a Codex rollout's 272K window, ...) says nothing about
            # the window Claude Code would have had: the default stays, and the reason says so.
            shown = conversation.usage_convention or "no convention"
            return 0, (
                f"the default {configured:,} window: the transcript's usage is not Claude's "
                f"({shown}), so it does not show Claude Code's window ({why.split(':')[0]})"
            )
        return window, why

    def _window_evidence(
        self, conversation: Conversation, rules_: VersionRules, configured: int
    ) -> tuple[int, str]:
        """The window the requests of ``conversation`` show (see ``window_shown``)."""
        threshold = self.auto_compact_threshold(rules_)
        boundaries = sorted(
            c.before_index for c in conversation.compactions if c.kind != "microcompact"
        )
        previous: tuple[int, int] | None = None  # (message index, its request) over threshold
        for index, message in enumerate(conversation.messages):
            usage = message.usage
            if message.role is not Role.ASSISTANT or usage is None or not usage.prompt_tokens:
                continue
            sent = usage.prompt_tokens
            if sent > configured:
                return LARGE_WINDOW, (
                    f"a request of {sent:,} tokens (message {index}) is over a "
                    f"{configured:,} window: the session ran on a 1M window"
                )
            if sent < threshold:
                previous = None
                continue
            if previous is not None and not any(previous[0] < b <= index for b in boundaries):
                return LARGE_WINDOW, (
                    f"requests of {previous[1]:,} and {sent:,} tokens in a row (messages "
                    f"{previous[0]} and {index}) passed the {threshold:,} threshold of a "
                    f"{configured:,} window uncompacted: the session ran on a 1M window"
                )
            previous = (index, sent)
        return 0, ""

    def output_reserve(self, ctx: ContextView) -> int:
        st: _State = ctx.state
        return self.reserve(st.rules)

    def rules_detail(self, st: _State) -> dict[str, Any]:
        """What each compaction event says about the rules that ran."""
        return {
            "rules_version": st.version,
            "rules_range": st.rules.label,
            "rules_reason": st.version_reason,
            "threshold_rule": (
                f"{st.window or int(self.params['context_window']):,} - "
                f"{self.reserve(st.rules):,} reserve "
                f"- {self._by_version('autocompact_buffer_tokens', st.rules.buffer):,} buffer"
            ),
            **({"window_reason": st.window_reason} if st.window_reason else {}),
        }

    # --- state --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        conversation = ctx.conversation
        meta = dict(conversation.metadata)
        # The version the session started under (the importer's first_version when the
        # session was resumed under a newer CLI); each original compaction updates it.
        version = meta.get("first_version") or meta.get("version", "")
        st.rules, st.version, st.version_reason = self.resolve_rules(
            version, f"from the transcript's version {version}"
        )
        st.continued = starts_after_compaction(conversation)
        st.window, st.window_reason = self.window_shown(conversation, st.rules)
        if conversation.compactions:
            st.originals = OriginalIndex(conversation)
            if st.originals.microcompactions:
                for i, m in enumerate(conversation.messages):
                    for b in m.tool_results:
                        st.results.setdefault(b.tool_id, i)

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        # The context has just counted this message with ``count_message`` (the default
        # message counter): its count is read back, not estimated again.
        tokens = ctx.tokens(index) if ctx.message(index) is msg else self.count_message(msg)
        original = st.originals.at(index) if st.originals is not None else None
        if original is not None and original.summary_index == index:
            self._at_original(ctx, index, original, tokens)
            return
        st.seen += tokens
        if original is not None or ("compact_summary" in msg.flags and index != _first(ctx)):
            # an original compaction without a summary message to stand in for (another
            # agent's transcript), or one the index could not place
            st.diverged = True
        usage = msg.usage
        if msg.role is Role.ASSISTANT and usage is not None and usage.context_tokens:
            # The whole response is one message here (the importer merges its records):
            # ``tokenCountWithEstimation`` adds the messages after it (interleaved tool
            # results included), never the response's own later blocks.
            total = usage.context_tokens
            # The count after the response (``versions.count_after_response``, the rule
            # ``evaluate.session_now`` reads too): the usage, the final output the file
            # does not hold, and where ``later_blocks`` (2.1.64, 2.1.69+) the response's own later
            # lines (one block each), counted again as ``tokenCountWithEstimation``'s walk
            # back does; the later lines start the tail that later messages extend.
            missing = versions.missing_output(st.rules, usage.output, tokens)
            st.unrecorded_output = missing is not None
            st.estimated_output = missing or 0
            later = later_tokens(msg) if st.rules.later_blocks else 0
            st.reported, st.tail = (total + st.estimated_output, index), later
            st.open_calls = {b.tool_id for b in msg.tool_uses if b.tool_id}
            if st.outside is None:
                st.outside = outside_context(
                    usage.context_tokens,
                    st.seen,
                    st.continued,
                    TYPICAL_OVERHEAD,
                    max_overhead=MAX_OVERHEAD,
                )
                st.overhead, st.not_in_file = st.outside.overhead, st.outside.not_in_file
        else:
            st.tail += tokens
            if st.open_calls:
                st.open_calls -= {b.tool_id for b in msg.tool_results}

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if st.originals is not None and st.originals.microcompactions:
            self._replay_microcompactions(ctx)
        if not self.enabled() or st.stopped:
            return
        tokens, detail = self.token_count(ctx)
        threshold = self.auto_compact_threshold(st.rules, st.window or None)
        # Where the last response's final output is not recorded, fire only when the count
        # without it reaches the threshold: where it would only with it, the transcript
        # shows whether the agent compacted (``_at_original``).
        if self._certain(st, tokens) >= threshold:
            self._compact(ctx, {"tokens": tokens, "threshold": threshold, **detail})

    @staticmethod
    def _certain(st: _State, tokens: int) -> int:
        reported = st.reported is not None and not st.diverged
        return tokens - st.estimated_output if reported and st.unrecorded_output else tokens

    def token_count(self, ctx: ContextView) -> tuple[int, dict[str, Any]]:
        """``tokenCountWithEstimation`` for this replay's request (see the docstring)."""
        st: _State = ctx.state
        if st.reported is not None and not st.diverged:
            reported, at = st.reported
            # up to 2.1.1 the check read the usage alone (``estimate_after``)
            tail = st.tail if st.rules.estimate_after else 0
            detail: dict[str, Any] = {
                "usage_source": "reported",
                "reported": reported,
                "usage_message": at,
                "estimated_tail": tail,
            }
            if st.correction:
                detail["summary_correction"] = st.correction
            if st.unrecorded_output:
                low = reported + tail + st.correction - st.estimated_output
                detail["count_range"] = [low, low + MAX_OUTPUT_TOKENS]
                detail["output_estimated"] = (
                    "the usage line holds the stream's first output: the response's final "
                    "output, which the agent counted, is estimated from its text"
                )
            if st.not_in_file and not st.compacted:
                detail.update(_outside_detail(st))
            return reported + tail + st.correction, detail
        # (``hold``: the original's summary, appended but not counted while deciding; the
        # reported path never counted it: it only joins ``tail`` after the decision)
        messages = ctx.summary_tokens + ctx.history_tokens - st.hold
        if not st.diverged:  # no response yet (file start, or since a followed compaction)
            return messages, {"usage_source": "estimate", "overhead": 0}
        overhead = st.overhead or 0
        outside = 0 if st.compacted else st.not_in_file
        detail = {"usage_source": "estimate", "overhead": overhead}
        if outside:
            detail.update(_outside_detail(st))
        return overhead + outside + messages, detail

    def zones(self, ctx: ContextView) -> Zones:
        """The base zones, with the context the file does not hold taken out of the
        strategy overhead into its own zone (until a compaction replaces it)."""
        zones = super().zones(ctx)
        st: _State = ctx.state
        outside = 0 if st.compacted else min(st.not_in_file, zones.unseen)
        if not outside:
            return zones
        return replace(zones, unseen=zones.unseen - outside, not_in_file=outside)

    def compared_tokens(self, ctx: ContextView) -> int | None:
        """``token_count`` without its detail: the reported usage includes the system
        prompt, tools and attachments a Claude Code log does not carry."""
        return self.token_count(ctx)[0]

    # --- the original's compactions ------------------------------------------------------
    def _at_original(
        self, ctx: ContextView, index: int, original: OriginalCompaction, tokens: int
    ) -> None:
        """At the message that opens one of the original's compactions (its summary):
        decide there with the count before it, as Claude Code did before its next call."""
        st: _State = ctx.state
        if original.agent_version and str(self.params["agent_version"]) == "auto":
            st.rules, st.version, st.version_reason = self.resolve_rules(
                original.agent_version,
                f"from the version of the original's compaction at {original.source}",
            )
        st.hold = tokens  # appended, not yet counted: the decision is the count before it
        count, detail = self.token_count(ctx)
        threshold = self.auto_compact_threshold(st.rules, st.window or None)
        manual = original.trigger == "manual"
        follow = manual and bool(self.params["follow_manual_compactions"])
        low = self._certain(st, count)
        fires = self.enabled() and not st.stopped and low >= threshold
        reported = st.reported is not None and not st.diverged
        output_open = reported and st.unrecorded_output
        results_open = len(st.open_calls) if reported else 0
        # a line the agent counted and never wrote (the file does not bound its size)
        line_open = reported and versions.UNWRITTEN_PARENT in dict(original.detail)
        unknown = (
            self.enabled()
            and not st.stopped
            and not fires
            and not manual
            and (output_open or results_open > 0 or line_open)
            and low
            + (MAX_OUTPUT_TOKENS if output_open else 0)
            + results_open * MAX_TOOL_RESULT_TOKENS
            + (MAX_UNWRITTEN_LINE_TOKENS if line_open else 0)
            >= threshold
        )
        if unknown:
            # The count cannot be known from the transcript: the response's final output
            # is missing, results of its calls the agent counted were never written, or
            # the boundary follows a line the file does not hold. The original's
            # compaction here says it reached the threshold.
            missing = [
                *(["the last response's unrecorded output"] if output_open else []),
                *(
                    [
                        f"{results_open} tool result{'' if results_open == 1 else 's'} counted "
                        "but not written before it"
                    ]
                    if results_open
                    else []
                ),
                *(
                    ["a line counted but not written (the boundary's logical parent)"]
                    if line_open
                    else []
                ),
            ]
            detail["decided_by"] = "the original's compaction: the count is uncertain by " + (
                " and ".join(missing)
            )
            fires = True
        where = {
            "original_line": original.source.line,
            "original_trigger": original.trigger,
            "original_pre_tokens": original.pre_tokens,
            "original_before_index": original.before_index,
        }
        done = False
        if fires or follow:
            why = (
                "manual /compact in the original: followed (follow_manual_compactions)"
                if follow
                else "auto-compact: conversation replaced by its summary, where the original "
                "compacted"
            )
            done = self._compact(
                ctx,
                {"tokens": count, "threshold": threshold, **detail, **where},
                reason=why,
                drop=index,
                instructions=original.instructions if manual else None,
                kept=first_kept(original),
            )
        st.hold = 0
        if done:
            # The context is the original's again (its summary or ours in its place): the
            # reported usage holds from the next response on, corrected by the summaries'
            # difference.
            st.reported, st.tail, st.diverged = None, 0, False
            st.correction = ctx.summary_tokens - self._as_sent(ctx, ctx.original(index), tokens)
            return
        st.seen += tokens
        st.tail += tokens
        st.diverged = True  # the original compacted: its usage no longer matches
        ctx.emit(
            "compact_skipped",
            messages=[index],
            reason="the original compacted here; this replay did not"
            + (" (its count is under the threshold)" if not manual else " (manual, not followed)"),
            tokens=count,
            threshold=threshold,
            **detail,
            **where,
            **self.rules_detail(st),
        )

    def _replay_microcompactions(self, ctx: ContextView) -> None:
        """Clear the tool results the original's ``microcompact_boundary`` names, before
        the first request after it (microcompact runs before the auto-compact check)."""
        st: _State = ctx.state
        assert st.originals is not None
        due = sorted(b for b in st.originals.microcompactions if b <= ctx.source_index)[
            st.micro_done :
        ]
        for before in due:
            st.micro_done += 1
            for original in st.originals.microcompactions[before]:
                self._microcompact(ctx, original)

    def _microcompact(self, ctx: ContextView, original: OriginalCompaction) -> None:
        st: _State = ctx.state
        ids = set(original.cleared_tool_ids)
        alive = set(ctx.live)
        targets = sorted({st.results[t] for t in ids if st.results.get(t) in alive})
        reason = f"cleared by the original's microcompact_boundary at {original.source}" + (
            f" ({original.trigger})" if original.trigger else ""
        )
        saved = 0
        with ctx.action(
            "clear_tool_uses",
            reason=reason,
            original_line=original.source.line,
            original_pre_tokens=original.pre_tokens,
            original_tokens_saved=original.tokens_saved,
            cleared_tool_ids=sorted(ids),
            marker=CLEARED_MARKER,
            **self.rules_detail(st),
        ) as act:
            for i in targets:
                message = ctx.message(i)
                blocks = tuple(
                    replace(b, text=CLEARED_MARKER, parts=())
                    if b.kind is BlockKind.TOOL_RESULT and b.tool_id in ids
                    else b
                    for b in message.blocks
                )
                cleared = replace(message, blocks=blocks)
                saved += ctx.tokens(i) - self.count_message(cleared)
                if st.reported is not None and i > st.reported[1]:
                    st.tail -= ctx.tokens(i) - self.count_message(cleared)
                act.replace(i, cleared, Fate.TRUNCATED)
            act.detail["tokens_saved"] = saved

    # --- compaction ---------------------------------------------------------------------
    def _compact(
        self,
        ctx: ContextView,
        detail: dict[str, Any],
        *,
        reason: str = "auto-compact: conversation replaced by its summary",
        drop: int | None = None,
        instructions: str | None = None,
        kept: int | None = None,
    ) -> bool:
        """Summarise the live history (all of it but ``drop``, the original's own summary
        message, which goes without being summarised, and from ``kept`` on: the segment a
        partial compaction of the original kept after its summary); False when it failed."""
        st: _State = ctx.state
        if drop is None:
            detail.update(_original_compaction(ctx))
        detail.update(self.rules_detail(st))
        compacted = [i for i in ctx.live if i != drop and (kept is None or i < kept)]
        if not compacted and not ctx.summary:
            self._fail(ctx, NOT_ENOUGH_MESSAGES, compacted, None, detail)
            return False
        version = self.prompt_version(st.rules)
        custom = str(self.params["custom_instructions"]) if instructions is None else instructions
        if instructions:
            detail["custom_instructions"] = instructions
        prompt = rules.compact_prompt(version, custom)
        history = [_prompt_message(ctx.message(i)) for i in compacted]
        previous = (PromptMessage("user", ctx.summary),) if ctx.summary else ()
        request = SummaryRequest(
            strategy=self.name,
            system=ctx.system_text if version != "2.0" else rules.SUMMARY_SYSTEM,
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
            return False
        quoted = st.rules.transcript_hint or str(self.params["transcript_path"]) != "auto"
        path = self._transcript_path(ctx) if quoted else ""
        text = rules.summary_message(version, record.output, path)
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact", reason=reason, always=True, prompt_version=version, **detail,
        ) as act:  # fmt: skip
            act.remove(compacted, Fate.SUMMARISED)
            if drop is not None:
                act.remove([drop], Fate.DROPPED, reason=DROPPED_ORIGINAL_SUMMARY)
            ctx.set_summary(text, tokens=self.count_text(text), rendered=text,
                            summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
            # before the scope ends: tokens_after is the new count
            st.diverged, st.compacted, st.correction = drop is None, True, 0
            if drop is not None:  # the original's summary is gone: nothing held back
                st.reported, st.tail, st.hold = None, 0, 0
        st.failures = 0
        check_summary_size(ctx, summary_rendered=text, replaced=compacted,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip
        return True

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

    def _as_sent(self, ctx: ContextView, message: Message, tokens: int) -> int:
        """The original summary message's tokens as the agent sent it: the transcript path
        it quotes is the replay's own (shared transcripts redact it; the reported usage
        counted the real one)."""
        text = message.text
        at = text.find(rules.TRANSCRIPT_HINT)
        if at < 0:
            return tokens
        start = at + len(rules.TRANSCRIPT_HINT)
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        path = self._transcript_path(ctx)
        return tokens - self.count_text(text) + self.count_text(text[:start] + path + text[end:])

    def _transcript_path(self, ctx: ContextView) -> str:
        path = str(self.params["transcript_path"])
        if path != "auto":
            return path
        meta = dict(ctx.conversation.metadata)
        cwd = meta.get("cwd", "")
        slug = _SLUG.sub("-", cwd)
        session = meta.get("session_id") or ctx.conversation.id
        # The agent quotes its absolute path: the home directory is read off the cwd
        # (/Users/<name>/…, /home/<name>/…); "~" when the cwd does not show it.
        home = _HOME.match(cwd)
        return f"{home.group(0) if home else '~'}/.claude/projects/{slug}/{session}.jsonl"


def describe_rules(agent_version: str = "auto") -> dict[str, Any]:
    """What the run page shows about the rules: the version table (each range with its
    values and sources), which range a pinned ``agent_version`` selects, and how the count,
    the original's compactions and context outside the file are handled. Each compaction
    event's detail names the range that ran (``rules_version``, ``rules_range``,
    ``rules_reason``)."""
    pinned = agent_version.strip() not in ("", "auto")
    return {
        "ranges": versions.describe_rules(),
        "selected": versions.rules_for(agent_version).label if pinned else None,
        "selection": (
            f"pinned to {agent_version}"
            if pinned
            else "the transcript's version (the session's first line), then each original "
            "compaction's own version; the newest range when the transcript has none"
        ),
        "count": (
            "the last response's reported usage (input + cache + output) plus round(length "
            "/ 4) of every message after it; where the usage line holds the stream's first "
            "output, the response's own estimate stands in for its final output and the "
            "count is a range (count_range)"
        ),
        "originals": (
            "at each of the original's compactions the replay decides with the count before "
            "its summary message: it compacts there when the count reaches the threshold (or "
            "the range does, the original's act settling what the transcript cannot show), "
            "or when the user ran /compact (follow_manual_compactions); the original's "
            "summary message is dropped and the reported usage holds again from the next "
            "response, corrected by the difference of the two summaries"
        ),
        "not_in_file": (
            f"a first request counting more than {MAX_OVERHEAD:,} tokens beyond the file's "
            f"messages, or a file that starts with a compaction summary, holds context not in "
            f"the file: beyond a typical {TYPICAL_OVERHEAD:,}-token fixed overhead it is "
            "shown as not_in_file, not as overhead"
        ),
        "microcompact": (
            "replayed where the transcript names the cleared results (the tool results are "
            f"replaced by {CLEARED_MARKER!r}); its trigger is not modelled"
        ),
    }


def _outside_detail(st: _State) -> dict[str, Any]:
    """Context the reported usage counts that is not in this file, and why."""
    assert st.outside is not None
    return {
        "not_in_file": st.not_in_file,
        "not_in_file_reason": st.outside.reason,
        "overhead": st.overhead,
    }


def _first(ctx: ContextView) -> int:
    """The first message the replay appends (the system prompt is never appended)."""
    first = 1 if ctx.system_index == 0 else 0
    return first


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
