"""Cost routes."""

from __future__ import annotations

from django.urls import path

from replay_app.costs import views

urlpatterns = [
    path("runs/new/estimate/", views.run_estimate, name="run-estimate"),
]
