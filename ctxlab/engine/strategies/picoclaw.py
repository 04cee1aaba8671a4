"""PicoClaw (sipeed/picoclaw @ cf67dd3) legacy context manager.

Where it runs: before the first LLM call of a turn (``pipeline_setup.go``) the fully
assembled request (system message with the summary, sanitized history, current user
message) + tool definitions + ``MaxTokens`` is compared ``> ContextWindow``; over budget,
``forceCompression`` drops the oldest floor(T/2) turns from the session (persisted, with a
note appended to the summary, no LLM), then ``trimHistoryToFitContextWindow`` drops whole
turns from the front of *this request only* (they come back when the next turn's request
is rebuilt from the session: ``restore_request``). Every LLM call can also meet the
provider's context-length error (``pipeline_llm.go``, simulated: the request's reference
count over the window, ``simulate_overflow``): up to ``max_llm_retries`` times the session
is force-compressed (reason ``llm_retry``), the request re-assembled from it and its older
part trimmed, the current turn's persisted messages protected; when that cannot fit, or
the retries run out, the call fails (``compact_failed``). After each turn, ``maybeSummarize`` runs in a
goroutine when the session has more than 20 messages or more than 75% of the window; it
lands before the next request (recorded as pending). Its split path (> 10 messages) loses
the previous summary; its batch answers are trimmed, the merged answer is kept as given,
and every summary call is tried up to 3 times while it errs or answers nothing
(``retryLLMCall``). The system message always carries the dynamic runtime context (time,
OS/arch, Go version; ``runtime_context``). A turn starts at every user message; tool
results are ``tool`` messages, so no cut separates a tool call from its results.

Original tests ported (tests/engine/strategies/test_picoclaw_ported.py, table tests; facts
from pkg/agent/*_test.go @ cf67dd3):

* ``context_test.go``: every ``TestSanitizeHistoryForProvider_*`` case (17).
* ``context_budget_test.go``: ``TestIsSafeBoundary`` (9 rows), ``TestFindSafeBoundary``
  (10 rows), ``_SingleTurnReturnsZero``, ``_BackwardScanSkipsToolSequence``,
  ``TestEstimateMessageTokens`` (4 rows) and its ``_ToolCallsContribute``,
  ``_MultibyteContent``, ``_LargeArguments``, ``_ReasoningContent``, ``_MediaItems``,
  ``_SystemParts``. ``TestParseTurnBoundaries``, ``TestIsOverContextBudget`` and
  ``TestTrimHistoryToFitContextWindow_*`` have counterparts in test_picoclaw.py
  (``test_parse_turn_boundaries``, ``test_is_over_context_budget_strictly_greater``,
  ``test_trim_history_drops_oldest_turns_then_clears``), not row-by-row ports.
* ``context_manager_test.go``: ``TestLegacyCompact_Overflow`` (and ``_ProactiveReason``),
  ``_TooShortToCompress``, ``_SingleTurnKeepsLastUserMessage``,
  ``_PostTurn_BelowThreshold``, ``_PostTurn_ExceedsMessageThreshold`` through the pure
  functions. Not ported: registry/factory tests (``TestRegisterContextManager_*``,
  ``TestResolveContextManager_*``), agent-loop wiring (``TestAgentLoop_*``,
  ``TestIngestCalledDuringTurn``) and the runtime-event payloads: ctxlab has no plug-in
  registry or event bus.
* ``turn_state_test.go`` (``TestMatchingTurnMessageTail_*``, ``TestSplitHistoryForActiveTurn_*``,
  ``TestTrimHistoryToFitContextWindow_WithProtectedTurnTailKeepsActiveTurn``) and the
  context-error retries of ``agent_test.go`` / ``eventbus_test.go``: in
  tests/engine/strategies/test_picoclaw_retry.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Message, ToolDef
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from . import _picoclaw_budget as pb
from . import _picoclaw_retry as pr
from ._picoclaw_budget import Estimator, PicoMsg

if TYPE_CHECKING:
    from ..core.context import Action
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens


@dataclass(slots=True)
class _State:
    hist: list[PicoMsg] = field(default_factory=list)  # the session history (persisted)
    summary: str = ""
    current: list[PicoMsg] = field(default_factory=list)  # this turn's user message, unsaved
    turn: list[PicoMsg] = field(default_factory=list)  # persisted by this turn (protected)
    new_turn: bool = False
    replied: bool = False  # an assistant message since the last user message
    system_text: str = ""
    trimmed: list[int] = field(default_factory=list)  # out of the request by a trim only
    runtime: str = ""
    # The message the replay just counted and its parts (after_append reuses them).
    counted: tuple[Message, list[PicoMsg]] | None = None


class PicoClawStrategy(Strategy):
    name: ClassVar[str] = "picoclaw"
    label: ClassVar[str] = "PicoClaw legacy context manager"
    description: ClassVar[str] = (
        "sipeed/picoclaw context_legacy.go + context_budget.go: proactive budget check over "
        "the whole request (system + summary + history + tools + MaxTokens > ContextWindow) "
        "with emergency compression of half the turns and a request-local trim, plus an "
        "asynchronous post-turn LLM summary keeping the last 4 messages."
    )
    estimator: ClassVar[str] = (
        "chars*2/5 (Go integer division): runes of content/reasoning, bytes of tool-call "
        "fields and ids, +12 per message, +256 per media item"
    )
    WINDOW = "context_window"
    WINDOW_FOLLOWS = {"max_tokens": 0.25}  # unset window = MaxTokens x 4
    State = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "max_tokens",
            32_768,
            "MaxTokens: the output reserve counted in the budget, and the summary call's "
            "max_tokens (code fallback 8192).",
            min=1,
            origin="config/defaults.go MaxTokens",
        ),
        Param(
            "context_window",
            0,
            "ContextWindow the budget is compared with (strictly >). 0 = MaxTokens x 4.",
            min=0,
            origin="instance.go ContextWindow",
        ),
        Param(
            "summarize_message_threshold",
            pb.SUMMARIZE_MESSAGE_THRESHOLD,
            "Post-turn summary when the session history has more messages than this.",
            min=1,
            origin="SummarizeMessageThreshold",
        ),
        Param(
            "summarize_token_percent",
            pb.SUMMARIZE_TOKEN_PERCENT,
            "...or when its tokens exceed this percentage of ContextWindow (integer math).",
            min=1,
            max=100,
            origin="SummarizeTokenPercent",
        ),
        Param(
            "enable_summary",
            True,
            "Run maybeSummarize after every turn.",
            "bool",
            origin="EnableSummary",
        ),
        Param(
            "runtime_context",
            True,
            "Append the dynamic runtime context (## Current Time, ## Runtime: OS/arch and Go "
            "version) to the system message of every request, as the original always does; "
            "the time is the transcript's first timestamp.",
            "bool",
            origin="context.go buildDynamicContext",
        ),
        Param(
            "token_estimator",
            "chars*2/5",
            "chars*2/5 as at cf67dd3; ceil(chars/4) as in later pkg/tokenizer versions.",
            "str",
            choices=("chars*2/5", "ceil(chars/4)"),
            origin="pkg/tokenizer/estimator.go",
        ),
        Param(
            "simulate_overflow",
            True,
            "Treat a request above context_window (reference tokens) as the provider's "
            "context-length error: force compression (llm_retry), rebuild with the current "
            "turn protected, trim the older part, retry; the call fails when that cannot fit.",
            "bool",
            origin="pipeline_llm.go CallLLM context-error retry",
        ),
        Param(
            "max_llm_retries",
            pr.MAX_LLM_RETRIES,
            "Context-length retries per LLM call (each one compresses first); 0 = the code's "
            "fallback, 2.",
            min=0,
            origin="config.go MaxLLMRetries",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    @property
    def _est(self) -> Estimator:
        value: Estimator = self.params["token_estimator"]
        return value

    def count_text(self, text: str) -> int:
        return pb.estimate_message_tokens(PicoMsg("user", text), self._est)

    def count_message(self, message: Message) -> int:
        return sum(pb.estimate_message_tokens(m, self._est) for m in pb.to_pico(-1, message))

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        st: _State = state
        est = self._est
        estimate = pb.estimate_message_tokens

        def count(message: Message) -> int:
            parts = pb.to_pico(-1, message)
            # The replay counts a message just before after_append converts it again.
            st.counted = (message, parts)
            total = 0
            for m in parts:  # a plain loop: every message is counted
                total += estimate(m, est)
            return total

        return count

    def count_system(self, text: str, message: Message | None) -> int:
        return pb.estimate_message_tokens(pb.build_system(text, ""), self._est)

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return pb.estimate_tool_defs_tokens(tools, self._est)

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"]) or int(self.params["max_tokens"]) * 4

    def threshold(self, ctx: ContextView) -> int | None:
        return self.window(ctx) - int(self.params["max_tokens"]) - ctx.tools_tokens

    def output_reserve(self, ctx: ContextView) -> int:
        return int(self.params["max_tokens"])

    def conversation_room(self, ctx: ContextView) -> int:
        """The threshold already leaves out the tools and the output reserve (it is
        compared with the messages' estimate, the system prompt among them)."""
        limit = self.threshold(ctx)
        return (self.window(ctx) if limit is None else limit) - ctx.system_tokens

    # --- state --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        st.system_text = ctx.system_text
        if self.params["runtime_context"]:
            st.runtime = pb.runtime_context(_first_time(ctx.originals))
        ctx.set_system_tokens(
            pb.estimate_message_tokens(pb.build_system(st.system_text, "", st.runtime), self._est)
        )

    def _build(self, st: _State, hist: Sequence[PicoMsg]) -> list[PicoMsg]:
        return pb.build_messages(st.system_text, st.summary, hist, st.current, st.runtime)

    def _over(self, ctx: ContextView, messages: Sequence[PicoMsg]) -> bool:
        return pb.is_over_context_budget(
            self.window(ctx), messages, ctx.tools_tokens, int(self.params["max_tokens"]), self._est
        )

    def _set_summary(self, ctx: ContextView, text: str, summary_id: int | None) -> None:
        st: _State = ctx.state
        st.summary = text
        base = pb.estimate_message_tokens(
            pb.build_system(st.system_text, "", st.runtime), self._est
        )
        full = pb.estimate_message_tokens(
            pb.build_system(st.system_text, text, st.runtime), self._est
        )
        rendered = pb.SUMMARY_PREFIX + text if text else ""
        ctx.set_summary(text, tokens=full - base, rendered=rendered, summary_id=summary_id)

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.message(index)
        counted = st.counted
        if counted is not None and counted[0] is msg:
            # The cached parts are private to this strategy (fresh from count_message), so
            # stamping the index in place is safe and skips a dataclasses.replace per part.
            parts = counted[1]
            for part in parts:
                object.__setattr__(part, "src", index)
            st.counted = None
        else:
            parts = pb.to_pico(index, msg)
        roles = [p.role for p in parts]
        if "user" in roles:
            self._end_request_trim(ctx)
            if st.replied and self.params["enable_summary"]:
                self._maybe_summarize(ctx)
            st.current = parts
            st.turn = []
            st.new_turn = True
            st.replied = False
            return
        if st.new_turn:  # messages after the user message before the first call
            st.current.extend(parts)
            return
        st.hist.extend(parts)
        st.turn.extend(parts)
        if "assistant" in roles:
            st.replied = True

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if st.new_turn:
            st.new_turn = False
            self._proactive(ctx)
            st.hist.extend(st.current)  # the user message is persisted after the check
            st.turn = st.current
            st.current = []
        if self.params["simulate_overflow"]:
            self._call_with_retries(ctx)

    # --- proactive budget check (pipeline_setup.go) --------------------------------------
    def _proactive(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        messages = self._build(st, st.hist)
        self._drop_sanitized(ctx, messages)
        if not self._over(ctx, messages):
            return
        window, reserve = self.window(ctx), int(self.params["max_tokens"])
        estimate = pb.estimate_messages(messages, self._est) + ctx.tools_tokens + reserve
        comp = pb.force_compression(st.hist, st.summary)
        if comp is not None:
            before = st.hist
            with ctx.action(
                "force_compression", reason="proactive_budget: oldest half of the turns dropped",
                estimate=estimate, window=window, max_tokens=reserve,
                dropped_messages=len(comp.dropped), remaining_messages=len(comp.kept),
            ) as act:  # fmt: skip
                st.hist = list(comp.kept)
                self._remove_gone(act, before, st.hist, Fate.DROPPED)
                self._set_summary(ctx, comp.summary, ctx.summary_id)
        hist, messages, fit = pb.trim_history_to_fit(
            st.hist, partial(self._build, st), lambda m: self._over(ctx, m)
        )
        if len(hist) < len(st.hist):
            with ctx.action(
                "trim", reason="trimHistoryToFitContextWindow: request-local, the "
                "session keeps these messages", fit=fit, window=window,
            ) as act:  # fmt: skip
                self._remove_gone(act, st.hist, hist, Fate.DROPPED)
                st.trimmed.extend(act.touched)

    # --- reactive context-error retry (pipeline_llm.go) -----------------------------------
    def _call_with_retries(self, ctx: ContextView) -> None:
        """CallLLM's retry loop: the simulated provider rejects a request whose reference
        count exceeds the window; ``retry < maxRetries`` compresses and rebuilds, and the
        call fails when the rebuild cannot fit or the last retry is rejected too."""
        window = self.window(ctx)
        retries = pr.effective_max_retries(int(self.params["max_llm_retries"]))
        for retry in range(retries + 1):
            reference = ctx.request_ref()
            if reference <= window:
                return
            if retry == retries:
                ctx.emit(
                    "compact_failed", error=pr.RETRIES_EXHAUSTED_ERROR, retries=retries,
                    reference=reference, window=window, outcome=_CALL_FAILED,
                )  # fmt: skip
                return
            if retry == 0:
                ctx.emit("warning", message=pr.RETRY_NOTICE)
            if not self._retry_compaction(ctx, retry + 1, reference, window):
                ctx.emit(
                    "compact_failed", error=pr.NOT_FIT_ERROR, retry=retry + 1,
                    reference=ctx.request_ref(), window=window, outcome=_CALL_FAILED,
                )  # fmt: skip
                return

    def _retry_compaction(
        self, ctx: ContextView, attempt: int, reference: int, window: int
    ) -> bool:
        """``Compact(llm_retry)`` then the rebuild: the session (with everything a trim hid)
        is assembled again, the current turn's persisted tail protected and only the older
        part trimmed. Returns ``fit``."""
        st: _State = ctx.state
        comp = pb.force_compression(st.hist, st.summary)
        if comp is not None:
            before = st.hist
            with ctx.action(
                "force_compression", reason="llm_retry: the provider rejected the request "
                "(context-length error): oldest half of the turns dropped",
                compress_reason="llm_retry", reference=reference, window=window,
                retry=attempt, dropped_messages=len(comp.dropped),
                remaining_messages=len(comp.kept),
            ) as act:  # fmt: skip
                st.hist = list(comp.kept)
                self._remove_gone(act, before, st.hist, Fate.DROPPED)
                self._set_summary(ctx, comp.summary, ctx.summary_id)
        stable, protected = pr.split_history_for_active_turn(st.hist, st.turn)

        def build(hist: Sequence[PicoMsg]) -> list[PicoMsg]:
            return pb.build_messages(
                st.system_text, st.summary, [*hist, *protected], (), st.runtime
            )

        kept, messages, fit = pb.trim_history_to_fit(stable, build, lambda m: self._over(ctx, m))
        shown = {m.src for m in messages}
        back = [i for i in st.trimmed if i in shown]
        if back:
            st.trimmed = [i for i in st.trimmed if i not in shown]
            with ctx.action(
                "restore_request", reason="the llm_retry rebuild assembles the request from "
                "the session again, which kept these",
            ) as act:  # fmt: skip
                act.restore(back)
        cut = {m.src for m in stable[: len(stable) - len(kept)]}
        hidden = [i for i in ctx.live if i not in shown]
        if any(i not in cut for i in hidden):
            with ctx.action(
                "sanitize", reason="sanitizeHistoryForProvider dropped orphaned or unanswered "
                "tool messages (and system messages in history)",
            ) as act:  # fmt: skip
                act.remove([i for i in hidden if i not in cut], Fate.DROPPED)
        if any(i in cut for i in hidden):
            with ctx.action(
                "trim", reason="trimHistoryToFitContextWindow after the llm_retry compaction: "
                "request-local, the current turn's messages protected", fit=fit,
                window=window, retry=attempt, protected_messages=len(protected),
            ) as act:  # fmt: skip
                act.remove([i for i in hidden if i in cut], Fate.DROPPED)
                st.trimmed.extend(act.touched)
        return fit

    def _end_request_trim(self, ctx: ContextView) -> None:
        """The trimmed request served its turn; the next one is assembled from the session,
        which still holds the trimmed messages (those a compression or summary has not
        taken since)."""
        st: _State = ctx.state
        if not st.trimmed:
            return
        in_session = {m.src for m in st.hist}
        back = [i for i in st.trimmed if i in in_session]
        st.trimmed = []
        if back:
            with ctx.action(
                "restore_request", reason="trimHistoryToFitContextWindow is request-local: "
                "the next turn's request is rebuilt from the session, which kept these",
            ) as act:  # fmt: skip
                act.restore(back)

    def _drop_sanitized(self, ctx: ContextView, messages: Sequence[PicoMsg]) -> None:
        shown = {m.src for m in messages}
        gone = [i for i in ctx.live if i not in shown]
        if gone:
            with ctx.action(
                "sanitize", reason="sanitizeHistoryForProvider dropped orphaned or unanswered "
                "tool messages (and system messages in history)",
            ) as act:  # fmt: skip
                act.remove(gone, Fate.DROPPED)

    def _remove_gone(
        self, act: Action, before: Iterable[PicoMsg], after: Iterable[PicoMsg], fate: Fate,
        shown: set[int] | None = None,
    ) -> None:  # fmt: skip
        """Remove source messages none of whose parts survive in ``after``."""
        alive = {m.src for m in after}
        gone = list(
            dict.fromkeys(m.src for m in before if m.src is not None and m.src not in alive)
        )
        if shown is None:
            act.remove(gone, fate)
            return
        act.remove([i for i in gone if i in shown], Fate.SUMMARISED)
        act.remove([i for i in gone if i not in shown], Fate.DROPPED, reason="not shown to "
                   "the summariser (tool message or oversized)")  # fmt: skip

    # --- maybeSummarize (post-turn, asynchronous) ----------------------------------------
    def _maybe_summarize(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        window = self.window(ctx)
        fire, tokens, threshold = pb.should_summarize(
            st.hist,
            context_window=window,
            message_threshold=int(self.params["summarize_message_threshold"]),
            token_percent=int(self.params["summarize_token_percent"]),
            estimator=self._est,
        )
        if not fire:
            return
        count = len(st.hist)

        def apply(c: ContextView) -> None:
            self._summarize(
                c, trigger={"messages": count, "tokens": tokens, "threshold": threshold}
            )

        ctx.defer("summarize", f"post-turn summary of {count} session messages", apply)

    def _call(self, ctx: ContextView, prompt: str, batch: Sequence[PicoMsg], previous: str,
              purpose: str) -> tuple[str | None, int]:  # fmt: skip
        """``retryLLMCall``: up to 3 calls while the call errs or answers nothing. The
        answer as given (None when every call failed); the caller trims or not."""
        request = SummaryRequest(
            strategy=self.name,
            system="",
            messages=(PromptMessage("user", prompt),),
            max_output_tokens=int(self.params["max_tokens"]),
            temperature=0.3,
            style="plain",
            material=tuple(MaterialItem(m.role, m.content, m.src or -1) for m in batch),
            previous_summary=previous,
            purpose=purpose,
        )
        sources = [m.src for m in batch if m.src is not None]
        for _ in range(pb.LLM_MAX_RETRIES):  # each call is its own summary record
            record = ctx.summarize(request, messages=sources)
            if not record.error and record.output:
                return record.output, record.id
        return None, record.id

    def _batch(
        self, ctx: ContextView, batch: Sequence[PicoMsg], previous: str
    ) -> tuple[str | None, int]:
        """``summarizeBatch``: the answer trimmed (a blank answer gives ""), None when
        every call failed (the caller falls back to the rule-based summary)."""
        text, record_id = self._call(
            ctx, pb.batch_prompt(batch, previous), batch, previous, "compact"
        )
        return (None if text is None else text.strip()), record_id

    def _summarize(self, ctx: ContextView, *, trigger: dict[str, int]) -> None:
        st: _State = ctx.state
        window = self.window(ctx)
        plan = pb.plan_summary(st.hist, context_window=window)
        if plan is None:
            ctx.emit("compact_skipped", reason="history too short or single turn", trigger=trigger)
            return
        batches = pb.split_batches(plan.valid)
        failures = 0
        record_id: int | None = None
        if len(batches) == 1:
            (batch,) = batches
            final, record_id = self._batch(ctx, batch, st.summary)
            failures += final is None
            final = pb.fallback_batch_summary(batch) if final is None else final
        else:
            parts = []
            for batch in batches:
                text, _ = self._batch(ctx, batch, "")
                failures += text is None
                parts.append(pb.fallback_batch_summary(batch) if text is None else text)
            merged, record_id = self._call(ctx, pb.merge_prompt(*parts), (), "", "merge")
            # the merged answer is used as given (finalSummary = resp.Content, not trimmed)
            final = f"{parts[0]} {parts[1]}" if merged is None else merged
            failures += merged is None
        if plan.omitted and final:
            final += pb.OMITTED_NOTE
        if not final:
            return
        before = st.hist
        previous_ref = ctx.summary_ref
        replaced = [m.src for m in before[: plan.cut] if m.src is not None]
        with ctx.action(
            "summarise", reason="post-turn maybeSummarize landed: summary replaced, last "
            f"{plan.keep} messages kept", always=True, batches=len(batches),
            previous_summary_discarded=len(batches) > 1 and bool(st.summary),
            failed_calls=failures, omitted_oversized=plan.omitted, **trigger,
        ) as act:  # fmt: skip
            st.hist = st.hist[len(st.hist) - plan.keep :]
            shown = {m.src for m in plan.valid if m.src is not None}
            self._remove_gone(act, before, st.hist, Fate.SUMMARISED, shown=shown)
            self._set_summary(ctx, final, record_id)
            act.summary_id = record_id
        check_summary_size(
            ctx, summary_rendered=pb.SUMMARY_PREFIX + final, replaced=list(dict.fromkeys(replaced)),
            summary_id=record_id, previous_ref=previous_ref,
        )  # fmt: skip


_CALL_FAILED = (
    "the LLM call fails and PicoClaw ends the turn with an error (the session keeps the "
    "compressed history); the replay goes on with the transcript's next message"
)


def _first_time(messages: Sequence[Message]) -> datetime | None:
    """The first message timestamp, naive local time as Go's time.Now() prints it."""
    for m in messages:
        if m.timestamp:
            try:
                return datetime.fromisoformat(m.timestamp.replace("Z", "+00:00")).replace(
                    tzinfo=None
                )
            except ValueError:
                return None
    return None


STRATEGY = PicoClawStrategy
