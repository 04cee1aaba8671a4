"""Data derived from runs and transcripts (analyses, the original's survival) and the Claude
caches (summaries, token counts): recomputable, stored so pages never wait for them."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, models, transaction

from replay_app.models.fields import PackedJSONField
from replay_app.models.runs import Run, RunStatus

log = logging.getLogger(__name__)


class RunAnalysis(models.Model):
    """Derived analyses of a finished run, computed by the worker at run end (or once on
    first view for older runs): ``retention`` is ``lost.analyse(...).as_dict()``. A row of
    its own so that listing runs never reads it. ``attempts`` is the run attempt it belongs
    to: a retried run ignores an older attempt's analysis."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="analysis")
    attempts = models.PositiveIntegerField()
    retention = PackedJSONField(default=dict)
    # ctxlab.engine.evaluate.survival: facts by category through each compaction ({} = not yet)
    survival = PackedJSONField(default=dict)
    # replay_app.compare.inputs: what the compare page derives from this run alone ({} = not yet)
    compare = PackedJSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "run analyses"

    def __str__(self) -> str:
        return f"analysis of run {self.run_id} (attempt {self.attempts})"

    @classmethod
    def store(cls, run: Run, attempt: int, field: str, value: dict[str, Any]) -> bool:
        """Store ``value`` as ``field`` of ``attempt``'s analysis while that attempt is the
        run's finished one (a later attempt's is never overwritten by an earlier one's).
        Never raises for a database error: the value is derived, a page computes it again."""
        try:
            with transaction.atomic():  # a savepoint inside the caller's transaction
                done = Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.DONE)
                if not done.exists():
                    return False
                if not cls.objects.filter(run_id=run.pk, attempts=attempt).update(**{field: value}):
                    cls.objects.update_or_create(
                        run_id=run.pk, defaults={"attempts": attempt, field: value}
                    )
            return True
        except DatabaseError:
            log.exception("run %s: could not store its %s analysis", run.pk, field)
            return False


class OriginalSurvival(models.Model):
    """Survival through the transcript's own recorded compactions (the "original"
    pseudo-run of the compare page), computed once per transcript and extractor version."""

    transcript = models.OneToOneField(
        "sessions_app.Transcript", on_delete=models.CASCADE, related_name="original_survival"
    )
    survival = PackedJSONField(default=dict)  # ctxlab.engine.evaluate.survival ... as_dict()
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
