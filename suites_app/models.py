"""Suites: a named set of transcripts × a set of configurations, one replay run per pair.

Storage stays the runs themselves (replay_app.Run and its rows) plus one ``SuiteItem`` per
run: which transcript × configuration it answers, and a flat summary of the run's numeric
metrics once it finished (what the results page aggregates without reading the runs).
The unique (suite, transcript, config_index, replicate) key makes creating and resuming idempotent:
a pair has at most one item and one run per replicate, however often it is queued.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Suite(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="suites"
    )
    name = models.CharField(max_length=200)
    summarizer = models.CharField(max_length=40, default="offline")
    # [{"label", "strategy", "config_id", "params", "window", "grid": {key: value}}, ...]
    configs = models.JSONField(default=list)
    grid_keys = models.JSONField(default=list)  # the grid's parameter names (0-3)
    source = models.JSONField(default=dict)  # how the transcripts were chosen
    max_attempts = models.PositiveSmallIntegerField(default=2)
    # Runs of each transcript × configuration (replicates of a model summariser's runs:
    # replay_app/runs/replicates.py; the results compare them by core/spread.py's rule).
    replicates = models.PositiveSmallIntegerField(default=1)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="suite_owner_name"),
        ]

    def __str__(self) -> str:
        return self.name


class SuiteItem(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="items")
    transcript = models.ForeignKey(
        "sessions_app.Transcript", on_delete=models.CASCADE, related_name="suite_items"
    )
    config_index = models.PositiveSmallIntegerField()
    replicate = models.PositiveSmallIntegerField(default=0)  # 0-based, of Suite.replicates
    run = models.OneToOneField(
        "replay_app.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="suite_item",
    )
    # The run's status as the suite last saw it, and its numeric metrics when done.
    status = models.CharField(max_length=12, default="queued")
    summary = models.JSONField(default=dict)
    seconds = models.FloatField(null=True, blank=True)  # wall time of the executing attempt
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["suite", "transcript", "config_index", "replicate"],
                name="suite_item_replicate_key",
            ),
        ]

    def __str__(self) -> str:
        tail = f":r{self.replicate}" if self.replicate else ""
        return f"{self.suite_id}:{self.transcript_id}:{self.config_index}{tail}"

    @property
    def key(self) -> str:
        """The idempotent run key: one run per (suite, transcript, configuration, replicate)."""
        tail = f"-r{self.replicate}" if self.replicate else ""
        return f"suite-{self.suite_id}-t{self.transcript_id}-c{self.config_index}{tail}"
