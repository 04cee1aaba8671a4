"""Parameter sweep routes."""

from __future__ import annotations

from django.urls import path

from replay_app.sweeps import views

urlpatterns = [
    path("runs/sweep/new/", views.sweep_new, name="run-sweep"),
    path("runs/groups/<int:pk>/sweep/", views.group_sweep, name="run-group-sweep"),
]
