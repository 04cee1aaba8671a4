"""Admin registrations: every model of this app is registered here."""

from __future__ import annotations

from django.contrib import admin

from ctxlab.web.admin_scaling import LargeTableAdmin

from .models import Suite, SuiteItem


@admin.register(Suite)
class SuiteAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ["name", "owner", "summarizer", "max_attempts", "created_at", "finished_at"]
    list_select_related = ["owner"]
    search_fields = ["name"]
    readonly_fields = ["configs", "grid_keys", "source"]


@admin.register(SuiteItem)
class SuiteItemAdmin(LargeTableAdmin):
    # One row per run: a 2,400-run suite must not make the changelist count or join slowly.
    list_display = ["__str__", "suite", "transcript_id", "config_index", "run_id", "status"]
    list_select_related = ["suite"]
    raw_id_fields = ["suite", "transcript", "run"]
    readonly_fields = ["summary"]
    list_deferred = ("summary",)
