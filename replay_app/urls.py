from __future__ import annotations

from django.urls import path

from replay_app import views

urlpatterns = [
    path("strategies/", views.strategy_list, name="strategy-list"),
    path("runs/", views.run_list, name="run-list"),
    path("compare/", views.run_compare, name="run-compare"),
]
