"""BaseAgent (PlatformNetwork/baseagent @ 18565d9): OpenCode-style prune + Codex-style
checkpoint summary, as ``src/core/compaction.py`` and ``src/core/loop.py`` run them.

Where it runs: ``manage_context`` before every LLM request. Tool outputs are capped with
``middle_out_truncate`` when they are created (persisted). When the whole list (system
message included) is estimated above 142 800 tokens, old tool outputs are pruned *in the
request view only* (the loop keeps the pruned list only if it is shorter, and pruning keeps
the length), so every request recomputes the prune from full outputs. If still above, the
list is replaced by exactly ``[system, user(SUMMARY_PREFIX + summary)]`` and that is
persisted; the original task goes too. A failed or empty summary sends the (pruned) list
unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from ..findings import check_summary_size
from ..model import BlockKind, Message, ToolDef
from ..params import Param
from ..records import Fate
from ..summarizers import MaterialItem, PromptMessage, Section, SummaryRequest
from . import _baseagent_rules as rules
from ._baseagent_rules import BaseMsg
from .base import Strategy

if TYPE_CHECKING:
    from ..context import ReplayContext

SECTIONS = (
    Section("## Current progress and key decisions", "decisions"),
    Section("## Context, constraints and preferences", "constraints"),
    Section("## What remains (next steps)", "next"),
    Section("## Critical data, examples and references", "critical"),
    Section("## Files modified", "done"),
    Section("## Errors encountered and resolutions", "blocked"),
)


class BaseAgentStrategy(Strategy):
    name: ClassVar[str] = "baseagent"
    label: ClassVar[str] = "BaseAgent (OpenCode prune + Codex checkpoint)"
    description: ClassVar[str] = (
        "PlatformNetwork/baseagent src/core/compaction.py: before every request, if the "
        "chars//4 estimate of the whole list exceeds 85% of (200K - 32K), prune tool outputs "
        "older than the last two user turns beyond 40K protected tokens (request view only, "
        "only if > 20K are recovered); if still over, replace everything with the system "
        "prompt and one user message holding SUMMARY_PREFIX + a checkpoint summary."
    )
    estimator: ClassVar[str] = (
        "len(str)//4 per string (code points, floor) + 4 per message, 1000 per image"
    )
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "model_context_limit",
            rules.MODEL_CONTEXT_LIMIT,
            "Context window BaseAgent assumes (hard-coded for Claude Opus 4.5).",
            min=1_000,
            origin="compaction.py MODEL_CONTEXT_LIMIT",
        ),
        Param(
            "output_token_max",
            rules.OUTPUT_TOKEN_MAX,
            "Tokens reserved for the answer; usable = limit - this.",
            min=0,
            origin="compaction.py OUTPUT_TOKEN_MAX",
        ),
        Param(
            "auto_compact_threshold",
            rules.AUTO_COMPACT_THRESHOLD,
            "Share of the usable context above which (strictly) pruning/compaction runs.",
            "float",
            min=0.01,
            max=1.0,
            origin="compaction.py AUTO_COMPACT_THRESHOLD",
        ),
        Param(
            "prune_protect",
            rules.PRUNE_PROTECT,
            "Tool-output tokens (newest first, after the protected turns) never pruned.",
            min=0,
            origin="compaction.py PRUNE_PROTECT",
        ),
        Param(
            "prune_minimum",
            rules.PRUNE_MINIMUM,
            "Prune only if strictly more than this many tokens would be recovered.",
            min=0,
            origin="compaction.py PRUNE_MINIMUM",
        ),
        Param(
            "protect_last_turns",
            rules.PROTECT_LAST_TURNS,
            "User messages (counted from the end) whose following tool outputs are protected.",
            min=0,
            max=100,
            origin="prune_old_tool_outputs(protect_last_turns=2)",
        ),
        Param(
            "max_output_tokens",
            rules.MAX_OUTPUT_TOKENS,
            "middle_out_truncate cap (bytes//4 tokens) applied to every tool output when "
            "created; 0 disables.",
            min=0,
            origin="defaults.py max_output_tokens",
        ),
        Param(
            "compaction_max_tokens",
            rules.COMPACTION_MAX_TOKENS,
            "max_tokens of the summary call.",
            min=1,
            origin="run_compaction llm.chat(max_tokens=4096)",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return rules.estimate_tokens(text)

    def count_message(self, message: Message) -> int:
        return sum(rules.estimate_message_tokens(m) for m in rules.to_base(-1, message))

    def count_system(self, text: str, message: Message | None) -> int:
        if message is None:
            return 0
        return rules.estimate_message_tokens(BaseMsg("system", text))

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return 0  # tool definitions are not part of BaseAgent's estimate

    # --- geometry -----------------------------------------------------------------------
    def _threshold(self) -> float:
        p = self.params
        return rules.compact_threshold(
            p["model_context_limit"], p["output_token_max"], p["auto_compact_threshold"]
        )

    def window(self, ctx: ReplayContext) -> int:
        return int(self.params["model_context_limit"])

    def threshold(self, ctx: ReplayContext) -> int | None:
        return int(self._threshold())

    def output_reserve(self, ctx: ReplayContext) -> int:
        return int(self.params["output_token_max"])

    # --- state --------------------------------------------------------------------------
    def prepare(self, ctx: ReplayContext) -> None:
        self._unpruned: dict[int, Message] = {}  # request-view prunes: index -> full version
        self._prune_delta = 0  # tokens the current view saves versus the stored history
        self._summary_msg: BaseMsg | None = None

    def _stored_total(self, ctx: ReplayContext) -> int:
        """estimate_total_tokens(messages) of the stored (unpruned) history."""
        return ctx.request_tokens() + self._prune_delta

    def _stored(self, ctx: ReplayContext, index: int) -> Message:
        return self._unpruned.get(index) or ctx.message(index)

    def _rows(self, ctx: ReplayContext) -> list[BaseMsg]:
        rows: list[BaseMsg] = []
        if ctx.system_index is not None:
            rows.append(BaseMsg("system", ctx.system_text, src=ctx.system_index))
        if self._summary_msg is not None:
            rows.append(self._summary_msg)
        for i in ctx.live:
            rows.extend(rules.to_base(i, self._stored(ctx, i)))
        return rows

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ReplayContext, index: int) -> None:
        cap = int(self.params["max_output_tokens"])
        msg = ctx.message(index)
        if cap <= 0 or not any(b.kind is BlockKind.TOOL_RESULT for b in msg.blocks):
            return
        blocks = list(msg.blocks)
        changed: list[dict[str, int]] = []
        for j, b in enumerate(blocks):
            if b.kind is BlockKind.TOOL_RESULT and b.text:
                new = rules.middle_out_truncate(b.text, cap)
                if new != b.text:
                    blocks[j] = replace(b, text=new, parts=())
                    changed.append({"block": j, "bytes": len(b.text.encode("utf-8"))})
        if changed:
            with ctx.action(
                "truncate", reason="middle_out_truncate at tool-output creation",
                max_output_tokens=cap, blocks=changed,
            ) as act:  # fmt: skip
                act.replace(index, replace(msg, blocks=tuple(blocks)), Fate.TRUNCATED)

    def before_call(self, ctx: ReplayContext) -> None:
        threshold = self._threshold()
        total = self._stored_total(ctx)
        if not rules.is_overflow(total, threshold):
            self._apply_view(ctx, {}, total=total, threshold=threshold)
            return
        rows = self._rows(ctx)
        scan = rules.scan_prune(
            rows,
            protect_last_turns=int(self.params["protect_last_turns"]),
            prune_protect=int(self.params["prune_protect"]),
            prune_minimum=int(self.params["prune_minimum"]),
        )
        view: dict[int, set[str]] = {}
        if scan.applied:
            for pos in scan.indexes:
                row = rows[pos]
                if row.src is not None:
                    view.setdefault(row.src, set()).add(row.tool_call_id)
        self._apply_view(ctx, view, total=total, threshold=threshold, scan=scan)
        pruned_total = ctx.request_tokens()
        if not rules.is_overflow(pruned_total, threshold):
            return
        self._compact(ctx, total=total, pruned_total=pruned_total, threshold=threshold)

    # --- request-view prune -------------------------------------------------------------
    def _apply_view(
        self,
        ctx: ReplayContext,
        view: dict[int, set[str]],
        *,
        total: int,
        threshold: float,
        scan: rules.PruneScan | None = None,
    ) -> None:
        """Make the live context show ``view`` (index -> pruned tool ids) and nothing else."""
        restore = [i for i in self._unpruned if i not in view]
        if restore:
            with ctx.action(
                "prune_lifted", reason="request-view prune recomputed from full outputs",
                estimate=total, threshold=threshold,
            ) as act:  # fmt: skip
                for i in restore:
                    original = self._unpruned.pop(i)
                    act.replace(i, original, Fate.RESTORED)
        if not view:
            self._prune_delta = 0
            return
        todo = {i: ids for i, ids in view.items() if self._pruned_ids(ctx, i) != ids}
        if todo:
            with ctx.action(
                "prune",
                reason="old tool output cleared in the request view only",
                estimate=total,
                threshold=threshold,
                scanned_tokens=scan.total if scan else None,
                prunable_tokens=scan.pruned if scan else None,
            ) as act:
                for i, ids in todo.items():
                    full = self._stored(ctx, i)
                    self._unpruned[i] = full
                    act.replace(i, _placeholder(full, ids), Fate.PRUNED)
        self._prune_delta = sum(
            self.count_message(self._unpruned[i]) - ctx.tokens(i) for i in self._unpruned
        )

    def _pruned_ids(self, ctx: ReplayContext, index: int) -> set[str] | None:
        if index not in self._unpruned:
            return None
        return {
            b.tool_id
            for b in ctx.message(index).blocks
            if b.kind is BlockKind.TOOL_RESULT and b.text == rules.PRUNE_MARKER
        } or {""}

    # --- compaction ---------------------------------------------------------------------
    def _compact(
        self, ctx: ReplayContext, *, total: int, pruned_total: int, threshold: float
    ) -> None:
        view_rows = self._view_rows(ctx)
        request_rows = rules.compaction_request(view_rows)
        compacted = list(ctx.live)
        request = SummaryRequest(
            strategy=self.name,
            system=ctx.system_text,
            messages=tuple(_prompt(m) for m in request_rows if m.role != "system"),
            max_output_tokens=int(self.params["compaction_max_tokens"]),
            style="sections",
            sections=SECTIONS,
            material=tuple(
                MaterialItem(m.role, _prompt(m).text, m.src if m.src is not None else -1)
                for m in view_rows
                if m.role != "system"
            ),
            previous_summary=ctx.summary,
        )
        record = ctx.summarize(request, messages=compacted)
        summary = record.output if not record.error else ""
        if not summary:
            ctx.emit(
                "summary_failed",
                messages=compacted,
                summary_id=record.id,
                error=record.error or "empty response",
                outcome="messages sent unchanged (pruned view)",
                estimate=pruned_total,
                threshold=threshold,
            )
            return
        rendered = rules.SUMMARY_PREFIX + summary
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact", reason="checkpoint summary replaced the whole history",
            estimate=total, pruned_estimate=pruned_total, threshold=threshold,
        ) as act:  # fmt: skip
            act.remove(compacted, Fate.SUMMARISED)
            self._summary_msg = BaseMsg("user", rendered)
            ctx.set_summary(
                summary,
                tokens=rules.estimate_message_tokens(self._summary_msg),
                rendered=rendered,
                summary_id=record.id,
            )
            act.summary_id = record.id
        self._unpruned.clear()
        self._prune_delta = 0
        check_summary_size(
            ctx,
            summary_rendered=rendered,
            replaced=compacted,
            summary_id=record.id,
            previous_ref=previous_ref,
        )

    def _view_rows(self, ctx: ReplayContext) -> list[BaseMsg]:
        rows: list[BaseMsg] = []
        if ctx.system_index is not None:
            rows.append(BaseMsg("system", ctx.system_text, src=ctx.system_index))
        if self._summary_msg is not None:
            rows.append(self._summary_msg)
        for i in ctx.live:
            rows.extend(rules.to_base(i, ctx.message(i)))
        return rows


def _placeholder(message: Message, tool_ids: set[str]) -> Message:
    blocks = tuple(
        replace(b, text=rules.PRUNE_MARKER, parts=())
        if b.kind is BlockKind.TOOL_RESULT and b.tool_id in tool_ids
        else b
        for b in message.blocks
    )
    return replace(message, blocks=blocks)


def _prompt(m: BaseMsg) -> PromptMessage:
    body = m.content if isinstance(m.content, str) else "\n".join(t for _, t in m.parts)
    calls = "".join(f"\n[tool_call {tc.name}] {tc.arguments}" for tc in m.tool_calls)
    return PromptMessage(m.role, (body or "") + calls)


STRATEGY = BaseAgentStrategy
