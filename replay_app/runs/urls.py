"""Run and comparison-group routes."""

from __future__ import annotations

from django.urls import path

from replay_app.runs import transcript_picker, views

urlpatterns = [
    path("runs/", views.run_list, name="run-list"),
    path("runs/new/", views.run_create, name="run-create"),
    path(
        "runs/new/transcripts/", transcript_picker.transcript_options, name="run-transcript-options"
    ),
    path("runs/new/window/", transcript_picker.window_suggestions, name="run-window-suggestions"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/retry/", views.run_retry, name="run-retry"),
    path("runs/groups/<int:pk>/", views.group_detail, name="run-group"),
]
