"""Inspection and comparison routes (included first by replay_app.urls)."""

from __future__ import annotations

from django.urls import path

from replay_app import views_compare
from replay_app import views_inspect as views

urlpatterns = [
    path("runs/<int:pk>/steps/<int:step>/", views.run_step, name="run-step"),
    path("runs/<int:pk>/messages/<int:index>/diff/", views.message_diff, name="run-message-diff"),
    path("runs/<int:pk>/offloads/", views.offload_text, name="run-offload"),
    path("runs/<int:pk>/summaries/<int:seq>/", views.summary_detail, name="run-summary"),
    path("runs/<int:pk>/lost/", views.run_lost, name="run-lost"),
    path("compare/", views.run_compare, name="run-compare"),
    path("compare/matrix/", views.compare_matrix, name="compare-matrix"),
    path("compare/diff/", views_compare.summary_diff, name="compare-summary-diff"),
]
