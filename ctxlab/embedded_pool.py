"""Child processes for the embedded worker's CPU-heavy work.

The embedded Celery worker (``ctxlab.embedded``) must live in the web process: its
``memory://`` broker and the in-memory channel layer cannot cross processes. Its threads
share one interpreter lock, though, so two replays at once ran at ~1.2x the speed of one.
This pool keeps ``size`` long-lived child processes, each a fresh interpreter (``spawn``:
no inherited threads, locks or database connections) with Django set up once on the
parent's *current* database settings (a test database included). A worker thread borrows
one child per call: ``call("pkg.module:function", *args, on_message=sink)`` runs
``function(*args, send=...)`` in the child; whatever the child passes to ``send`` arrives
in the calling thread (which forwards run progress to the channel layer), then its return
value. The calling thread only waits on a pipe, so the parent's lock stays free.

A child that dies mid-call (killed, out of memory, a crash in C code) raises
``ChildExited`` in the caller and is replaced on the next call. Children start on first
use (Django setup costs a second or two) and stay; they ignore Ctrl-C and exit when the
parent does.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import queue
import signal
import threading
import traceback
from collections.abc import Callable, Mapping
from copy import deepcopy
from multiprocessing.connection import Connection, wait
from typing import Any

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0  # Django setup in a fresh interpreter, on a busy machine


class ChildExited(RuntimeError):
    """The child process running a call exited before answering."""

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode
        super().__init__(f"the worker process stopped unexpectedly ({describe_exit(exitcode)})")


class ChildError(RuntimeError):
    """The called function raised in the child (its traceback is in ``remote_traceback``)."""

    def __init__(self, text: str, remote_traceback: str) -> None:
        self.remote_traceback = remote_traceback
        super().__init__(text)


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "no exit code"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = ": killed, perhaps for lack of memory" if -exitcode == signal.SIGKILL else ""
        return f"{name}{hint}"
    return f"exit code {exitcode}"


class _Child:
    """One child process and the parent's end of its pipe."""

    def __init__(self, databases: Mapping[str, Any]) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child_conn = context.Pipe()
        self.busy = False
        settings_module = os.environ.get("DJANGO_SETTINGS_MODULE", "ctxlab.settings")
        self.process = context.Process(
            target=_child_main,
            args=(child_conn, settings_module, dict(databases)),
            name="ctxlab-run-process",
            daemon=True,  # multiprocessing ends it when the parent exits normally
        )
        self.process.start()
        child_conn.close()
        self._await_ready()

    def _await_ready(self) -> None:
        ready = wait([self.conn, self.process.sentinel], timeout=START_TIMEOUT)
        if not ready:
            self.close()
            raise RuntimeError(f"worker process not ready after {START_TIMEOUT:.0f} s")
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            raise ChildExited(self.process.exitcode) from None
        if kind != "ready":
            self.close()
            raise ChildError(f"worker process failed to start: {payload[0]}", payload[1])

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.is_alive()

    def call(self, target: str, args: tuple[Any, ...], on_message: Callable[[Any], None]) -> Any:
        self.busy = True
        try:
            return self._call(target, args, on_message)
        finally:
            self.busy = False

    def _call(self, target: str, args: tuple[Any, ...], on_message: Callable[[Any], None]) -> Any:
        self.conn.send(("call", target, args))
        while True:
            wait([self.conn, self.process.sentinel])
            # Messages sent just before an exit are still in the pipe: read them first.
            if not self.conn.poll():
                self.process.join(5)
                raise ChildExited(self.process.exitcode)
            try:
                kind, payload = self.conn.recv()
            except (EOFError, OSError):
                self.process.join(5)
                raise ChildExited(self.process.exitcode) from None
            if kind == "message":
                on_message(payload)
            elif kind == "result":
                return payload
            elif kind == "error":
                raise ChildError(*payload)

    def close(self) -> None:
        self.conn.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


