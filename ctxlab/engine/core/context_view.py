"""The read-only face of a replay's context, the only one strategies see.

A strategy reads the working history through a ``ContextView`` and changes it only
through its methods that record what they do: ``action`` (one Event per scope),
``emit``, ``finding``, ``summarize``, ``set_summary``, ``set_system_tokens``, ``defer``
and ``run_pending``. Assigning an attribute raises ``ReadOnlyContextError``: a strategy
that kept a running total by writing the context's fields would bypass the event log.

``state`` is the strategy's per-replay state (an instance of its ``State``, made fresh
for every replay), so one strategy instance can replay twice, or in two threads at once.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..tokens.reference import ReferenceTokens
    from .context import Pending, ReplayContext, _ActionScope
    from .model import Conversation, Message
    from .records import Event, ReplayResult, SummaryRecord
    from .strategy import Strategy
    from .tool_pairs import SeenTools, ToolLedger


class ReadOnlyContextError(AttributeError):
    """A strategy assigned to the replay context instead of acting through it."""


class ContextView:
    """Reads of one ``ReplayContext``; changes only through its recording methods."""

    __slots__ = (
        "_ctx",
        "action",
        "counted_tokens",
        "defer",
        "emit",
        "finding",
        "ids",
        "is_modified",
        "message",
        "original",
        "ref_tokens",
        "request_ref",
        "request_tokens",
        "run_pending",
        "set_summary",
        "set_system_tokens",
        "summarize",
        "tokens",
    )

    if TYPE_CHECKING:
        _ctx: ReplayContext
        # Bound methods of the context, copied once (no delegation cost per call).
        action: Callable[..., _ActionScope]
        counted_tokens: Callable[[], int]
        defer: Callable[..., Pending]
        emit: Callable[..., Event]
        finding: Callable[..., None]
        ids: Callable[[int], tuple[tuple[str, ...], tuple[str, ...]]]
        is_modified: Callable[[int], bool]
        message: Callable[[int], Message]
        original: Callable[[int], Message]
        ref_tokens: Callable[[int], int]
        request_ref: Callable[[], int]
        request_tokens: Callable[[], int]
        run_pending: Callable[[], None]
        set_summary: Callable[..., None]
        set_system_tokens: Callable[[int], None]
        summarize: Callable[..., SummaryRecord]
        tokens: Callable[[int], int]

    def __init__(self, ctx: ReplayContext) -> None:
        put = object.__setattr__
        put(self, "_ctx", ctx)
        for name in self.__slots__[1:]:
            put(self, name, getattr(ctx, name))

    def __setattr__(self, name: str, value: object) -> None:
        raise ReadOnlyContextError(
            f"the replay context is read-only for strategies: cannot assign {name!r}. "
            "Change the history with ctx.action(...) (or emit/set_summary/"
            "set_system_tokens), and keep per-replay values in the strategy's State "
            "(ctx.state)."
        )

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    # --- per replay ---------------------------------------------------------------------
    @property
    def state(self) -> Any:
        """The strategy's per-replay state (``Strategy.State``, see core/strategy.py)."""
        return self._ctx.state

    @property
    def strategy(self) -> Strategy:
        return self._ctx.strategy

    # --- the source ---------------------------------------------------------------------
    @property
    def conversation(self) -> Conversation:
        return self._ctx.conversation

    @property
    def originals(self) -> tuple[Message, ...]:
        return self._ctx.originals

    @property
    def reference(self) -> ReferenceTokens:
        return self._ctx.reference

    @property
    def result(self) -> ReplayResult:
        """What the replay recorded so far (read it; add to it only through the methods)."""
        return self._ctx.result

    # --- the working history ------------------------------------------------------------
    @property
    def live(self) -> list[int]:
        return self._ctx.live

    @property
    def alive(self) -> bytearray:
        return self._ctx.alive

    @property
    def history_tokens(self) -> int:
        return self._ctx.history_tokens

    @property
    def history_ref(self) -> int:
        return self._ctx.history_ref

    @property
    def system_index(self) -> int | None:
        return self._ctx.system_index

    @property
    def system_text(self) -> str:
        return self._ctx.system_text

    @property
    def system_tokens(self) -> int:
        return self._ctx.system_tokens

    @property
    def system_ref(self) -> int:
        return self._ctx.system_ref

    @property
    def tools_tokens(self) -> int:
        return self._ctx.tools_tokens

    @property
    def tools_ref(self) -> int:
        return self._ctx.tools_ref

    @property
    def summary(self) -> str:
        return self._ctx.summary

    @property
    def summary_tokens(self) -> int:
        return self._ctx.summary_tokens

    @property
    def summary_ref(self) -> int:
        return self._ctx.summary_ref

    @property
    def summary_id(self) -> int | None:
        return self._ctx.summary_id

    @property
    def step(self) -> int:
        return self._ctx.step

    @property
    def source_index(self) -> int:
        return self._ctx.source_index

    @property
    def last_user_query(self) -> int | None:
        return self._ctx.last_user_query

    @property
    def turn_start(self) -> int | None:
        return self._ctx.turn_start

    @property
    def turn_tokens(self) -> int:
        return self._ctx.turn_tokens

    @property
    def live_tools(self) -> ToolLedger:
        return self._ctx.live_tools

    @property
    def orig_tools(self) -> SeenTools:
        return self._ctx.orig_tools

    @property
    def pending(self) -> list[Pending]:
        return self._ctx.pending


# Every property above reads the context's attribute of the same name; at run time each is
# that read done at C level (``attrgetter``), no Python frame per read: strategies read
# these many times a step.
for _name, _value in list(vars(ContextView).items()):
    if isinstance(_value, property):
        setattr(ContextView, _name, property(attrgetter(f"_ctx.{_name}"), doc=_value.__doc__))
del _name, _value


__all__ = ["ContextView", "ReadOnlyContextError"]
