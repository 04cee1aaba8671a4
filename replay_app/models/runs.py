"""Strategy configurations, comparison groups and runs (status, progress, metrics)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from replay_app.models.fields import PackedJSONField


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

    metrics = models.JSONField(default=dict)  # ctxlab.engine.evaluate.metrics.compute_metrics
    # Claude runs (replay_app.costs): the run's LLM options and spend ({"budget_usd", "estimate",
    # "calls", "cache_hits", "errors", "usage", "cost_usd"}), the prompt-caching ledger
    # computed at run end (compact: totals, per-compaction rows, per-step read/write arrays)
    # and token ground truth (calibration, error band, overflow flags, exact counts).
    exact_counts = models.BooleanField(default=False)
    llm = models.JSONField(default=dict)
    ledger = PackedJSONField(default=dict)  # long: stored compressed
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
