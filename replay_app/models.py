"""Strategy configurations, replay runs and what a run stored.

Storage (grows with steps + events, never with steps x context size):

- ``StrategyConfig``: a named, user-owned parameter set for one strategy preset.
- ``RunGroup``: runs started together on one transcript (a comparison).
- ``Run``: one replay of a transcript under a config *snapshot* (``strategy`` + ``params``;
  ``config`` is only a back-link, editing the config never changes a finished run). Status,
  progress, heartbeat, error and the engine's metrics (``metrics`` JSON) live here.
- ``RunStep``: ONE row per step (inference call): tokens (strategy / reference / reported),
  zones, the context as half-open source-index ranges (``[[start, end], ...]``: O(ranges),
  usually 1-3 pairs), the summary in force and pending async work.
- ``RunEvent``: one row per strategy action. ``changes`` carries each touched message's new
  fate (``{"index", "fate", "reason", "message", "offload_path"}``; ``message`` is the modified
  message as codec JSON for truncated / offloaded / pruned fates). A message's fate at step
  ``s`` = the last change of the events with ``step <= s`` (``Run.fates_at(s)``), so fates are
  never stored per step.
- ``RunSummary``: each summariser call with its exact input and output and usage.
- ``RunFinding``: broken invariants per step.
- ``RunOffload``: the full text a strategy wrote to a file (path -> text), once per path.
- ``RunAnalysis``: analyses derived from a finished run (what each compaction lost), one
  row per run, computed off the page request (``retention``; ``survival`` by category).
- ``OriginalSurvival``: the same survival table for the transcript's own recorded
  compactions (the compare page's "original" pseudo-run), one row per transcript.

Message texts are never copied: the original is ``sessions_app.Message`` (transcript,
index); ``Run.to_result()`` rebuilds the engine's ``ReplayResult`` for inspection code.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse

from ctxlab.engine import codec
from ctxlab.engine.records import (
    Change,
    Event,
    Fate,
    Finding,
    ReplayResult,
    StepRecord,
    StepTokens,
    SummaryRecord,
    Zones,
    fates_at,
)


class StrategyConfig(models.Model):
    """A named parameter set for one strategy, owned by a user."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="strategy_configs"
    )
    name = models.CharField(max_length=100)
    strategy = models.CharField(max_length=40)  # registry key (a preset name)
    params = models.JSONField(default=dict)  # only values that differ from the defaults
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="strategyconfig_owner_name")
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("strategy-edit", args=[self.pk])


