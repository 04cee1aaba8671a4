"""Websocket routes of the sessions app (collected by ctxlab.serving.routing)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from sessions_app import consumers

# Channels routes ASGI consumers with django.urls.path; the stubs type path() for views only.
websocket_urlpatterns: list[Any] = [
    path("ws/transcripts/<int:transcript_id>/now/", consumers.SessionNowConsumer.as_asgi()),  # type: ignore[arg-type]
]
