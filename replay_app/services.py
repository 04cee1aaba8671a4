"""Named actions of the replay lab: configurations, runs, groups (views, tasks and the CLI
all go through these; keyword-only, ``<entity>_<verb>``).

Execution (``run_execute``) streams the engine's StepRecords and writes them in batches
(``BATCH_STEPS`` steps, or every ``BATCH_SECONDS``), one transaction per batch, so progress
is visible and memory bounded. Each batch is fenced: it only commits while the run is still
``running`` under the same ``attempts`` number, so a run that was reaped, cancelled or
retried meanwhile is never written to by a stale task.
"""

from __future__ import annotations

import json
import logging
import time
import traceback as tb
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ctxlab.engine.budget import window_params
from ctxlab.engine.heap import existing_heap_frozen
from ctxlab.engine.metrics import compute_metrics
from ctxlab.engine.native_config import NativeConfig, native_config
from ctxlab.engine.params import validate
from ctxlab.engine.pricing import find_model
from ctxlab.engine.recorded import RecordedSummarizer, agreement_rows
from ctxlab.engine.replay import Replay, call_starts
from ctxlab.engine.strategies import PRESETS, STRATEGIES, get_strategy_class
from ctxlab.engine.summarizers import OfflineSummarizer, Summarizer
from sessions_app.models import Transcript

