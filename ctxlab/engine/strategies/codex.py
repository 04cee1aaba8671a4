"""OpenAI Codex CLI auto-compaction (openai/codex ``codex-rs/core/src/compact.rs``).

Pinned: compact.rs at 0100b103625752f6a10c21b79a8c423761dc4c6a; templates
``templates/compact/prompt.md`` (Goal bullet; the older text without it is
``prompt_version=no_goal``) and ``summary_prefix.md``, byte-exact in ``_codex_rules``.

What it does, as Codex does:

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

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..context import is_user_query
from ..findings import check_summary_size
from ..model import Block, BlockKind, Message, ToolDef
from ..params import Param
from ..records import Fate
from ..summarizers import MaterialItem, PromptMessage, Section, SummaryRequest
from . import _codex_rules as rules
from .base import Strategy

if TYPE_CHECKING:
    from ..context_view import ContextView

LEGACY_AUTO_COMPACT_LIMIT = 256_000  # openai_model_info.rs DEFAULT_AUTO_COMPACT_TOKEN_LIMIT
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


def is_session_prefix(message: Message) -> bool:
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


class CodexStrategy(Strategy):
    name: ClassVar[str] = "codex"
    State = _State
    label: ClassVar[str] = "OpenAI Codex CLI auto-compaction (compact.rs)"
    description: ClassVar[str] = (
        "openai/codex codex-rs/core/src/compact.rs: before a request, once total token usage "
        "reaches 90% of the context window (model_auto_compact_token_limit), the whole "
        "history plus the CONTEXT CHECKPOINT COMPACTION prompt is summarised and the history "
        "is replaced by the initial context, the most recent user messages (up to 20 000 "
        "approx tokens, the oldest kept one middle-truncated) and one user message holding "
        "SUMMARY_PREFIX + the summary. Tool outputs are truncated when recorded."
    )
    estimator: ClassVar[str] = (
        "approx_token_count = ceil(utf8 bytes / 4) per item (text, tool call, tool output); "
        "server-reported token_count for the trigger until the replay diverges"
    )
    WINDOW = "model_context_window"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "model_context_window",
            272_000,
            "Context window in tokens (gpt-5 / gpt-5.1-codex family: 272 000). A compaction "
            "request above it drops its oldest items.",
            min=1_000,
            origin="config.toml model_context_window",
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
    def auto_compact_limit(self) -> int:
        p = self.params
        if p["model_auto_compact_token_limit"]:
            return int(p["model_auto_compact_token_limit"])
        if p["auto_compact_default"] == "fixed_256000":
            return LEGACY_AUTO_COMPACT_LIMIT
        return int(p["model_context_window"]) * 9 // 10

    def window(self, ctx: ContextView) -> int:
        return int(self.params["model_context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        return self.auto_compact_limit()

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
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.message(index)
        if "compact_summary" in msg.flags:
            st.diverged = True  # the original compacted: its usage no longer matches
        if msg.usage is not None:
            st.reported = msg.usage.context_tokens - msg.usage.reasoning
        self._truncate_tool_output(ctx, index, msg)

    def before_call(self, ctx: ContextView) -> None:
        total, source = self._usage(ctx)
        limit = self.auto_compact_limit()
        if total >= limit:
            self._compact(ctx, total=total, usage_source=source, limit=limit)

    def compared_tokens(self, ctx: ContextView) -> int | None:
        """The reported total while the replay is faithful (it includes what the rollout
        does not show: instructions, tools), else None (the estimate)."""
        st: _State = ctx.state
        return st.reported if not st.diverged else None

    def _usage(self, ctx: ContextView) -> tuple[int, str]:
        st: _State = ctx.state
        if not st.diverged and st.reported is not None:
            return st.reported, "reported"
        return ctx.request_tokens(), "estimate"

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

    def _compact(self, ctx: ContextView, *, total: int, usage_source: str, limit: int) -> None:
        prompt = rules.PROMPTS[self.params["prompt_version"]]
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
        ctx.emit("warning", message=rules.WARNING)
        summarised_set = set(summarised)  # once: per element it was quadratic in the history
        check_summary_size(ctx, summary_rendered=text, replaced=[i for i in gone if i in
                           summarised_set], summary_id=summary_id, previous_ref=previous_ref)  # fmt: skip


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
