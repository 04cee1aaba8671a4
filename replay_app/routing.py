"""Websocket routes of the replay app (collected by ctxlab.routing)."""

from __future__ import annotations

from typing import Any

websocket_urlpatterns: list[Any] = []
