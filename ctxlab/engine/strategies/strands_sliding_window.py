"""Strands Agents' ``SlidingWindowConversationManager`` (the SDK's default manager).

Pinned: strands-agents/sdk-python @ 1232230daa4385fd6470be29013eb2375d7a307c (``v1.40.0`` + 2
commits; ``strands-agents==1.40.0``), files
``src/strands/agent/conversation_manager/sliding_window_conversation_manager.py`` and
``conversation_manager.py``, ``src/strands/agent/agent.py`` (``apply_management`` in the
``finally`` of each invocation; ``reduce_context(e=...)`` on ``ContextWindowOverflowException``,
then the cycle is retried), ``src/strands/event_loop/event_loop.py`` (``BeforeModelCallEvent``
with ``projected_input_tokens`` before every model call, retries included) and
``src/strands/models/model.py`` (the heuristic estimator: ``_strands_rules``).

What it does, mapped onto replay steps:

- **End of an invocation** (``apply_management``): when the history holds more than
  ``window_size`` messages, the oldest are dropped down to ``window_size`` and then on to a
  valid first message (a user message without an orphaned toolResult; failing that an
  assistant toolUse + user toolResult pair). An invocation ends with the agent's last reply:
  the management runs when the next user prompt arrives, before it joins the history.
- **Overflow** (``reduce_context(e)``; the request, by Strands' own estimate, over
  ``context_window_limit`` stands in for the provider's ``ContextWindowOverflowException``):
  with ``should_truncate_results`` the oldest message holding tool results has each text
  item over 400 characters cut to its first and last 200 (images to a placeholder), once;
  else the oldest messages are trimmed as above (to 2 when within the window). Retried until
  the request fits; no valid trim point raises (the agent's call fails: ``compact_failed``).
- ``per_turn``: management before every (or every N-th) model call.
- ``proactive_compression``: ``reduce_context()`` without an error (trim only) when the
  projection reaches that share of the limit (off by default; ``True`` in Strands is 0.7).

Ported tests (``tests/strands/agent/test_conversation_manager.py``): ``test_apply_management``'s
ten cases, ``test_sliding_window_forces_user_message_start``,
``test_sliding_window_happy_path_preserves_window_size``, the untrimmable-history pair, the
tool-heavy fallback and the truncation tests, as tables in
``tests/engine/strategies/test_strands_sliding_window.py``.

Differences (docs/strategies/strands_sliding_window.md): the projection is the heuristic over
the whole request (Strands adds the last assistant message's reported usage as a baseline
when the message carries it: usage from before a trim would describe another history).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.params import Param
from ..core.records import Fate
from . import _agent_units as au
from . import _strands_rules as sr

if TYPE_CHECKING:
    from ..core.context_view import ContextView

MAX_RETRIES = 10_000  # a bound on the replay's loop; every retry removes or cuts something


@dataclass(slots=True)
class _State:
    units: list[au.Unit] = field(default_factory=list)  # agent.messages, from ``head`` on
    head: int = 0
    calls: int = 0  # inference calls so far
    model_call_count: int = 0  # per_turn's counter (every BeforeModelCallEvent)


class StrandsSlidingWindowStrategy(sr.StrandsStrategy):
    name: ClassVar[str] = "strands_sliding_window"
    State = _State
    label: ClassVar[str] = "Strands Agents sliding window (sdk-python 1.40.0)"
    description: ClassVar[str] = (
        "Strands Agents' default SlidingWindowConversationManager: after each invocation "
        "the history is cut to the last window_size (40) messages, starting on a user "
        "message with no orphaned tool result; when a request overflows, the oldest tool "
        "results are first cut to their first and last 200 characters, then the oldest "
        "messages are dropped, and the call is retried."
    )
    estimator: ClassVar[str] = (
        "Model.count_tokens heuristic: ceil(chars / 4) per text, tool name, tool-result text "
        "and reasoning text; ceil(len(json.dumps) / 2) per tool input and tool spec"
    )
    WINDOW = "context_window_limit"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "window_size",
            40,
            "Messages kept after each invocation (0 clears the history on every reduction).",
            min=0,
            origin="SlidingWindowConversationManager(window_size=40)",
        ),
        Param(
            "should_truncate_results",
            True,
            "On overflow, cut the oldest tool results to their first and last 200 "
            "characters before dropping messages.",
            "bool",
            origin="SlidingWindowConversationManager(should_truncate_results=True)",
        ),
        Param(
            "per_turn",
            0,
            "Apply the window before every N-th model call too (0 = False, the default; "
            "1 = True: every call).",
            min=0,
            origin="SlidingWindowConversationManager(per_turn=False)",
        ),
        Param(
            "proactive_compression",
            0.0,
            "Trim before a model call when the projected input reaches this share of "
            "context_window_limit (0 = off, the default; True in Strands = 0.7).",
            "float",
            min=0.0,
            max=1.0,
            origin="proactive_compression={'compression_threshold': ...} "
            "(DEFAULT_COMPRESSION_THRESHOLD = 0.7)",
        ),
        sr.CONTEXT_WINDOW_LIMIT,
    )

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        message = ctx.original(index)
        last = st.units[-1] if len(st.units) > st.head else None
        if (
            st.calls
            and not au.continues(last, message)
            and message.role.value != "assistant"
            and not au.results_only(message)
        ):
            # The previous invocation ended with the agent's reply: its finally block.
            self._apply_management(ctx, "end of invocation")
        au.add(st.units, message, index, start=st.head)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        st.calls += 1
        limit = self.window(ctx)
        for _ in range(MAX_RETRIES):
            self._before_model_call(ctx)
            tokens = ctx.request_tokens()
            if tokens <= limit:
                return
            if not self._reduce(ctx, error=True, tokens=tokens):
                ctx.emit(
                    "compact_failed", tokens=tokens, limit=limit,
                    agent_messages=len(st.units) - st.head,
                    outcome="ContextWindowOverflowException: Unable to trim conversation "
                    "context! The agent's call fails (the replay goes on unchanged)",
                )  # fmt: skip
                return

    # --- the manager ----------------------------------------------------------------------
    def _before_model_call(self, ctx: ContextView) -> None:
        """The BeforeModelCallEvent callbacks in registration order: the base class's
        proactive check, then per_turn."""
        st: _State = ctx.state
        share = float(self.params["proactive_compression"])
        if share > 0:
            tokens = ctx.request_tokens()
            if tokens / self.window(ctx) >= share:
                self._reduce(ctx, error=False, tokens=tokens, why="proactive")
        per_turn = int(self.params["per_turn"])
        if per_turn:
            st.model_call_count += 1
            if st.model_call_count % per_turn == 0:
                self._apply_management(ctx, "per_turn")

    def _apply_management(self, ctx: ContextView, why: str) -> None:
        st: _State = ctx.state
        if len(st.units) - st.head <= int(self.params["window_size"]):
            return
        self._reduce(ctx, error=False, tokens=ctx.request_tokens(), why=why)

    def _reduce(self, ctx: ContextView, *, error: bool, tokens: int, why: str = "") -> bool:
        """``reduce_context``; True when it changed the history."""
        st: _State = ctx.state
        live = st.units[st.head :]
        window_size = int(self.params["window_size"])
        # Under the catalogue's words for a drop (estimate, limit); a truncate or a skip
        # declares none, so they carry the same numbers under their own names.
        detail: dict[str, Any] = {
            "request_tokens": tokens, "context_window_limit": self.window(ctx),
            "window_size": window_size, "agent_messages": len(live),
            "trigger": "overflow" if error else why,
        }  # fmt: skip
        if window_size == 0:
            if not live:
                return False
            self._drop(ctx, len(live), "window_size=0: every message removed", detail)
            return True
        if error and self.params["should_truncate_results"]:
            oldest = next((u for u in live if u.tool_result), None)
            if oldest is not None:
                cut = [(i, sr.truncate_results(ctx.message(i))) for i in oldest.sources]
                changed = [(i, m) for i, m in cut if m is not None]
                if changed:
                    with ctx.action(
                        "truncate", reason="context window overflow: the oldest tool results "
                        f"cut to their first and last {sr.PRESERVE_CHARS} characters", **detail,
                    ) as act:  # fmt: skip
                        for i, m in changed:
                            act.replace(i, m, Fate.TRUNCATED)
                    return True
        k = sr.trim_point(live, window_size)
        if k is None:
            if not error:
                ctx.emit(
                    "compact_skipped", reason="unable to trim conversation context, no valid "
                    "trim point found", **detail,
                )  # fmt: skip
            return False
        reason = (
            "context window overflow" if error
            else f"{why}: over window_size={window_size} messages"
        )  # fmt: skip
        self._drop(ctx, k, reason, detail)
        return True

    def _drop(self, ctx: ContextView, k: int, reason: str, detail: dict[str, Any]) -> None:
        st: _State = ctx.state
        gone = [i for u in st.units[st.head : st.head + k] for i in u.sources]
        with ctx.action("drop", reason=reason, removed_messages=k, estimate=detail[
            "request_tokens"], limit=detail["context_window_limit"], **detail) as act:  # fmt: skip
            act.remove(gone, Fate.DROPPED)
        st.head += k


STRATEGY = StrandsSlidingWindowStrategy