class ProcessPool:
    """``size`` lazily started child processes, lent to one calling thread at a time."""

    def __init__(self, size: int, *, databases: Mapping[str, Any] | None = None) -> None:
        if size < 1:
            raise ValueError(f"a process pool needs at least one process, not {size}")
        if databases is None:
            from django.conf import settings

            databases = settings.DATABASES
        self.size = size
        self.databases = deepcopy(dict(databases))
        self._slots: queue.LifoQueue[_Child | None] = queue.LifoQueue()
        for _ in range(size):
            self._slots.put(None)  # None: not started yet
        self._children: set[_Child] = set()
        self._lock = threading.Lock()
        self._closed = False

    def call(
        self, target: str, *args: Any, on_message: Callable[[Any], None] = lambda _m: None
    ) -> Any:
        """``target(*args, send=...)`` in a child; blocks until one is free and answers."""
        child = self._slots.get()
        try:
            if self._closed:
                raise RuntimeError("the process pool is shut down")
            if child is None or not child.alive():
                child = self._replace(child)
            try:
                return child.call(target, args, on_message)
            except ChildExited:
                self._forget(child)
                child = None
                raise
        finally:
            self._slots.put(child)

    def warm(self) -> list[int]:
        """Start every child now (not on first use); their process ids."""
        children = [self._slots.get() for _ in range(self.size)]
        try:
            children = [c if c is not None and c.alive() else self._replace(c) for c in children]
        finally:
            for child in children:
                self._slots.put(child)
        return [c.pid for c in children if c is not None and c.pid is not None]

    def pids(self) -> list[int]:
        """Process ids of the started children (tests kill one to see a crash handled)."""
        with self._lock:
            return [c.pid for c in self._children if c.pid is not None and c.alive()]

    def busy_pids(self) -> list[int]:
        """Process ids of the children running a call now."""
        with self._lock:
            return [c.pid for c in self._children if c.pid is not None and c.busy]

    def shutdown(self) -> None:
        """Stop every child (a call in progress fails with ``ChildExited``)."""
        self._closed = True
        with self._lock:
            children, self._children = list(self._children), set()
        for child in children:
            child.close()

    def _replace(self, old: _Child | None) -> _Child:
        if old is not None:
            self._forget(old)
        child = _Child(self.databases)
        with self._lock:
            self._children.add(child)
        log.info("worker process %s started", child.pid)
        return child

    def _forget(self, child: _Child) -> None:
        with self._lock:
            self._children.discard(child)
        child.close()


# ---------------------------------------------------------------------------------------
# The child side
# ---------------------------------------------------------------------------------------


def _child_main(conn: Connection, settings_module: str, databases: dict[str, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _exit_with_parent()
    try:
        os.environ["DJANGO_SETTINGS_MODULE"] = settings_module
        from django.conf import settings

        settings.DATABASES = databases  # before any connection: the parent's test database
        import django

        django.setup()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, then exit
        conn.send(("error", (f"{type(exc).__name__}: {exc}", traceback.format_exc())))
        return
    conn.send(("ready", os.getpid()))
    lock = threading.Lock()

    def send(payload: Any) -> None:
        with lock:
            conn.send(("message", payload))

    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        _, target, args = request
        try:
            result = _resolve(target)(*args, send=send)
        except BaseException as exc:  # noqa: BLE001 - the parent decides what it means
            reply: tuple[str, Any] = (
                "error",
                (f"{type(exc).__name__}: {exc}", traceback.format_exc()),
            )
        else:
            reply = ("result", result)
        with lock:
            conn.send(reply)


def _resolve(target: str) -> Callable[..., Any]:
    module_name, _, name = target.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module_name), name)
    return function


def _exit_with_parent() -> None:
    """A child whose parent died (killed, no clean shutdown) must not outlive it."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


# ---------------------------------------------------------------------------------------
# The embedded worker's pool (one per process)
# ---------------------------------------------------------------------------------------

_current: ProcessPool | None = None
_current_lock = threading.Lock()


def start(size: int) -> ProcessPool | None:
    """Make this process's pool of ``size`` children (none for 0: work stays in threads)."""
    global _current
    with _current_lock:
        if _current is None and size > 0:
            _current = ProcessPool(size)
        return _current


def stop() -> None:
    global _current
    with _current_lock:
        pool, _current = _current, None
    if pool is not None:
        pool.shutdown()


def current() -> ProcessPool | None:
    """The embedded worker's pool, when it runs with processes."""
    return _current


def usable_cores() -> int:
    """One child per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
