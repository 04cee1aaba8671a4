"""Child processes for the embedded worker's CPU-heavy work.

The embedded Celery worker (``ctxlab.serving.embedded``) must live in the web process: its
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
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0  # Django setup in a fresh interpreter, on a busy machine
# A child this big after a call is retired (a new one starts on the next call): the
# memory of one huge run goes back to the system instead of staying with the child.
RETIRE_RSS_MB = 1024


class PoolClosed(RuntimeError):
    """The pool was shut down before the call reached a child (nothing ran)."""


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

    def __init__(self, databases: Mapping[str, Any], retire_rss_mb: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child_conn = context.Pipe()
        self.busy = False
        self.retiring = False  # it said it exits after this call (see RETIRE_RSS_MB)
        settings_module = os.environ.get("DJANGO_SETTINGS_MODULE", "ctxlab.settings")
        self.process = context.Process(
            target=_child_main,
            args=(child_conn, settings_module, dict(databases), retire_rss_mb),
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
            raise ChildError(f"worker process not ready after {START_TIMEOUT:.0f} s", "")
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.close()
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
        try:
            self.conn.send(("call", target, args))
        except (OSError, ValueError):  # its end of the pipe is gone: it died while idle
            self.process.join(5)
            raise ChildExited(self.process.exitcode) from None
        while True:
            try:
                wait([self.conn, self.process.sentinel])
                # Messages sent just before an exit are still in the pipe: read them first.
                message = self.conn.recv() if self.conn.poll() else None
            except (EOFError, OSError, ValueError):  # closed, or the pool shut it down
                message = None
            if message is None:
                self.process.join(5)
                raise ChildExited(self.process.exitcode)
            kind, payload = message
            if kind == "message":
                try:
                    on_message(payload)
                except Exception:  # the call goes on: its answer must still be read here
                    log.exception("worker process %s: message not handled", self.pid)
            elif kind == "retiring":
                self.retiring = True
            elif kind == "result":
                return payload
            elif kind == "error":
                raise ChildError(*payload)

    def close(self) -> None:
        self.conn.close()
        self.stop()

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


class ProcessPool:
    """``size`` lazily started child processes, lent to one calling thread at a time."""

    def __init__(
        self,
        size: int,
        *,
        databases: Mapping[str, Any] | None = None,
        retire_rss_mb: float = RETIRE_RSS_MB,
    ) -> None:
        if size < 1:
            raise ValueError(f"a process pool needs at least one process, not {size}")
        if databases is None:
            from django.conf import settings

            databases = settings.DATABASES
        self.size, self.retire_rss_mb = size, retire_rss_mb
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
                raise PoolClosed("the process pool is shut down")
            if child is None or not child.alive():
                child = self._replace(child)
            try:
                result = child.call(target, args, on_message)
            except ChildExited:
                self._forget(child)
                child = None
                raise
            if child.retiring:
                log.info("worker process %s retired (over %s MB)", child.pid, self.retire_rss_mb)
                self._forget(child)
                child = None
            return result
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
            if child.busy:  # its caller sees it exit (ChildExited) and closes the pipe
                child.stop()
            else:
                child.close()

    def _replace(self, old: _Child | None) -> _Child:
        if old is not None:
            self._forget(old)
        child = _Child(self.databases, self.retire_rss_mb)
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


def _child_main(
    conn: Connection,
    settings_module: str,
    databases: dict[str, Any],
    retire_rss_mb: float = RETIRE_RSS_MB,
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _exit_with_parent()
    try:
        os.environ["DJANGO_SETTINGS_MODULE"] = settings_module
        _use_databases(databases)
        import django

        django.setup()
        _check_databases(databases)
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
        retire = _rss_mb() > retire_rss_mb
        with lock:
            if retire:
                conn.send(("retiring", None))
            conn.send(reply)
        if retire:
            return


def _use_databases(databases: dict[str, Any]) -> None:
    """The parent's database settings as they are now (a test database included), even
    when the parent's main module, imported again here by ``spawn``, set Django up."""
    from django.conf import settings
    from django.db import connections

    settings.DATABASES = databases
    if "settings" in vars(connections):  # read before us: forget those connections
        connections.close_all()
        del connections.settings
        type(connections).__init__(connections)  # no settings, no connections: as created


def _check_databases(databases: dict[str, Any]) -> None:
    from django.db import connections

    for alias, wanted in databases.items():
        name = connections[alias].settings_dict["NAME"]
        if str(name) != str(wanted.get("NAME")):
            raise RuntimeError(f"database {alias!r} is {name!r} here, not {wanted.get('NAME')!r}")


def _rss_mb() -> float:
    """This process's resident memory now (Linux; 0 where /proc is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


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
