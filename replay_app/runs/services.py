"""Named actions on runs and comparison groups: create, enqueue, cancel, retry (reaping dead
runs: ``reaping``)
(views, tasks and the CLI all go through these; keyword-only, ``<entity>_<verb>``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from ctxlab.engine.budget import window_params
from ctxlab.engine.core.spread import MAX_REPLICATES
from ctxlab.engine.strategies import PRESETS, get_strategy_class
from replay_app.configs.services import params_validate
from replay_app.costs import llm as llm_mod
from replay_app.costs.run_budget import LLMOptions, llm_check
from replay_app.models import (
    Run,
    RunEvent,
    RunFinding,
    RunGroup,
    RunOffload,
    RunStatus,
    RunStep,
    RunSummary,
    StrategyConfig,
)
from replay_app.runs import textstore
from replay_app.runs.progress import (
    _notify,
)
from replay_app.runs.tasks import execute_run
from sessions_app.models import Transcript

SUMMARIZERS = ("offline", "recorded", "anthropic", "openai")


# ---------------------------------------------------------------------------------------
# Creating runs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What to replay: a preset (with optional params) or a saved config."""

    strategy: str = ""
    params: Mapping[str, Any] | None = None
    config: StrategyConfig | None = None
    label: str = ""
    # One model window for the whole comparison: sets the strategy's own window
    # parameter(s) over the preset/config values; ``params`` still win (overrides).
    window: int | None = None

    def resolve(self) -> tuple[str, dict[str, Any], str]:
        if self.config is not None:
            strategy, saved, label = self.config.strategy, self.config.params, self.config.name
        else:
            strategy, saved, label = self.strategy, {}, self.strategy
        try:
            budgeted = window_params(strategy, self.window, self.params)
        except ValueError as exc:
            raise ValueError(f"{self.label or label}: {exc}") from None
        full = params_validate(strategy=strategy, params={**saved, **budgeted})
        return strategy, full, self.label or label


def preset_specs() -> list[RunSpec]:
    return [RunSpec(strategy=name) for name in PRESETS]


def run_create(
    *,
    owner: Any,
    transcript: Transcript,
    spec: RunSpec,
    summarizer: str = "offline",
    group: RunGroup | None = None,
    enqueue: bool = True,
    llm: LLMOptions | None = None,
    replicate: tuple[int, int, str] | None = None,
) -> Run:
    """A queued run; its task starts when the surrounding transaction commits.
    ``replicate``: (which, of how many, the family id) for a replicate (``replicates.py``)."""
    if summarizer not in SUMMARIZERS:
        raise ValueError(f"unknown summarizer {summarizer!r} (known: {', '.join(SUMMARIZERS)})")
    strategy, params, label = spec.resolve()
    llm = llm or LLMOptions()
    llm_json = llm_check(
        transcript=transcript, strategy=strategy, params=params, label=label,
        summarizer=summarizer, options=llm,
    )  # fmt: skip
    if replicate is not None:
        which, count, family = replicate
        llm_json = {**llm_json, "replicate": which, "replicates": count, "family": family}
        label = f"{label} #{which + 1}"
    run = Run.objects.create(
        owner=owner,
        transcript=transcript,
        group=group,
        config=spec.config,
        label=label[:100],
        strategy=strategy,
        params=params,
        window=spec.window,
        summarizer=summarizer,
        summarizer_model=llm_json.get("model", "") if summarizer in llm_mod.PROVIDERS else "",
        exact_counts=llm.exact_counts,
        llm=llm_json,
        estimator=str(get_strategy_class(strategy)(params).estimator)[:200],
        task_id=str(uuid.uuid4()),
    )
    if enqueue:
        run_enqueue(run)
    return run


def group_create(
    *,
    owner: Any,
    transcript: Transcript,
    specs: Sequence[RunSpec],
    summarizer: str = "offline",
    name: str = "",
    enqueue: bool = True,
    llm: LLMOptions | None = None,
) -> RunGroup:
    """A comparison: one run per spec (``llm.replicates`` runs of each with a model
    summariser: ``replicates.py``), all queued together (atomically)."""
    if not specs:
        raise ValueError("choose at least one strategy or configuration")
    count = llm.replicates if llm is not None and summarizer in llm_mod.PROVIDERS else 1
    if not 1 <= count <= MAX_REPLICATES:
        raise ValueError(f"replicates: 1 to {MAX_REPLICATES}, not {count}")
    with transaction.atomic():
        group = RunGroup.objects.create(owner=owner, transcript=transcript, name=name[:200])
        for spec in specs:
            family = uuid.uuid4().hex[:12]
            for replicate in range(count):
                run_create(
                    owner=owner,
                    transcript=transcript,
                    spec=spec,
                    summarizer=summarizer,
                    group=group,
                    enqueue=enqueue,
                    llm=llm,
                    replicate=(replicate, count, family) if count > 1 else None,
                )
    return group


def run_enqueue(run: Run) -> None:
    task_id = run.task_id
    transaction.on_commit(lambda: execute_run.apply_async((run.pk,), task_id=task_id))


# ---------------------------------------------------------------------------------------
# Cancel, retry, reap
# ---------------------------------------------------------------------------------------


def run_cancel(*, run: Run) -> Run:
    """Queued -> cancelled now; running -> cancelled at the executor's next batch."""
    now = timezone.now()
    Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELLED, cancel_requested=True, finished_at=now, error="cancelled"
    )
    Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(cancel_requested=True)
    run.refresh_from_db()
    _notify(run)
    return run


def run_retry(*, run: Run) -> Run:
    """Re-queue a failed or cancelled run as a new attempt (its old rows are deleted)."""
    with transaction.atomic():
        retryable = Run.objects.filter(
            pk=run.pk, status__in=[RunStatus.FAILED, RunStatus.CANCELLED]
        )
        if not run_new_attempt(run=run, claimed=retryable):
            raise ValueError(f"run {run.pk} is {run.status}: only failed or cancelled runs retry")
        run.refresh_from_db()
        run_enqueue(run)
    _notify(run)
    return run


def run_new_attempt(*, run: Run, claimed: QuerySet[Run]) -> bool:
    """Move ``claimed`` (the run, filtered to the state the caller expects it in) back to
    queued as attempt ``run.attempts + 1``: progress, outcome and metrics cleared, a new task
    id, the earlier attempt's rows deleted. False when the filter no longer matches (someone
    else changed the run meanwhile). Call inside a transaction."""
    if not claimed.update(
        status=RunStatus.QUEUED,
        attempts=run.attempts + 1,
        cancel_requested=False,
        steps_done=0,
        events_count=0,
        error="",
        traceback="",
        started_at=None,
        finished_at=None,
        heartbeat_at=None,
        metrics={},
        task_id=str(uuid.uuid4()),
    ):
        return False
    _delete_rows(run)
    return True


def _delete_rows(run: Run) -> None:
    for model in (RunStep, RunEvent, RunSummary, RunFinding, RunOffload):
        model.objects.filter(run=run).delete()
    textstore.unlink(run)
