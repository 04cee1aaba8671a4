"""One model context window for every strategy of a comparison.

Strategies name their window differently (``max_input_length``, ``context_window``,
``model_context_limit``...); each declares which parameter it is and which derived ones
follow it (``Strategy.WINDOW`` / ``WINDOW_FOLLOWS``). ``window_params`` turns one budget
into a strategy's own parameters; ``window_advice`` proposes budgets from what the agent
really sent (``SentSize``: reported usage where the transcript has it, else messages +
system prompt + tool definitions) so that compaction fires, says when a window is below
the fixed part (system prompt + tools) and the room each strategy leaves the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .core.context import ReplayContext
from .core.model import Conversation, Role, ToolDef
from .strategies import get_strategy_class
from .summarize.offline import OfflineSummarizer
from .tokens.cl100k import message_reference_tokens, reference_counter
from .tokens.reference import reference_tokens

SUGGESTED_SHARES = (0.25, 0.5, 0.75)  # of the peak above the fixed part


def window_params(
    strategy: str, window: int | None, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``strategy``'s window parameters for ``window`` (none when it is None) with
    ``overrides`` on top: an explicit per-strategy value wins over the shared window."""
    out: dict[str, Any] = {}
    if window is not None:
        out.update(get_strategy_class(strategy).window_params(window))
    out.update(overrides or {})
    return out


def window_param_names(strategy: str) -> tuple[str, ...]:
    """The parameters a shared window sets for ``strategy`` (its own first)."""
    cls = get_strategy_class(strategy)
    return (cls.WINDOW, *cls.WINDOW_FOLLOWS, *cls.WINDOW_PINS) if cls.WINDOW else ()


def peak_reference_tokens(conversation: Conversation) -> int:
    """The largest request of the uncompacted transcript under cl100k."""
    counter = reference_counter()
    return peak_request(
        (m.role.value, message_reference_tokens(m, counter)) for m in conversation.messages
    )


def peak_request(rows: Iterable[tuple[str, int]]) -> int:
    """From (role, cl100k tokens) per message in order: the largest request, i.e. the
    history before an assistant message (tools not counted). Messages after the last
    assistant message are in no request; without any assistant message, everything."""
    peak = RequestPeak()
    for role, tokens in rows:
        peak.add(role, tokens)
    return peak.value


class RequestPeak:
    """``peak_request`` fed one message at a time (the import counts its batches)."""

    __slots__ = ("_peak", "_previous", "_seen_assistant", "_total")

    def __init__(self) -> None:
        self._total = self._peak = 0
        self._seen_assistant = False
        self._previous = ""

    def add(self, role: str, tokens: int) -> None:
        if role == "assistant" and self._previous != "assistant":
            self._peak = max(self._peak, self._total)
            self._seen_assistant = True
        self._total += tokens
        self._previous = role

    @property
    def value(self) -> int:
        return self._peak if self._seen_assistant else self._total


# --- what the agent really sent, and the room it leaves -------------------------------------


@dataclass(frozen=True, slots=True)
class SentSize:
    """What the agent sent at its largest request, counted once at import.

    ``messages_peak``: the cl100k count of the messages (the system prompt, message 0,
    included) before the largest call (``peak_request``); ``system`` and ``tools``: the
    cl100k counts of the system prompt and of the tool definitions, the *fixed part* every
    request carries whatever a strategy does; ``reported_peak``: the largest request plus
    answer the provider reported (None when the transcript has no usage)."""

    messages_peak: int
    system: int = 0
    tools: int = 0
    reported_peak: int | None = None

    @property
    def fixed(self) -> int:
        """System prompt + tool definitions (cl100k): no window below it can hold a request."""
        return self.system + self.tools

    @property
    def estimated_peak(self) -> int:
        """The largest request as sent: messages (system included) + tool definitions."""
        return self.messages_peak + self.tools

    @property
    def peak(self) -> int:
        """What the suggestions start from: the reported usage where the transcript has it,
        else the estimate (messages + system + tools)."""
        return self.reported_peak if self.reported_peak is not None else self.estimated_peak

    @property
    def source(self) -> str:
        return "reported" if self.reported_peak is not None else "estimated"


def sent_size(conversation: Conversation) -> SentSize:
    """``SentSize`` of a parsed conversation (the import stores the same numbers)."""
    counter = reference_counter()
    per_message = [message_reference_tokens(m, counter) for m in conversation.messages]
    first = conversation.messages[0] if conversation.messages else None
    reported = [m.usage.context_tokens for m in conversation.messages if m.usage is not None]
    return SentSize(
        messages_peak=peak_request(
            (m.role.value, n) for m, n in zip(conversation.messages, per_message, strict=True)
        ),
        system=per_message[0] if first is not None and first.role is Role.SYSTEM else 0,
        tools=tools_reference_tokens(conversation.tools),
        reported_peak=max(reported) if reported else None,
    )


def tools_reference_tokens(tools: Sequence[ToolDef]) -> int:
    """The cl100k count of the tool definitions as a request carries them (the rule of
    ``ReferenceTokens.tools``)."""
    if not tools:
        return 0
    listed = [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]
    return reference_counter().count(json.dumps(listed, ensure_ascii=False))


