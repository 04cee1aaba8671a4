"""When will the agent's own auto-compact fire: the forecast rule.

One rule, read by the session page (``evaluate/session_now.py``), its JSON twin, the
``forecast`` bench and ``ctxlab statusline``; plain Python with nothing but the standard
library at module level, so the statusline stays fast.

- A *turn* is one model call (an assistant response with reported usage): the unit the
  agent checks its threshold at (Claude Code's ``autoCompactIfNeeded`` runs before every
  call; Codex checks before every request too).
- The *count* of a turn is the agent's own count after it, by the rule of its replay
  strategy (``session_now._Counts``): Claude Code's ``count_after_response`` (the usage,
  prompt + output, plus an unrecorded final output and, from 2.1.43, the response's own
  later lines), Codex's total usage plus the earlier turns' encrypted reasoning
  (``codex.reasoning_tokens``), Gemini CLI's last prompt.
- The *growth rate* is the mean growth per turn over the last ``RATE_TURNS`` turns since the
  agent's last compaction (``(count[k] - count[k - n]) / n``); fewer than two turns since the
  compaction: unknown (never guessed). Chosen on the agreement corpus (docs/your-session-now.md):
  the mean over 40 turns predicted best of the windows tried (5, 10, 20, 40, all; medians,
  EWMA, trimmed means), which is still only about half the compactions within 2 turns
  10 turns ahead: per-turn growth is bursty (one file read adds thousands of tokens).
- *Turns to auto-compact*: the smallest ``n >= 0`` with ``count + n * rate >= threshold``
  (0: the next check fires); None when the rate is not positive or unknown.
- *Its range*: the same over the growth of the same turns' ``RANGE_WINDOW``-turn stretches,
  at their ``RANGE_QUANTILES`` (the fastest stretches give the low end, the slowest the
  high end; ``high`` None: some stretches did not grow). On the agreement corpus the 10-90 %
  range of 5-turn stretches held the real number of turns for 78 % of compactions 10 turns
  ahead (median width 15 turns), where the point estimate was within 2 turns for 48 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

RATE_TURNS = 40  # turns the growth rate is averaged over (see the module docstring)
MIN_TURNS = 2  # turns since the last compaction needed for a rate at all
RANGE_WINDOW = 5  # turns per stretch whose growth gives the range
RANGE_QUANTILES = (0.1, 0.9)

# What the measurement calls a hit: predicted turns within TOLERANCE of the real ones,
# HORIZON turns before the agent's own compaction.
HORIZON = 10
TOLERANCE = 2


class TurnsEstimate:
    """How many more turns until the agent's count reaches its threshold. (A value class
    written out, not a dataclass: ``dataclasses`` and ``inspect`` cost the status line
    ~10 ms of each call; a NamedTuple's ``count`` would hide ``tuple.count``.)"""

    __slots__ = ("turns", "rate", "basis", "count", "threshold", "why", "low", "high")

    turns: int | None  # None: unknown (no rate, or the count does not grow)
    rate: float | None  # tokens per turn over ``basis`` turns
    basis: int  # turns the rate is the mean over
    count: int | None  # the count now
    threshold: int | None
    why: str  # the words shown when ``turns`` is None, else how it was reached
    low: int | None  # the range (module docstring); None: no range
    high: int | None  # None with ``low`` set: unbounded (a stretch did not grow)

    def __init__(
        self,
        turns: int | None,
        rate: float | None,
        basis: int,
        count: int | None,
        threshold: int | None,
        why: str,
        low: int | None = None,
        high: int | None = None,
    ) -> None:
        values = (turns, rate, basis, count, threshold, why, low, high)
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"TurnsEstimate is frozen: cannot set {name}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TurnsEstimate):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"TurnsEstimate({fields})"

    @property
    def range_text(self) -> str:
        if self.turns is None or self.low is None or self.low == self.high:
            return ""
        return f"{self.low}-{self.high}" if self.high is not None else f"{self.low} or more"

    def as_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "range": None if self.low is None else [self.low, self.high],
            "growth_per_turn": None if self.rate is None else round(self.rate, 1),
            "basis_turns": self.basis,
            "count": self.count,
            "threshold": self.threshold,
            "why": self.why,
        }


def growth_rate(counts: Sequence[int], turns: int = RATE_TURNS) -> tuple[float | None, int]:
    """(mean growth per turn over the last ``turns`` turns of ``counts``, turns used);
    (None, 0) with fewer than ``MIN_TURNS`` counts. ``counts``: the counts since the last
    compaction, oldest first."""
    if len(counts) < MIN_TURNS:
        return None, 0
    span = min(turns, len(counts) - 1)
    return (counts[-1] - counts[-1 - span]) / span, span


