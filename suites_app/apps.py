from __future__ import annotations

from django.apps import AppConfig


class SuitesAppConfig(AppConfig):
    name = "suites_app"
    verbose_name = "Suites"

    def ready(self) -> None:
        # The suite actions connect their worker-start resume (after replay_app's reaper,
        # connected at its own ready()).
        from suites_app import services  # noqa: F401
