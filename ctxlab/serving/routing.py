"""Websocket routes, collected from each app's ``routing.websocket_urlpatterns``."""

from __future__ import annotations

import importlib
from typing import Any

from django.urls import re_path

WEBSOCKET_APPS = ("replay_app", "sessions_app", "suites_app")


def collect_websocket_urlpatterns() -> list[Any]:
    patterns: list[Any] = []
    for app in WEBSOCKET_APPS:
        try:
            module = importlib.import_module(f"{app}.routing")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app}.routing":
                raise  # a real import error inside the module must not be hidden
            continue
        patterns.extend(getattr(module, "websocket_urlpatterns", []))
    return patterns


async def refuse_socket(scope: Any, receive: Any, send: Any) -> None:
    """Any other websocket path: the handshake is refused (HTTP 403), as for a stranger.
    Without this route Channels' router raises ``ValueError`` ("No route found"): an HTTP
    500 with a traceback in the log, for anyone who asks. A bare ASGI app, not a consumer:
    a consumer would subscribe to the channel layer for a socket that never opens."""
    message = await receive()
    if message.get("type") == "websocket.connect":
        await send({"type": "websocket.close"})


websocket_urlpatterns = [
    *collect_websocket_urlpatterns(),
    # Last: only what no app route takes (the stubs type re_path() for views only).
    re_path(r"", refuse_socket),  # type: ignore[arg-type]
]
