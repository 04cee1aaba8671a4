"""Websocket routes of the suites app (collected by ctxlab.serving.routing)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from . import consumers

# Channels routes ASGI consumers with django.urls.path; the stubs type path() for views only.
websocket_urlpatterns: list[Any] = [
    path("ws/suites/<int:suite_id>/", consumers.SuiteProgressConsumer.as_asgi()),  # type: ignore[arg-type]
]
