"""Invariant checks run at every step; a broken one becomes a ``Finding``.

The seed strategies break some of these by design; the lab shows where. Checks use the
context's incrementally maintained ledgers, so a step costs O(unmatched tool ids).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .catalogue import FINDINGS

if TYPE_CHECKING:
    from .context import ReplayContext
    from .context_view import ContextView

# Kind -> description; the labels and descriptions live in the catalogue.
FINDING_KINDS: dict[str, str] = {kind: row.meaning for kind, row in FINDINGS.items()}


def check_step(ctx: ReplayContext) -> None:
    """Record the findings of the request about to be sent at ``ctx.step``."""
    broken = ctx.broken_tools
    changed = ctx.live_tools.changed
    if changed:
        # Only the ids touched since the last step: sources may leave many calls unanswered,
        # and a set difference of every one at every step grew with the transcript.
        live_bad, orig_bad = ctx.live_tools.unmatched, ctx.orig_tools.unmatched
        for tid in changed:
            if tid in live_bad and tid not in orig_bad:
                broken.add(tid)
            else:
                broken.discard(tid)
        changed.clear()
    if broken:
        ctx.finding("tool_pair_broken", tool_ids=sorted(broken)[:20], count=len(broken))
    latest = ctx.last_user_query
    if latest is not None and not ctx.alive[latest]:
        ctx.finding("latest_user_dropped", messages=(latest,))
    sysi = ctx.system_index
    if sysi is not None and (not ctx.alive[sysi] or ctx.is_modified(sysi)):
        ctx.finding("system_modified", messages=(sysi,))
    window = ctx.strategy.window(ctx.view)
    ref = ctx.request_ref()
    if window and ref > window:
        ctx.finding("overflow", reference=ref, window=window)


def check_summary_size(
    ctx: ContextView,
    *,
    summary_rendered: str,
    replaced: list[int],
    summary_id: int | None,
    previous_ref: int = 0,
) -> None:
    """``summary_larger`` if the summary (as re-injected) outweighs what it replaced."""
    if not replaced:
        return
    summary_ref = ctx.reference.text(summary_rendered)
    replaced_ref = previous_ref + sum(ctx.ref_tokens(i) for i in replaced)
    if summary_ref > replaced_ref:
        ctx.finding(
            "summary_larger",
            messages=replaced,
            summary_tokens=summary_ref,
            replaced_tokens=replaced_ref,
            summary_id=summary_id,
        )
