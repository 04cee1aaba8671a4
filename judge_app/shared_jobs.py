"""The shared question set of a probe comparison, scored in the background.

Scoring a comparison's shared set the first time reads the transcript and every run's
stored records: seconds on a long transcript. A web request therefore only reads what is
stored (``shared.shared_data(compute=False)``); while something is missing it queues one
Celery task per set of runs (``score_shared_probes``, state in ``SharedScoring``) and the
page shows a pending section that polls (htmx) until the scores are there. The page and
its JSON twin read the same dict: ``pending`` (with ``job``: status and runs scored so
far) until it is ready, ``error`` when the task failed.

A run's own probe set is made the same way when it is missing or outdated (a run finished
before ``services.GENERATOR`` changed): ``own_sets_job`` queues ``generate_probe_sets``
under its own ``SharedScoring`` row (key ``own:<ids>`` for a run page, ``suite:<id>`` for a
suite) and the page polls or says the scores are being brought up to date. The shared
task makes the runs' own sets first, so a comparison needs one task, not two. The tasks'
bodies are ``shared.score`` and ``shared.generate_sets``.

Claude scoring of a run's probe set is queued here too (``request_claude``); its body is
``services.score_with_claude``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from ctxlab.engine.summarize.adapters.llm_common import public_url
from replay_app.costs import llm
from replay_app.models import Run, RunStatus

from . import services, shared
from .models import ClaudeStatus, ProbeSet, SharedScoring
from .shared import runs_key
from .tasks import generate_probe_sets, score_probes_with_claude, score_shared_probes

log = logging.getLogger(__name__)

POLL_SECONDS = 1
CLAUDE_STALE_MINUTES = 30  # a Claude scoring queued or running this long: lost
STALE_MINUTES = 10  # a task queued or running this long is taken as lost: queued again
OWN_PREFIX = "own:"
CHANGED = "The runs changed while their shared questions were scored (one was retried or finished)."


def shared_view(
    runs: Sequence[Run], *, poll: bool = False, retry_failed: bool = False
) -> dict[str, Any]:
    """The shared set's page data; queues its scoring when something is missing and no
    task is at work on it. ``retry_failed``: also after a failure (a page the reader
    loaded). ``poll``: the pending section asking again; a task that finished while its
    scores are still missing (a run was retried meanwhile) is then said, not queued again
    at every poll."""
    data = _read(runs)
    if not data.get("pending") and not data.get("own_pending"):
        return data
    key = runs_key([r.pk for r in runs])
    row = SharedScoring.objects.filter(runs=key).first()
    if poll and row is not None and row.status == SharedScoring.Status.DONE:
        data.pop("own_pending", None)
        data.update(pending=False, error=CHANGED)
        return data
    if row is None or _should_start(row, retry_failed):
        done = sum(1 for r in runs if r.status == RunStatus.DONE)
        row = _start(key, score_shared_probes, ([r.pk for r in runs],), done)
        data = _read(runs)  # an eager task has finished already
        if not data.get("pending") and not data.get("own_pending"):
            return data
        row = SharedScoring.objects.filter(runs=key).first() or row
    data["job"] = _job(row)
    if row.status == SharedScoring.Status.FAILED:
        data.pop("own_pending", None)
        data.update(pending=False, error=row.message or "Scoring the shared questions failed.")
    return data


def _read(runs: Sequence[Run]) -> dict[str, Any]:
    """The stored shared set, with ``own_pending`` True when a finished run's own set is
    missing or outdated (also for runs of different transcripts, which share no set)."""
    data = shared.shared_data(runs, compute=False)
    if services.stale_runs(r.pk for r in runs):
        data["own_pending"] = True
    return data


def own_sets_job(
    run_ids: Sequence[int], *, key: str | None = None, poll: bool = False,
    retry_failed: bool = False,
) -> dict[str, Any] | None:  # fmt: skip
    """None when every finished run of ``run_ids`` has its current probe set; else the
    state of the task making the missing ones (queued here when none is at work):
    ``status``, ``done_runs``, ``total_runs``, ``poll_seconds``, and ``error`` when it
    failed or (``poll``) finished while a set is still missing. The request never makes a
    set itself: on a 5,000-message transcript that is seconds per run."""
    stale = services.stale_runs(run_ids)
    if not stale:
        return None
    analysing = services.analysing_runs(stale)  # their sets land with their analysis
    if analysing:
        stale = [pk for pk in stale if pk not in analysing]
        if not stale:
            return {**ANALYSING, "total_runs": len(analysing)}
    key = key or OWN_PREFIX + runs_key(stale)
    row = SharedScoring.objects.filter(runs=key).first()
    if poll and row is not None and row.status == SharedScoring.Status.DONE:
        return {**_job(row), "error": CHANGED}
    if row is None or _should_start(row, retry_failed):
        row = _start(key, generate_probe_sets, (stale, key), len(stale))
        if not services.stale_runs(stale):  # an eager task has finished already
            return None
        row = SharedScoring.objects.filter(runs=key).first() or row
    job = _job(row)
    if row.status == SharedScoring.Status.FAILED:
        job["error"] = row.message or "Making the probes failed."
    return job


# The state ``own_sets_job`` gives while the runs' worker is still analysing them.
ANALYSING: dict[str, Any] = {"status": "analysing", "done_runs": 0, "poll_seconds": POLL_SECONDS}


def _job(row: SharedScoring) -> dict[str, Any]:
    return {
        "status": row.status,
        "done_runs": row.done_runs,
        "total_runs": row.total_runs,
        "poll_seconds": POLL_SECONDS,
    }


def _should_start(row: SharedScoring, retry_failed: bool) -> bool:
    if row.status == SharedScoring.Status.DONE:
        return True  # done, yet something is missing: a run finished or was retried since
    if row.status == SharedScoring.Status.FAILED:
        return retry_failed
    started = row.requested_at
    return started is None or timezone.now() - started > timedelta(minutes=STALE_MINUTES)


def _start(key: str, task: Any, args: tuple[Any, ...], total: int) -> SharedScoring:
    """The row set to queued and ``task`` sent with ``args`` (``total``: runs to do)."""
    task_id = uuid.uuid4().hex  # stored before the task is sent: a worker may finish first
    fields = {
        "status": SharedScoring.Status.QUEUED, "message": "", "done_runs": 0,
        "total_runs": total, "task_id": task_id, "requested_at": timezone.now(),
        "finished_at": None,
    }  # fmt: skip
    try:
        row, _ = SharedScoring.objects.update_or_create(runs=key, defaults=fields)
    except IntegrityError:  # another request created it at the same moment: its task runs
        return SharedScoring.objects.get(runs=key)
    task.apply_async(args, task_id=task_id)
    return row


# --- Claude scoring of a run's probe set ------------------------------------------------


def request_claude(row: ProbeSet, *, model: str, budget_usd: Decimal, replicates: int = 1) -> str:
    """Queue model scoring (Claude, or ``openai:NAME``: ``llm.split_model``), ``replicates``
    times, or say why not ("" when queued). Refused before anything is written when the key
    is missing, the model unpriced at a remote endpoint or the estimate over the budget."""
    provider, name = llm.split_model(model)
    if not llm.key_available(provider):
        return llm.no_key_message(provider)
    if provider == "openai":
        probe = llm.make_llm(provider, name, cached=False)
        if not (getattr(probe, "priced", False)):
            return (
                f"Refused: no price known for {name!r} at {public_url(str(probe.base_url))}, a "
                "remote endpoint; "
                "use a model genai-prices knows or a local endpoint. Nothing was sent."
            )
    if row.claude_status in (ClaudeStatus.QUEUED, ClaudeStatus.RUNNING) and not _claude_stale(row):
        return "Claude scoring is already under way for this run."
    if not row.probes.exists():
        return "This run has no probes: none of its compactions removed anything probed."
    estimate = services.estimate_usd(row, model, replicates)
    if estimate > budget_usd:
        times = f" x {replicates} replicates" if replicates > 1 else ""
        return (
            f"Refused: scoring {row.probes.count()} probes{times} with {model} would cost up to "
            f"${estimate:.4f}, over the ${budget_usd:.2f} budget. Raise the budget or use "
            "the offline scores. Nothing was sent or stored."
        )
    task_id = uuid.uuid4().hex  # stored before the task is sent: a worker may finish first
    ProbeSet.objects.filter(pk=row.pk).update(
        claude_status=ClaudeStatus.QUEUED, claude_model=model, claude_budget_usd=budget_usd,
        claude_message="", claude_task_id=task_id, claude_requested_at=timezone.now(),
    )  # fmt: skip
    score_probes_with_claude.apply_async(
        (row.pk, model, str(budget_usd), replicates), task_id=task_id
    )
    return ""


def _claude_stale(row: ProbeSet) -> bool:
    """A scoring queued or running this long is taken as lost (a worker died): it may be
    started again."""
    started = row.claude_requested_at
    return started is None or timezone.now() - started > timedelta(minutes=CLAUDE_STALE_MINUTES)