class RunGroup(models.Model):
    """Runs started together over one transcript (a comparison)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="run_groups"
    )
    transcript = models.ForeignKey(
        "sessions_app.Transcript", on_delete=models.CASCADE, related_name="run_groups"
    )
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"comparison {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("run-group", args=[self.pk])


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
RETRYABLE_STATUSES = (RunStatus.FAILED, RunStatus.CANCELLED)


class Run(models.Model):
    """One replay of a transcript through a strategy configuration snapshot."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    transcript = models.ForeignKey(
        "sessions_app.Transcript", on_delete=models.CASCADE, related_name="runs"
    )
    group = models.ForeignKey(
        RunGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    config = models.ForeignKey(
        StrategyConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # The snapshot actually replayed.
    label = models.CharField(max_length=100)  # config name or preset name
    strategy = models.CharField(max_length=40)
    params = models.JSONField(default=dict)  # complete, validated
    # The comparison's model context window that set the strategy's window parameter(s)
    # (ctxlab.engine.budget); None: the configuration's own values.
    window = models.PositiveIntegerField(null=True, blank=True)
    summarizer = models.CharField(max_length=40, default="offline")
    summarizer_model = models.CharField(max_length=100, blank=True)
    estimator = models.CharField(max_length=200, blank=True)

    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=1)  # fencing token for the executing task
    task_id = models.CharField(max_length=64, blank=True)
    steps_done = models.PositiveIntegerField(default=0)
    steps_total = models.PositiveIntegerField(default=0)
    events_count = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)  # readable, shown on the page
    traceback = models.TextField(blank=True)  # short, shown in the admin only

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    metrics = models.JSONField(default=dict)  # ctxlab.engine.metrics.compute_metrics
    # Claude runs (replay_app.costs): the run's LLM options and spend ({"budget_usd", "estimate",
    # "calls", "cache_hits", "errors", "usage", "cost_usd"}), the prompt-caching ledger
    # computed at run end (compact: totals, per-compaction rows, per-step read/write arrays)
    # and token ground truth (calibration, error band, overflow flags, exact counts).
    exact_counts = models.BooleanField(default=False)
    llm = models.JSONField(default=dict)
    ledger = models.JSONField(default=dict)
    ground_truth = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"]),
            models.Index(fields=["status", "heartbeat_at"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.label})"

    def get_absolute_url(self) -> str:
        return reverse("run-detail", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_retryable(self) -> bool:
        return self.status in RETRYABLE_STATUSES

    @property
    def percent(self) -> int:
        if self.status == RunStatus.DONE:
            return 100
        if not self.steps_total:
            return 0
        return min(100, int(100 * self.steps_done / self.steps_total))

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    # --- back to engine values (for inspection pages) ------------------------------------
    def engine_events(self, *, until_step: int | None = None) -> list[Event]:
        events = self.events.order_by("seq")
        if until_step is not None:
            events = events.filter(step__lte=until_step)
        return [e.to_event() for e in events]

    def fates_at(self, step: int) -> dict[int, tuple[Change, int]]:
        """Every non-kept fate in force at ``step``: source index -> (change, event seq)."""
        return fates_at(self.engine_events(until_step=step), step)

    def to_result(self) -> ReplayResult:
        """The whole stored replay as the engine's ReplayResult (reads every row)."""
        events = self.engine_events()
        by_step: dict[int, list[Event]] = {}
        for event in events:
            by_step.setdefault(event.step, []).append(event)
        return ReplayResult(
            strategy=self.strategy,
            params=dict(self.params),
            estimator=self.estimator,
            summarizer=self.summarizer,
            message_count=self.transcript.message_count,
            steps=[s.to_record() for s in self.steps.order_by("index")],
            events=events,
            summaries=[s.to_record() for s in self.summaries.order_by("seq")],
            findings=[f.to_record() for f in self.findings.order_by("step", "id")],
            offloads=dict(self.offloads.values_list("path", "text")),
            metrics=dict(self.metrics),
        )


class RunStep(models.Model):
    """One inference call as the strategy would have sent it: O(ranges), never O(context)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    source_index = models.PositiveIntegerField()
    tokens_strategy = models.PositiveBigIntegerField()
    tokens_reference = models.PositiveBigIntegerField()
    tokens_reported = models.PositiveBigIntegerField(null=True, blank=True)
    zones = models.JSONField(default=dict)  # Zones.as_dict()
    context = models.JSONField(default=list)  # [[start, end), ...] source-index ranges
    context_len = models.PositiveIntegerField(default=0)  # messages in context
    summary_seq = models.IntegerField(null=True, blank=True)  # RunSummary.seq in force
    pending = models.JSONField(default=list)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="runstep_run_index")]

    @classmethod
    def from_record(cls, run: Run, record: StepRecord) -> RunStep:
        return cls(
            run=run,
            index=record.index,
            source_index=record.source_index,
            tokens_strategy=record.tokens.strategy,
            tokens_reference=record.tokens.reference,
            tokens_reported=record.tokens.reported,
            zones=record.zones.as_dict(),
            context=[list(r) for r in record.context],
            context_len=record.context_len,
            summary_seq=record.summary_id,
            pending=list(record.pending),
        )

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        return tuple((int(a), int(b)) for a, b in self.context)

    def to_record(self) -> StepRecord:
        """Without events/summaries/findings (those are rows of their own)."""
        return StepRecord(
            index=self.index,
            source_index=self.source_index,
            tokens=StepTokens(self.tokens_strategy, self.tokens_reference, self.tokens_reported),
            zones=Zones(**self.zones),
            context=self.ranges,
            summary_id=self.summary_seq,
            pending=tuple(self.pending),
        )


def change_to_dict(change: Change) -> dict[str, Any]:
    out: dict[str, Any] = {"index": change.index, "fate": change.fate.value}
    if change.reason:
        out["reason"] = change.reason
    if change.message is not None:
        out["message"] = codec.message_to_dict(change.message)
    if change.offload_path:
        out["offload_path"] = change.offload_path
    return out


def change_from_dict(data: dict[str, Any]) -> Change:
    message = data.get("message")
    return Change(
        index=int(data["index"]),
        fate=Fate(data["fate"]),
        reason=data.get("reason", ""),
        message=None if message is None else codec.message_from_dict(message),
        offload_path=data.get("offload_path", ""),
    )


class RunEvent(models.Model):
    """One action of the strategy, with the fates it set."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()  # Event.id: order within the run
    step = models.PositiveIntegerField()  # first step whose request reflects it
    kind = models.CharField(max_length=40)
    messages = models.JSONField(default=list)  # source indexes touched
    tokens_before = models.PositiveBigIntegerField(default=0)
    tokens_after = models.PositiveBigIntegerField(default=0)
    detail = models.JSONField(default=dict)
    changes = models.JSONField(default=list)  # change_to_dict items
    summary_seq = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_run_seq")]
        indexes = [models.Index(fields=["run", "step"]), models.Index(fields=["run", "kind"])]

    @classmethod
    def from_event(cls, run: Run, event: Event) -> RunEvent:
        return cls(
            run=run,
            seq=event.id,
            step=event.step,
            kind=event.kind,
            messages=list(event.messages),
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            detail=dict(event.detail),
            changes=[change_to_dict(c) for c in event.changes],
            summary_seq=event.summary_id,
        )

    def to_event(self) -> Event:
        return Event(
            id=self.seq,
            step=self.step,
            kind=self.kind,
            messages=tuple(self.messages),
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            detail=dict(self.detail),
            changes=tuple(change_from_dict(c) for c in self.changes),
            summary_id=self.summary_seq,
        )

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def fate_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for change in self.changes:
            out[change["fate"]] = out.get(change["fate"], 0) + 1
        return out


class RunSummary(models.Model):
    """One summariser call: the exact input and the output."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="summaries")
    seq = models.PositiveIntegerField()  # SummaryRecord.id
    step = models.PositiveIntegerField()
    input = models.TextField()
    output = models.TextField()
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    usage_estimated = models.BooleanField(default=True)
    usage = models.JSONField(default=dict)  # provider usage / cost, when a real model ran
    error = models.TextField(blank=True)
    summarizer = models.CharField(max_length=100, blank=True)
    messages = models.JSONField(default=list)  # source indexes the summariser was shown

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runsummary_run_seq")]

    @classmethod
    def from_record(cls, run: Run, record: SummaryRecord) -> RunSummary:
        return cls(
            run=run,
            seq=record.id,
            step=record.step,
            input=record.input,
            output=record.output,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            usage_estimated=record.usage_estimated,
            error=record.error,
            summarizer=record.summarizer,
            messages=list(record.messages),
        )

    def to_record(self) -> SummaryRecord:
        return SummaryRecord(
            id=self.seq,
            step=self.step,
            input=self.input,
            output=self.output,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            usage_estimated=self.usage_estimated,
            error=self.error,
            summarizer=self.summarizer,
            messages=tuple(self.messages),
        )


class RunFinding(models.Model):
    """A broken invariant at one step."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="findings")
    step = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    messages = models.JSONField(default=list)
    detail = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "step", "id"]
        indexes = [models.Index(fields=["run", "step"])]

    @classmethod
    def from_record(cls, run: Run, record: Finding) -> RunFinding:
        return cls(
            run=run,
            step=record.step,
            kind=record.kind,
            messages=list(record.messages),
            detail=dict(record.detail),
        )

    def to_record(self) -> Finding:
        return Finding(
            step=self.step, kind=self.kind, messages=tuple(self.messages), detail=dict(self.detail)
        )


