"""The embedded Celery worker: real task execution inside the web process.

With the default ``memory://`` broker, producer and consumer must share a process, so
``manage.py serve`` starts a thread-pool WorkController on a daemon thread before serving.
Its threads share one interpreter lock, so the CPU-heavy part of a run goes to a pool of
child processes (``ctxlab.serving.embedded_pool``, ``CTXLAB_EMBEDDED_WORKER_PROCESSES``, default one
per core; 0 keeps everything in the threads): a thread hands its run to a child and
forwards the progress the child sends back (``replay_app.runs.pooled``).
Nothing starts at import time; tests start one only through the ``celery_worker_embedded``
fixture (threads only, unless a test starts the pool).
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import threading
from typing import Any

from celery import signals
from celery._state import _set_task_join_will_block  # type: ignore[attr-defined]  # private
from celery.worker import WorkController

from ctxlab.serving import embedded_pool

log = logging.getLogger(__name__)

_lock = threading.Lock()
_worker: EmbeddedWorker | None = None


class EmbeddedWorker(WorkController):
    """A WorkController that can report when its consumer is ready."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ready = threading.Event()
        self.ready_consumer: Any = None
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: Any) -> None:
        super().on_consumer_ready(consumer)
        self.ready_consumer = consumer
        self.ready.set()


def start_embedded_worker(
    *,
    concurrency: int | None = None,
    processes: int | None = None,
    timeout: float = 30.0,
    announce: bool = False,
) -> EmbeddedWorker:
    """Start (once per process) an in-process worker and wait until it consumes tasks;
    with ``processes`` (default ``CTXLAB_EMBEDDED_WORKER_PROCESSES``) its runs execute in
    that many child processes, started on first use. ``announce`` sends Celery's
    ``worker_ready`` as ``celery worker`` does: a WorkController started by hand never
    sends it, and its handlers fail the runs a stopped server left behind and resume
    unfinished suites. Only ``manage.py serve`` announces: the worker of ``manage.py suite
    run`` must not fail the runs a running server has queued in its own memory."""
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
        if processes is None:
            processes = settings.CTXLAB_EMBEDDED_WORKER_PROCESSES
        pool = embedded_pool.start(processes) if _can_have_children(settings.DATABASES) else None
        log.info(
            "embedded Celery worker running (threads, concurrency %d; %s)",
            concurrency,
            f"runs in up to {pool.size} child processes" if pool else "runs in the threads",
        )
        _worker = worker
    if announce:
        signals.worker_ready.send(sender=worker.ready_consumer)
    return worker


def stop_embedded_worker() -> None:
    """Stop the embedded worker, if one runs (used by tests)."""
    global _worker
    with _lock:
        if _worker is None:
            return
        _worker.stop(in_sighandler=False, exitcode=0)
        _worker = None
        embedded_pool.stop()
        _set_task_join_will_block(False)


def embedded_broker(broker_url: str) -> bool:
    """Only an in-memory broker needs the worker inside the web process."""
    return broker_url.startswith("memory://")


def _can_have_children(databases: dict[str, Any]) -> bool:
    """Child processes need a database they can open too (not an in-memory SQLite) and a
    parent allowed to have children (a daemonic process, e.g. a test server, is not)."""
    if multiprocessing.current_process().daemon:
        return False
    for db in databases.values():
        name = str(db.get("NAME") or "")
        if db.get("ENGINE", "").endswith("sqlite3") and (
            name in ("", ":memory:") or "mode=memory" in name
        ):
            return False
    return True
