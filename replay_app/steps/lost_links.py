"""Links for "what was lost": each compaction to its row in the run page's events table,
each lost fact to the transcript row of the message that held it.

Event ids are the run's event sequence (0, 1, 2 ...) and message indexes the transcript's
rows (0, 1, 2 ...), so the page holding each is known without a query.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from replay_app.models import Run
from replay_app.runs.pages.runpage import EVENTS_PER_PAGE
from sessions_app.views import MESSAGES_PER_PAGE


def event_url(run_pk: int, seq: int) -> str:
    page = seq // EVENTS_PER_PAGE + 1
    return f"{reverse('run-detail', args=[run_pk])}?page={page}#event-{seq}"


def message_url(transcript_pk: int, index: int) -> str:
    page = index // MESSAGES_PER_PAGE + 1
    return f"{reverse('transcript-detail', args=[transcript_pk])}?page={page}#m{index}"


def with_links(run: Run, data: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``data`` (an ``inspect.retention`` analysis) whose events carry
    ``event_url`` and whose lost facts carry ``message_url``; the cached analysis is left
    as it is."""
    events = []
    for event in data.get("events", ()):
        lost = [
            {**fact, "message_url": message_url(run.transcript_id, fact["message"])}
            for fact in event.get("lost", ())
        ]
        events.append({**event, "event_url": event_url(run.pk, event["event"]), "lost": lost})
    return {**data, "events": events}
