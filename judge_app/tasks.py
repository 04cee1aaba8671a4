"""Celery tasks: Claude scoring of a run's probes, a comparison's shared question set (the
runs themselves are never touched)."""

from __future__ import annotations

import logging
from decimal import Decimal

from celery import shared_task

from . import services, shared

log = logging.getLogger(__name__)


@shared_task(name="judge_app.score_probes_with_claude")
def score_probes_with_claude(set_id: int, model: str, budget_usd: str, replicates: int = 1) -> str:
    try:
        row = services.score_with_claude(set_id, model, Decimal(budget_usd), replicates)
    except Exception as exc:  # a failed scoring is said on the page, never raised at a run
        log.exception("probe set %s: Claude scoring failed", set_id)
        services.mark_failed(set_id, f"Claude scoring failed: {type(exc).__name__}: {exc}")
        return "failed"
    return str(row.claude_status)


@shared_task(name="judge_app.score_shared_probes")
def score_shared_probes(run_ids: list[int]) -> str:
    """A comparison's shared question set, scored and stored (``shared.score``)."""
    return shared.score(run_ids)


@shared_task(name="judge_app.generate_probe_sets")
def generate_probe_sets(run_ids: list[int], key: str) -> str:
    """Runs' own probe sets made where missing or outdated (``shared.generate_sets``)."""
    return shared.generate_sets(run_ids, key)
