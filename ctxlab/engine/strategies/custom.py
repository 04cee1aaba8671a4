"""A user-composed strategy: the shared stages chained under one trigger.

``stages`` is a JSON list run in order, e.g.::

    [{"stage": "truncate_tool_results", "max_bytes": 3000, "keep_recent": 2},
     {"stage": "drop_oldest_turns", "keep_turns": 4},
     {"stage": "summarise", "keep_tokens": 8000}]

``truncate_tool_results`` runs after each tool result (QwenPaw's byte cut + notice; the
full text is offloaded). The other stages run before each call, in order, only while the
request is ``>= window x threshold_ratio``: ``drop_oldest_turns`` drops whole user turns
(oldest first) down to ``keep_turns``; ``summarise`` summarises everything before the
largest tool-aligned suffix within ``keep_tokens`` (structured EN prompt; on failure the
prefix is dropped).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..context import has_tool_result, is_user_query
from ..findings import check_summary_size
from ..model import BlockKind, Message
from ..params import Param
from ..records import Fate
from ..stages import agentscope, prompts
from ..stages.markers import QWENPAW_MARKER, qwenpaw_retruncate, qwenpaw_truncate_fresh
from ..stages.split import largest_aligned_suffix
from ..summarizers import MaterialItem, PromptMessage, SummaryRequest
from .base import Strategy

if TYPE_CHECKING:
    from ..context import ReplayContext

STAGES: dict[str, dict[str, Any]] = {
    "truncate_tool_results": {"max_bytes": 3000, "keep_recent": 2},
    "drop_oldest_turns": {"keep_turns": 4},
    "summarise": {"keep_tokens": 8000},
}
ESTIMATORS = ("bytes/4 half-up", "bytes//4", "chars//4")


class Custom(Strategy):
    name = "custom"
    label = "Custom (composed stages)"
    description = "Chain truncate / drop-turns / summarise stages under one threshold."
    estimator = "configurable"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("window", 131072, "Model window in tokens.", "int", min=1024, max=10_000_000),
        Param("threshold_ratio", 0.8, "Compaction stages run while the request is >= "
              "window x ratio.", "float", min=0.05, max=1.0),
        Param("token_estimator", "bytes/4 half-up", "Token estimate per block.", "str",
              choices=ESTIMATORS),
        Param("stages", [{"stage": "summarise", "keep_tokens": 8000}], "Ordered stage list "
              "(JSON); stages: " + ", ".join(STAGES), "list"),
    )  # fmt: skip

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(params)
        self.stages: list[dict[str, Any]] = []
        for raw in self.params["stages"]:
            if not isinstance(raw, dict) or raw.get("stage") not in STAGES:
                raise ValueError(f"stages: unknown stage {raw!r} (known: {', '.join(STAGES)})")
            defaults = STAGES[raw["stage"]]
            unknown = set(raw) - {"stage", *defaults}
            if unknown:
                raise ValueError(f"stages: {raw['stage']} has no option {sorted(unknown)[0]!r}")
            self.stages.append({**defaults, **raw})
        self.estimator = str(self.params["token_estimator"])  # type: ignore[misc]

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        mode = self.params["token_estimator"]
        if mode == "chars//4":
            return len(text) // 4
        n = len(text.encode("utf-8"))
        return n // 4 if mode == "bytes//4" else int(n / 4 + 0.5)

    def count_message(self, message: Message) -> int:
        return agentscope.message_tokens(message, self.count_text)

    def window(self, ctx: ReplayContext) -> int:
        return int(self.params["window"])

    def threshold(self, ctx: ReplayContext) -> int:
        return int(self.params["window"] * self.params["threshold_ratio"])

    def prepare(self, ctx: ReplayContext) -> None:
        self.tool_names: dict[str, str] = {}
        self.done_upto = -1

    def after_append(self, ctx: ReplayContext, index: int) -> None:
        msg = ctx.message(index)
        for b in msg.blocks:
            if b.kind is BlockKind.TOOL_USE:
                self.tool_names[b.tool_id] = b.tool_name
        if has_tool_result(msg):
            for stage in self.stages:
                if stage["stage"] == "truncate_tool_results":
                    self._truncate(ctx, stage)

    def before_call(self, ctx: ReplayContext) -> None:
        for stage in self.stages:
            if ctx.request_tokens() < self.threshold(ctx):
                return
            if stage["stage"] == "drop_oldest_turns":
                self._drop_turns(ctx, int(stage["keep_turns"]))
            elif stage["stage"] == "summarise":
                self._summarise(ctx, int(stage["keep_tokens"]))

    def _truncate(self, ctx: ReplayContext, stage: dict[str, Any]) -> None:
        live = ctx.live
        split = max(0, len(live) - int(stage["keep_recent"]))
        limit = int(stage["max_bytes"])
        changed: list[tuple[int, Message, str, str]] = []
        for i in live[:split]:
            if i < self.done_upto:
                continue
            msg = ctx.message(i)
            blocks = list(msg.blocks)
            path = full = ""
            for bi, b in enumerate(blocks):
                if b.kind is not BlockKind.TOOL_RESULT or not b.text:
                    continue
                if QWENPAW_MARKER in b.text:
                    new = qwenpaw_retruncate(b.text, max_bytes=limit)
                elif len(b.text.encode("utf-8")) > limit:
                    digest = hashlib.sha1(f"custom:{i}:{bi}".encode()).hexdigest()[:32]
                    path, full = f"tool_results/{digest}.txt", b.text
                    new = qwenpaw_truncate_fresh(
                        b.text, max_bytes=limit, start_line=1,
                        total_lines=b.text.count("\n") + 1, path=path,
                    )  # fmt: skip
                else:
                    continue
                blocks[bi] = replace(b, text=new, parts=())
            if blocks != list(msg.blocks):
                changed.append((i, replace(msg, blocks=tuple(blocks)), path, full))
        if split:
            self.done_upto = live[split - 1] + 1
        if changed:
            with ctx.action(
                "truncate", reason=f"tool result over {limit} bytes", max_bytes=limit
            ) as act:
                for i, new_msg, path, full in changed:
                    fate = Fate.OFFLOADED if path else Fate.TRUNCATED
                    act.replace(i, new_msg, fate, offload_path=path, offload_text=full or None)

    def _drop_turns(self, ctx: ReplayContext, keep_turns: int) -> None:
        starts = [pos for pos, i in enumerate(ctx.live) if is_user_query(ctx.message(i))]
        if len(starts) <= keep_turns:
            return
        cut = starts[len(starts) - keep_turns] if keep_turns > 0 else len(ctx.live)
        with ctx.action(
            "drop", reason=f"kept the last {keep_turns} turns", keep_turns=keep_turns
        ) as act:
            act.remove(ctx.live[:cut], Fate.DROPPED)

    def _summarise(self, ctx: ReplayContext, keep_tokens: int) -> None:
        keep, _ = largest_aligned_suffix(ctx, keep_tokens)
        prefix = ctx.live[: len(ctx.live) - keep]
        if not prefix:
            return
        history = "\n\n".join(
            agentscope.format_message(ctx.message(i), style="qwenpaw", include_thinking=False,
                                      tool_names=self.tool_names)
            for i in prefix
        )  # fmt: skip
        previous = ctx.summary
        body = f"# conversation\n{history}\n\n"
        if previous:
            body += f"# previous-summary\n{previous}\n\n{prompts.QWENPAW_UPDATE['en']}"
        else:
            body += prompts.QWENPAW_INITIAL["en"]
        request = SummaryRequest(
            strategy=self.name, system=prompts.COMPACTOR_SYSTEM["en"],
            messages=(PromptMessage("user", body),), style="sections",
            sections=prompts.SECTIONS["en"], previous_summary=previous,
            material=tuple(MaterialItem(ctx.message(i).role.value, ctx.message(i).text, i)
                           for i in prefix),
        )  # fmt: skip
        record = ctx.summarize(request, messages=prefix)
        if record.error or not record.output.strip():
            ctx.emit(
                "summary_failed",
                messages=prefix,
                summary_id=record.id,
                reason=record.error or "empty",
            )
            with ctx.action("drop", reason="summary failed") as act:
                act.remove(prefix, Fate.DROPPED)
            return
        previous_ref = ctx.summary_ref
        with ctx.action(
            "summarise", reason="summarised the prefix", keep_tokens=keep_tokens
        ) as act:
            act.remove(prefix, Fate.SUMMARISED)
            ctx.set_summary(record.output, tokens=self.count_text(record.output),
                            rendered=record.output, summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
        check_summary_size(ctx, summary_rendered=record.output, replaced=prefix,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip


STRATEGY = Custom
