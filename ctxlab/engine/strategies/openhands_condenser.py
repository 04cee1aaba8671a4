"""OpenHands condensers: LLMSummarizing, ObservationMasking, Recent, AmortizedForgetting.

Pinned sources (github.com/All-Hands-AI/OpenHands @ 156d0686c46aafb0fa9d291da6421fb6f64dddc0):

- ``openhands/memory/condenser/impl/*.py`` and ``openhands/memory/view.py``: the
  arithmetic and the summary prompt, kept in ``_openhands_condenser_rules.py``.
- ``openhands/core/config/condenser_config.py``: the config types (``llm``,
  ``observation_masking``, ``recent``, ``amortized``) and their defaults.
- ``openhands/server/session/session.py``: the default condenser of the app,
  ``LLMSummarizingCondenserConfig(keep_first=4, max_size=condenser_max_size or 120)``
  (after a conversation-window and a browser-output condenser, not modelled).
- ``openhands/memory/conversation_memory.py``: an ``AgentCondensationObservation``
  (a summary, a ``<MASKED>`` observation) reaches the model as a user text message; in
  function-calling mode an action's tool-call message is only sent once every call of the
  response has its observation.
- ``tests/unit/memory/condenser/test_condenser.py``: ported in
  tests/engine/strategies/test_openhands_condenser.py.

Readings (documented in docs/strategies/openhands_condenser.md):

- One event per ctxlab message; the system prompt is the view's first event (OpenHands
  puts a ``SystemMessageAction`` first). The replay never forgets it (keep_first = 0 would
  in the original).
- Rolling condensers condense at the step before a model call when the view is longer
  than ``max_size``; the original spends that agent step returning the
  ``CondensationAction`` and calls the model at the next step with the condensed view,
  which the replay shows at the same request.
- ObservationMasking: a masked observation becomes the user text ``<MASKED>``; the
  assistant message whose tool call it answered is left out of the request too
  (ConversationMemory never sends an unanswered call).
- Estimator: condensers count events, never tokens; the curves use the lab's cl100k
  reference counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from . import _openhands_condenser_rules as rules

if TYPE_CHECKING:
    from ..core.context_view import ContextView

SYSTEM = -1  # the system prompt's place in a view
SUMMARY = -2  # the summary observation's place in a view
CONDENSERS = ("llm", "observation_masking", "recent", "amortized")
_CFG = "condenser_config.py"

SECTIONS = (
    Section("USER_CONTEXT:", "goal"),
    Section("TASK_TRACKING:", "in_progress"),
    Section("COMPLETED:", "done"),
    Section("PENDING:", "next"),
    Section("CURRENT_STATE:", "note"),
    Section("CODE_STATE:", "critical"),
    Section("TESTS:", "blocked"),
    Section("CHANGES:", "decisions"),
    Section("DEPS:", "constraints"),
    Section("VERSION_CONTROL_STATUS:", "none"),
)


def event_text(message: Message) -> str:
    """``str(event)`` as the prompt shows it. Reading: OpenHands prints each event class
    its own way (``**CmdRunAction (source=...)**``); the replay prints the role and the
    message's text, tool calls as name + JSON input."""
    parts = []
    for block in message.blocks:
        if block.kind is BlockKind.TOOL_USE:
            parts.append(f"{block.tool_name} {json.dumps(block.tool_input, ensure_ascii=False)}")
        elif block.text:
            parts.append(block.text)
    head = {
        Role.ASSISTANT: "**AgentAction (source=EventSource.AGENT)**",
        Role.USER: "**MessageAction (source=EventSource.USER)**",
    }.get(message.role, "**Observation**")
    if any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks):
        head = "**Observation (source=EventSource.ENVIRONMENT)**"
    return head + "\n" + "\n".join(parts)


@dataclass(slots=True)
class _State:
    summary_offset: int | None = None  # where the latest summary sits in the view
    summary: str = ""
    masked: set[int] = field(default_factory=set)
    call_owner: dict[str, int] = field(default_factory=dict)  # tool_id -> assistant index


class OpenHandsCondenserStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "openhands_condenser"
    label: ClassVar[str] = "OpenHands condensers (LLMSummarizing default, 2025)"
    description: ClassVar[str] = (
        "OpenHands' memory condensers, one chosen by `condenser`: LLMSummarizing (the app "
        "default: when the view passes max_size=120 events, keep the first 4 and the newest "
        "so the view is half, the rest summarised into one observation at offset keep_first), "
        "AmortizedForgetting (the same cut, nothing summarised), Recent (first + newest "
        "events only) and ObservationMasking (observations outside the last "
        "attention_window events replaced by <MASKED>)."
    )
    estimator: ClassVar[str] = "reference cl100k counts per message (condensers count events)"
    WINDOW = "context_window"
    State: ClassVar[type[Any]] = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "condenser",
            "llm",
            "Which condenser: llm (LLMSummarizing), observation_masking, recent, amortized "
            "(AmortizedForgetting).",
            "str",
            choices=CONDENSERS,
            origin=f"{_CFG} CondenserConfig.type",
        ),
        Param(
            "max_size",
            120,
            "llm/amortized: condense when the view holds more events than this; the view "
            "is cut to max_size // 2.",
            min=1,
            origin="session.py condenser_max_size or 120 (config default 100)",
        ),
        Param(
            "keep_first",
            4,
            "Events at the start always kept (the system message, the task ...); must be "
            "less than max_size // 2 for llm/amortized.",
            min=0,
            origin="session.py keep_first=4 (config default 1)",
        ),
        Param(
            "max_event_length",
            10_000,
            "llm: characters of one event (and the previous summary) in the summary "
            "prompt; longer ones lose their middle.",
            min=1,
            origin=f"{_CFG} LLMSummarizingCondenserConfig.max_event_length",
        ),
        Param(
            "attention_window",
            100,
            "observation_masking: observations among the last this many events keep their content.",
            min=0,
            origin=f"{_CFG} ObservationMaskingCondenserConfig.attention_window",
        ),
        Param(
            "max_events",
            100,
            "recent: events in the view (keep_first of them from the start).",
            min=1,
            origin=f"{_CFG} RecentEventsCondenserConfig.max_events",
        ),
        Param(
            "context_window",
            200_000,
            "Model context window (overflow is judged against it; condensers ignore it).",
            min=1_000,
            origin="model context window (Claude Sonnet 4)",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.kind = str(self.params["condenser"])
        self.keep_first = int(self.params["keep_first"])
        self.max_size = int(self.params["max_size"])
        if self.kind in ("llm", "amortized"):
            rules.check_rolling_config(self.max_size, self.keep_first)

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    # --- the view -------------------------------------------------------------------------
    def view(self, ctx: ContextView) -> list[int]:
        st: _State = ctx.state
        history = ([SYSTEM] if ctx.system_index is not None else []) + list(ctx.live)
        return rules.from_events(history, set(), st.summary_offset, SUMMARY)

    # --- hooks ----------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        for block in ctx.original(index).blocks:
            if block.kind is BlockKind.TOOL_USE and block.tool_id:
                st.call_owner.setdefault(block.tool_id, index)

    def before_call(self, ctx: ContextView) -> None:
        view = self.view(ctx)
        if self.kind == "observation_masking":
            self._mask(ctx, view)
        elif self.kind == "recent":
            self._recent(ctx, view)
        elif rules.should_condense(len(view), self.max_size):
            if self.kind == "llm":
                self._summarise(ctx, view)
            else:
                self._forget(ctx, view)

    def _crash(self, ctx: ContextView, view: list[int]) -> None:
        ctx.emit(
            "compact_failed",
            error="min() arg is an empty sequence",
            view_size=len(view),
            outcome="nothing to forget between the head and the tail: the original raises "
            "ValueError; the replay keeps the view and tries again at the next call",
        )

    def _forget(self, ctx: ContextView, view: list[int]) -> None:
        gone = [
            i for i in rules.amortized_forgotten(view, self.keep_first, self.max_size) if i >= 0
        ]
        if not gone:
            self._crash(ctx, view)
            return
        with ctx.action(
            "drop",
            reason=f"view of {len(view)} events over max_size {self.max_size}: cut to "
            f"{self.max_size // 2} (first {self.keep_first} + newest), nothing summarised",
            view_size=len(view),
            max_size=self.max_size,
            keep_first=self.keep_first,
        ) as act:
            act.remove(gone, Fate.DROPPED)

    def _recent(self, ctx: ContextView, view: list[int]) -> None:
        kept = set(rules.recent_view(view, self.keep_first, int(self.params["max_events"])))
        gone = [i for i in view if i >= 0 and i not in kept]
        if not gone:
            return
        with ctx.action(
            "drop",
            reason=f"outside the first {self.keep_first} and newest events "
            f"(max_events {self.params['max_events']})",
            view_size=len(view),
            max_events=int(self.params["max_events"]),
            keep_first=self.keep_first,
        ) as act:
            act.remove(gone, Fate.DROPPED)

    def _mask(self, ctx: ContextView, view: list[int]) -> None:
        st: _State = ctx.state
        window = int(self.params["attention_window"])
        new = [
            view[p]
            for p in rules.masked_positions(len(view), window)
            if view[p] >= 0 and view[p] not in st.masked and _observation(ctx.original(view[p]))
        ]
        if not new:
            return
        callers: set[int] = set()
        for i in new:
            st.masked.add(i)
            for block in ctx.original(i).blocks:
                owner = st.call_owner.get(block.tool_id) if block.tool_id else None
                if block.kind is BlockKind.TOOL_RESULT and owner is not None:
                    callers.add(owner)
        callers = {i for i in callers if ctx.alive[i]}
        with ctx.action(
            "prune",
            reason=f"observation outside the last {window} events masked",
            attention_window=window,
            view_size=len(view),
        ) as act:
            for i in new:
                masked = Message(Role.USER, (Block(BlockKind.TEXT, text=rules.MASKED),))
                act.replace(i, masked, Fate.PRUNED)
            act.remove(
                sorted(callers),
                Fate.DROPPED,
                reason="its tool call's observation is masked: never sent unanswered",
            )

    def _summarise(self, ctx: ContextView, view: list[int]) -> None:
        st: _State = ctx.state
        forgotten = rules.llm_summarizing_forgotten(view, self.keep_first, self.max_size, SUMMARY)
        gone = [i for i in forgotten if i >= 0]
        if not gone:
            self._crash(ctx, view)
            return
        record = ctx.summarize(self.summary_request(ctx, gone), messages=gone)
        if record.error:
            ctx.emit(
                "summary_failed",
                summary_id=record.id,
                error=record.error,
                outcome="the completion raises (the agent step errors); the replay keeps "
                "the view and tries again at the next call",
            )
            return
        previous_ref = ctx.summary_ref
        summary = record.output
        with ctx.action(
            "summarise",
            reason=f"view of {len(view)} events over max_size {self.max_size}: the events "
            f"between the first {self.keep_first} and the newest summarised (view cut to "
            f"{self.max_size // 2})",
            view_size=len(view),
            max_size=self.max_size,
            keep_first=self.keep_first,
            summary_offset=self.keep_first,
        ) as act:
            act.remove(gone, Fate.SUMMARISED)
            ctx.set_summary(
                summary,
                tokens=self.count_text(summary),
                rendered=summary,
                summary_id=record.id,
            )
            act.summary_id = record.id
        st.summary_offset = self.keep_first
        st.summary = summary
        check_summary_size(
            ctx,
            summary_rendered=summary,
            replaced=gone,
            summary_id=record.id,
            previous_ref=previous_ref,
        )

    def summary_request(self, ctx: ContextView, forgotten: list[int]) -> SummaryRequest:
        """The completion ``get_condensation`` makes: one user message, the prompt, the
        previous summary and each forgotten event, each cut to ``max_event_length``."""
        st: _State = ctx.state
        limit = int(self.params["max_event_length"])
        # Before the first condensation the original puts 'No events summarized' here.
        text = st.summary if st.summary_offset is not None else rules.NO_SUMMARY
        previous = rules.truncate_content(text, limit)
        prompt = rules.SUMMARY_PROMPT + "\n\n"
        prompt += f"<PREVIOUS SUMMARY>\n{previous}\n</PREVIOUS SUMMARY>\n\n\n"
        material = []
        for i in forgotten:
            msg = ctx.original(i)
            content = rules.truncate_content(event_text(msg), limit)
            prompt += f"<EVENT id={i}>\n{content}\n</EVENT>\n"
            material.append(MaterialItem(msg.role.value, msg.text, i))
        prompt += "Now summarize the events using the rules above."
        return SummaryRequest(
            strategy=self.name,
            system="",
            messages=(PromptMessage("user", prompt),),
            style="sections",
            sections=SECTIONS,
            material=tuple(material),
            previous_summary=st.summary,
        )


def _observation(message: Message) -> bool:
    return any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


STRATEGY = OpenHandsCondenserStrategy
