"""Semantic Kernel ``ChatHistoryTruncationReducer``: keep the last ``target_count`` messages.

Sources, microsoft/semantic-kernel @ b39d95a34435f4c1d55dd00c86120ce118d847e1 (2026-08-20),
Python package ``python/semantic_kernel/contents/history_reducer/``:

- ``chat_history_reducer.py``: ``target_count`` (required, > 0), ``threshold_count``
  (default 0, >= 0), ``auto_reduce`` (default false).
- ``chat_history_truncation_reducer.py`` ``reduce``: nothing while the history holds at most
  ``target_count + threshold_count`` messages; the first system/developer message is kept
  (it takes one of the ``target_count`` slots when it would be cut); the cut point is
  ``locate_safe_reduction_index`` (``chat_history_reducer_utils.py``, ported in
  ``_semantic_kernel``): ``len - target_count``, moved back over function call/result
  messages so a call and its result stay together, then back to a user message if one is
  inside the threshold window.
- ``python/samples/concepts/chat_completion/simple_chatbot_with_truncation_history_reducer.py``:
  ``target_count=3, threshold_count=2``, the system message in the history, and
  ``await truncation_reducer.reduce()`` before every user turn (the defaults here).
- Tests ported: ``python/tests/unit/contents/test_chat_history_truncation_reducer.py`` and
  ``test_chat_history_reducer_utils.py`` (``tests/engine/strategies/test_semantic_kernel.py``).

Readings:

- Messages are SK's ``ChatMessageContent``: one per OpenAI message, each function result a
  ``TOOL`` message of its own (``_chat_history.split``). A transcript message whose parts
  are cut apart (results and text) shows what is left of it (TRUNCATED).
- Where ``reduce()`` runs: the samples and the agents' threads reduce only when the caller
  asks, before a user turn; the auto function-calling loop adds results without reducing.
  ``reduce_at="turn"`` reduces before the first call after a user's words, ``"call"``
  before every call (``auto_reduce`` of ``add_message_async``, as if every message went
  through it).
- The reducer counts messages, never tokens; the curves use the lab's reference counts
  (cl100k).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import BlockKind
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy
from . import _chat_history as ch
from . import _semantic_kernel as sk

if TYPE_CHECKING:
    from ..core.context_view import ContextView

SOURCE = "semantic_kernel.contents.history_reducer"


@dataclass(slots=True)
class _State:
    history: list[ch.Chat] = field(default_factory=list)  # the reducer's messages
    remaining: dict[int, int] = field(default_factory=dict)  # source -> entries held
    turn_open: bool = False  # a user's words arrived since the last reduce


def base_params(target: int, threshold: int) -> tuple[Param, ...]:
    return (
        Param("target_count", target, "Messages kept after a reduction (the system "
              "message, when kept, takes one).", min=1,
              origin="ChatHistoryReducer.target_count"),
        Param("threshold_count", threshold, "Messages over target_count tolerated before "
              "reducing; also the window searched back for a user message to cut at.", min=0,
              origin="ChatHistoryReducer.threshold_count"),
        Param("reduce_at", "turn", "When reduce() runs: before the first call of each user "
              "turn (the samples) or before every call.", "str", choices=("turn", "call"),
              origin="await history.reduce() (caller)"),
        Param("system_message_in_history", True, "The system prompt is the history's first "
              "message (ChatHistory(system_message=...); counted and preserved).", "bool",
              origin="ChatHistory.add_system_message"),
        Param("context_window", 128_000, "Model context window (overflow findings only; the "
              "reducer counts messages).", min=1_000, origin="model context window"),
    )  # fmt: skip


class SemanticKernelReducer(ReferenceEstimator, Strategy):
    """What both reducers share: the history, when reduce() runs, applying a new history."""

    State: ClassVar[type[Any]] = _State
    WINDOW = "context_window"

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.target = int(self.params["target_count"])
        self.threshold_n = int(self.params["threshold_count"])

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self.params["system_message_in_history"] and ctx.system_index is not None:
            st.history.append(ch.Chat("system", -1))

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        message = ctx.original(index)
        entries = ch.split(message, index)
        st.history.extend(entries)
        st.remaining[index] = len(entries)
        if entries[-1].role == "user" and any(
            b.kind is not BlockKind.TOOL_RESULT for b in message.blocks
        ):
            st.turn_open = True

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self.params["reduce_at"] == "turn" and not st.turn_open:
            return
        st.turn_open = False
        self.reduce(ctx)

    def reduce(self, ctx: ContextView) -> None:
        raise NotImplementedError

    def install(self, ctx: ContextView, new: list[ch.Chat]) -> tuple[list[int], list[int]]:
        """Replace the history with ``new``: (sources gone whole, sources partly gone)."""
        st: _State = ctx.state
        gone, partly = ch.gone_sources(st.history, new, st.remaining)
        st.history = new
        return gone, partly


def apply_partly(ctx: ContextView, act: Any, history: list[ch.Chat], partly: list[int]) -> None:
    if not partly:
        return
    held: dict[int, list[ch.Chat]] = {}
    wanted = set(partly)
    for e in history:
        if e.source in wanted:
            held.setdefault(e.source, []).append(e)
    for s in partly:
        act.replace(s, ch.shown(ctx.original(s), held[s]), Fate.TRUNCATED,
                    reason="some of its messages (function results / text) cut by the reducer")  # fmt: skip


class SemanticKernelTruncationStrategy(SemanticKernelReducer):
    name: ClassVar[str] = "semantic_kernel_truncation"
    label: ClassVar[str] = "Semantic Kernel ChatHistoryTruncationReducer"
    description: ClassVar[str] = (
        "Semantic Kernel's ChatHistoryTruncationReducer: when the chat history holds more "
        "than target_count + threshold_count messages, only the last target_count are kept "
        "(the system message preserved, a function call never cut from its result, the cut "
        "moved back to a user message inside the threshold window); nothing is summarised."
    )
    estimator: ClassVar[str] = "reference cl100k counts (the reducer counts messages, not tokens)"
    PARAMS: ClassVar[tuple[Param, ...]] = base_params(3, 2)

    def threshold(self, ctx: ContextView) -> int | None:
        return None

    def reduce(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        before = len(st.history)
        new = sk.truncate(st.history, self.target, self.threshold_n)
        if new is None:
            return
        gone, partly = self.install(ctx, new)
        with ctx.action(
            "drop",
            reason=f"chat history over target_count + threshold_count ({self.target} + "
            f"{self.threshold_n}): truncated to the last messages",
            target_count=self.target,
            threshold_count=self.threshold_n,
            messages_before=before,
            messages_after=len(new),
        ) as act:
            act.remove(gone, Fate.DROPPED)
            apply_partly(ctx, act, st.history, partly)


STRATEGY = SemanticKernelTruncationStrategy
