from __future__ import annotations

from django.apps import AppConfig


class ReplayAppConfig(AppConfig):
    name = "replay_app"
    verbose_name = "Replay"

    def ready(self) -> None:
        # Register the Celery app (and its tasks) once Django is set up; deliberately not in
        # ctxlab/__init__.py, which would drag Celery into `import ctxlab.engine`.
        import ctxlab.celery  # noqa: F401

        # Celery's autodiscovery looks for <app>.tasks; the run tasks live in runs/.
        from replay_app.runs import tasks  # noqa: F401
