"""Page processes: ``manage.py serve`` answers page GETs from several processes.

One Daphne process runs Django's synchronous views on threads behind one GIL, so
concurrent page views queue: 50 concurrent GETs of a 20,000-message run page took p95
4.8 s while each took 0.08 s alone. Here the process that listens on the port (the
*front*) keeps what must stay in one process in the embedded mode (websockets on the
in-memory channel layer, the embedded Celery worker on the ``memory://`` broker, request
bodies through the bounded server, every POST) and forwards GET and HEAD requests to
``count`` *page processes*: the same Django application behind its WSGI handler
(``ctxlab.serving.page_server``) on unix sockets in a private directory, least busy first. The
front only copies bytes.

A page process exits when the front does; one that dies is started again. While none
answers (starting, crashed), the front serves the request itself. A client that goes away
closes the forwarded connection; GET views never check ``ctxlab.serving.abandon`` (uploads do, in
the front), so the page process finishes and its writes fail quietly. Page processes
trust ``X-Forwarded-*`` headers only because the front overwrites them and nothing else
can reach their sockets (directory mode 0700).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ctxlab.serving import task_relay

log = logging.getLogger(__name__)

FORWARD_METHODS = frozenset({"GET", "HEAD"})
# Headers that describe one connection (RFC 9110 7.6.1) or that the front sets itself.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
        b"content-length",
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"x-forwarded-port",
    }
)
CHUNK = 256 * 1024  # what one read of a unix socket gives at most: a page in 1-2 sends
HEADER_LIMIT = 1024 * 1024  # a page's response headers: cookies, CSP; far below this
RESTART_DELAY_SECONDS = 1.0


def default_count() -> int:
    """Page processes for this machine: ``CTXLAB_PAGE_PROCESSES`` (default one per usable
    core; 0 serves pages from the front process as before)."""
    from django.conf import settings

    return max(int(settings.CTXLAB_PAGE_PROCESSES), 0)


class PagePool:
    """The page processes of one front: started, watched, restarted, stopped."""

    def __init__(self, count: int, *, relay_to: Any = None) -> None:
        """``relay_to``: the Celery app whose worker consumes in this process (``memory://``
        broker), so the page processes send their tasks through it
        (``ctxlab.serving.task_relay``); None: they send them themselves."""
        self.directory = Path(tempfile.mkdtemp(prefix="ctxlab-pages-"))
        os.chmod(self.directory, 0o700)
        self.sockets = [self.directory / f"page-{i}.sock" for i in range(count)]
        self.relay_to = relay_to
        self.relay_path = self.directory / task_relay.SOCKET_NAME if relay_to is not None else None
        self._relay: task_relay.Relay | None = None
        self.busy = [0] * count
        self._next = 0  # where a tie between equally busy processes starts (``choose``)
        self._processes: list[subprocess.Popen[bytes] | None] = [None] * count
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        if self.relay_path is not None:
            self._relay = task_relay.Relay(self.relay_path, self.relay_to)
        for index in range(len(self.sockets)):
            self._spawn(index)
        self._watcher = threading.Thread(target=self._watch, name="ctxlab-pages", daemon=True)
        self._watcher.start()

    def _spawn(self, index: int) -> None:
        self.sockets[index].unlink(missing_ok=True)
        root = str(Path(__file__).resolve().parents[2])  # the directory ctxlab/ is in
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env.pop(task_relay.ENV, None)
        if self.relay_path is not None:
            env[task_relay.ENV] = str(self.relay_path)
        self._processes[index] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ctxlab.serving.page_pool",
                str(self.sockets[index]),
                str(os.getpid()),
            ],
            env=env,
            stdin=subprocess.DEVNULL,
        )

    def _watch(self) -> None:
        while not self._stopping.wait(RESTART_DELAY_SECONDS):
            for index, process in enumerate(self._processes):
                if process is not None and process.poll() is not None:
                    log.warning(
                        "page process %d exited (%s): starting it again", index, process.returncode
                    )
                    self._spawn(index)

    def stop(self) -> None:
        self._stopping.set()
        for process in self._processes:
            if process is not None and process.poll() is None:
                process.terminate()
        for process in self._processes:
            if process is None:
                continue
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        if self._relay is not None:
            self._relay.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def choose(self) -> int | None:
        """The least busy page process that is listening, or None. Ties go round, starting
        after the last one chosen: with the first index always winning, one after another
        requests all went to the first process, and the others met their first views of a
        run (loading its steps) only under concurrent load, where they held up each
        request queued behind them."""
        ready = [i for i, path in enumerate(self.sockets) if path.exists()]
        if not ready:
            return None
        count = len(self.sockets)
        chosen = min(ready, key=lambda i: (self.busy[i], (i - self._next) % count))
        self._next = (chosen + 1) % count
        return chosen


class PageProxy:
    """ASGI: GET and HEAD requests go to a page process, everything else to ``app``."""

    def __init__(self, app: Any, pool: PagePool) -> None:
        self.app = app
        self.pool = pool

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in FORWARD_METHODS:
            await self.app(scope, receive, send)
            return
        index = self.pool.choose()
        connection = None
        if index is not None:
            try:
                connection = await asyncio.open_unix_connection(
                    str(self.pool.sockets[index]), limit=HEADER_LIMIT
                )
            except OSError:
                connection = None
        if index is None or connection is None:
            await self.app(scope, receive, send)
            return
        reader, writer = connection
        request = await receive()  # a GET's (empty) body: not forwarded
        self.pool.busy[index] += 1
        watcher = asyncio.ensure_future(_close_on_disconnect(receive, writer))
        try:
            answered = await _forward(scope, send, reader, writer)
        finally:
            self.pool.busy[index] -= 1
            watcher.cancel()
            writer.close()
        if not answered:  # the page process died before answering: a GET can be repeated
            await self.app(scope, _replay(request, receive), send)


def _replay(first: dict[str, Any], receive: Any) -> Any:
    """``receive`` for the front's own Django after a failed forward: the request message
    this proxy already read, then whatever comes next."""
    pending = [first]

    async def replayed() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replayed


async def _close_on_disconnect(receive: Any, writer: asyncio.StreamWriter) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            writer.close()
            return


def request_head(scope: dict[str, Any]) -> bytes:
    """The forwarded request line and headers (HTTP/1.0: the answer ends at EOF, never
    chunked)."""
    path = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        path += b"?" + scope["query_string"]
    lines = [b"%s %s HTTP/1.0" % (scope["method"].encode(), path)]
    lines += [name + b": " + value for name, value in scope["headers"] if name not in HOP_BY_HOP]
    client = scope.get("client") or ("", 0)
    server = scope.get("server") or ("", 0)
    lines.append(b"X-Forwarded-For: " + str(client[0]).encode())
    lines.append(b"X-Forwarded-Proto: " + scope.get("scheme", "http").encode())
    lines.append(b"X-Forwarded-Port: " + str(server[1] or 0).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


def parse_response_head(head: bytes) -> tuple[int, list[tuple[bytes, bytes]]]:
    status_line, *header_lines = head.rstrip(b"\r\n").split(b"\r\n")
    status = int(status_line.split()[1])
    headers = []
    for line in header_lines:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name and name not in HOP_BY_HOP - {b"content-length"}:
            headers.append((name, value.strip()))
    return status, headers


async def _forward(
    scope: dict[str, Any], send: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> bool:
    """Copy the request to the page process and its answer back; False if it gave none."""
    try:
        writer.write(request_head(scope))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return False
    status, headers = parse_response_head(head)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    try:
        while chunk := await reader.read(CHUNK):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except OSError:
        pass  # the page process went away mid-answer: end what was sent
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return True


# --- a page process ---------------------------------------------------------------------


def warm_up() -> int:
    """Import every view (the URLconf) and compile every template now, not in the first
    request after a start: that took 3-7 s of a busy machine's first page view. Returns
    how many templates were compiled."""
    from django.apps import apps
    from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines
    from django.template.utils import get_app_template_dirs
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns  # noqa: B018 (the property imports the views)
    reverse("healthz")  # the first reverse() builds every pattern's reverse entry (~0.1 s)
    _populate_namespaces(get_resolver())  # {% url 'admin:index' %}: ~80 ms more, once
    _compile_patterns(get_resolver())  # each route's regex: compiled on its first match
    for model in apps.get_models():  # field and relation caches the first query builds
        model._meta.get_fields()
        model._meta.related_objects  # noqa: B018
    directories = [*get_app_template_dirs("templates")]
    compiled = 0
    for engine in engines.all():
        for directory in [*getattr(engine, "template_dirs", ()), *directories]:
            for path in Path(directory).rglob("*.html"):
                try:
                    engine.get_template(str(path.relative_to(directory)))
                except (TemplateDoesNotExist, TemplateSyntaxError):
                    continue
                compiled += 1
    return compiled


def warm_queries() -> None:
    """Compile the prepared lookups of every view (session, user, run rows: ``ctxlab.serving.prepared``)
    before listening: ~1-2 ms each in a page process's first views otherwise."""
    from ctxlab import session_rows
    from replay_app import run_rows

    session_rows.warm()
    run_rows.warm()


