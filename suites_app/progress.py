"""A suite's live progress: done/failed/remaining and an ETA, pushed over the channel layer
to group ``suite-<id>`` (the run pages' plumbing: ``suite.progress`` messages rendered by
``consumers.SuiteProgressConsumer``). Throttled per process: at most one push per suite
every ``MIN_INTERVAL`` seconds, except the final one.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, TypedDict

from django.db.models import Count, Min
from django.utils import timezone

log = logging.getLogger(__name__)

MIN_INTERVAL = 0.5
TERMINAL = ("done", "failed", "cancelled")


class SuiteProgressData(TypedDict):
    suite_id: int
    total: int
    done: int
    failed: int
    cancelled: int
    running: int
    queued: int
    remaining: int
    percent: int
    eta_seconds: int | None
    finished: bool


def suite_group_name(suite_id: int) -> str:
    return f"suite-{suite_id}"


def suite_progress_data(suite: Any) -> SuiteProgressData:
    """Counts by the runs' own status (the truth, whoever executed them) and an ETA from
    the pace so far."""
    rows = suite.items.exclude(run=None).values("run__status").annotate(n=Count("pk"))
    counts = {row["run__status"]: row["n"] for row in rows}
    total = sum(counts.values())
    finished_count = sum(counts.get(s, 0) for s in TERMINAL)
    remaining = total - finished_count
    eta: int | None = None
    if remaining and finished_count:
        first = suite.items.aggregate(first=Min("run__started_at"))["first"]
        if first is not None:
            elapsed = (timezone.now() - first).total_seconds()
            eta = round(elapsed / finished_count * remaining)
    return {
        "suite_id": suite.pk,
        "total": total,
        "done": counts.get("done", 0),
        "failed": counts.get("failed", 0),
        "cancelled": counts.get("cancelled", 0),
        "running": counts.get("running", 0),
        "queued": counts.get("queued", 0),
        "remaining": remaining,
        "percent": round(100 * finished_count / total) if total else 100,
        "eta_seconds": eta,
        "finished": remaining == 0,
    }


class SuiteProgress:
    """The throttle: last push time per suite in this process."""

    _last: dict[int, float] = {}
    _lock = threading.Lock()
    sent = 0

    @classmethod
    def push(cls, suite: Any, *, force: bool = False) -> bool:
        now = time.monotonic()
        with cls._lock:
            if not force and now - cls._last.get(suite.pk, float("-inf")) < MIN_INTERVAL:
                return False
            cls._last[suite.pk] = now
        data = suite_progress_data(suite)
        send_suite_progress(data)
        cls.sent += 1
        return True


def send_suite_progress(data: SuiteProgressData) -> None:
    """Best effort: a broken channel layer never fails a run."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            suite_group_name(data["suite_id"]), {"type": "suite.progress", "data": dict(data)}
        )
    except Exception:
        log.warning("progress of suite %s not sent", data["suite_id"], exc_info=True)
