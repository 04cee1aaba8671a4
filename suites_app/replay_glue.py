"""Every call from suites into the replay lab, in one place (when replay_app's layout
moves, only this module follows it). A suite's run is an ordinary replay run, created with
``run_create`` (not queued by replay_app) and executed by ``run_execute``, the very path the
run form uses; the suite task queues and retries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from ctxlab.engine.core.spread import MAX_REPLICATES
from replay_app.costs import llm
from replay_app.costs.run_budget import LLMOptions
from replay_app.models import Run, RunAnalysis, RunStatus, StrategyConfig
from replay_app.runs import pooled, reaping
from replay_app.runs import services as replay_services
from replay_app.runs.progress import ChannelProgress
from replay_app.runs.transcript_picker import TranscriptPicker
from sessions_app.models import Transcript

__all__ = [
    "LLMOptions",
    "MAX_REPLICATES",
    "Run",
    "RunStatus",
    "StrategyConfig",
    "TranscriptPicker",
    "create_run",
    "execute_run",
    "llm",
    "refresh_probes",
    "requeue_run",
    "stale_seconds",
    "SUMMARIZERS",
]

# Claude summaries cost money: one run at a time. An OpenAI-compatible endpoint is allowed
# (a local one costs nothing; a remote one's every run is checked against the run budget).
SUMMARIZERS = ("offline", "recorded", "openai")
TERMINAL = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


def stale_seconds() -> int:
    return reaping.stale_seconds()


def spec_of(*, owner: Any, config: Mapping[str, Any]) -> replay_services.RunSpec:
    """A suite configuration as the run spec its runs are made from (``resolve()``: its
    strategy and complete parameters). StrategyConfig.DoesNotExist: its saved base is gone."""
    saved = None
    if config.get("config_id"):
        saved = StrategyConfig.objects.get(pk=config["config_id"], owner=owner)
    return replay_services.RunSpec(
        strategy="" if saved else str(config["strategy"]),
        params=dict(config.get("params") or {}),
        config=saved,
        label=str(config["label"]),
        window=config.get("window"),
    )


def create_run(
    *,
    owner: Any,
    transcript: Transcript,
    config: Mapping[str, Any],
    summarizer: str,
    llm: LLMOptions | None = None,
    replicate: tuple[int, int, str] | None = None,
) -> Run:
    """``llm``: the model, API and budget of a model summariser (the run form's options);
    ``replicate``: (which, of how many, the family id), as ``run_create`` takes it."""
    spec = spec_of(owner=owner, config=config)
    return replay_services.run_create(
        owner=owner, transcript=transcript, spec=spec, summarizer=summarizer, enqueue=False,
        llm=llm, replicate=replicate,
    )  # fmt: skip


def execute_run(run: Run, *, live: bool = True) -> Run:
    """Replay a queued run (in the embedded worker's child process when it has them; the
    run page gets its live progress too)."""
    return pooled.execute(run, on_progress=ChannelProgress() if live else None)


def requeue_run(run: Run) -> bool:
    """A failed, cancelled or dead-worker run back to queued as a new attempt (its rows from
    the earlier attempt deleted); False when it changed meanwhile (someone else has it)."""
    with transaction.atomic():
        unchanged = Run.objects.filter(
            pk=run.pk, attempts=run.attempts, status=run.status, heartbeat_at=run.heartbeat_at
        )
        if not replay_services.run_new_attempt(run=run, claimed=unchanged):
            return False
        RunAnalysis.objects.filter(run=run).delete()
    run.refresh_from_db()
    return True


def heartbeat_stale(run: Run) -> bool:
    beat = run.heartbeat_at or run.started_at
    return beat is None or (timezone.now() - beat).total_seconds() > stale_seconds()


def cancel_queued(run_ids: list[int]) -> int:
    """Queued runs -> cancelled now; running ones stop at their next batch."""
    now = timezone.now()
    count = Run.objects.filter(pk__in=run_ids, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELLED, cancel_requested=True, finished_at=now, error="cancelled"
    )
    Run.objects.filter(pk__in=run_ids, status=RunStatus.RUNNING).update(cancel_requested=True)
    return count


SURVIVAL_KEYS = ("survival", "first_summary_persistence", "drift_total", "instruction_losses")
PROBE_KINDS = ("recall", "artifact", "continuation", "decision")


def retention_of(run: Run) -> dict[str, Any]:
    """The run's stored analysis as catalogued metrics: ``retention``, ``facts_lost`` and
    the survival figures (``survival``, ``drift_total`` ...), whichever are there."""
    analysis = RunAnalysis.objects.filter(run=run).first()
    if analysis is None:
        return {}
    data = analysis.retention or {}
    out: dict[str, Any] = {}
    if _number(data.get("retention")):
        out["retention"] = data["retention"]
    if _number(data.get("lost")):
        out["facts_lost"] = data["lost"]
    survival = analysis.survival or {}
    out.update({k: survival[k] for k in SURVIVAL_KEYS if _number(survival.get(k))})
    return out


def probe_scores(run_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Probe scores of these runs where the judge app scored them (offline and Claude),
    as catalogued metrics; read when the results are built, since probes come later."""
    from django.apps import apps

    if not apps.is_installed("judge_app"):
        return {}
    from django.db.models import F

    from judge_app.services import GENERATOR

    probe_set = apps.get_model("judge_app", "ProbeSet")
    out: dict[int, dict[str, Any]] = {}
    # only current sets: one of an earlier attempt or generator is stale (``refresh_probes``)
    current = probe_set.objects.filter(
        run_id__in=run_ids, generator=GENERATOR, attempts=F("run__attempts")
    )
    for run_id, offline, claude in current.values_list("run_id", "offline", "claude"):
        row: dict[str, Any] = {}
        offline, claude = offline or {}, claude or {}
        if _number(offline.get("score")):
            row["probe_score"] = offline["score"]
        for kind in PROBE_KINDS:
            score = (offline.get("by_kind") or {}).get(kind, {}).get("score")
            if _number(score):
                row[f"probe_score_{kind}"] = score
        if _number(claude.get("score")):
            row["probe_score_claude"] = claude["score"]
        if row:
            out[run_id] = row
    return out


def refresh_probes(suite_id: int, run_ids: list[int]) -> dict[str, Any] | None:
    """None when every finished run's probe set is current; else the state of the Celery
    task bringing the missing or outdated ones up to date (queued here when none is at
    work: one per suite), for the page to say so. Never made in the request itself."""
    from django.apps import apps

    if not apps.is_installed("judge_app"):
        return None
    from judge_app import shared_jobs

    return shared_jobs.own_sets_job(run_ids, key=f"suite:{suite_id}", retry_failed=True)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
