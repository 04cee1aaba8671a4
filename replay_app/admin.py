"""Admin registrations: every model of this app is registered here."""

from __future__ import annotations

from typing import ClassVar

from django.contrib import admin

from ctxlab.web.admin_scaling import LargeTableAdmin
from replay_app.models import (
    OriginalSurvival,
    Run,
    RunAnalysis,
    RunEvent,
    RunFinding,
    RunGroup,
    RunOffload,
    RunStep,
    RunSummary,
    RunText,
    StoredText,
    StrategyConfig,
    SummaryCache,
    TokenCountCache,
)


@admin.register(StrategyConfig)
class StrategyConfigAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("name", "strategy", "owner", "updated_at")
    list_filter = ("strategy",)
    search_fields = ("name",)


@admin.register(RunGroup)
class RunGroupAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("id", "name", "owner", "transcript", "created_at")
    raw_id_fields = ("transcript",)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = (
        "id",
        "label",
        "strategy",
        "status",
        "steps_done",
        "steps_total",
        "attempts",
        "owner",
        "created_at",
    )
    list_filter = ("status", "strategy", "summarizer")
    raw_id_fields = ("transcript", "group", "config")
    readonly_fields = (
        "error",
        "traceback",
        "task_id",
        "heartbeat_at",
        "started_at",
        "finished_at",
        "metrics",
    )


class _RunChildAdmin(LargeTableAdmin):
    raw_id_fields = ("run",)
    list_filter: ClassVar[tuple[str, ...]] = ()


@admin.register(RunStep)
class RunStepAdmin(_RunChildAdmin):
    list_display = ("run_id", "index", "source_index", "tokens_strategy", "tokens_reference")
    list_deferred = ("zones", "context", "pending")


@admin.register(RunEvent)
class RunEventAdmin(_RunChildAdmin):
    list_display = ("run_id", "seq", "step", "kind", "tokens_before", "tokens_after")
    list_filter = ("kind",)
    list_deferred = ("messages", "detail", "changes")


@admin.register(RunSummary)
class RunSummaryAdmin(_RunChildAdmin):
    list_display = ("run_id", "seq", "step", "input_tokens", "output_tokens")
    list_deferred = ("input", "output", "usage", "messages", "error")


@admin.register(RunFinding)
class RunFindingAdmin(_RunChildAdmin):
    list_display = ("run_id", "step", "kind")
    list_filter = ("kind",)


@admin.register(RunOffload)
class RunOffloadAdmin(_RunChildAdmin):
    list_display = ("run_id", "path")
    list_deferred = ("text",)


@admin.register(RunAnalysis)
class RunAnalysisAdmin(_RunChildAdmin):
    list_display = ("run", "attempts", "created_at")


@admin.register(OriginalSurvival)
class OriginalSurvivalAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("transcript", "created_at")
    raw_id_fields = ("transcript",)


@admin.register(SummaryCache)
class SummaryCacheAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("key", "model", "input_tokens", "output_tokens", "hits", "created_at")
    search_fields = ("key", "model")


@admin.register(TokenCountCache)
class TokenCountCacheAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("key", "tokens")
    search_fields = ("key",)


@admin.register(StoredText)
class StoredTextAdmin(LargeTableAdmin):
    """Texts stored once by content hash; a row goes with the last run linking it."""

    list_display = ("key", "size")
    list_deferred = ("text",)
    search_fields = ("key",)


@admin.register(RunText)
class RunTextAdmin(LargeTableAdmin):
    list_display = ("run_id", "text_id")
    raw_id_fields = ("run", "text")
