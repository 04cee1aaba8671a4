"""A user-composed strategy: the shared stages chained under one trigger.

``stages`` is a JSON list run in order, e.g.::

    [{"stage": "truncate_tool_results", "max_bytes": 3000, "keep_recent": 2},
     {"stage": "prune_tool_outputs", "protect_tokens": 40000},
     {"stage": "drop_oldest_turns", "keep_turns": 4},
     {"stage": "summarise", "keep_tokens": 8000}]

Omitted options take the defaults in ``STAGES``; an unknown stage or option, or a value
of the wrong type or out of range, raises ValueError naming the stage and option.

Tool-result stages run after each tool result, on every message but the newest
``keep_recent`` live ones:

- ``truncate_tool_results`` {max_bytes, keep_recent}: QwenPaw's byte cut + continuation
  notice; the full text is *offloaded* (``ReplayResult.offloads``, Fate.OFFLOADED) and the
  notice names that file. An already-cut text is re-cut (QwenPaw ``_retruncate``).
- ``offload_tool_results`` {max_bytes, keep_recent}: a result over ``max_bytes`` is
  replaced whole by a one-line notice naming the offloaded file (no head kept).

The other stages run before each call, in order, only while the request is
``>= window x threshold_ratio`` (checked again before each stage):

- ``prune_tool_outputs`` {protect_turns, protect_tokens, minimum_tokens, placeholder}:
  OpenCode's prune walk (``stages.prune``): newest first, the newest ``protect_turns``
  user turns skipped, tool outputs summed with this strategy's estimator; past
  ``protect_tokens`` older outputs are marked, and replaced by ``placeholder`` only if
  the marked total is strictly more than ``minimum_tokens``. The walk stops at an output
  this strategy already cleared.
- ``clear_tool_results`` {keep, placeholder}: every tool result but the newest ``keep``
  becomes ``placeholder`` (Anthropic context editing's ``clear_tool_uses`` / LangChain's
  ``ClearToolUsesEdit``, but persisted, not a per-request view).
- ``drop_oldest_turns`` {keep_turns}: drops whole user turns (oldest first) down to
  ``keep_turns``.
- ``summarise`` {keep_tokens}: summarises everything before the largest tool-aligned
  suffix within ``keep_tokens`` (structured EN prompt; on failure the prefix is dropped).

One stage acts on no message itself but gates the ``summarise`` stages of the list
(wherever it stands; at most one, and only with a ``summarise`` stage):

- ``summary_gate`` {min_score, max_questions, on_reject}: the summary quality gate
  (``stages.summary_gate``): questions from the facts of the span being summarised,
  answered from the summary by the survival rule; below ``min_score`` (0..1) the summary
  is rejected and ``on_reject`` decides: ``accept_with_appendix`` (the missed facts
  appended verbatim to the summary), ``retry`` (asked once more with the missed facts as
  "must keep"; rejected again, the original is kept) or ``keep_original`` (not compacted
  this time; later stages of the list still run). Each decision is an event
  (``summary_checked`` / ``summary_rejected``) on the step.

Pruned and cleared outputs are persisted replacements of the message version
(Fate.PRUNED); the replay context keeps the original.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from ..core.tool_pairs import has_tool_result, is_user_query
from ..stages import agentscope, prompts, summary_gate
from ..stages.markers import QWENPAW_MARKER, qwenpaw_retruncate, qwenpaw_truncate_fresh
from ..stages.prune import clear_blocks, scan_tool_outputs
from ..stages.split import largest_aligned_suffix

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..core.records import SummaryRecord


@dataclass(frozen=True)
class Option:
    """One stage option: its default (int, float or non-empty str), for numbers the minimum
    (and maximum, if any), for strings the choices (if any)."""

    default: int | float | str
    help: str
    minimum: int | float = 0
    maximum: int | float | None = None
    choices: tuple[str, ...] = ()

    def check(self, stage: str, name: str, value: Any) -> None:
        where = f"stages: {stage} option {name!r}"
        if isinstance(self.default, str):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{where} must be a non-empty string (got {value!r})")
            if self.choices and value not in self.choices:
                raise ValueError(
                    f"{where} must be one of {', '.join(self.choices)} (got {value!r})"
                )
            return
        if isinstance(self.default, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{where} must be a number (got {value!r})")
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(f"{where} must be a finite number (got {value})")
        elif isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where} must be an integer (got {value!r})")
        if value < self.minimum:
            raise ValueError(f"{where} must be >= {self.minimum} (got {value})")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{where} must be <= {self.maximum} (got {value})")


@dataclass(frozen=True)
class StageSpec:
    help: str
    options: dict[str, Option]
    on_tool_result: bool = False  # runs after each tool result, not before a call
    gate: bool = False  # acts on no message: checks what the summarise stages write


_MAX_BYTES = Option(3000, "Tool results longer than this many UTF-8 bytes are cut.", 1)
_KEEP_RECENT = Option(2, "The newest live messages left untouched.")
STAGES: dict[str, StageSpec] = {
    "truncate_tool_results": StageSpec(
        "Cut long tool results to a head + notice; the full text is offloaded to a file.",
        {"max_bytes": _MAX_BYTES, "keep_recent": _KEEP_RECENT},
        on_tool_result=True,
    ),
    "offload_tool_results": StageSpec(
        "Replace long tool results by a notice naming the offloaded file (no head kept).",
        {"max_bytes": _MAX_BYTES, "keep_recent": _KEEP_RECENT},
        on_tool_result=True,
    ),
    "prune_tool_outputs": StageSpec(
        "OpenCode-style prune: tool outputs older than the protected budget become a "
        "placeholder, if enough would be cleared.",
        {
            "protect_turns": Option(2, "Newest user turns whose tool outputs are kept."),
            "protect_tokens": Option(40000, "Newest tool-output tokens kept."),
            "minimum_tokens": Option(20000, "Prune only if strictly more would be cleared."),
            "placeholder": Option("[Old tool result content cleared]", "Replacement text."),
        },
    ),
    "clear_tool_results": StageSpec(
        "Replace every tool result but the newest few by a placeholder.",
        {
            "keep": Option(3, "Newest tool results kept."),
            "placeholder": Option("[cleared]", "Replacement text."),
        },
    ),
    "drop_oldest_turns": StageSpec(
        "Drop whole user turns, oldest first.",
        {"keep_turns": Option(4, "User turns kept.")},
    ),
    "summarise": StageSpec(
        "Summarise everything before the newest tool-aligned messages.",
        {"keep_tokens": Option(8000, "Tokens of recent messages kept verbatim.")},
    ),
    "summary_gate": StageSpec(
        "Check each summary against the facts of what it replaces; reject it below a score.",
        {
            "min_score": Option(
                summary_gate.MIN_SCORE,
                "Share (0..1) of the asked facts the summary must keep.",
                0.0,
                1.0,
            ),
            "max_questions": Option(
                summary_gate.MAX_QUESTIONS,
                "Facts asked at most per summary (fewer than 2: no opinion).",
                summary_gate.MIN_QUESTIONS,
                200,
            ),
            "on_reject": Option(
                summary_gate.ON_REJECT[0],
                "accept_with_appendix: append the missed facts; retry: ask once more with "
                "them as must-keep (rejected again: keep the original); keep_original: do "
                "not compact this time.",
                choices=summary_gate.ON_REJECT,
            ),
        },
        gate=True,
    ),
}
# (text, max_bytes, message index, block position) -> (new text, offload path, offloaded
# text), or None to leave the block alone.
Rewrite = Callable[[str, int, int, int], tuple[str, str, str] | None]
ESTIMATORS = ("bytes/4 half-up", "bytes//4", "chars//4")
OFFLOAD_PREFIX = "[Tool result offloaded to "
OFFLOAD_NOTICE = OFFLOAD_PREFIX + "{path}: {size} bytes, {lines} lines; read the file for it.]"


def check_stages(stages: Any) -> list[dict[str, Any]]:
    """The stage list with every option filled in; ValueError naming the stage and option
    for an unknown stage or option or a bad value."""
    if not isinstance(stages, list):
        raise ValueError(f"stages: expected a JSON list of stages (got {stages!r})")
    out: list[dict[str, Any]] = []
    for raw in stages:
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("stage"), str)
            or raw["stage"] not in STAGES
        ):
            raise ValueError(f"stages: unknown stage {raw!r} (known: {', '.join(STAGES)})")
        name = raw["stage"]
        options = STAGES[name].options
        unknown = sorted(set(raw) - {"stage", *options})
        if unknown:
            raise ValueError(
                f"stages: {name} has no option {unknown[0]!r} (options: {', '.join(options)})"
            )
        for key, option in options.items():
            if key in raw:
                option.check(name, key, raw[key])
        out.append({"stage": name, **{k: o.default for k, o in options.items()}, **raw})
    gates = [s for s in out if STAGES[s["stage"]].gate]
    if len(gates) > 1:
        raise ValueError("stages: at most one summary_gate")
    if gates and not any(s["stage"] == "summarise" for s in out):
        raise ValueError("stages: summary_gate needs a summarise stage to check")
    return out


@dataclass(slots=True)
class _State:
    tool_names: dict[str, str] = field(default_factory=dict)
    # stage position -> first index not yet scanned
    done_upto: dict[int, int] = field(default_factory=dict)
    cleared: set[tuple[int, int]] = field(default_factory=set)  # (index, block) pruned/cleared


class Custom(Strategy):
    name = "custom"
    State = _State
    label = "Custom (composed stages)"
    description = (
        "Chain truncate / offload / prune / clear / drop-turns / summarise stages under one "
        "threshold."
    )
    estimator = "configurable"
    WINDOW = "window"
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
        self.stages = check_stages(self.params["stages"])
        self.gate = next((s for s in self.stages if STAGES[s["stage"]].gate), None)
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

    def window(self, ctx: ContextView) -> int:
        return int(self.params["window"])

    def threshold(self, ctx: ContextView) -> int:
        return int(self.params["window"] * self.params["threshold_ratio"])

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.message(index)
        for b in msg.blocks:
            if b.kind is BlockKind.TOOL_USE:
                st.tool_names[b.tool_id] = b.tool_name
        if has_tool_result(msg):
            for slot, stage in enumerate(self.stages):
                if stage["stage"] == "truncate_tool_results":
                    self._cut(ctx, slot, stage, "truncate", self._truncated)
                elif stage["stage"] == "offload_tool_results":
                    self._cut(ctx, slot, stage, "offload", self._offloaded)

    def before_call(self, ctx: ContextView) -> None:
        for stage in self.stages:
            spec = STAGES[stage["stage"]]
            if spec.on_tool_result or spec.gate:
                continue
            if ctx.request_tokens() < self.threshold(ctx):
                return
            kind = stage["stage"]
            if kind == "drop_oldest_turns":
                self._drop_turns(ctx, int(stage["keep_turns"]))
            elif kind == "summarise":
                self._summarise(ctx, int(stage["keep_tokens"]))
            elif kind == "prune_tool_outputs":
                self._prune(ctx, stage)
            elif kind == "clear_tool_results":
                self._clear_old(ctx, stage)

    # --- tool-result stages: truncate / offload ---------------------------------------
    def _cut(
        self, ctx: ContextView, slot: int, stage: dict[str, Any], kind: str, rewrite: Rewrite
    ) -> None:
        """Rewrite the tool results of live messages older than the newest ``keep_recent``
        (each message once per stage, except re-cuts); ``rewrite`` gives (text, offload
        path, offloaded text) or None to leave a block alone."""
        st: _State = ctx.state
        live = ctx.live
        split = max(0, len(live) - int(stage["keep_recent"]))
        limit = int(stage["max_bytes"])
        changed: list[tuple[int, Message, str, str]] = []
        for i in live[:split]:
            if i < st.done_upto.get(slot, -1):
                continue
            msg = ctx.message(i)
            blocks = list(msg.blocks)
            path = full = ""
            for bi, b in enumerate(blocks):
                if b.kind is not BlockKind.TOOL_RESULT or not b.text:
                    continue
                out = rewrite(b.text, limit, i, bi)
                if out is None:
                    continue
                new, new_path, new_full = out
                if new_path:
                    path, full = new_path, new_full
                blocks[bi] = replace(b, text=new, parts=())
            if blocks != list(msg.blocks):
                changed.append((i, replace(msg, blocks=tuple(blocks)), path, full))
        if split:
            st.done_upto[slot] = live[split - 1] + 1
        if changed:
            with ctx.action(kind, reason=f"tool result over {limit} bytes", max_bytes=limit) as act:
                for i, new_msg, path, full in changed:
                    fate = Fate.OFFLOADED if path else Fate.TRUNCATED
                    act.replace(i, new_msg, fate, offload_path=path, offload_text=full or None)

    @staticmethod
    def _truncated(text: str, limit: int, i: int, bi: int) -> tuple[str, str, str] | None:
        if QWENPAW_MARKER in text:
            return qwenpaw_retruncate(text, max_bytes=limit), "", ""
        if len(text.encode("utf-8")) <= limit:
            return None
        digest = hashlib.sha1(f"custom:{i}:{bi}".encode()).hexdigest()[:32]
        path = f"tool_results/{digest}.txt"
        new = qwenpaw_truncate_fresh(
            text, max_bytes=limit, start_line=1, total_lines=text.count("\n") + 1, path=path
        )
        return new, path, text

    @staticmethod
    def _offloaded(text: str, limit: int, i: int, bi: int) -> tuple[str, str, str] | None:
        size = len(text.encode("utf-8"))
        if size <= limit or text.startswith(OFFLOAD_PREFIX):  # never offload a notice
            return None
        digest = hashlib.sha1(f"custom-offload:{i}:{bi}".encode()).hexdigest()[:32]
        path = f"tool_results/{digest}.txt"
        notice = OFFLOAD_NOTICE.format(path=path, size=size, lines=text.count("\n") + 1)
        return notice, path, text

    # --- before-call stages -----------------------------------------------------------
    def _prune(self, ctx: ContextView, stage: dict[str, Any]) -> None:
        st: _State = ctx.state
        protect, minimum = int(stage["protect_tokens"]), int(stage["minimum_tokens"])
        found = scan_tool_outputs(
            ctx,
            protect_turns=int(stage["protect_turns"]),
            protect_tokens=protect,
            count=self.count_text,
            stop=lambda index, pos, _b: (index, pos) in st.cleared,
        )
        if found.pruned <= minimum or not found.queued:
            return
        self._clear_parts(
            ctx, "prune", found.by_message(), str(stage["placeholder"]),
            reason=f"tool outputs past the newest {protect} tokens",
            scanned_tokens=found.total, pruned_tokens=found.pruned, parts=len(found.queued),
            protect_tokens=protect, minimum_tokens=minimum,
        )  # fmt: skip

    def _clear_old(self, ctx: ContextView, stage: dict[str, Any]) -> None:
        st: _State = ctx.state
        placeholder, keep = str(stage["placeholder"]), int(stage["keep"])
        parts = [
            (i, pos)
            for i in ctx.live
            for pos, b in enumerate(ctx.message(i).blocks)
            if b.kind is BlockKind.TOOL_RESULT and (i, pos) not in st.cleared
        ]
        old = parts[: max(0, len(parts) - keep)]
        if not old:
            return
        by_message: dict[int, set[int]] = {}
        for i, pos in old:
            by_message.setdefault(i, set()).add(pos)
        self._clear_parts(ctx, "clear_tool_uses", by_message, placeholder,
                          reason=f"kept the newest {keep} tool results", keep=keep,
                          parts=len(old))  # fmt: skip

    def _clear_parts(
        self,
        ctx: ContextView,
        kind: str,
        by_message: dict[int, set[int]],
        placeholder: str,
        *,
        reason: str,
        **detail: Any,
    ) -> None:
        """Persist the placeholder over the given tool outputs (one action, Fate.PRUNED)."""
        st: _State = ctx.state
        with ctx.action(kind, reason=reason, **detail) as act:
            for index in sorted(by_message, reverse=True):
                positions = by_message[index]
                st.cleared.update((index, pos) for pos in positions)
                new = clear_blocks(ctx.message(index), positions, placeholder)
                act.replace(index, new, Fate.PRUNED)

    def _drop_turns(self, ctx: ContextView, keep_turns: int) -> None:
        starts = [pos for pos, i in enumerate(ctx.live) if is_user_query(ctx.message(i))]
        if len(starts) <= keep_turns:
            return
        cut = starts[len(starts) - keep_turns] if keep_turns > 0 else len(ctx.live)
        with ctx.action(
            "drop", reason=f"kept the last {keep_turns} turns", keep_turns=keep_turns
        ) as act:
            act.remove(ctx.live[:cut], Fate.DROPPED)

    def _summarise(self, ctx: ContextView, keep_tokens: int) -> None:
        st: _State = ctx.state
        keep, _ = largest_aligned_suffix(ctx, keep_tokens)
        prefix = ctx.live[: len(ctx.live) - keep]
        if not prefix:
            return
        history = "\n\n".join(
            agentscope.format_message(ctx.message(i), style="qwenpaw", include_thinking=False,
                                      tool_names=st.tool_names)
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
        if self.gate is not None:
            checked = self._gated(ctx, request, record, prefix, self.gate)
            if checked is None:
                return  # the gate kept the original messages
            record = checked
        output = record.output
        previous_ref = ctx.summary_ref
        with ctx.action(
            "summarise", reason="summarised the prefix", keep_tokens=keep_tokens
        ) as act:
            act.remove(prefix, Fate.SUMMARISED)
            ctx.set_summary(output, tokens=self.count_text(output),
                            rendered=output, summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
        check_summary_size(ctx, summary_rendered=output, replaced=prefix,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip

    # --- the summary quality gate -------------------------------------------------------
    def _gated(
        self,
        ctx: ContextView,
        request: SummaryRequest,
        record: SummaryRecord,
        prefix: list[int],
        gate: dict[str, Any],
    ) -> SummaryRecord | None:
        """The summary record to apply after the gate (the retried one, or the first with
        the missed facts appended), or None to keep the original messages this time."""
        kept = ctx.live[len(prefix) :]
        questions = summary_gate.ask(
            [(i, ctx.message(i)) for i in prefix],
            (ctx.message(i) for i in kept),
            int(gate["max_questions"]),
        )
        min_score = float(gate["min_score"])
        verdict = summary_gate.judge(questions, record.output, min_score)
        if verdict.score is None:
            return record  # too few questions: no opinion
        on_reject = str(gate["on_reject"])
        if verdict.passed:
            self._gate_event(ctx, "summary_checked", verdict, record, prefix, on_reject)
            return record
        if on_reject == "keep_original":
            self._gate_event(ctx, "summary_rejected", verdict, record, prefix, on_reject,
                             outcome="original messages kept: not compacted this time")  # fmt: skip
            return None
        if on_reject == "accept_with_appendix":
            summary_gate.append_to(record, summary_gate.appendix(verdict.missed))
            self._gate_event(ctx, "summary_rejected", verdict, record, prefix, on_reject,
                             outcome=f"the {len(verdict.missed)} missed facts appended "
                             "verbatim to the summary")  # fmt: skip
            return record
        self._gate_event(ctx, "summary_rejected", verdict, record, prefix, on_reject,
                         outcome=f"asked again with the {len(verdict.missed)} missed facts "
                         "as must-keep")  # fmt: skip
        *head, last = request.messages
        again = replace(
            request,
            messages=(
                *head,
                PromptMessage(
                    last.role, f"{last.text}\n\n{summary_gate.must_keep(verdict.missed)}"
                ),
            ),
        )
        retried = ctx.summarize(again, messages=prefix)
        if retried.error or not retried.output.strip():
            ctx.emit("summary_failed", messages=prefix, summary_id=retried.id,
                     reason=retried.error or "empty",
                     outcome="the gate's retry failed: original messages kept")  # fmt: skip
            return None
        second = summary_gate.judge(questions, retried.output, min_score)
        if second.passed:
            self._gate_event(ctx, "summary_checked", second, retried, prefix, on_reject,
                             retry=True)  # fmt: skip
            return retried
        self._gate_event(ctx, "summary_rejected", second, retried, prefix, on_reject, retry=True,
                         outcome="rejected again: original messages kept, not compacted "
                         "this time")  # fmt: skip
        return None

    @staticmethod
    def _gate_event(
        ctx: ContextView,
        kind: str,
        verdict: summary_gate.Verdict,
        record: SummaryRecord,
        prefix: list[int],
        on_reject: str,
        **extra: Any,
    ) -> None:
        ctx.emit(kind, messages=prefix, summary_id=record.id, reason=verdict.words(),
                 **verdict.detail(), on_reject=on_reject, **extra)  # fmt: skip


STRATEGY = Custom
