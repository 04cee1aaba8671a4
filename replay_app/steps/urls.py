"""Routes inspecting one run: a step, a message diff, offloads, a summary, what was lost."""

from __future__ import annotations

from django.urls import path

from replay_app.steps import views

urlpatterns = [
    path("runs/<int:pk>/steps/<int:step>/", views.run_step, name="run-step"),
    path("runs/<int:pk>/messages/<int:index>/diff/", views.message_diff, name="run-message-diff"),
    path("runs/<int:pk>/offloads/", views.offload_text, name="run-offload"),
    path("runs/<int:pk>/summaries/<int:seq>/", views.summary_detail, name="run-summary"),
    path("runs/<int:pk>/lost/", views.run_lost, name="run-lost"),
]
