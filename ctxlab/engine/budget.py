"""One model context window for every strategy of a comparison.

Strategies name their window differently (``max_input_length``, ``context_window``,
``model_context_limit``...); each declares which parameter it is and which derived ones
follow it (``Strategy.WINDOW`` / ``WINDOW_FOLLOWS``). ``window_params`` turns one budget
into a strategy's own parameters; ``suggested_windows`` proposes budgets from a
transcript's cl100k peak so that compaction fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .core.model import Conversation
from .strategies import get_strategy_class
from .tokens.cl100k import message_reference_tokens, reference_counter

SUGGESTED_SHARES = (0.25, 0.5, 0.75)


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
    return (cls.WINDOW, *cls.WINDOW_FOLLOWS) if cls.WINDOW else ()


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
    total = peak = 0
    seen_assistant = False
    previous = ""
    for role, tokens in rows:
        if role == "assistant" and previous != "assistant":
            peak = max(peak, total)
            seen_assistant = True
        total += tokens
        previous = role
    return peak if seen_assistant else total


def suggested_windows(peak: int, shares: tuple[float, ...] = SUGGESTED_SHARES) -> list[int]:
    """Budgets at which compaction fires on a transcript of cl100k peak ``peak``: the given
    shares of it, rounded to the nearest 1,000 (at least 1,000; duplicates removed)."""
    out: list[int] = []
    for share in shares:
        value = max(1000, round(peak * share / 1000) * 1000)
        if value not in out:
            out.append(value)
    return out
