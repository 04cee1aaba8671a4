"""Replicates: the same run (or the same probe scoring) repeated with a model that does not
answer the same way twice, and the spread of what they measured.

LLM-made summaries and LLM-judged probes vary between runs (profff/lost-in-compaction saw
recall spread up to 14x across replicates), so one figure of each says little. ``spread``
describes N replicates' values (mean, min–max, sample standard deviation); ``clear_lead``
is the one rule that lets "best" mark only a difference larger than that spread: the
leading family (a configuration's replicates) is best only when its mean beats every other
family's mean by more than the wider of the two min–max ranges. Without replicates (one
value per family, no spread) it is the plain rule: the best value unless all are equal.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

DEFAULT_JUDGE_REPLICATES = 3  # judged probes: 3 replicates unless asked otherwise
MAX_REPLICATES = 10
SPREAD_RULE = (
    "with replicates, best marks only a lead larger than the spread: the best mean must beat "
    "every other configuration's mean by more than the wider of the two min–max ranges"
)


@dataclass(frozen=True, slots=True)
class Spread:
    """N replicates' values: mean, min, max and the sample standard deviation (0 for one)."""

    n: int
    mean: float
    low: float
    high: float
    stdev: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": round(self.mean, 4),
            "min": round(self.low, 4),
            "max": round(self.high, 4),
            "stdev": round(self.stdev, 4),
        }

    def text(self, digits: int = 2) -> str:
        """``0.62 (0.55–0.70, sd 0.06, 3 replicates)``; one value: just the value."""
        if self.n < 2:
            return f"{self.mean:.{digits}f}"
        return (
            f"{self.mean:.{digits}f} ({self.low:.{digits}f}–{self.high:.{digits}f}, "
            f"sd {self.stdev:.{digits}f}, {self.n} replicates)"
        )


def spread(values: Iterable[float | int | None]) -> Spread | None:
    """The spread of the values that are numbers (None: no number)."""
    numbers = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not numbers:
        return None
    n = len(numbers)
    mean = sum(numbers) / n
    var = sum((x - mean) ** 2 for x in numbers) / (n - 1) if n > 1 else 0.0
    return Spread(n, mean, min(numbers), max(numbers), math.sqrt(var))


def clear_lead(
    numbers: Sequence[float | None],
    families: Sequence[Hashable],
    better: Literal["lower", "higher"],
) -> list[bool]:
    """Which values are best when values come in families of replicates (``families[i]``
    names value i's family; None values are not eligible): every member of the family with
    the best mean, when that mean leads every other eligible family's by more than the wider
    of the two min–max ranges; else none."""
    members: dict[Hashable, list[float]] = {}
    for number, family in zip(numbers, families, strict=True):
        if number is not None:
            members.setdefault(family, []).append(number)
    spreads = {f: s for f, vs in members.items() if (s := spread(vs)) is not None}
    if len(spreads) < 2:
        return [False] * len(numbers)
    sign = -1.0 if better == "lower" else 1.0
    leader = max(spreads, key=lambda f: sign * spreads[f].mean)
    top = spreads[leader]
    for family, other in spreads.items():
        if family == leader:
            continue
        if sign * (top.mean - other.mean) <= max(top.width, other.width):
            return [False] * len(numbers)
    return [f == leader and n is not None for n, f in zip(numbers, families, strict=True)]
