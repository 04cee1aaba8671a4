from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("runs/<int:pk>/probes/", views.run_probes, name="run-probes"),
    path("runs/<int:pk>/probes/claude/", views.run_probes_claude, name="run-probes-claude"),
    path("compare/probes/", views.compare_probes, name="compare-probes"),
    path(
        "transcripts/<int:pk>/aftereffects/",
        views.transcript_aftereffects,
        name="transcript-aftereffects",
    ),
]
