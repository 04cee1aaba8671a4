"""The replay lab's pages, by purpose (each package's urls.py lists its own routes)."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    # /strategies/…: saved configurations, the stage builder, native exports
    path("", include("replay_app.configs.urls")),
    # /runs/…: start runs, the run list, the run page, cancel/retry, comparison groups
    path("", include("replay_app.runs.urls")),
    # /runs/<id>/steps|messages|offloads|summaries|lost/…: one run inspected
    path("", include("replay_app.steps.urls")),
    # /compare/…: 2-6 runs side by side, the fate matrix, summary diffs
    path("", include("replay_app.compare.urls")),
    # /runs/new/estimate/: what a Claude run will cost before it starts
    path("", include("replay_app.costs.urls")),
    # /runs/sweep/…, /runs/groups/<id>/sweep/: parameter sweeps
    path("", include("replay_app.sweeps.urls")),
]