from . import costs, inspect
from . import llm as llm_mod
from .heartbeat import pulse as heartbeat_pulse
from .models import (
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
from .progress import LATEST_EVENTS, EventRow, ProgressSink, RunProgressData

log = logging.getLogger(__name__)

BATCH_STEPS = 200
BATCH_SECONDS = 0.5
EXPORT_FORMAT = "ctxlab.strategy-config/1"
SUMMARIZERS = ("offline", "recorded", "anthropic")


def stale_seconds() -> int:
    """A running run whose heartbeat is older than this is considered dead."""
    return int(getattr(settings, "CTXLAB_RUN_STALE_SECONDS", 45))


# ---------------------------------------------------------------------------------------
# Strategy configurations
# ---------------------------------------------------------------------------------------


def params_validate(*, strategy: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Complete, typed params for ``strategy``; ValueError names the bad one."""
    cls = get_strategy_class(strategy)
    return validate(cls.PARAMS, params, strategy=strategy)


def params_changed(*, strategy: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Only the params that differ from the strategy's defaults (what a config stores)."""
    full = params_validate(strategy=strategy, params=params)
    defaults = {p.name: p.default for p in get_strategy_class(strategy).PARAMS}
    return {k: v for k, v in full.items() if defaults.get(k) != v}


def config_create(
    *,
    owner: Any,
    name: str,
    strategy: str,
    params: Mapping[str, Any] | None = None,
    description: str = "",
) -> StrategyConfig:
    changed = params_changed(strategy=strategy, params=params or {})
    return StrategyConfig.objects.create(
        owner=owner,
        name=name.strip(),
        strategy=strategy,
        params=changed,
        description=description,
    )


def config_update(
    *,
    config: StrategyConfig,
    name: str | None = None,
    params: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> StrategyConfig:
    if name is not None:
        config.name = name.strip()
    if params is not None:
        config.params = params_changed(strategy=config.strategy, params=params)
    if description is not None:
        config.description = description
    config.save()
    return config


def config_full_params(config: StrategyConfig) -> dict[str, Any]:
    return params_validate(strategy=config.strategy, params=config.params)


def config_export(config: StrategyConfig) -> dict[str, Any]:
    """The portable JSON form (``config_import`` reads it back)."""
    return {
        "format": EXPORT_FORMAT,
        "name": config.name,
        "strategy": config.strategy,
        "description": config.description,
        "params": config_full_params(config),
    }


def config_import(*, owner: Any, data: Any, name: str | None = None) -> StrategyConfig:
    """Create a config from exported JSON (dict or text). ValueError says what is wrong."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with strategy and params")
    strategy = data.get("strategy")
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        known = ", ".join(STRATEGIES)
        raise ValueError(f"unknown or missing strategy {strategy!r} (known: {known})")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ValueError('"params" must be an object')
    final_name = (name or data.get("name") or strategy).strip()
    final_name = _unique_config_name(owner, final_name)
    return config_create(
        owner=owner,
        name=final_name,
        strategy=strategy,
        params=params,
        description=str(data.get("description") or ""),
    )


def _unique_config_name(owner: Any, name: str) -> str:
    existing = set(
        StrategyConfig.objects.filter(owner=owner, name__startswith=name).values_list(
            "name", flat=True
        )
    )
    if name not in existing:
        return name
    n = 2
    while f"{name} ({n})" in existing:
        n += 1
    return f"{name} ({n})"


def config_native(config: StrategyConfig) -> NativeConfig:
    return native_config(config.strategy, config.params)


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
) -> Run:
    """A queued run; its task starts when the surrounding transaction commits."""
    if summarizer not in SUMMARIZERS:
        raise ValueError(f"unknown summarizer {summarizer!r} (known: {', '.join(SUMMARIZERS)})")
    strategy, params, label = spec.resolve()
    llm = llm or LLMOptions()
    llm_json = llm_check(
        transcript=transcript, strategy=strategy, params=params, label=label,
        summarizer=summarizer, options=llm,
    )  # fmt: skip
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
        summarizer_model=(llm.model or llm_mod.default_model())
        if summarizer == "anthropic"
        else "",
        exact_counts=llm.exact_counts,
        llm=llm_json,
        estimator=str(get_strategy_class(strategy)(params).estimator)[:200],
        task_id=str(uuid.uuid4()),
    )
    if enqueue:
        run_enqueue(run)
    return run


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """Per-run options of issue 7: the Claude model, the budget cap (USD; None: the
    CTXLAB_RUN_BUDGET_USD setting) and exact ``count_tokens`` counts."""

    model: str = ""
    budget_usd: Decimal | None = None
    exact_counts: bool = False


class BudgetError(ValueError):
    """The estimated cost of a run is above its budget: it is not started."""


def llm_estimate(
    *, transcript: Transcript, strategy: str, params: Mapping[str, Any], model: str, label: str = ""
) -> costs.Estimate:
    return costs.estimate(
        transcript.to_conversation(), strategy=strategy, params=params, model=model,
        label=label, memo_key=f"transcript:{transcript.pk}",
    )  # fmt: skip


def llm_check(
    *,
    transcript: Transcript,
    strategy: str,
    params: Mapping[str, Any],
    label: str,
    summarizer: str,
    options: LLMOptions,
) -> dict[str, Any]:
    """The run's ``llm`` JSON; refuses (ValueError/BudgetError) a Claude run without a key,
    with an unknown model or with an estimate above the budget."""
    if summarizer != "anthropic" and not options.exact_counts:
        return {}
    if not llm_mod.key_available():
        raise ValueError(llm_mod.NO_KEY_MESSAGE)
    model = options.model or llm_mod.default_model()
    if find_model(model) is None:
        raise ValueError(f"no price known for model {model!r}: choose one of the listed models")
    budget = options.budget_usd if options.budget_usd is not None else llm_mod.budget_default()
    out: dict[str, Any] = {"model": model, "budget_usd": float(budget)}
    if summarizer == "anthropic":
        est = llm_estimate(
            transcript=transcript, strategy=strategy, params=params, model=model, label=label
        )
        out["estimate"] = est.as_dict()
        if est.cost_usd > budget:
            raise BudgetError(
                f"{label}: estimated ${est.cost_usd:.4f} for {est.calls} summary calls is above "
                f"the ${budget:.2f} budget per run"
            )
    return out


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
    """A comparison: one run per spec, all queued together (atomically)."""
    if not specs:
        raise ValueError("choose at least one strategy or configuration")
    with transaction.atomic():
        group = RunGroup.objects.create(owner=owner, transcript=transcript, name=name[:200])
        for spec in specs:
            run_create(
                owner=owner,
                transcript=transcript,
                spec=spec,
                summarizer=summarizer,
                group=group,
                enqueue=enqueue,
                llm=llm,
            )
    return group


def run_enqueue(run: Run) -> None:
    from .tasks import execute_run

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
        updated = Run.objects.filter(pk=run.pk, status__in=[RunStatus.FAILED, RunStatus.CANCELLED])
        task_id = str(uuid.uuid4())
        if not updated.update(
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
            task_id=task_id,
        ):
            raise ValueError(f"run {run.pk} is {run.status}: only failed or cancelled runs retry")
        _delete_rows(run)
        run.refresh_from_db()
        run_enqueue(run)
    _notify(run)
    return run


def runs_reap_stale(*, max_age: float | None = None, now: Any = None) -> int:
    """Mark running runs whose heartbeat stopped as failed ("worker stopped")."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_seconds() if max_age is None else max_age)
    stale = list(
        Run.objects.filter(status=RunStatus.RUNNING, heartbeat_at__lt=cutoff).values_list(
            "pk", "heartbeat_at"
        )
    )
    count = 0
    for pk, heartbeat in stale:
        count += Run.objects.filter(pk=pk, status=RunStatus.RUNNING, heartbeat_at=heartbeat).update(
            status=RunStatus.FAILED,
            finished_at=now,
            error=f"worker stopped: no progress since {heartbeat:%Y-%m-%d %H:%M:%S} UTC",
        )
    for run in Run.objects.filter(pk__in=[pk for pk, _ in stale], status=RunStatus.FAILED):
        _notify(run)
    return count


def runs_reap_lost_queued(*, before: Any) -> int:
    """With an in-memory broker, queued tasks die with the process that queued them:
    runs queued before this process started will never run."""
    return Run.objects.filter(status=RunStatus.QUEUED, created_at__lt=before).update(
        status=RunStatus.FAILED,
        finished_at=timezone.now(),
        error="worker restarted before the run started (the in-memory queue was lost)",
    )


def _delete_rows(run: Run) -> None:
    for model in (RunStep, RunEvent, RunSummary, RunFinding, RunOffload):
        model.objects.filter(run=run).delete()


# ---------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------


class _Stop(Exception):
    """The run is no longer ours to write (cancelled, reaped or retried meanwhile)."""

    def __init__(self, cancelled: bool) -> None:
        self.cancelled = cancelled


def make_summarizer(run: Run) -> Summarizer:
    if run.summarizer == "offline":
        return OfflineSummarizer()
    if run.summarizer == "recorded":  # the transcript's own compaction summaries
        return RecordedSummarizer()
    if run.summarizer == "anthropic":
        budget = (run.llm or {}).get("budget_usd")
        return llm_mod.MeteredSummarizer(
            llm_mod.make_anthropic(model=run.summarizer_model),
            budget_usd=Decimal(str(budget)) if budget is not None else llm_mod.budget_default(),
        )
    raise ValueError(f"unknown summarizer {run.summarizer!r}")


def run_execute(
    *,
    run: Run,
    on_progress: ProgressSink | None = None,
    batch_steps: int = BATCH_STEPS,
    batch_seconds: float = BATCH_SECONDS,
) -> Run:
    """Replay the run's snapshot, storing rows in fenced batches. Never raises for a
    failing replay: the error is recorded on the run (status ``failed``)."""
    attempt = run.attempts
    now = timezone.now()
    claimed = Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED, attempts=attempt).update(
        status=RunStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
    )
    run.refresh_from_db()
    if not claimed:
        log.info("run %s not started: it is %s (attempt %s)", run.pk, run.status, run.attempts)
        return run
    _emit(on_progress, run, [])
    try:
        with heartbeat_pulse(run.pk, attempt):
            _execute(run, attempt, on_progress, batch_steps, batch_seconds)
    except _Stop as stop:
        if stop.cancelled:
            Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.RUNNING).update(
                status=RunStatus.CANCELLED, finished_at=timezone.now(), error="cancelled"
            )
    except Exception as exc:
        log.exception("run %s failed", run.pk)
        Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED,
            finished_at=timezone.now(),
            error=_readable(exc),
            traceback=_short_traceback(exc),
        )
    run.refresh_from_db()
    _emit(on_progress, run, _latest_events(run))
    return run


