"""Strategy configuration routes."""

from __future__ import annotations

from django.urls import path

from replay_app.configs import views

urlpatterns = [
    path("strategies/", views.strategy_list, name="strategy-list"),
    path("strategies/new/", views.strategy_create, name="strategy-create"),
    path("strategies/stages/", views.strategy_stages, name="strategy-stages"),
    path("strategies/<int:pk>/stages/", views.strategy_stages, name="strategy-stages-for"),
    path("strategies/import/", views.strategy_import, name="strategy-import"),
    path("strategies/presets/<str:name>/native/", views.preset_native, name="preset-native"),
    path("strategies/<int:pk>/", views.strategy_edit, name="strategy-edit"),
    path("strategies/<int:pk>/delete/", views.strategy_delete, name="strategy-delete"),
    path("strategies/<int:pk>/export/", views.strategy_export, name="strategy-export"),
    path("strategies/<int:pk>/native/", views.strategy_native, name="strategy-native"),
    # one click from a winning run (compare page, comparison group)
    path("runs/<int:pk>/save-config/", views.run_save_config, name="run-save-config"),
    path("runs/<int:pk>/native/", views.run_native, name="run-native"),
]
