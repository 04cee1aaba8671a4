"""Prompt editor routes."""

from __future__ import annotations

from django.urls import path

from prompts_app import views

urlpatterns = [
    path("prompts/", views.prompt_list, name="prompt-list"),
    path("prompts/start/", views.prompt_start, name="prompt-start"),
    path("prompts/<int:pk>/", views.prompt_version, name="prompt-version"),
    path("prompts/<int:pk>/save/", views.prompt_save, name="prompt-save"),
    path("prompts/<int:pk>/replay/", views.prompt_replay, name="prompt-replay"),
    path("prompts/<int:pk>/export/", views.prompt_export, name="prompt-export"),
    path("prompts/<int:pk>/adopt/", views.prompt_adopt, name="prompt-adopt"),
    path("prompts/<int:pk>/suite/", views.prompt_suite, name="prompt-suite"),
    path("prompts/<int:a>/diff/<int:b>/", views.prompt_diff, name="prompt-diff"),
]
