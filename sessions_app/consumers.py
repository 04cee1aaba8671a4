"""The session page's websocket: it follows a transcript that grows.

``sessions_app.services.refresh_transcript`` re-imports a growing session file
and sends the transcript's group ``transcript-<pk>`` the event
``{"type": "transcript.grown", "messages": N}``. This consumer joins that group, sends the
page's live part at once (catch-up on every (re)connect), then again after every growth:
one htmx out-of-band fragment (``#now-live``) with the newest step, its zones and forecast.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.generic.websocket import WebsocketConsumer
from django.template.loader import render_to_string

from ctxlab.web.ownership import owned
from sessions_app.live import transcript_group_name
from sessions_app.models import Transcript
from sessions_app.session_now_page import session_now_page

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


def render_live(transcript: Transcript) -> str:
    page = session_now_page(transcript, None)
    return render_to_string(
        "sessions_app/session_now.html#now-live", {**page.context(), "oob": True}
    )


class SessionNowConsumer(WebsocketConsumer):
    def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            self.close(code=CLOSE_UNAUTHENTICATED)
            return
        pk = int(self.scope["url_route"]["kwargs"]["transcript_id"])
        if not owned(Transcript.objects.filter(pk=pk), user).exists():
            self.close(code=CLOSE_NOT_FOUND)
            return
        self.transcript_id = pk
        self.accept()
        self.group = transcript_group_name(pk)
        async_to_sync(self.channel_layer.group_add)(self.group, self.channel_name)
        self.send_live()  # join first, then catch up: no growth is missed in between

    def disconnect(self, code: int) -> None:
        group = getattr(self, "group", None)
        if group is not None:
            async_to_sync(self.channel_layer.group_discard)(group, self.channel_name)

    def transcript_grown(self, event: dict[str, Any]) -> None:  # live.GROWN
        self.send_live()

    def send_live(self) -> None:
        transcript = (
            Transcript.objects.select_related("upload")
            .defer("upload__data")
            .filter(pk=self.transcript_id)
            .first()
        )
        if transcript is None:  # deleted meanwhile
            self.close(code=CLOSE_NOT_FOUND)
            return
        self.send(text_data=render_live(transcript))
