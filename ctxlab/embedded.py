"""The embedded Celery worker: real task execution inside the web process.

With the default ``memory://`` broker, producer and consumer must share a process, so
``manage.py serve`` starts a thread-pool WorkController on a daemon thread before serving.
Nothing starts at import time; tests start one only through the ``celery_worker_embedded``
fixture.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from celery._state import _set_task_join_will_block  # type: ignore[attr-defined]  # private
from celery.worker import WorkController

log = logging.getLogger(__name__)

_lock = threading.Lock()
_worker: EmbeddedWorker | None = None


class EmbeddedWorker(WorkController):
    """A WorkController that can report when its consumer is ready."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: Any) -> None:
        super().on_consumer_ready(consumer)
        self.ready.set()


def start_embedded_worker(
    *, concurrency: int | None = None, timeout: float = 30.0
) -> EmbeddedWorker:
    """Start (once per process) an in-process worker and wait until it consumes tasks."""
    global _worker
    with _lock:
        if _worker is not None:
            return _worker
        from django.conf import settings

        from ctxlab.celery import app

        if concurrency is None:
            concurrency = settings.CTXLAB_EMBEDDED_WORKER_CONCURRENCY
        worker = EmbeddedWorker(
            app=app,
            hostname=f"embedded-{threading.get_native_id()}@{socket.gethostname()}",
            pool_cls="threads",
            concurrency=concurrency,
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            loglevel="WARNING",
        )
        # Building the pool flags the whole process as "inside a worker", which would make
        # every AsyncResult.get() in web code raise; the web process is not a task.
        _set_task_join_will_block(False)
        thread = threading.Thread(target=worker.start, name="ctxlab-celery-worker", daemon=True)
        thread.start()
        if not worker.ready.wait(timeout):
            raise RuntimeError(f"embedded Celery worker not ready after {timeout:.0f} s")
        _set_task_join_will_block(False)
        log.info("embedded Celery worker running (threads, concurrency %d)", concurrency)
        _worker = worker
        return worker


def stop_embedded_worker() -> None:
    """Stop the embedded worker, if one runs (used by tests)."""
    global _worker
    with _lock:
        if _worker is None:
            return
        _worker.stop(in_sighandler=False, exitcode=0)
        _worker = None
        _set_task_join_will_block(False)


def embedded_broker(broker_url: str) -> bool:
    """Only an in-memory broker needs the worker inside the web process."""
    return broker_url.startswith("memory://")
