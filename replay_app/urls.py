from __future__ import annotations

from django.urls import include, path

from replay_app import transcript_picker, views, views_costs, views_sweep

urlpatterns = [
    # Inspection + compare routes (views_inspect); first, so /compare/ resolves there.
    path("", include("replay_app.urls_inspect")),
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
    path("runs/", views.run_list, name="run-list"),
    path("runs/new/", views.run_create, name="run-create"),
    path("runs/new/estimate/", views_costs.run_estimate, name="run-estimate"),
    path(
        "runs/new/transcripts/",
        transcript_picker.transcript_options,
        name="run-transcript-options",
    ),
    path("runs/new/window/", transcript_picker.window_suggestions, name="run-window-suggestions"),
    path("runs/sweep/new/", views_sweep.sweep_new, name="run-sweep"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/retry/", views.run_retry, name="run-retry"),
    path("runs/groups/<int:pk>/", views.group_detail, name="run-group"),
    path("runs/groups/<int:pk>/sweep/", views_sweep.group_sweep, name="run-group-sweep"),
    path("compare/", views.run_compare, name="run-compare"),
]
