"""Websocket consumers: live run progress as htmx out-of-band fragments.

Sync consumers (Channels docs): authenticate, check ownership, join the run's group, send
the current state at once (catch-up on every (re)connect), then render one fragment per
``run.progress`` message. No logic beyond that.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.generic.websocket import WebsocketConsumer
from django.template.loader import render_to_string

from replay_app.models import Run, RunGroup
from replay_app.runs import progress
from replay_app.runs.progress import RunProgressData, run_group_name

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
TERMINAL = {"done", "failed", "cancelled"}


def render_run(data: RunProgressData, *, detail: bool) -> str:
    return render_to_string(
        "replay_app/runs/_run_live.html#run-live", {"s": data, "oob": True, "detail": detail}
    )


class _OwnedRunsConsumer(WebsocketConsumer):
    detail = True

    def runs(self, user: Any) -> list[Run] | None:
        raise NotImplementedError

    def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            self.close(code=CLOSE_UNAUTHENTICATED)
            return
        runs = self.runs(user)
        if runs is None:
            self.close(code=CLOSE_NOT_FOUND)
            return
        self.accept()
        self.joined = [run_group_name(run.pk) for run in runs]
        for group in self.joined:
            async_to_sync(self.channel_layer.group_add)(group, self.channel_name)
        # Join first, then catch up: nothing sent in between is lost.
        for run in runs:
            run.refresh_from_db()
            self.send(text_data=render_run(progress.run_state(run), detail=self.detail))
        self.after_catch_up()

    def after_catch_up(self) -> None:
        pass

    def disconnect(self, code: int) -> None:
        for group in getattr(self, "joined", []):
            async_to_sync(self.channel_layer.group_discard)(group, self.channel_name)

    def run_progress(self, event: dict[str, Any]) -> None:
        self.send(text_data=render_run(event["data"], detail=self.detail))


class RunProgressConsumer(_OwnedRunsConsumer):
    """ws/runs/<run_id>/: one run, with its latest events."""

    def runs(self, user: Any) -> list[Run] | None:
        run_id = self.scope["url_route"]["kwargs"]["run_id"]
        run = Run.objects.filter(pk=run_id, owner=user).first()
        return None if run is None else [run]


class GroupProgressConsumer(_OwnedRunsConsumer):
    """ws/runs/groups/<group_id>/: every run of a comparison, compact."""

    detail = False

    def runs(self, user: Any) -> list[Run] | None:
        group_id = self.scope["url_route"]["kwargs"]["group_id"]
        self.group = RunGroup.objects.filter(pk=group_id, owner=user).first()
        if self.group is None:
            return None
        return list(self.group.runs.order_by("pk"))

    def after_catch_up(self) -> None:
        self.send_group_status()

    def run_progress(self, event: dict[str, Any]) -> None:
        super().run_progress(event)
        if event["data"]["status"] in TERMINAL:
            self.send_group_status()

    def send_group_status(self) -> None:
        assert self.group is not None  # runs() found it before the socket was accepted
        statuses = list(self.group.runs.values_list("status", flat=True))
        self.send(
            text_data=render_to_string(
                "replay_app/runs/_run_live.html#group-status",
                {
                    "group": self.group,
                    "statuses": statuses,
                    "oob": True,
                    "finished": all(s in TERMINAL for s in statuses),
                },
            )
        )