class RunOffload(models.Model):
    """Full text a strategy offloaded to a file (the notice in context points to ``path``)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="offloads")
    path = models.TextField()
    text = models.TextField()

    class Meta:
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "path"])]


class RunAnalysis(models.Model):
    """Derived analyses of a finished run, computed by the worker at run end (or once on
    first view for older runs): ``retention`` is ``lost.analyse(...).as_dict()``. A row of
    its own so that listing runs never reads it. ``attempts`` is the run attempt it belongs
    to: a retried run ignores an older attempt's analysis."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="analysis")
    attempts = models.PositiveIntegerField()
    retention = models.JSONField(default=dict)
    # ctxlab.engine.survival: facts by category through each compaction ({} = not yet)
    survival = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "run analyses"

    def __str__(self) -> str:
        return f"analysis of run {self.run_id} (attempt {self.attempts})"


class OriginalSurvival(models.Model):
    """Survival through the transcript's own recorded compactions (the "original"
    pseudo-run of the compare page), computed once per transcript and extractor version."""

    transcript = models.OneToOneField(
        "sessions_app.Transcript", on_delete=models.CASCADE, related_name="original_survival"
    )
    survival = models.JSONField(default=dict)  # ctxlab.engine.survival ... as_dict()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"original survival of transcript {self.transcript_id}"


class SummaryCache(models.Model):
    """A Claude summary by the sha256 of its exact request body (model, prompt, input, cap):
    the adapter's cache hook, so the same summary is never paid for twice."""

    key = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=100)
    text = models.TextField()
    response_model = models.CharField(max_length=100, blank=True)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    hits = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"


class TokenCountCache(models.Model):
    """Exact counts from Anthropic's count_tokens endpoint, by sha256 of (model, kind, text)."""

    key = models.CharField(max_length=64, unique=True)
    tokens = models.PositiveBigIntegerField()

    def __str__(self) -> str:
        return f"{self.key[:12]}={self.tokens}"
