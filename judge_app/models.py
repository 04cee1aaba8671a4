"""Probe sets of finished runs, their probes and scores (offline and Claude).

A run's probes are derived data: generated from the stored replay (``services``) for the
run's current attempt, regenerated when the run is retried or the generator changes.
"""

from __future__ import annotations

from django.db import models

from replay_app.models import Run


class ClaudeStatus(models.TextChoices):
    NONE = "none", "not scored"
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    REFUSED = "refused", "refused by the budget"


class ProbeSet(models.Model):
    """The probes of one run attempt, with the run's scores by method."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="probe_set")
    attempts = models.PositiveIntegerField()  # Run.attempts the probes were generated for
    generator = models.PositiveIntegerField()  # services.GENERATOR
    created_at = models.DateTimeField(auto_now_add=True)
    offline = models.JSONField(default=dict)  # probe_scoring.summarise of the offline scores
    tokens = models.JSONField(default=dict)  # services.tokens_saved: stored, pages stay cheap
    # Shared-probe scores of this run (judge_app.shared), kept across comparisons:
    # {"version": n, "scores": {"<key>@<position>": [step, score, verdict, found, missing]}}
    shared = models.JSONField(default=dict)
    claude_status = models.CharField(
        max_length=10, choices=ClaudeStatus.choices, default=ClaudeStatus.NONE
    )
    claude_message = models.TextField(blank=True)  # readable: why refused / failed
    claude_model = models.CharField(max_length=100, blank=True)
    claude_budget_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    claude = models.JSONField(default=dict)  # summarise of Claude scores + call totals
    claude_task_id = models.CharField(max_length=64, blank=True)
    claude_requested_at = models.DateTimeField(null=True, blank=True)
    claude_finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"probes of run {self.run_id}"


class Probe(models.Model):
    probe_set = models.ForeignKey(ProbeSet, on_delete=models.CASCADE, related_name="probes")
    seq = models.PositiveIntegerField()
    key = models.CharField(max_length=32)  # probes.Probe.key: stable across regenerations
    kind = models.CharField(max_length=20)  # probes.PROBE_KINDS
    compaction = models.PositiveIntegerField()  # ordinal of the probed compaction
    step = models.PositiveIntegerField()
    event = models.IntegerField(null=True, blank=True)  # RunEvent.seq
    question = models.TextField()
    answers = models.JSONField(default=list)
    source = models.PositiveIntegerField()  # source message index of the answer

    class Meta:
        ordering = ["probe_set", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["probe_set", "seq"], name="probe_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.question[:60]}"


class ProbeScore(models.Model):
    """One probe scored one way. ``score`` is None when the Claude call failed."""

    class Method(models.TextChoices):
        OFFLINE = "offline", "offline"
        CLAUDE = "claude", "Claude"

    probe = models.ForeignKey(Probe, on_delete=models.CASCADE, related_name="scores")
    method = models.CharField(max_length=10, choices=Method.choices)
    score = models.FloatField(null=True, blank=True)
    verdict = models.CharField(max_length=20, blank=True)  # recoverable | partial | lost
    answer = models.TextField(blank=True)  # Claude's answer
    detail = models.JSONField(default=dict)  # found/missing, the judge's reason and reply
    cost_usd = models.FloatField(default=0.0)
    cached = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["probe", "method"], name="probe_score_method"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.score}"


class SharedScoring(models.Model):
    """The background scoring of one comparison's shared question set (``shared_jobs``):
    its state for the page that polls it. The scores themselves are kept per run
    (``ProbeSet.shared``); this row only says whether a task is at work on them."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    runs = models.CharField(max_length=200, unique=True)  # sorted run ids: "3,5,8"
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    message = models.TextField(blank=True)  # why it failed
    done_runs = models.PositiveIntegerField(default=0)  # runs scored so far
    total_runs = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True)
    requested_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"shared probes of runs {self.runs}: {self.status}"
