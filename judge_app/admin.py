from __future__ import annotations

from django.contrib import admin

from .models import Probe, ProbeScore, ProbeSet


@admin.register(ProbeSet)
class ProbeSetAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("id", "run", "attempts", "claude_status", "created_at")
    raw_id_fields = ("run",)
    list_select_related = ("run",)


@admin.register(Probe)
class ProbeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "probe_set", "seq", "kind", "question")
    raw_id_fields = ("probe_set",)


@admin.register(ProbeScore)
class ProbeScoreAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "probe", "method", "score", "verdict")
    raw_id_fields = ("probe",)
