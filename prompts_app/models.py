"""Versions of a summarising strategy's compaction prompt, kept per user (private to the
owner, fetched through ``ctxlab.web.ownership``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class PromptVersion(models.Model):
    """One version of a strategy's prompt: the text, must-keep rules (one per line) and the
    agent's own custom instructions (Claude Code), numbered per owner and strategy."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompt_versions"
    )
    strategy = models.CharField(max_length=40)
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=100, blank=True)
    text = models.TextField()
    rules = models.TextField(blank=True)  # must-keep rules, one per line
    instructions = models.TextField(blank=True)  # the agent's custom instructions
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("strategy", "-number")
        constraints = [
            models.UniqueConstraint(
                fields=("owner", "strategy", "number"), name="prompt_version_number_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.strategy} v{self.number}" + (f" {self.name}" if self.name else "")

    def get_absolute_url(self) -> str:
        return reverse("prompt-version", args=[self.pk])
