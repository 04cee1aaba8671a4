"""The Celery app. Workers: ``celery -A ctxlab.celery worker`` (distributed mode).

Loaded by ``replay_app.apps.ReplayAppConfig.ready()`` rather than from ``ctxlab/__init__.py``
so that ``import ctxlab.engine`` stays free of Django and Celery. Configuration comes from
Django settings (``CELERY_*``); tasks are discovered in each app's ``tasks.py``.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun

from ctxlab.serving import task_relay

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxlab.settings")


class App(Celery):
    """ctxlab's Celery app: in a page process with an in-process broker, every task leaves
    through the front's worker (``ctxlab.serving.task_relay``); elsewhere as Celery sends it."""

    def send_task(  # type: ignore[override]
        self, name: str, args: Any = None, kwargs: Any = None, **options: Any
    ) -> Any:
        if task_relay.active():
            return task_relay.send(self, name, args, kwargs, options)
        return super().send_task(name, args, kwargs, **options)


app = App("ctxlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _tune_sqla_transport() -> None:
    # kombu's SQLAlchemy transport hands every broker_transport_option to create_engine(),
    # so its 1 s polling interval can only be changed on the class.
    from kombu.transport import sqlalchemy

    sqlalchemy.Transport.polling_interval = 0.1


if str(os.environ.get("CELERY_BROKER_URL", "")).startswith("sqla+"):
    _tune_sqla_transport()


@app.task(name="ctxlab.ping")
def ping(value: str = "pong") -> str:
    """Round-trip check for a worker: returns its argument."""
    return value


@task_postrun.connect
def _close_db_connections(task: object = None, **kwargs: object) -> None:
    # Worker threads (embedded mode) keep one connection each; return them after every task
    # so they don't pile up or block a test database from being dropped. Eager tasks run in
    # the caller's thread, inside its transaction: leave that connection alone.
    if getattr(getattr(task, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
