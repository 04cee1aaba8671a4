"""The compaction ordinal K of a stored run's events (``catalogue.COMPACTION_ORDINAL``):
``catalogue.compaction_ordinals`` over the run's event rows, the one numbering the run page
(events, summaries, chart markers), the summary page, the compare pages (their rows come
from ``compare.pieces``, numbered by the same function), the JSON twins, CSVs and report
read."""

from __future__ import annotations

from collections.abc import Sequence

from ctxlab.engine.core import catalogue
from replay_app import memo
from replay_app.models import Run, RunEvent


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


def compaction_ordinals_of(runs: Sequence[Run]) -> dict[int, dict[int, int]]:
    """``compaction_ordinals`` of several runs with one query: run id -> (seq -> K)."""
    kinds: dict[int, list[tuple[int, str]]] = {run.pk: [] for run in runs}
    rows = RunEvent.objects.filter(run_id__in=list(kinds)).order_by("run_id", "seq")
    for run_id, seq, kind in rows.values_list("run_id", "seq", "kind"):
        kinds[run_id].append((seq, kind))
    return {run_id: catalogue.compaction_ordinals(pairs) for run_id, pairs in kinds.items()}
