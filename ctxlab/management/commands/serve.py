"""Serve the dashboard (ASGI via Daphne) with the embedded Celery worker if needed."""

from __future__ import annotations

from typing import Any

from daphne.management.commands.runserver import Command as DaphneRunserver
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from ctxlab.bounded_server import BoundedServer
from ctxlab.embedded import embedded_broker, start_embedded_worker


class Command(BaseCommand):
    help = (
        "Run the ASGI dev server (HTTP + websockets). With the memory:// broker a Celery "
        "worker runs inside this process; otherwise start `celery -A ctxlab.celery worker`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args: Any, addrport: str, **options: Any) -> None:
        if embedded_broker(settings.CELERY_BROKER_URL):
            start_embedded_worker()
            self.stdout.write("Embedded Celery worker started (in-process, memory:// broker).")
        else:
            self.stdout.write(
                f"Broker {settings.CELERY_BROKER_URL.split('@')[-1]}: "
                "run `celery -A ctxlab.celery worker` separately."
            )
        # The reloader would fork a second process without the worker; memory:// cannot
        # cross processes, so serve from this one. Daphne's runserver, with request bodies
        # streamed to disk and checked before they are read (ctxlab.bounded_server).
        call_command(_BoundedRunserver(), addrport, use_reloader=False)


class _BoundedRunserver(DaphneRunserver):
    server_cls = BoundedServer
