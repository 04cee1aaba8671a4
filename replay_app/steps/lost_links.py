"""Links for "what was lost": each compaction to its row in the run page's events table,
each lost fact to the transcript row of the message that held it.

Event ids are the run's event sequence (0, 1, 2 ...) and message indexes the transcript's
rows (0, 1, 2 ...), so the page holding each is known without a query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import reverse

from replay_app.models import Run
from replay_app.runs.ordinals import compaction_ordinals
from replay_app.runs.pages.runpage import EVENTS_PER_PAGE
from sessions_app.views import MESSAGES_PER_PAGE


def with_links(
    run: Run, data: dict[str, Any], *, ordinals: Mapping[int, int] | None = None
) -> dict[str, Any]:
    """A copy of ``data`` (an ``inspect.retention`` analysis) whose events carry
    ``event_url`` and ``compaction`` (its K, ``runs.ordinals``) and whose lost facts carry
    ``message_url``; the cached analysis is left
    as it is. (A 20,000-message run loses ~20,000 facts: two ``reverse`` calls here, not
    one per fact.)"""
    run_url = reverse("run-detail", args=[run.pk])
    transcript_url = reverse("transcript-detail", args=[run.transcript_id])
    events = []
    if ordinals is None:  # given by a page that has them stored (the compare page)
        ordinals = compaction_ordinals(run) if data.get("events") else {}
    for event in data.get("events", ()):
        lost = [
            {
                **fact,
                "message_url": f"{transcript_url}?page={fact['message'] // MESSAGES_PER_PAGE + 1}"
                f"#m{fact['message']}",
            }
            for fact in event.get("lost", ())
        ]
        seq = event["event"]
        event_href = f"{run_url}?page={seq // EVENTS_PER_PAGE + 1}#event-{seq}"
        events.append(
            {**event, "event_url": event_href, "compaction": ordinals.get(seq), "lost": lost}
        )
    return {**data, "events": events}