def fit_windows(size: SentSize, shares: tuple[float, ...] = SUGGESTED_SHARES) -> list[int]:
    """Windows at which compaction fires on what the agent sent: the fixed part plus the
    given shares of the rest of the peak, rounded to the nearest 1,000, never at or below
    the fixed part and below the peak (duplicates removed; the first is kept whatever)."""
    fixed = size.fixed
    floor = (fixed // 1000 + 1) * 1000  # the first whole thousand above the fixed part
    out: list[int] = []
    for share in shares:
        value = max(floor, 1000, round((fixed + (size.peak - fixed) * share) / 1000) * 1000)
        if value not in out and (not out or value < size.peak):
            out.append(value)
    return out


@dataclass(frozen=True, slots=True)
class Room:
    """Room for the conversation under one strategy at one window: the window less the
    fixed part (system prompt + tool definitions, cl100k: what the provider receives) less
    the strategy's margin (its trigger below the window, its output reserve, or the fixed
    part it does not count and so lets the conversation take)."""

    strategy: str
    label: str
    window: int
    fixed: int  # system prompt + tool definitions, cl100k
    margin: int  # window - fixed - room
    room: int | None  # None: the window is out of the strategy's range
    own_fixed: int = 0  # the fixed part as the strategy counts it (0 tools: not counted)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "label": self.label,
            "window": self.window,
            "fixed": self.fixed,
            "own_fixed": self.own_fixed,
            "margin": self.margin,
            "room": self.room,
            "note": self.note,
        }


def conversation_room(strategy: str, window: int, head: Conversation) -> Room:
    """``Room`` for ``strategy`` at ``window`` on a transcript whose system prompt and tool
    definitions are ``head``'s (its messages: the system prompt only, or none): the lesser
    of the conversation the strategy lets grow before it acts (``Strategy.conversation_room``,
    in its own count) and the conversation a request can hold beside the fixed part and
    the output reserve."""
    cls = get_strategy_class(strategy)
    reference = reference_tokens(head)
    system = reference.per_message[0] if head.messages else 0
    fixed = system + reference.tools
    try:
        params = window_params(strategy, window)
    except ValueError as exc:
        return Room(strategy, cls.label, window, fixed, 0, None, note=str(exc))
    instance = cls(params)
    ctx = ReplayContext(head, instance, reference=reference, summarizer=OfflineSummarizer())
    view = ctx.view
    instance.prepare(view)
    fits = window - instance.output_reserve(view) - fixed
    room = min(instance.conversation_room(view), fits)
    note = ""
    if reference.tools and not view.tools_tokens:
        note = "counts no tool definitions: they take the conversation's room"
    own = view.system_tokens + view.tools_tokens
    return Room(strategy, cls.label, window, fixed, window - fixed - room, room, own, note)


@dataclass(frozen=True, slots=True)
class WindowAdvice:
    """The one answer to "which window?": the suggestions from what the agent sent, the
    fixed part, whether the chosen window is below it, and the room per strategy at each
    suggested (and the chosen) window. The run form, its JSON twin and the CLI read it."""

    size: SentSize
    windows: list[int]
    window: int | None
    rooms: dict[int, list[Room]] = field(default_factory=dict)

    @property
    def below_fixed(self) -> bool:
        return self.window is not None and self.window <= self.size.fixed

    @property
    def warning(self) -> str:
        if not self.below_fixed:
            return ""
        s = self.size
        return (
            f"window {self.window:,} is not above the fixed part of every request: system "
            f"prompt {s.system:,} + tool definitions {s.tools:,} = {s.fixed:,} cl100k tokens; "
            "every request overflows whatever the strategy does"
        )

    def as_dict(self) -> dict[str, Any]:
        s = self.size
        return {
            "peak": s.peak,
            "peak_source": s.source,
            "reported_peak": s.reported_peak,
            "estimated_peak": s.estimated_peak,
            "messages_peak": s.messages_peak,
            "system_tokens": s.system,
            "tools_tokens": s.tools,
            "fixed_tokens": s.fixed,
            "windows": list(self.windows),
            "window": self.window,
            "below_fixed": self.below_fixed,
            "warning": self.warning,
            "rooms": {str(w): [r.as_dict() for r in rows] for w, rows in self.rooms.items()},
        }


def window_advice(
    size: SentSize,
    head: Conversation | None = None,
    *,
    window: int | None = None,
    strategies: Sequence[str] = (),
) -> WindowAdvice:
    """Suggested windows for ``size`` and, given ``head`` (system prompt + tools), the room
    per strategy (``strategies``; each with a window parameter) at each suggested window
    and at ``window``."""
    windows = fit_windows(size)
    rooms: dict[int, list[Room]] = {}
    if head is not None:
        for w in dict.fromkeys([*windows, *([window] if window else [])]):
            rooms[w] = [
                conversation_room(name, w, head)
                for name in strategies
                if get_strategy_class(name).WINDOW
            ]
    return WindowAdvice(size=size, windows=windows, window=window, rooms=rooms)
