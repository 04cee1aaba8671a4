"""Websocket routes of the replay app (collected by ctxlab.serving.routing)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from replay_app.runs import consumers

# Channels routes ASGI consumers with django.urls.path; the stubs type path() for views only.
websocket_urlpatterns: list[Any] = [
    path("ws/runs/<int:run_id>/", consumers.RunProgressConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/runs/groups/<int:group_id>/", consumers.GroupProgressConsumer.as_asgi()),  # type: ignore[arg-type]
]
