"""Tasks queued in a page process reach the front's worker.

With the ``memory://`` broker (``make run``) the embedded worker consumes in the process
that listens on the port (the *front*, ``ctxlab.serving.page_pool``); a task a page process sent
to its own ``memory://`` broker would wait there for ever (the compare-probes page queued
``score_shared_probes`` from a GET and stayed "queued"). So a page process sends no task
itself: the app's ``send_task`` (``ctxlab.celery.App``, every ``delay``/``apply_async``
ends there) hands the message to the front over a unix socket in the page processes'
private directory, and the front sends it to its broker and answers with the task id.
With a shared broker (Redis: the distributed mode) page processes send tasks directly.
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SOCKET_NAME = "tasks.sock"
ENV = "CTXLAB_TASK_RELAY"  # set in a page process's environment by the front
# send_task's arguments that are objects of the sending process, not part of the message
LOCAL_OPTIONS = frozenset({"producer", "connection", "router", "result_cls", "task_type"})
REPLY_LIMIT = 64 * 1024

_path: str | None = None  # in a page process: the front's relay socket


def install(path: str | None) -> None:
    """In a page process: send every task through the front listening on ``path``."""
    global _path
    _path = path or None


def active() -> bool:
    return _path is not None


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    raise TypeError(f"a task option of type {type(value).__name__} cannot leave a page process")


def _decode(value: dict[str, Any]) -> Any:
    if set(value) == {"$datetime"}:
        return datetime.fromisoformat(value["$datetime"])
    return value


def send(
    app: Any, name: str, args: Any, kwargs: Any, options: dict[str, Any]
) -> Any:  # fmt: skip
    """``app.send_task`` from a page process: the front sends it; its AsyncResult."""
    assert _path is not None
    result_cls = options.get("result_cls") or app.AsyncResult
    task_id = options.get("task_id") or uuid.uuid4().hex
    message = {
        "name": name,
        "args": list(args or ()),
        "kwargs": dict(kwargs or {}),
        "options": {
            key: value
            for key, value in {**options, "task_id": task_id}.items()
            if key not in LOCAL_OPTIONS and value is not None
        },
    }
    data = json.dumps(message, default=_encode).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(_path)
        connection.sendall(data)
        reply = json.loads(connection.makefile("rb").readline(REPLY_LIMIT) or b"{}")
    if reply.get("id") != task_id:
        raise RuntimeError(f"task {name} not sent by the front: {reply.get('error', 'no answer')}")
    return result_cls(task_id)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        try:
            message = json.loads(self.rfile.readline(), object_hook=_decode)
            result = self.server.app.send_task(
                message["name"], message["args"], message["kwargs"], **message["options"]
            )
            reply: dict[str, Any] = {"id": result.id}
        except Exception as exc:  # told to the page process, which raises it in its request
            log.exception("relaying a task from a page process failed")
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        self.wfile.write(json.dumps(reply).encode() + b"\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    app: Any  # the Celery app the front sends with


class Relay:
    """The front's end: sends the tasks page processes hand it on ``path`` with ``app``
    (``ctxlab.celery.app``, whose worker consumes in this process)."""

    def __init__(self, path: Path, app: Any) -> None:
        path.unlink(missing_ok=True)
        self.path = path
        self._server = _Server(str(path), _Handler)
        self._server.app = app
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ctxlab-task-relay", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.path.unlink(missing_ok=True)
