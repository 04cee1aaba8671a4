from __future__ import annotations

from django.contrib import admin

from sessions_app.admin import JSONValuesAdmin

from .models import Probe, ProbeScore, ProbeSet, SharedScoring


@admin.register(ProbeSet)
class ProbeSetAdmin(JSONValuesAdmin):  # an empty dict/list saves: see JSONValuesAdmin
    list_display = ("id", "run", "attempts", "claude_status", "created_at")
    raw_id_fields = ("run",)
    list_select_related = ("run",)


@admin.register(Probe)
class ProbeAdmin(JSONValuesAdmin):
    list_display = ("id", "probe_set", "seq", "kind", "question")
    raw_id_fields = ("probe_set",)


@admin.register(ProbeScore)
class ProbeScoreAdmin(JSONValuesAdmin):
    list_display = ("id", "probe", "method", "score", "verdict")
    raw_id_fields = ("probe",)


@admin.register(SharedScoring)
class SharedScoringAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "runs", "status", "done_runs", "total_runs", "requested_at")
    list_filter = ("status",)
