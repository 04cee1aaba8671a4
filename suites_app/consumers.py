"""ws/suites/<id>/: a suite's live progress as an htmx out-of-band fragment.

Authenticate, check ownership, join the suite's group, send the current state at once
(catch-up on every (re)connect), then one fragment per ``suite.progress`` message.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.generic.websocket import WebsocketConsumer
from django.template.loader import render_to_string

from .models import Suite
from .progress import SuiteProgressData, suite_group_name, suite_progress_data

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


def render_progress(data: SuiteProgressData) -> str:
    return render_to_string("suites_app/_suite_live.html#suite-progress", {"p": data, "oob": True})


class SuiteProgressConsumer(WebsocketConsumer):
    def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            self.close(code=CLOSE_UNAUTHENTICATED)
            return
        suite_id = self.scope["url_route"]["kwargs"]["suite_id"]
        suite = Suite.objects.filter(pk=suite_id, owner_id=user.pk).first()
        if suite is None:
            self.close(code=CLOSE_NOT_FOUND)
            return
        self.accept()
        self.group = suite_group_name(suite.pk)
        async_to_sync(self.channel_layer.group_add)(self.group, self.channel_name)
        self.send(text_data=render_progress(suite_progress_data(suite)))  # join, then catch up

    def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            async_to_sync(self.channel_layer.group_discard)(self.group, self.channel_name)

    def suite_progress(self, event: dict[str, Any]) -> None:
        self.send(text_data=render_progress(event["data"]))