def _populate_namespaces(resolver: Any, prefix: str = "") -> None:
    """Build the reverse map of every namespace (``admin:``...): ``reverse()`` in one goes
    through a resolver of its own, built on its first use (~80 ms for the admin's)."""
    from django.urls import NoReverseMatch, reverse

    for namespace, (_pattern, child) in resolver.namespace_dict.items():
        try:
            reverse(f"{prefix}{namespace}:-")  # no such name: only the building counts
        except NoReverseMatch:
            pass
        _populate_namespaces(child, f"{prefix}{namespace}:")


def _compile_patterns(resolver: Any) -> None:
    for pattern in resolver.url_patterns:
        pattern.pattern.regex  # noqa: B018 (the descriptor compiles and keeps it)
        if hasattr(pattern, "url_patterns"):
            _compile_patterns(pattern)


def _exit_with_parent(parent: int) -> None:
    """Page processes end with their front, even if it was killed without a word."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def serve_pages(socket_path: str, parent: int) -> None:
    """Serve the Django application on ``socket_path`` (what ``python -m`` runs)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxlab.settings")
    from django.core.wsgi import get_wsgi_application

    from ctxlab.serving import page_server

    task_relay.install(os.environ.get(task_relay.ENV))  # tasks go to the front's worker
    application = get_wsgi_application()  # django.setup(); GETs need no ASGI (websockets
    # and request bodies stay in the front)
    from replay_app import memo

    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    memo.enable_disk()  # derived page data shared with the other processes and restarts
    memo.freeze_large_values()
    page_server.keep_database_connections()
    warm_up()  # before listening: the front serves requests itself until then
    warm_queries()
    page_server.warm_request(application, "/accounts/login/")  # middleware, session, CSRF
    page_server.freeze_heap()
    page_server.serve(socket_path, application)


if __name__ == "__main__":
    serve_pages(sys.argv[1], int(sys.argv[2]))
