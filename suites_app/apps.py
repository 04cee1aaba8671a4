from __future__ import annotations

from django.apps import AppConfig


class SuitesAppConfig(AppConfig):
    name = "suites_app"
    verbose_name = "Suites"
