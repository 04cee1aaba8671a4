"""Where to cut the history: tool-id alignment and suffix search."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.context_view import ContextView


def aligned(ctx: ContextView, indexes: list[int]) -> bool:
    """The set of tool_use ids equals the set of tool_result ids (empty ids ignored)."""
    uses: set[str] = set()
    results: set[str] = set()
    for i in indexes:
        u, r = ctx.ids(i)
        uses.update(u)
        results.update(r)
    return uses == results


def largest_aligned_suffix(ctx: ContextView, reserve: int) -> tuple[int, int]:
    """QwenPaw ``context_check`` keep rule: the longest tool-aligned suffix of the live
    history whose tokens stay <= ``reserve``. Returns (count, tokens); (0, 0) if none.
    Non-aligned lengths are skipped, not stopped at. O(suffix), incremental alignment."""
    live = ctx.live
    uses: set[str] = set()
    results: set[str] = set()
    diff = 0  # |uses symmetric-difference results|
    best = best_tokens = acc = 0
    for k in range(1, len(live) + 1):
        i = live[-k]
        acc += ctx.tokens(i)
        if acc > reserve:
            break
        u, r = ctx.ids(i)
        for tid in u:
            if tid not in uses:
                uses.add(tid)
                diff += -1 if tid in results else 1
        for tid in r:
            if tid not in results:
                results.add(tid)
                diff += -1 if tid in uses else 1
        if diff == 0:
            best, best_tokens = k, acc
    return best, best_tokens
