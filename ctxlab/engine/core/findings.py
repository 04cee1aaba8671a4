"""Finding kinds and the summary-size check; a broken invariant becomes a ``Finding``.

The per-step checks are ``ReplayContext.check_findings``.

The seed strategies break some of these by design; the lab shows where. Checks use the
context's incrementally maintained ledgers, so a step costs O(unmatched tool ids).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .catalogue import FINDINGS

if TYPE_CHECKING:
    from .context_view import ContextView

# Kind -> description; the labels and descriptions live in the catalogue.
FINDING_KINDS: dict[str, str] = {kind: row.meaning for kind, row in FINDINGS.items()}


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
