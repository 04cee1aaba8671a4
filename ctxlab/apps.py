from __future__ import annotations

from django.apps import AppConfig


class CtxlabConfig(AppConfig):
    """The project package as an app: management commands and shared templates tags."""

    name = "ctxlab"
    verbose_name = "ctxlab"
