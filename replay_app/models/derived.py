"""Data derived from runs and transcripts (analyses, the original's survival) and the Claude
caches (summaries, token counts): recomputable, stored so pages never wait for them."""

from __future__ import annotations

from django.db import models

from replay_app.models.fields import PackedJSONField
from replay_app.models.runs import Run


class RunAnalysis(models.Model):
    """Derived analyses of a finished run, computed by the worker at run end (or once on
    first view for older runs): ``retention`` is ``lost.analyse(...).as_dict()``. A row of
    its own so that listing runs never reads it. ``attempts`` is the run attempt it belongs
    to: a retried run ignores an older attempt's analysis."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="analysis")
    attempts = models.PositiveIntegerField()
    retention = PackedJSONField(default=dict)
    # ctxlab.engine.survival: facts by category through each compaction ({} = not yet)
    survival = PackedJSONField(default=dict)
    # replay_app.compare.inputs: what the compare page derives from this run alone ({} = not yet)
    compare = PackedJSONField(default=dict)
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
    survival = PackedJSONField(default=dict)  # ctxlab.engine.survival ... as_dict()
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