def _execute(
    run: Run,
    attempt: int,
    on_progress: ProgressSink | None,
    batch_steps: int,
    batch_seconds: float,
) -> None:
    conversation = run.transcript.to_conversation()
    summarizer = make_summarizer(run)
    job = Replay(conversation, run.strategy, params=run.params, summarizer=summarizer)
    total = len(call_starts(conversation.messages))
    Run.objects.filter(pk=run.pk).update(steps_total=total)
    run.steps_total = total
    writer = _BatchWriter(run, attempt)
    writer.metered = summarizer if isinstance(summarizer, llm_mod.MeteredSummarizer) else None
    last_flush = time.monotonic()
    with existing_heap_frozen():  # see ctxlab.engine.heap: full collections skip the input
        for record in job:
            writer.add(record)
            if writer.pending >= batch_steps or time.monotonic() - last_flush >= batch_seconds:
                writer.flush(job.result.offloads)
                last_flush = time.monotonic()
                _emit(on_progress, run, writer.latest)
    writer.flush(job.result.offloads)
    _emit(on_progress, run, writer.latest)  # 100 %: pages say it is finishing (metrics, analysis)
    result = job.result
    metrics = compute_metrics(
        result, threshold=job.strategy.threshold(job.ctx), reference=job.ctx.reference
    )
    counter = llm_mod.make_counter(model=run.summarizer_model or None) if run.exact_counts else None
    extra = costs.finish(run, job, metered=writer.metered, exact_counter=counter)
    metrics = {**metrics, **extra.pop("metrics")}
    if conversation.compactions:  # the original's own compactions next to the replay's
        metrics["original_compactions"] = agreement_rows(conversation, result)
    # What each compaction lost, off the page request (None when it failed: logged).
    retention = inspect.analyse_finished(run, result, conversation.messages)
    with transaction.atomic():  # done and its analysis become visible together
        done = Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.RUNNING).update(
            status=RunStatus.DONE,
            finished_at=timezone.now(),
            heartbeat_at=timezone.now(),
            metrics=_jsonable(metrics),
            **_jsonable(extra),
            steps_done=len(result.steps),
            steps_total=len(result.steps),
        )
        if done and retention is not None:
            inspect.store_retention(run, attempt, retention)
    if not done:
        raise _Stop(cancelled=False)


