"""The compaction ordinal K of a stored run's events (``catalogue.COMPACTION_ORDINAL``):
``catalogue.compaction_ordinals`` over the run's event rows, the one numbering the run page
(events, summaries, chart markers), the summary page, the compare pages (their rows come
from ``compare.pieces``, numbered by the same function), the JSON twins, CSVs and report
read."""

from __future__ import annotations

from ctxlab.engine.core import catalogue
from replay_app import memo
from replay_app.models import Run


def compaction_ordinals(run: Run) -> dict[int, int]:
    """Event seq -> K for every compaction event of ``run`` (memoised while it stays
    finished)."""
    return memo.cached(
        run,
        "compaction_ordinals",
        lambda: catalogue.compaction_ordinals(
            run.events.order_by("seq").values_list("seq", "kind")
        ),
    )
