"""Websocket routes, collected from each app's ``routing.websocket_urlpatterns``."""

from __future__ import annotations

import importlib
from typing import Any

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


websocket_urlpatterns = collect_websocket_urlpatterns()
