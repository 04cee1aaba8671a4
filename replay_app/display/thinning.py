"""What a chart can draw of a long per-step series: a thinned view, never a changed value.

A run over a 20,000-message transcript has ~10,000 steps, and its page's chart carried
every one in each of its three lines: most of a 0.6 MB page, for a plot a few hundred
pixels wide. ``keep_indexes`` picks the points worth drawing:

- the minimum and the maximum of each of ``buckets`` equal slices of the steps (so every
  peak and trough a pixel column could show is still drawn, at its exact value);
- the first and the last point;
- ``forced`` indexes (the caller's: each event's step on the strategy's line, so every
  compaction's drop meets the line where it happened);
- both sides of every crossing of a ``levels`` value (threshold, window): a line that
  crosses the threshold on the page crossed it at that step;
- around every gap (``None``: a step without a reported count), one ``None`` per gap and
  its neighbours, so a gap stays a gap (``connectgaps=False``).

The values at the kept indexes are the stored ones; the JSON twins keep every point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

CHART_BUCKETS = 500  # 2 points per bucket: at most 1,000 besides the forced ones


def keep_indexes(
    values: Sequence[int | None],
    *,
    buckets: int = CHART_BUCKETS,
    forced: Iterable[int] = (),
    levels: Iterable[int | None] = (),
) -> list[int]:
    """The sorted indexes of ``values`` to draw (every index when there are few)."""
    n = len(values)
    if n <= 2 * buckets:
        return list(range(n))
    keep = {0, n - 1}
    keep.update(i for i in forced if 0 <= i < n)
    has_gaps = any(v is None for v in values)
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        part = values[lo:hi]
        if has_gaps:
            present = [(v, lo + k) for k, v in enumerate(part) if v is not None]
            if present:
                keep.add(min(present)[1])
                keep.add(max(present)[1])
            continue
        keep.add(lo + part.index(min(part)))  # type: ignore[type-var]  # no None here
        keep.add(lo + part.index(max(part)))  # type: ignore[type-var]
    for level in {v for v in levels if v}:
        keep.update(_crossings(values, level))
    if has_gaps:
        keep.update(_gap_edges(values))
    return sorted(keep)


def _crossings(values: Sequence[int | None], level: int) -> set[int]:
    """Both indexes of each neighbouring pair on different sides of ``level``."""
    out: set[int] = set()
    above = None
    for i, v in enumerate(values):
        if v is None:
            above = None
            continue
        now = v >= level
        if above is not None and now != above:
            out.update((i - 1, i))
        above = now
    return out


def _gap_edges(values: Sequence[int | None]) -> set[int]:
    """The first ``None`` of each gap and the points on either side of it."""
    out: set[int] = set()
    for i, v in enumerate(values):
        if v is None and (i == 0 or values[i - 1] is not None):
            out.update(k for k in (i - 1, i) if k >= 0)
        elif v is not None and i and values[i - 1] is None:
            out.add(i)
    return out


def pick(values: Sequence[object], indexes: Sequence[int]) -> list[object]:
    """``values`` at ``indexes``, in order."""
    return [values[i] for i in indexes]
