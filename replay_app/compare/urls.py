"""Comparison routes."""

from __future__ import annotations

from django.urls import path

from replay_app.compare import views

urlpatterns = [
    path("compare/", views.run_compare, name="run-compare"),
    path("compare/matrix/", views.compare_matrix, name="compare-matrix"),
    path("compare/diff/", views.summary_diff, name="compare-summary-diff"),
]
