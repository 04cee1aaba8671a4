"""The Strategy base class: estimator, geometry (window/threshold) and hooks.

Subclasses override only what their original does. Hooks run at the original's hook
points (see the package docstring for the order). A ``Strategy`` instance holds validated
settings only; what a replay accumulates lives in the strategy's ``State`` (a dataclass
made fresh for every replay, reached as ``ctx.state``), so one instance can replay twice
or in two threads at once. Hooks get a read-only ``ContextView``: all mutation goes
through ``ctx.action(...)`` (and the view's other recording methods) so every change is
an Event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..tokens.cl100k import message_reference_tokens, reference_counter
from ..tokens.reference import ReferenceTokens
from .model import Message, ToolDef
from .params import Param, validate
from .records import Zones, new_zones

if TYPE_CHECKING:
    from .context_view import ContextView


@dataclass(slots=True)
class NoState:
    """The per-replay state of a strategy that keeps none."""


class Strategy:
    """One compaction strategy. Class attributes describe it; an instance holds params."""

    # The per-replay state: ``State()`` is made for each replay (before ``prepare``) and
    # reached by the hooks as ``ctx.state``. Never store replay data on ``self``.
    State: ClassVar[type[Any]] = NoState

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    estimator: ClassVar[str] = ""  # human name of the token estimator ("bytes/4 half-up per block")
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    # The parameter that is the model context window, and the parameters that follow it
    # (name -> share of the window; at the default window each keeps its default). One
    # comparison budget sets them all through ``window_params``.
    WINDOW: ClassVar[str] = ""
    WINDOW_FOLLOWS: ClassVar[Mapping[str, float]] = {}
    # Parameters a budget also sets, to fixed values, so that its window holds: where the
    # window's default lets the session's model decide, a budget at that same value must
    # still pin it (e.g. codex at 272 000 on a 400 000 rollout).
    WINDOW_PINS: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self.params: dict[str, Any] = validate(self.PARAMS, params, strategy=self.name)

    @classmethod
    def param_specs(cls) -> tuple[Param, ...]:
        return cls.PARAMS

    @classmethod
    def window_params(cls, window: int) -> dict[str, Any]:
        """The parameters that put this strategy at model window ``window``: its own window
        parameter, each follower at its share of the window (rounded, kept in range), and
        the pins.
        ValueError when the window is outside the window parameter's range."""
        if not cls.WINDOW:
            raise ValueError(f"strategy {cls.name!r} declares no window parameter")
        specs = {p.name: p for p in cls.PARAMS}
        own = specs[cls.WINDOW]
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"the model window must be a number of tokens, not {window!r}")
        if (own.min is not None and window < own.min) or (own.max is not None and window > own.max):
            raise ValueError(
                f"window {window} is out of range for {cls.name} "
                f"({cls.WINDOW}: {own.describe_range()})"
            )
        out: dict[str, Any] = {cls.WINDOW: window}
        for name, share in cls.WINDOW_FOLLOWS.items():
            spec = specs[name]
            value = round(window * share)
            if spec.min is not None:
                value = max(value, int(spec.min))
            if spec.max is not None:
                value = min(value, int(spec.max))
            out[name] = value
        out.update(cls.WINDOW_PINS)
        return out

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        raise NotImplementedError

    def count_message(self, message: Message) -> int:
        """Tokens of one message under this strategy's estimator (cached by the context)."""
        raise NotImplementedError

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        """``count_message`` for one replay (reference counts ``reference``, per-replay
        ``state``): the context counts every message version with it."""
        return self.count_message

    def count_system(self, text: str, message: Message | None) -> int:
        """Tokens of the system prompt as the original counts it."""
        return self.count_text(text)

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        """Tokens of the tool definitions in the request (0 = not counted by the original)."""
        if not tools:
            return 0
        return self.count_text(
            json.dumps(
                [
                    {"name": t.name, "description": t.description, "parameters": t.parameters}
                    for t in tools
                ],
                ensure_ascii=False,
            )
        )

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        """The model window the original believes it has (overflow is judged against it)."""
        raise NotImplementedError

    def threshold(self, ctx: ContextView) -> int | None:
        """The value the trigger compares against (None when there is no single one)."""
        return None

    def output_reserve(self, ctx: ContextView) -> int:
        return 0

    def conversation_room(self, ctx: ContextView) -> int:
        """Tokens of conversation (history + summary) the request holds before this
        strategy acts or the request stops fitting: the trigger (else the window), at most
        the window less the output reserve, less the system prompt and tool definitions in
        this strategy's count. Negative when the fixed part alone does not fit. Read before
        any step (after ``prepare``); the run form shows it per strategy."""
        window = self.window(ctx)
        trigger = self.threshold(ctx)
        limit = min(window if trigger is None else trigger, window - self.output_reserve(ctx))
        return limit - ctx.system_tokens - ctx.tools_tokens

    def compared_tokens(self, ctx: ContextView) -> int | None:
        """The request size the trigger compares with ``threshold`` when it is not the
        estimate ``ctx.request_tokens()`` (None): e.g. a provider's reported usage, which
        includes a system prompt, tools and attachments the transcript does not show. The
        run's curve, its events' before/after and the zone bar show this value, so the
        threshold line and the curve under it are one quantity. Must not change state."""
        return None

    def reserved_recent(self, ctx: ContextView) -> int:
        """Tokens the strategy will not compact now; default: the current turn."""
        turn, history = ctx.turn_tokens, ctx.history_tokens
        return turn if turn <= history else history  # (``min``: the first of equals)

    def zones(self, ctx: ContextView) -> Zones:
        window = self.window(ctx)
        recent = self.reserved_recent(ctx)
        reserve = self.output_reserve(ctx)
        system, tools, summary = ctx.system_tokens, ctx.tools_tokens, ctx.summary_tokens
        history = ctx.history_tokens
        request = system + tools + summary + history  # ``ctx.request_tokens()``
        unseen = ctx.counted_tokens() - request
        if unseen <= 0:  # (as ``max(0, ...)``: an int 0, also for a float 0.0)
            unseen = 0
        free = window - (request + unseen + reserve)
        # system, tools, summary, compactable, reserved_recent, output_reserve, free,
        # window, threshold, unseen, not_in_file (positional: records.new_zones)
        return new_zones(
            system,
            tools,
            summary,
            history - recent if history > recent else 0,
            recent,
            reserve,
            free if free > 0 else 0,
            window,
            self.threshold(ctx),
            unseen,
            0,  # not_in_file: a strategy that can tell splits it off ``unseen``
        )

    # --- hooks --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        """Once, before the first message (batch pre-computation; fill ``ctx.state`` where
        its initial values depend on the conversation)."""

    def after_append(self, ctx: ContextView, index: int) -> None:
        """After source message ``index`` joined the history (tool results, user requests,
        final replies: inspect ``ctx.message(index)``)."""

    def before_call(self, ctx: ContextView) -> None:
        """Before each inference call (``ctx.source_index`` = the assistant message about
        to be generated). Check and compact here."""


class ReferenceEstimator:
    """Estimator mixin for strategies that count with the run's cl100k reference (scaled by
    ``scale``): within a replay, messages are read from the context's shared reference
    table (``ctx.reference``; hooks count texts with ``ctx.reference.text``), so nothing is
    tokenised twice; outside a replay they are counted directly. Put it before
    ``Strategy`` in the bases."""

    def scale(self, reference_tokens: int) -> int:
        """Reference tokens -> this strategy's tokens (identity unless overridden)."""
        return reference_tokens

    def reference_text(self, text: str) -> int:
        return reference_counter().count(text)

    def count_text(self, text: str) -> int:
        return self.scale(self.reference_text(text))

    def count_message(self, message: Message) -> int:
        return self.scale(message_reference_tokens(message))

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        scale = self.scale
        message_of = reference.message_of
        return lambda message: scale(message_of(message))

    def count_system(self, text: str, message: Message | None) -> int:
        # The system prompt is a message of the transcript, counted like the others.
        if message is None:
            return 0
        return self.count_message(message)