class _BatchWriter:
    """Buffers rows between flushes; each flush is one fenced transaction."""

    def __init__(self, run: Run, attempt: int) -> None:
        self.run, self.attempt = run, attempt
        self.steps: list[RunStep] = []
        self.events: list[RunEvent] = []
        self.summaries: list[RunSummary] = []
        self.findings: list[RunFinding] = []
        self.offloaded: set[str] = set()
        self.steps_done = 0
        self.events_count = 0
        self.latest: list[EventRow] = []
        self.metered: llm_mod.MeteredSummarizer | None = None

    @property
    def pending(self) -> int:
        return len(self.steps)

    def add(self, record: Any) -> None:
        run = self.run
        self.steps.append(RunStep.from_record(run, record))
        events = [RunEvent.from_event(run, e) for e in record.events]
        summaries = [RunSummary.from_record(run, s) for s in record.summaries]
        if summaries:
            costs.annotate(record, summaries, events, self.metered)
        self.events.extend(events)
        self.summaries.extend(summaries)
        self.findings.extend(RunFinding.from_record(run, f) for f in record.findings)

    def flush(self, offloads: Mapping[str, str]) -> None:
        new_offloads = [
            RunOffload(run=self.run, path=path, text=text)
            for path, text in offloads.items()
            if path not in self.offloaded
        ]
        steps_done = self.steps_done + len(self.steps)
        events_count = self.events_count + len(self.events)
        with transaction.atomic():
            fenced = Run.objects.filter(
                pk=self.run.pk, attempts=self.attempt, status=RunStatus.RUNNING
            )
            if not fenced.update(
                steps_done=steps_done, events_count=events_count, heartbeat_at=timezone.now()
            ):
                raise _Stop(cancelled=False)
            RunStep.objects.bulk_create(self.steps, batch_size=500)
            RunEvent.objects.bulk_create(self.events, batch_size=500)
            RunSummary.objects.bulk_create(self.summaries, batch_size=100)
            RunFinding.objects.bulk_create(self.findings, batch_size=500)
            RunOffload.objects.bulk_create(new_offloads, batch_size=100)
            cancel = Run.objects.filter(pk=self.run.pk).values_list("cancel_requested", flat=True)[
                0
            ]
        self.offloaded.update(o.path for o in new_offloads)
        if self.events:
            self.latest = (self.latest + [_event_row(e) for e in self.events])[-LATEST_EVENTS:]
        self.steps_done, self.events_count = steps_done, events_count
        self.run.steps_done, self.run.events_count = steps_done, events_count
        self.steps, self.events, self.summaries, self.findings = [], [], [], []
        if cancel:
            raise _Stop(cancelled=True)


def _readable(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ValueError | KeyError | TypeError | RuntimeError):
        return f"{type(exc).__name__}: {text}"[:2000]
    return text[:2000]


def _short_traceback(exc: BaseException) -> str:
    lines = tb.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(lines)
    return text[-8000:]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# ---------------------------------------------------------------------------------------
# Progress state
# ---------------------------------------------------------------------------------------


def _event_row(event: RunEvent) -> EventRow:
    return {
        "seq": event.seq,
        "step": event.step,
        "kind": event.kind,
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "messages": len(event.messages),
    }


def _latest_events(run: Run) -> list[EventRow]:
    rows = list(run.events.order_by("-seq")[:LATEST_EVENTS])
    return [_event_row(e) for e in reversed(rows)]


def run_state(run: Run, *, latest: Iterable[EventRow] | None = None) -> RunProgressData:
    """The run's current progress (what a (re)connecting page catches up on)."""
    return {
        "run_id": run.pk,
        "group_id": run.group_id,
        "status": run.status,
        "steps_done": run.steps_done,
        "steps_total": run.steps_total,
        "percent": run.percent,
        "events_count": run.events_count,
        "error": run.error,
        "latest_events": list(_latest_events(run) if latest is None else latest),
    }


def _emit(sink: ProgressSink | None, run: Run, latest: list[EventRow]) -> None:
    if sink is not None:
        sink(run_state(run, latest=latest))


def _notify(run: Run) -> None:
    """Push a state change made outside the executor (cancel, retry, reap) to open pages."""
    from .progress import send_run_progress

    send_run_progress(run_state(run))


__all__ = [
    "RunSpec",
    "config_create",
    "config_export",
    "config_import",
    "config_native",
    "config_update",
    "group_create",
    "preset_specs",
    "run_cancel",
    "run_create",
    "run_execute",
    "run_retry",
    "run_state",
    "runs_reap_stale",
]
