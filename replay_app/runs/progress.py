"""Run progress over the channel layer: typed payloads, one group per run, throttled sends.

The executor (``executor.run_execute``) is given a ``ProgressSink``; it does not care
whether that prints, pushes to websockets or does nothing (celery-progress's recorder
seam). ``ChannelProgress`` pushes ``run.progress`` messages to group ``run-<id>``, at most
``max_per_second`` times a second, except that state changes (status) always go out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any, Literal, Protocol, TypedDict, cast

from ctxlab.engine.core.records import event_brief
from replay_app.models import Run, RunEvent

log = logging.getLogger(__name__)

LATEST_EVENTS = 10


class EventRow(TypedDict):
    seq: int
    step: int
    kind: str
    tokens_before: int
    tokens_after: int
    messages: int


class RunProgressData(TypedDict):
    run_id: int
    group_id: int | None
    status: str
    steps_done: int
    steps_total: int
    percent: int
    events_count: int
    error: str
    latest_events: list[EventRow]


class RunProgressMessage(TypedDict):
    type: Literal["run.progress"]
    data: RunProgressData


class ProgressSink(Protocol):
    def __call__(self, data: RunProgressData) -> None: ...


def run_group_name(run_id: int) -> str:
    """The channel-layer group of one run's progress messages."""
    return f"run-{run_id}"


def send_run_progress(data: RunProgressData) -> None:
    """Push one progress message to the run's group (never raises: progress is best effort)."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()  # opened lazily, never at import
    if layer is None:
        return
    message: RunProgressMessage = {"type": "run.progress", "data": data}
    try:
        async_to_sync(layer.group_send)(run_group_name(data["run_id"]), dict(message))
    except Exception:  # a broken channel layer must not fail the replay
        log.warning("progress for run %s not sent", data["run_id"], exc_info=True)


class ChannelProgress:
    """A throttled ``ProgressSink`` pushing to the channel layer."""

    def __init__(self, *, max_per_second: float = 10.0, clock: Any = time.monotonic) -> None:
        self.interval = 1.0 / max_per_second
        self.clock = clock
        self._last = float("-inf")
        self._status = ""
        self.sent = 0

    def __call__(self, data: RunProgressData) -> None:
        now = self.clock()
        if data["status"] == self._status and now - self._last < self.interval:
            return
        self._last, self._status = now, data["status"]
        self.sent += 1
        send_run_progress(data)


# ---------------------------------------------------------------------------------------
# Progress state
# ---------------------------------------------------------------------------------------


def _event_row(event: RunEvent) -> EventRow:
    row = event_brief(
        event.seq, event.step, event.kind, event.tokens_before, event.tokens_after,
        len(event.messages),
    )  # fmt: skip
    return cast(EventRow, row)


def _latest_events(run: Run) -> list[EventRow]:
    rows = list(run.events.order_by("-seq")[:LATEST_EVENTS])
    return [_event_row(e) for e in reversed(rows)]


def run_state(run: Run, *, latest: Iterable[EventRow] | None = None) -> RunProgressData:
    """The run's current progress (what a (re)connecting page catches up on)."""
    return {
        "run_id": run.pk,
        "group_id": run.group_id,
        "status": run.status,
        "steps_done": run.steps_done,
        "steps_total": run.steps_total,
        "percent": run.percent,
        "events_count": run.events_count,
        "error": run.error,
        "latest_events": list(_latest_events(run) if latest is None else latest),
    }


def _emit(sink: ProgressSink | None, run: Run, latest: list[EventRow]) -> None:
    if sink is not None:
        sink(run_state(run, latest=latest))


def _notify(run: Run) -> None:
    """Push a state change made outside the executor (cancel, retry, reap) to open pages."""
    from replay_app.runs.progress import send_run_progress

    send_run_progress(run_state(run))
