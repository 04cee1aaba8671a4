"""Routes of the suites app (included at the root: it owns /suites/)."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("suites/", views.suite_list, name="suite-list"),
    path("suites/new/", views.suite_new, name="suite-new"),
    path("suites/<int:suite_id>/", views.suite_detail, name="suite-detail"),
    path("suites/<int:suite_id>/configs/<int:index>/", views.suite_config, name="suite-config"),
    path(
        "suites/<int:suite_id>/configs/<int:index>/save-config/",
        views.suite_config_save,
        name="suite-config-save",
    ),
    path(
        "suites/<int:suite_id>/configs/<int:index>/native/",
        views.suite_config_native,
        name="suite-config-native",
    ),
    path(
        "suites/<int:suite_id>/transcripts/<int:transcript_id>/compare/",
        views.suite_compare,
        name="suite-compare",
    ),
    path("suites/<int:suite_id>/cancel/", views.suite_cancel, name="suite-cancel"),
    path("suites/<int:suite_id>/resume/", views.suite_resume, name="suite-resume"),
]