def turns_to_trigger(counts: Sequence[int], threshold: int | None) -> TurnsEstimate:
    """The forecast rule (module docstring): ``counts`` since the agent's last compaction,
    oldest first, the last one the count now."""
    count = counts[-1] if counts else None
    if threshold is None:
        return TurnsEstimate(None, None, 0, count, None, "no auto-compact threshold known")
    if count is None:
        return TurnsEstimate(None, None, 0, None, threshold, "no reported usage yet")
    if count >= threshold:
        return TurnsEstimate(0, None, 0, count, threshold, "the count is at the threshold")
    rate, basis = growth_rate(counts)
    if rate is None:
        why = f"fewer than {MIN_TURNS} turns since the last compaction: no growth rate yet"
        return TurnsEstimate(None, None, 0, count, threshold, why)
    if rate <= 0:
        why = f"the context did not grow over the last {basis} turns"
        return TurnsEstimate(None, rate, basis, count, threshold, why)
    turns = math.ceil((threshold - count) / rate)
    why = f"{threshold - count:,} tokens to go at {rate:,.0f} a turn (mean of the last {basis})"
    low, high = turns_range(counts[-1 - basis :], threshold - count, turns)
    return TurnsEstimate(turns, rate, basis, count, threshold, why, low, high)


def turns_range(counts: Sequence[int], gap: int, turns: int) -> tuple[int, int | None]:
    """(low, high) turns for ``gap`` tokens at the growth of ``counts``' stretches of
    ``RANGE_WINDOW`` turns, at ``RANGE_QUANTILES``; always around ``turns``."""
    steps = [b - a for a, b in zip(counts, counts[1:], strict=False)]
    width = min(RANGE_WINDOW, len(steps))
    rates = sorted(sum(steps[i : i + width]) / width for i in range(len(steps) - width + 1))

    def at(share: float) -> float:
        return rates[min(len(rates) - 1, int(share * (len(rates) - 1) + 0.5))]

    slow, fast = at(RANGE_QUANTILES[0]), at(RANGE_QUANTILES[1])
    low = min(math.ceil(gap / fast), turns) if fast > 0 else turns
    high = max(math.ceil(gap / slow), turns) if slow > 0 else None
    return low, high


def claude_code_threshold(window: int, output_reserve: int, buffer: int) -> int:
    """Claude Code's auto-compact threshold with its default settings (``claude_code``
    strategy, ``auto_compact_threshold``): window - the version's output reserve - its
    buffer (``AUTOCOMPACT_BUFFER_TOKENS``). tests/engine/evaluate/test_forecast.py checks
    it against the strategy for every version range."""
    return window - output_reserve - buffer


def reattached(agent: str, kind: str) -> bool:
    """Whether the agent puts an instruction source (an ``evaluate.instructions`` kind) back
    by itself after compacting, so that its compaction does not put it at risk: Claude Code
    re-injects CLAUDE.md (``instructions``: ``reattached``), Codex rebuilds its initial
    context with the AGENTS.md instructions (``codex._initial_context``)."""
    return kind == "project_rules" and agent in ("claude_code", "codex")


class Hit(NamedTuple):
    """One agent compaction seen ``HORIZON`` turns ahead."""

    session: str
    at_message: int  # the compaction's first message after it
    predicted: int | None
    actual: int
    low: int | None = None
    high: int | None = None
    # The same rule at the span's own mean growth over all its turns, the HORIZON still to
    # come included: what a forecaster knowing the span's true average rate would say (the
    # ceiling of any rate-based forecast; ``oracle_turns``).
    oracle: int | None = None

    @property
    def within(self) -> bool:
        return self.predicted is not None and abs(self.predicted - self.actual) <= TOLERANCE

    @property
    def in_range(self) -> bool:
        if self.low is None:
            return False
        return self.low <= self.actual and (self.high is None or self.actual <= self.high)


def share_within(hits: Sequence[Hit]) -> float | None:
    return round(sum(h.within for h in hits) / len(hits), 4) if hits else None


def oracle_turns(span: Sequence[int], now: int, threshold: int) -> int | None:
    """Turns to ``threshold`` from ``span[now]`` at the mean growth per turn of the whole
    ``span`` (the counts between two compactions, oldest first: the future included)."""
    if len(span) < MIN_TURNS or now >= len(span):
        return None
    rate = (span[-1] - span[0]) / (len(span) - 1)
    if span[now] >= threshold:
        return 0
    return math.ceil((threshold - span[now]) / rate) if rate > 0 else None


def share_oracle_within(hits: Sequence[Hit]) -> float | None:
    """``share_within`` for the oracle's turns (``Hit.oracle``)."""
    if not hits:
        return None
    near = sum(h.oracle is not None and abs(h.oracle - h.actual) <= TOLERANCE for h in hits)
    return round(near / len(hits), 4)


def share_in_range(hits: Sequence[Hit]) -> float | None:
    return round(sum(h.in_range for h in hits) / len(hits), 4) if hits else None
