"""OpenAI Codex CLI auto-compaction (openai/codex ``codex-rs/core/src/compact.rs``), by version.

``agent_version`` (default ``auto``: the rollout's ``cli_version``) picks the rules of
``_codex_versions`` (each range with its source):

- **0.140** (cli 0.140.0 - 0.144.x; 0.140.0 - 0.142.5 checked): checked before a turn's first
  request (before its user message is recorded) and after a sampling that needs a follow-up
  (tool outputs), on ``get_total_token_usage``: the last response's total + the estimate of
  the items after the last reply (serialized bytes / 4) + the estimate of the encrypted
  reasoning before the last user message (from its length when the rollout has it, else the
  reported reasoning tokens x ``reasoning_estimate_factor``: at its default that guess is
  the count's uncertain part, 1.0-1.5 tokens per reported one, so the trigger fires on the
  certain part and the original's own compaction settles the rest); limit 90% of the window
  (rollouts report 95% of it as ``model_context_window``; the request's model picks it).
- **0.145** (cli 0.145.0 on; two real compactions checked on 0.145.0-alpha.18): the 0.140
  count and check points with the limit at 83% of the window and 1.44 reasoning tokens per
  reported one, both inferred from real rollouts (``_codex_versions.V0_145``); the
  sub-agents' ``agent_message`` items (multi-agent collaboration) are context, counted as
  items after the last reply until a response reports them.
- **0.118** (cli 0.118.0 - 0.139; compactions checked on 0.118.0): the 0.140 trigger and
  remote compaction; a tool output serializes without the 0.14x passthrough metadata (54
  bytes of framing, not 150). In both, ``<subagent_notification>`` and ``<turn_aborted>``
  user-role messages are session prefix (``session_prefix.rs``): no user-turn boundary for
  the reasoning count, not kept as user messages.
- **legacy** (before 0.118, unless its compactions are remote; rollouts without
  cli_version): as below.

Following the original (0.140 and legacy): where the rollout holds a ``compacted`` line (the
importer puts its replacement history after the boundary), the replay compacts exactly there
when its own trigger fires there, or the original ran ``/compact`` and
``follow_manual_compactions`` is on: everything before is SUMMARISED and the replacement
history (earlier user messages, re-injected developer messages, the encrypted item) is the
context, so the original's later counts hold again. Otherwise that history is DROPPED
(``compact_skipped``) and the count goes on from what the replay held. The replay's own
compactions (where the original has none) use the local compaction below; Codex 0.14x
compacts remotely (``/responses/compact``, an encrypted item): no text of it exists.

Pinned (legacy and the local compaction): compact.rs at
0100b103625752f6a10c21b79a8c423761dc4c6a; templates ``templates/compact/prompt.md`` (Goal
bullet; the older text without it is ``prompt_version=no_goal``) and ``summary_prefix.md``,
byte-exact in ``_codex_rules``.

What the legacy rules do, as Codex did:

- Trigger, checked before every request: total token usage ``>=`` auto_compact_token_limit
  (``model_auto_compact_token_limit``, else ``model_context_window * 9 / 10``; the older
  per-model constant 256 000 is ``auto_compact_default=fixed_256000``). Usage is the
  server-reported ``token_count`` of the last response (input + output - reasoning) while
  the replayed context is still the original's; after a compaction (ours or one the
  original recorded) it is this strategy's estimate. ``usage_source`` says which.
- Compaction request: the whole history + the compact prompt as a user message. While the
  estimate exceeds ``model_context_window`` the oldest history item is removed and the
  request retried (those messages are DROPPED, the rest SUMMARISED).
- New history (replaces the old one): initial context (our system message plus the session
  prefix messages: environment context, AGENTS.md / user instructions) + the most recent
  real user messages, earlier summaries excluded, newest first up to
  COMPACT_USER_MESSAGE_MAX_TOKENS (20 000) approx tokens, the one that does not fit
  middle-truncated to what is left + one user message ``SUMMARY_PREFIX + "\\n" + summary``.
  User messages are collected from the untrimmed history, so one dropped from the request
  can still be kept.
- Then a ``warning`` event with Codex's "Heads up: Long conversations ..." text.
- Failure: a summariser error means Codex's stream retries are exhausted: an Error event,
  history unchanged, the turn goes on (``compact_failed``). An empty reply is *not* a
  failure: the summary message is then ``SUMMARY_PREFIX + "\\n"`` (the ``(no summary
  available)`` branch of build_compacted_history is unreachable from this path).
- Tool outputs are truncated when recorded (ContextManager.record_items): the policy
  budget x 1.2, ``tokens`` (model family default Tokens(10 000)), ``bytes`` (Bytes(10 000),
  or tokens x 4 when ``tool_output_token_limit`` is set), or the legacy 10 KiB / 256 lines
  formatter.

Readings and gaps (not verified against one commit): the truncate.rs body (marker
``…N tokens truncated…``, whole-character halves) is the stored version whose code and tests
agree, the commit could not be pinned; an "item" is one message here (Codex items are
finer: a call and its output are separate); reasoning tokens are subtracted from the
reported total (``tokens_in_context_window``); the check runs before every request (Codex
of that time checked after a sampling that needs a follow-up); the repeated-compaction
guard ("still above the token limit") is not modelled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    OriginalCompaction,
    Role,
    ToolDef,
)
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..core.tool_pairs import is_user_query
from ..stages.originals import OriginalIndex
from ..stages.own_counts import ReasoningTally  # (session-now keeps one too)
from . import _codex_rules as rules
from . import _codex_versions as versions

if TYPE_CHECKING:
    from ..core.context_view import ContextView

LEGACY_AUTO_COMPACT_LIMIT = 256_000  # openai_model_info.rs DEFAULT_AUTO_COMPACT_TOKEN_LIMIT
DEFAULT_WINDOW = versions.DEFAULT_CONTEXT_WINDOW
REASONING_FACTOR_DEFAULT = 1.25
# Where the rollout hides the encrypted reasoning, its tokens per reported reasoning token
# lie between these (real rollouts: 1.22-1.28 on 0.140-0.142, 1.42-1.46 on 0.145; 0.137-0.140
# alphas 1.0-1.2): the count's uncertain part, settled by the original's own act.
REASONING_FACTOR_LOW = 1.0
REASONING_FACTOR_HIGH = 1.5
SECTIONS = (
    Section("Goal / user objective", "goal"),
    Section("Current progress and key decisions made", "decisions"),
    Section("Important context, constraints, or user preferences", "constraints"),
    Section("What remains to be done (clear next steps)", "next"),
    Section("Any critical data, examples, or references needed to continue", "critical"),
)


def user_text(message: Message) -> str:
    """``UserMessageItem::message()``: the text inputs joined (images contribute nothing)."""
    return "".join(b.text for b in message.blocks if b.kind is BlockKind.TEXT)


def reasoning_tokens(
    msg: Message, version: versions.VersionRules, factor: float = REASONING_FACTOR_DEFAULT
) -> int:
    """A reply's encrypted reasoning as get_non_last_reasoning_items_tokens counts it: from
    the encrypted length when the rollout kept it, else the reported reasoning tokens x
    ``factor`` (``reasoning_estimate_factor``; at its default the version's own factor;
    Entire redacts encrypted_content). The strategy's count and ``evaluate.session_now``'s
    step count read it."""
    sizes = [b.size for b in msg.blocks if b.kind is BlockKind.OPAQUE
             and b.raw_type == "reasoning" and b.size > 1_000]  # fmt: skip
    if sizes:
        return sum(versions.reasoning_estimate(size - 2) for size in sizes)
    if msg.usage is None or not msg.usage.reasoning:
        return 0
    if factor == REASONING_FACTOR_DEFAULT:  # the default: the version's own factor
        factor = version.reasoning_factor
    return round(msg.usage.reasoning * factor)


def rollout_rules(conversation: Conversation, version: str) -> tuple[versions.VersionRules, str]:
    """(rules, why) of the CLI ``version`` for this rollout: the version table's, except
    that an older rollout whose compactions are already remote (a replacement history) is
    taken to run the 0.118 rules. The strategy (``agent_version`` auto) and
    ``evaluate.session_now`` read it."""
    found, why = versions.rules_for(version)
    remote = any(dict(c.detail).get("replacement_items") for c in conversation.compactions)
    if found is versions.LEGACY and version and remote:
        return versions.V0_118, (
            f"cli_version {version} predates the checked range, but its compactions "
            "are remote (replacement history): the 0.118 rules are assumed"
        )
    return found, why


def is_session_prefix(message: Message) -> bool:
    if "replacement_history" in message.flags:  # an earlier user message Codex kept
        return rules.is_session_prefix(user_text(message))
    return "meta" in message.flags or rules.is_session_prefix(user_text(message))


def is_real_user_message(message: Message) -> bool:
    """A user message collect_user_messages keeps: typed by the user, not a summary."""
    return (
        is_user_query(message)
        and not is_session_prefix(message)
        and "compact_summary" not in message.flags
        and not rules.is_summary_message(user_text(message))
    )


@dataclass(slots=True)
class _State:
    reported: int | None = None  # last response's total, while still faithful
    diverged: bool = False  # the replayed context is no longer the original's
    summary_at: int | None = None  # source index where the summary sits
    # -- version rules (prepare) --
    rules: versions.VersionRules = versions.LEGACY
    rules_why: str = ""
    context_window: int = versions.DEFAULT_CONTEXT_WINDOW
    window_why: str = ""
    originals: OriginalIndex | None = None
    windows: dict[str, int] = field(default_factory=dict)  # model -> window (rollout)
    # -- the 0.140 count --
    last_total: int | None = None  # last_token_usage.total_tokens of the last response
    original_live: int = 0  # estimate of the original's live items (its own boundaries)
    # the reasoning estimate of the replies before the last user message (settled), the
    # same before it was recorded (previous), of the replies after it (open); beside each,
    # the reported reasoning tokens behind it where the rollout kept no encrypted length
    # (Entire redacts it): the part of the count the file cannot show
    reasoning: ReasoningTally = field(default_factory=ReasoningTally)
    guessed: int = 0  # ... in the count of the last check
    # Once the replay holds another context than the original: its count = the original's
    # + extra (in reported tokens, fixed when it diverged) + what both held since then
    # differently (estimate) - extra_est (that difference when it diverged).
    extra: int = 0
    extra_est: int = 0
    pending: OriginalCompaction | None = None  # the original compacted at these messages
    pending_from: int = 0  # first source index of its replacement history
    # A compaction ran and no response has come since: Codex samples next (a mid-turn
    # compaction `continue`s into the follow-up request, a pre-turn one records the user
    # message and samples), so that request is no check point. Its count until then is
    # Codex's own estimate of the new history (0.104: 940 499 of a 258 400 window).
    sampling_next: bool = False


class CodexStrategy(Strategy):
    name: ClassVar[str] = "codex"
    State = _State
    label: ClassVar[str] = "OpenAI Codex CLI auto-compaction (compact.rs, by cli_version)"
    description: ClassVar[str] = (
        "openai/codex codex-rs/core/src/compact.rs: before a request, once total token usage "
        "reaches 90% of the context window (model_auto_compact_token_limit), the whole "
        "history plus the CONTEXT CHECKPOINT COMPACTION prompt is summarised and the history "
        "is replaced by the initial context, the most recent user messages (up to 20 000 "
        "approx tokens, the oldest kept one middle-truncated) and one user message holding "
        "SUMMARY_PREFIX + the summary. Tool outputs are truncated when recorded. The rules "
        "follow the rollout's cli_version (0.140+: checked pre-turn and after tool outputs "
        "on the last total + estimates); where the original compacted, the replay compacts "
        "there when its trigger fires (or the user ran /compact), taking the replacement "
        "history as its context."
    )
    estimator: ClassVar[str] = (
        "approx_token_count = ceil(utf8 bytes / 4) per item (text, tool call, tool output); "
        "server-reported token_count for the trigger until the replay diverges"
    )
    WINDOW = "model_context_window"
    WINDOW_PINS = {"window_from_session": False}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "agent_version",
            "auto",
            "Codex version whose rules run: auto = the rollout's cli_version (legacy without "
            "one), a version (0.142.5) or a rule set (0.140, legacy).",
            "str",
            origin="session_meta cli_version",
        ),
        Param(
            "model_context_window",
            DEFAULT_WINDOW,
            "Context window in tokens (gpt-5 family: 272 000). At this default a rollout that "
            "reports its window decides (model_context_window / 0.95: Codex reports the "
            "effective 95%, per model); any other value pins it. A compaction request above "
            "it drops its oldest items.",
            min=1_000,
            origin="config.toml model_context_window",
        ),
        Param(
            "window_from_session",
            True,
            "At the default model_context_window, the rollout's reported window decides "
            "(see model_context_window); off pins 272 000 too. A comparison budget turns it "
            "off, so that its window holds even at that value.",
            "bool",
            origin="the rollout's model_context_window (turn_context / token_count)",
        ),
        Param(
            "follow_manual_compactions",
            True,
            "Compact where the original ran /compact (a user's act no trigger predicts), "
            "taking its replacement history as the new context.",
            "bool",
            origin="the original's compacted lines (trigger manual)",
        ),
        Param(
            "reasoning_estimate_factor",
            REASONING_FACTOR_DEFAULT,
            "0.140 rules: tokens of a reply's encrypted reasoning per reported reasoning "
            "token, used when the rollout's encrypted_content is redacted or absent "
            "(estimate_reasoning_length needs its length). Fitted on the agentv 0.140-0.142 "
            "rollouts (1.22-1.28 reproduces all 16 compactions). At this default the "
            "version's own factor runs (0.145: 1.44, from its real rollouts); any other value "
            "pins it.",
            "float",
            min=0.0,
            max=4.0,
            origin="history.rs estimate_reasoning_length (proxy)",
        ),
        Param(
            "model_auto_compact_token_limit",
            0,
            "Compact when total token usage >= this; 0 = unset (auto_compact_default).",
            min=0,
            origin="config.toml model_auto_compact_token_limit",
        ),
        Param(
            "auto_compact_default",
            "context_window_90pct",
            "Limit when model_auto_compact_token_limit is unset: 90% of the window (model "
            "family default_auto_compact_limit) or the older per-model constant 256 000.",
            "str",
            choices=("context_window_90pct", "fixed_256000"),
            origin="model_family.rs default_auto_compact_limit / openai_model_info.rs "
            "DEFAULT_AUTO_COMPACT_TOKEN_LIMIT",
        ),
        Param(
            "compact_user_message_max_tokens",
            rules.COMPACT_USER_MESSAGE_MAX_TOKENS,
            "Approx tokens of recent user messages kept after a compaction (0 keeps none).",
            min=0,
            origin="compact.rs COMPACT_USER_MESSAGE_MAX_TOKENS",
        ),
        Param(
            "prompt_version",
            "goal",
            "templates/compact/prompt.md: current (with the Goal bullet) or older (without).",
            "str",
            choices=("goal", "no_goal"),
            origin="templates/compact/prompt.md",
        ),
        Param(
            "compact_prompt",
            "",
            "Replaces the compaction prompt (prompt_version's text) when not empty: config.toml "
            "compact_prompt, or the file experimental_compact_prompt_file names.",
            "str",
            origin="config.toml compact_prompt (Config.compact_prompt; "
            "experimental_compact_prompt_file reads it from a file)",
        ),
        Param(
            "truncation_policy",
            "tokens",
            "Tool-output truncation when recorded: tokens (codex model families), bytes "
            "(gpt-5 / gpt-5.1 families), lines_bytes (older 10 KiB / 256 lines), none.",
            "str",
            choices=("tokens", "bytes", "lines_bytes", "none"),
            origin="model family truncation_policy (truncate.rs TruncationPolicy)",
        ),
        Param(
            "tool_output_token_limit",
            0,
            "Tool-output budget in tokens; 0 = the family default (Tokens(10 000) or "
            "Bytes(10 000)); set, the bytes policy uses it x 4. Applied x 1.2.",
            min=0,
            origin="config.toml tool_output_token_limit",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return rules.approx_token_count(text)

    def count_message(self, message: Message) -> int:
        return sum(rules.approx_token_count(_block_text(b)) for b in message.blocks)

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return 0  # Codex's history estimate counts instructions and items only

    # --- geometry -----------------------------------------------------------------------
    def auto_compact_limit(self, context_window: int | None = None) -> int:
        p = self.params
        window = context_window or int(p["model_context_window"])
        if p["model_auto_compact_token_limit"]:
            return int(p["model_auto_compact_token_limit"])
        if p["auto_compact_default"] == "fixed_256000":
            return LEGACY_AUTO_COMPACT_LIMIT
        return window * 9 // 10

    def _limit(self, ctx: ContextView) -> int:
        st: _State = ctx.state
        if st.rules is versions.LEGACY:
            return self.auto_compact_limit(st.context_window)
        return versions.auto_compact_limit(
            st.context_window,
            int(self.params["model_auto_compact_token_limit"]),
            st.rules.auto_compact_percent,
        )

    def window(self, ctx: ContextView) -> int:
        st: _State = ctx.state
        return st.context_window if st is not None else DEFAULT_WINDOW

    def threshold(self, ctx: ContextView) -> int | None:
        return self._limit(ctx)

    def tool_policy(self) -> rules.TruncationPolicy | None:
        kind = self.params["truncation_policy"]
        if kind not in ("tokens", "bytes"):
            return None
        limit = int(self.params["tool_output_token_limit"])
        if not limit:
            policy = rules.TruncationPolicy(kind, rules.DEFAULT_TOOL_OUTPUT_LIMIT)
        elif kind == "bytes":
            policy = rules.TruncationPolicy("bytes", limit * rules.APPROX_BYTES_PER_TOKEN)
        else:
            policy = rules.TruncationPolicy("tokens", limit)
        return policy.mul(rules.SERIALIZATION_BUDGET)

    # --- hooks --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        meta = dict(ctx.conversation.metadata)
        pinned = str(self.params["agent_version"])
        version = meta.get("cli_version", "") if pinned == "auto" else pinned
        if pinned == "auto":  # (an older 2026 rollout may already compact remotely)
            st.rules, st.rules_why = rollout_rules(ctx.conversation, version)
        else:
            st.rules, st.rules_why = versions.rules_for(version)
            if st.rules_why.startswith("cli_version"):
                st.rules_why = f"pinned: {st.rules_why}"
        window = int(self.params["model_context_window"])
        # Only a Codex rollout (its importer writes these, beside cli_version) shows Codex's
        # window; another agent's transcript replayed under codex keeps the default.
        rollout = bool(meta.get("cli_version"))
        reported = int(meta.get("model_context_window", "0") or 0) if rollout else 0
        from_session = window == DEFAULT_WINDOW and self.params["window_from_session"]
        if from_session and st.rules is not versions.LEGACY:
            window = 0  # the default: the rollout's own window decides where it has one
            # (legacy rollouts, e.g. 0.40, report the raw window: 272 000)
            for pair in meta.get("model_context_windows", "").split(";") if rollout else ():
                model, _, value = pair.rpartition("=")
                if model and value.isdigit():
                    st.windows[model] = versions.context_window_from_reported(int(value))
        if window:
            st.context_window, st.window_why = window, "model_context_window parameter"
        elif reported:
            st.context_window = versions.context_window_from_reported(reported)
            st.window_why = f"the rollout's model_context_window {reported} / 0.95"
        else:
            st.context_window, st.window_why = DEFAULT_WINDOW, "default (gpt-5 family)"
        st.originals = OriginalIndex(ctx.conversation)

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.message(index)
        original = st.originals.at(index) if st.originals is not None else None
        if original is not None and st.pending is None:
            st.pending, st.pending_from = original, index
        if (
            "compact_summary" in msg.flags
            and "replacement_history" not in msg.flags  # a file that starts after one
            and original is None
            and st.pending is None
        ):
            st.diverged = True  # the original compacted: its usage no longer matches
        if msg.usage is not None:
            st.reported = msg.usage.context_tokens - msg.usage.reasoning
            st.last_total = msg.usage.context_tokens
        if msg.role is Role.ASSISTANT and "replacement_history" not in msg.flags:
            st.sampling_next = False  # the request after the compaction was answered
        self._truncate_tool_output(ctx, index, msg)
        if st.pending is not None:
            return  # the original's replacement history: counted when it is decided
        # The context counted this version with ``count_message`` (the default message
        # counter) on appending it, or counts a truncated one once: read back, not again.
        st.original_live += ctx.tokens(index)
        if msg.role is Role.ASSISTANT:
            st.reasoning.reply(self._reasoning_tokens(msg, st.rules), self._guessed_reasoning(msg))
        elif is_real_user_message(msg):
            st.reasoning.user()

    @staticmethod
    def _rules_detail(ctx: ContextView) -> dict[str, str]:
        """Which version's rules ran and why (the run and compare pages show it)."""
        st: _State = ctx.state
        return {
            "rules_version": st.rules.name,
            "rules_reason": f"{st.rules_why}; window {st.context_window} ({st.window_why})",
        }

    def _reasoning_tokens(self, msg: Message, version: versions.VersionRules) -> int:
        return reasoning_tokens(msg, version, float(self.params["reasoning_estimate_factor"]))

    @staticmethod
    def _guessed_reasoning(msg: Message) -> int:
        """The reported reasoning tokens ``_reasoning_tokens`` multiplies by the factor (a
        reply without the encrypted length), else 0."""
        if any(b.kind is BlockKind.OPAQUE and b.raw_type == "reasoning" and b.size > 1_000
               for b in msg.blocks):  # fmt: skip
            return 0
        return msg.usage.reasoning if msg.usage is not None else 0

    def _factor(self, version: versions.VersionRules) -> float | None:
        """The reasoning factor the count used, None when a pinned factor stands alone."""
        factor = float(self.params["reasoning_estimate_factor"])
        return version.reasoning_factor if factor == REASONING_FACTOR_DEFAULT else None

    def _bounds(self, ctx: ContextView, total: int) -> tuple[int, int]:
        """The count's range while the replay is the original's: the reasoning the rollout
        does not show lies between REASONING_FACTOR_LOW and _HIGH tokens per reported
        reasoning token; a diverged replay or a pinned factor has the count alone."""
        st: _State = ctx.state
        factor = self._factor(st.rules)
        if st.diverged or factor is None or not st.guessed:
            return total, total
        low = total - round((factor - REASONING_FACTOR_LOW) * st.guessed)
        return low, total + round((REASONING_FACTOR_HIGH - factor) * st.guessed)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        model = ctx.originals[ctx.source_index].model
        if model in st.windows:  # the request's model (a turn can switch it)
            st.context_window = st.windows[model]
        limit = self._limit(ctx)
        if st.pending is not None:
            self._at_original(ctx, limit)
            return
        if "replacement_history" in ctx.originals[ctx.source_index].flags:
            return  # a reply 0.118 kept in its replacement history: no request, no check
        if st.sampling_next and st.rules is not versions.LEGACY:
            return  # the first request after a compaction: Codex samples, it does not check
        if st.rules is versions.LEGACY:
            total, source = self._usage(ctx)
            if total >= limit:
                self._compact(ctx, total=total, usage_source=source, limit=limit)
            return
        check = self._check_point(ctx, len(ctx.live))
        if check is None:
            return
        total, source, phase = check
        # Fire on the count's certain part: where only the reasoning the rollout does not
        # show would reach the limit, the original's act settles it (``_at_original``).
        if self._bounds(ctx, total)[0] >= limit:
            self._compact(ctx, total=total, usage_source=source, limit=limit, phase=phase)

    def compared_tokens(self, ctx: ContextView) -> int | None:
        """The reported total while the replay is faithful (it includes what the rollout
        does not show: instructions, tools), else None (the estimate)."""
        st: _State = ctx.state
        if st.rules is versions.LEGACY:
            return st.reported if not st.diverged else None
        return st.last_total if not st.diverged else None

    def _usage(self, ctx: ContextView) -> tuple[int, str]:
        st: _State = ctx.state
        if not st.diverged and st.reported is not None:
            return st.reported, "reported"
        return ctx.request_tokens(), "estimate"

    # --- the 0.140 count and check points ------------------------------------------------
    def _check_point(
        self, ctx: ContextView, end: int, left_out: int = 0
    ) -> tuple[int, str, str] | None:
        """(count, source, phase) when Codex checks before this request, else None.
        ``end`` bounds the live positions read and ``left_out`` is their tokens (the
        original's replacement history, left out while it is decided)."""
        st: _State = ctx.state
        live = ctx.live
        suffix: list[int] = []
        for pos in range(end - 1, -1, -1):
            msg = ctx.message(live[pos])
            if msg.role is Role.ASSISTANT:
                break
            suffix.append(live[pos])
        suffix.reverse()
        user_at = next((k for k, i in enumerate(suffix) if is_real_user_message(ctx.message(i))),
                       None)  # fmt: skip
        if user_at is not None:  # pre-turn: before the user message is recorded
            phase, after, reasoning = "pre_turn", suffix[:user_at], st.reasoning.previous
            st.guessed = st.reasoning.guessed_previous
        elif any(m.role is Role.TOOL or _has_result(m) for m in map(ctx.message, suffix)):
            phase, after, reasoning = "mid_turn", suffix, st.reasoning.settled
            st.guessed = st.reasoning.guessed_settled
        else:
            return None  # no follow-up and no new turn: Codex does not check here
        estimate = sum(self._item_tokens(ctx.message(i), st.rules) for i in after)
        if st.last_total is None:
            base = ctx.request_tokens() - sum(ctx.tokens(i) for i in suffix)
            source = "estimate"
        else:
            # the original's count, moved by what this replay holds more or less than it
            held = ctx.history_tokens + ctx.summary_tokens - left_out
            base = st.last_total + st.extra + held - st.original_live - st.extra_est
            source = "reported" if not st.diverged else "reported_adjusted"
        return base + estimate + reasoning, source, phase

    def _pre_turn_before_user(
        self, ctx: ContextView, cut: int, left_out: int
    ) -> tuple[int, str, str]:
        """The pre-turn check of a compaction written before the turn's user message: the
        items after the last reply (none when the turn ended), the reasoning before the
        previous user message (the new one is not recorded yet: it joined while pending)."""
        st: _State = ctx.state
        live = ctx.live
        after: list[int] = []
        for pos in range(cut - 1, -1, -1):
            if ctx.message(live[pos]).role is Role.ASSISTANT:
                break
            after.append(live[pos])
        estimate = sum(self._item_tokens(ctx.message(i), st.rules) for i in after)
        source = "reported" if not st.diverged else "reported_adjusted"
        st.guessed = st.reasoning.guessed_settled
        if st.last_total is None:
            source = "estimate"
            return ctx.request_tokens() - left_out + st.reasoning.settled, source, "pre_turn"
        return self._base(ctx, left_out) + estimate + st.reasoning.settled, source, "pre_turn"

    @staticmethod
    def _item_tokens(msg: Message, version: versions.VersionRules = versions.V0_140) -> int:
        """estimate_item_token_count of items recorded after the last reply: serialized
        JSON bytes / 4, an image 7 373 bytes."""
        total = 0
        for b in msg.blocks:
            if b.kind is BlockKind.MEDIA:
                total += versions.RESIZED_IMAGE_BYTES_ESTIMATE
                continue
            if b.kind is BlockKind.OPAQUE:  # e.g. tool_search_output: its serialized size
                total += b.size
                continue
            text = b.text if b.kind is not BlockKind.TOOL_USE else b.input_json
            total += len(json.dumps(text, ensure_ascii=False).encode("utf-8")) + len(b.tool_id)
            total += sum(versions.RESIZED_IMAGE_BYTES_ESTIMATE for p in b.parts
                         if p.kind is BlockKind.MEDIA)  # fmt: skip
            total += version.item_framing_bytes
        return -(-total // 4)

    # --- the original's compactions --------------------------------------------------------
    def _at_original(self, ctx: ContextView, limit: int) -> None:
        """The original compacted just before this request: compact exactly here when this
        replay's own trigger fires here (or it was /compact and we follow those), taking its
        replacement history as the new context; else leave its replacement history out."""
        st: _State = ctx.state
        original, start = st.pending, st.pending_from
        assert original is not None
        st.pending = None
        live = ctx.live
        cut = next((pos for pos, i in enumerate(live) if i >= start), len(live))
        replacement = live[cut:]
        replaced_tokens = sum(ctx.tokens(i) for i in replacement)
        check: tuple[int, str, str] | None = None
        if st.rules is versions.LEGACY:
            total, source = self._usage(ctx)
            phase = "before_request"
        else:
            check = self._check_point(ctx, cut, replaced_tokens)
            if check is None and _turn_starts_after(ctx.originals, start):
                check = self._pre_turn_before_user(ctx, cut, replaced_tokens)
            total, source, phase = check if check is not None else (0, "none", "no_check")
        manual = original.trigger == "manual"
        follow = total >= limit or (manual and bool(self.params["follow_manual_compactions"]))
        detail: dict[str, Any] = {
            "usage_source": source, "total_tokens": total, "limit": limit, "phase": phase,
            "original_trigger": original.trigger or "auto", "original_pre_tokens":
            original.pre_tokens, **self._rules_detail(ctx), **dict(original.detail),
        }  # fmt: skip
        if not follow and not manual and check is not None:
            low, high = self._bounds(ctx, total)
            if high >= limit > low:
                # the count reaches the limit only by reasoning the rollout does not show:
                # the original's compaction here says it did
                follow = True
                detail["count_range"] = [low, high]
                detail["decided_by"] = (
                    "the original's compaction: the count is uncertain by the redacted "
                    "reasoning of earlier turns"
                )
        if not follow:
            with ctx.action(
                "compact_skipped", reason="the original compacted here; this replay's "
                "trigger does not fire: its replacement history is left out", **detail,
            ) as act:  # fmt: skip
                act.remove(replacement, Fate.DROPPED, reason="the original's replacement history")
            ours = total if check is not None else self._base(ctx, replaced_tokens)
            st.original_live = replaced_tokens  # the original's context from here on
            st.last_total = self._post_tokens(ctx, original, replaced_tokens)
            self._anchor(ctx, ours)  # our count goes on from what we held, not from theirs
            st.diverged = True
            st.reasoning.reset()
            if st.rules is not versions.LEGACY:
                check = self._check_point(ctx, len(ctx.live))
                if check is not None and check[0] >= limit:
                    self._compact(ctx, total=check[0], usage_source=check[1], limit=limit,
                                  phase=check[2])  # fmt: skip
            elif total >= limit:
                self._compact(ctx, total=total, usage_source=source, limit=limit)
            return
        keep = set(replacement) if replacement else set(_initial_context(ctx))
        gone = [i for i in live if i not in keep]
        why = "the user's /compact" if manual and total < limit else "the trigger fires"
        with ctx.action(
            "compact", reason=f"the original compacted here ({why}): its replacement history "
            "is the new context", follows_original=True, **detail,
        ) as act:  # fmt: skip
            act.remove(gone, Fate.SUMMARISED)
            act.always = True
            # before the scope ends: tokens_after is the count Codex has after it
            st.diverged = False  # the replay holds what the original held: counts valid
            st.original_live = ctx.history_tokens
            st.extra = st.extra_est = 0
            if st.last_total is not None:
                st.last_total = self._post_tokens(ctx, original, ctx.history_tokens)
        st.reasoning.reset()
        st.summary_at = None
        st.sampling_next = True

    @staticmethod
    def _post_tokens(ctx: ContextView, original: OriginalCompaction, replaced: int) -> int:
        """recompute_token_usage: Codex's own estimate of the new history (the token_count
        after the compacted line), else ours plus the fixed overhead."""
        post = dict(original.detail).get("post_tokens")
        return int(post) if post else replaced + ctx.system_tokens + ctx.tools_tokens

    @staticmethod
    def _base(ctx: ContextView, left_out: int = 0) -> int:
        st: _State = ctx.state
        held = ctx.history_tokens + ctx.summary_tokens - left_out
        return (st.last_total or 0) + st.extra + held - st.original_live - st.extra_est

    @staticmethod
    def _anchor(ctx: ContextView, value: int) -> None:
        """From now on the count is ``value`` + what this replay adds."""
        st: _State = ctx.state
        st.extra_est = ctx.history_tokens + ctx.summary_tokens - st.original_live
        st.extra = value - (st.last_total or 0)

    # --- tool-output truncation ---------------------------------------------------------
    def _truncate_tool_output(self, ctx: ContextView, index: int, msg: Message) -> None:
        kind = self.params["truncation_policy"]
        if kind == "none" or not any(b.kind is BlockKind.TOOL_RESULT for b in msg.blocks):
            return
        policy = self.tool_policy()
        blocks = list(msg.blocks)
        changed: list[dict[str, int]] = []
        for j, b in enumerate(blocks):
            if b.kind is not BlockKind.TOOL_RESULT or not b.text:
                continue
            new = (
                rules.truncate_text(b.text, policy)
                if policy is not None
                else rules.format_output_for_model_body(b.text)
            )
            if new != b.text:
                blocks[j] = replace(b, text=new, parts=())
                changed.append({"block": j, "bytes": len(b.text.encode("utf-8"))})
        if changed:
            budget = f"{policy.kind}:{policy.limit}" if policy else "10240 bytes / 256 lines"
            with ctx.action(
                "truncate", reason="tool output truncated when recorded",
                truncation_policy=kind, budget=budget, blocks=changed,
            ) as act:  # fmt: skip
                act.replace(index, replace(msg, blocks=tuple(blocks)), Fate.TRUNCATED)

    # --- compaction ---------------------------------------------------------------------
    def _request_items(self, ctx: ContextView) -> list[tuple[int, PromptMessage]]:
        """The history as Codex holds it: live messages with the summary user message
        (index -1) where the last compaction put it."""
        st: _State = ctx.state
        items: list[tuple[int, PromptMessage]] = []
        summary_done = not ctx.summary
        for i in ctx.live:
            if not summary_done and st.summary_at is not None and i >= st.summary_at:
                items.append((-1, PromptMessage("user", ctx.summary)))
                summary_done = True
            items.append((i, _prompt(ctx.message(i))))
        if not summary_done:
            items.append((-1, PromptMessage("user", ctx.summary)))
        return items

    def _compact(
        self, ctx: ContextView, *, total: int, usage_source: str, limit: int, phase: str = ""
    ) -> None:
        prompt = str(self.params["compact_prompt"]) or rules.PROMPTS[self.params["prompt_version"]]
        items = self._request_items(ctx)
        sizes = [self.count_text(m.text) for _, m in items]
        budget = self.window(ctx) - ctx.system_tokens - self.count_text(prompt)
        request_tokens = sum(sizes)
        trimmed = 0
        while items[trimmed:] and request_tokens > budget:  # remove_first_item, retry
            request_tokens -= sizes[trimmed]
            trimmed += 1
        dropped = [i for i, _ in items[:trimmed] if i >= 0]
        sent = items[trimmed:]
        detail: dict[str, Any] = {
            "usage_source": usage_source,
            "total_tokens": total,
            "limit": limit,
        }
        st: _State = ctx.state
        if st.rules is not versions.LEGACY:
            detail.update(phase=phase, **self._rules_detail(ctx))
        if request_tokens > budget:  # only the prompt left and still too big
            ctx.emit("compact_failed", error="ContextWindowExceeded", trimmed_items=trimmed,
                     outcome="history unchanged; Codex sends an Error event", **detail)  # fmt: skip
            return
        summarised = [i for i, _ in sent if i >= 0]
        request = SummaryRequest(
            strategy=self.name,
            system=ctx.system_text,
            messages=(*(m for _, m in sent), PromptMessage("user", prompt)),
            style="sections",
            sections=SECTIONS,
            material=tuple(MaterialItem(m.role, m.text, i) for i, m in sent),
            previous_summary=ctx.summary,
        )
        record = ctx.summarize(request, messages=summarised)
        if record.error:
            ctx.emit("compact_failed", messages=summarised, summary_id=record.id,
                     error=record.error, retries=rules.DEFAULT_STREAM_MAX_RETRIES,
                     outcome="history unchanged; Codex sends an Error event", **detail)  # fmt: skip
            return
        self._replace_history(ctx, record.output, record.id, dropped, summarised, trimmed, detail)

    def _replace_history(
        self,
        ctx: ContextView,
        summary_suffix: str,
        summary_id: int,
        dropped: list[int],
        summarised: list[int],
        trimmed: int,
        detail: dict[str, Any],
    ) -> None:
        st: _State = ctx.state
        text = rules.summary_text(summary_suffix)
        initial = _initial_context(ctx)
        users = [i for i in ctx.live if is_real_user_message(ctx.message(i))]
        selected = rules.select_user_messages(
            [user_text(ctx.message(i)) for i in users],
            int(self.params["compact_user_message_max_tokens"]),
        )
        keep = set(initial) | {users[pos] for pos, _ in selected}
        gone = [i for i in ctx.live if i not in keep]
        previous_ref = ctx.summary_ref
        dropped_set = set(dropped)
        if trimmed:
            detail["notice"] = rules.TRIMMED_NOTICE.format(n=trimmed)
        with ctx.action(
            "compact", reason="history replaced by recent user messages + summary",
            trimmed_items=trimmed, kept_user_messages=len(selected),
            initial_context=len(initial), summary_empty=not summary_suffix, **detail,
        ) as act:  # fmt: skip
            for pos, new_text in selected:
                i = users[pos]
                if new_text != user_text(ctx.message(i)):
                    act.replace(i, _text_message(ctx.message(i), new_text), Fate.TRUNCATED,
                                reason="oldest kept user message middle-truncated")  # fmt: skip
            act.remove([i for i in gone if i not in dropped_set], Fate.SUMMARISED)
            act.remove([i for i in gone if i in dropped_set], Fate.DROPPED,
                       reason="removed from the compaction request (window exceeded)")  # fmt: skip
            ctx.set_summary(text, tokens=self.count_text(text), rendered=text,
                            summary_id=summary_id)  # fmt: skip
            act.summary_id = summary_id
            act.always = True
            st.diverged = True  # before the scope ends: tokens_after is the new count
        st.summary_at = ctx.source_index
        st.reasoning.reset()
        st.sampling_next = True
        if st.rules is not versions.LEGACY and st.last_total is not None:
            self._anchor(ctx, ctx.request_tokens())  # recompute_token_usage: an estimate
        ctx.emit("warning", message=rules.WARNING)
        summarised_set = set(summarised)  # once: per element it was quadratic in the history
        check_summary_size(ctx, summary_rendered=text, replaced=[i for i in gone if i in
                           summarised_set], summary_id=summary_id, previous_ref=previous_ref)  # fmt: skip


def _turn_starts_after(originals: Sequence[Message], start: int) -> bool:
    """Past the compaction's replacement history (and the context re-injected after it) a
    real user message comes before any response: the compaction was pre-turn. 0.118's
    replacement history holds the earlier replies too, so the first step after the boundary
    can be one of them and the user message not appended yet."""
    for msg in originals[start:]:
        if "replacement_history" in msg.flags:
            continue
        if is_real_user_message(msg):
            return True
        if msg.role is Role.ASSISTANT:
            return False
    return False


def _has_result(message: Message) -> bool:
    return any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


def _initial_context(ctx: ContextView) -> list[int]:
    """Session-prefix messages before the first real user message: Codex rebuilds the
    initial context fresh; these stand for it (the system message is never removed)."""
    out: list[int] = []
    for i in ctx.live:
        msg = ctx.message(i)
        if is_real_user_message(msg):
            break
        if is_user_query(msg) and is_session_prefix(msg):
            out.append(i)
    return out


def _block_text(block: Block) -> str:
    if block.kind is BlockKind.TOOL_USE:
        return block.tool_name + block.input_json
    if block.kind in (BlockKind.MEDIA, BlockKind.OPAQUE):
        return ""
    return block.text


def _text_message(message: Message, text: str) -> Message:
    """A user message rebuilt as one InputText, as build_compacted_history writes it."""
    return replace(message, blocks=(Block(BlockKind.TEXT, text=text),))


def _prompt(message: Message) -> PromptMessage:
    parts: list[str] = []
    for b in message.blocks:
        if b.kind is BlockKind.TOOL_USE:
            parts.append(f"[function_call {b.tool_name}] {b.input_json}")
        elif b.kind is BlockKind.TOOL_RESULT:
            parts.append(f"[function_call_output {b.tool_id}] {b.text}")
        elif b.kind in (BlockKind.TEXT, BlockKind.THINKING) and b.text:
            parts.append(b.text)
    role = "assistant" if message.role.value == "assistant" else "user"
    return PromptMessage(role, "\n".join(parts))


STRATEGY = CodexStrategy


def describe_rules(agent_version: str = "auto") -> dict[str, Any]:
    """What the run page shows about the rules: the version table (each range with its
    source), which rules a pinned ``agent_version`` selects, and how the count and the
    original's compactions are handled. Each compaction event names the rules that ran
    (``rules_version``, ``rules_reason``)."""
    pinned = agent_version.strip() not in ("", "auto")
    return {
        "ranges": versions.describe_table(),
        "selected": versions.rules_for(agent_version)[0].name if pinned else None,
        "selection": (
            f"pinned to {agent_version}"
            if pinned
            else "the rollout's cli_version (0.145+: 0.145, 0.140-0.144: 0.140, 0.118-0.139: 0.118); before "
            "0.118 the 0.118 rules when its compactions are remote (replacement history), "
            "else legacy"
        ),
        "count": (
            "0.140 and 0.118: the last response's total_tokens + the estimate of the items "
            "after the last reply + the encrypted reasoning before the last user-turn "
            "boundary (sub-agent notifications are none), checked "
            "pre-turn and after a sampling that needs a follow-up; legacy: the reported "
            "total minus reasoning before every request"
        ),
        "originals": (
            "at each of the original's compactions the replay compacts there when its own "
            "trigger fires there, or the user ran /compact (follow_manual_compactions), and "
            "its replacement history becomes the context (the original's later counts hold "
            "again); otherwise that history is left out and the count goes on from what the "
            "replay holds"
        ),
    }
