"""Websocket routes of the replay app (collected by ctxlab.routing)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from replay_app.runs import consumers

websocket_urlpatterns: list[Any] = [
    path("ws/runs/<int:run_id>/", consumers.RunProgressConsumer.as_asgi()),
    path("ws/runs/groups/<int:group_id>/", consumers.GroupProgressConsumer.as_asgi()),
]
