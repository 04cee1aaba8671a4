"""Stopping work for a request whose client went away.

Django's ASGI handler notices a client that closed its connection (``http.disconnect``)
and stops awaiting the view, but a sync view keeps running in its thread to the end: a
200 MB import or a page over a huge run kept a worker thread (and the SQLite write lock)
busy for minutes for nobody. ``AbandonWatch`` wraps the ASGI application: each HTTP
request gets a flag, set when the disconnect arrives, in a context variable that the
view's thread sees (asgiref copies the context into it). Long loops call
``raise_if_abandoned()`` between steps; ``RequestAbandoned`` then unwinds the view (its
transaction rolls back) and ``AbandonedRequestMiddleware`` answers it quietly (nobody
reads the answer; it is not a server error).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_FLAG: ContextVar[threading.Event | None] = ContextVar("ctxlab_request_abandoned", default=None)


class RequestAbandoned(Exception):
    """The client of the request being served closed its connection."""


def abandoned() -> bool:
    """Whether the client of the request being served (in this context) went away."""
    flag = _FLAG.get()
    return flag is not None and flag.is_set()


def raise_if_abandoned() -> None:
    if abandoned():
        raise RequestAbandoned("the client closed the connection")


class AbandonWatch:
    """ASGI middleware: a per-request flag, set when the client disconnects."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        flag = threading.Event()

        async def watched() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                flag.set()
            return message

        token = _FLAG.set(flag)
        try:
            await self.app(scope, watched, send)
        finally:
            _FLAG.reset(token)


class AbandonedRequestMiddleware:
    """``RequestAbandoned`` from a view: logged as one line, answered with 499 (the
    nginx convention for "client closed request"), never a 500 with a traceback."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, RequestAbandoned):
            return None
        log.info("stopped %s %s: the client went away", request.method, request.path)
        return HttpResponse(status=499)
