"""Serve the dashboard (ASGI via Daphne) with the embedded Celery worker if needed."""

from __future__ import annotations

from typing import Any

from daphne.management.commands.runserver import Command as DaphneRunserver
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from ctxlab.celery import app
from ctxlab.serving.bounded_server import BoundedServer
from ctxlab.serving.embedded import embedded_broker, start_embedded_worker
from ctxlab.serving.page_pool import PagePool, PageProxy, default_count, warm_up
from ctxlab.serving.page_server import freeze_heap
from replay_app import memo


class Command(BaseCommand):
    help = (
        "Run the ASGI server (HTTP + websockets). Page GETs are answered by --page-processes "
        "processes (default: one per core). With the memory:// broker a Celery worker runs "
        "inside this process; otherwise start `celery -A ctxlab.celery worker`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--page-processes",
            type=int,
            default=None,
            help="processes answering GET/HEAD requests (default: CTXLAB_PAGE_PROCESSES or "
            "one per core; 0: this process answers everything)",
        )

    def handle(
        self, *args: Any, addrport: str, page_processes: int | None = None, **options: Any
    ) -> None:
        if embedded_broker(settings.CELERY_BROKER_URL):
            start_embedded_worker(announce=True)
            self.stdout.write("Embedded Celery worker started (in-process, memory:// broker).")
        else:
            self.stdout.write(
                f"Broker {settings.CELERY_BROKER_URL.split('@')[-1]}: "
                "run `celery -A ctxlab.celery worker` separately."
            )
        memo.enable_disk()  # derived page data shared with the page processes and restarts
        warm_up()  # views imported, templates compiled: not in the first request
        # What the warm-up loaded, out of every later full collection. (Memo values are
        # frozen in page processes only: here the embedded worker's replays run, and a
        # freeze in the middle of one would keep any cycle it had made alive.)
        freeze_heap()
        count = default_count() if page_processes is None else max(page_processes, 0)
        server = _BoundedRunserver()
        if count:
            # Websockets, POSTs and the embedded worker stay in this process (in-memory
            # channel layer and broker); page processes answer GET/HEAD (ctxlab.serving.page_pool).
            # A task queued by a page (a GET) reaches this process's worker through the
            # pool's relay (ctxlab.serving.task_relay) when the broker lives here.
            relay_to = app if embedded_broker(settings.CELERY_BROKER_URL) else None
            server.pool = PagePool(count, relay_to=relay_to)
            server.pool.start()
            self.stdout.write(f"{count} page process(es) answer GET/HEAD requests.")
        # The reloader would fork a second process without the worker; memory:// cannot
        # cross processes, so serve from this one. Daphne's runserver, with request bodies
        # streamed to disk and checked before they are read (ctxlab.serving.bounded_server).
        try:
            call_command(server, addrport, use_reloader=False)
        finally:
            if server.pool is not None:
                server.pool.stop()


class _BoundedRunserver(DaphneRunserver):
    server_cls = BoundedServer
    pool: PagePool | None = None

    def get_application(self, options: dict[str, Any]) -> Any:
        application = super().get_application(options)
        return application if self.pool is None else PageProxy(application, self.pool)
