"""The facts of a transcript's messages, extracted once and kept (``MessageFacts``).

The import extracts them batch by batch as it writes the messages (``store_chunk``);
``transcript_facts`` reads them back for a run's analysis. A transcript imported before
(or under another extractor version) has its facts extracted on first need and stored
then, so only that first analysis pays. Every reader gets the same answer as
``extract.message_facts`` over ``Transcript.to_conversation()``'s messages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import DatabaseError, transaction

from ctxlab.engine.core.model import Message as EngineMessage
from ctxlab.engine.evaluate import extract, factstore

from .models import MessageFacts, Transcript

log = logging.getLogger(__name__)

Fact = tuple[str, str]

CHUNK_MESSAGES = 2000  # messages per stored row when facts are extracted after the import


def store_chunk(transcript_id: int, start: int, messages: Sequence[EngineMessage]) -> None:
    """Extract and store the facts of ``messages`` (the transcript's from ``start``)."""
    facts = factstore.extract_facts(messages)
    MessageFacts.objects.create(
        transcript_id=transcript_id,
        start=start,
        count=len(facts),
        extractor=extract.VERSION,
        data=factstore.pack_facts(facts),
    )


def stored_facts(transcript_id: int, message_count: int) -> list[frozenset[Fact]] | None:
    """The stored facts of every message, or None when they are missing, partial or of
    another extractor version."""
    rows = (
        MessageFacts.objects.filter(transcript_id=transcript_id, extractor=extract.VERSION)
        .order_by("start")
        .values_list("start", "count", "data")
    )
    facts: list[frozenset[Fact]] = []
    for start, count, data in rows:
        if start != len(facts):
            return None
        try:
            chunk = factstore.unpack_facts(bytes(data))
        except ValueError:  # unreadable (written by another format): extracted again
            log.warning("transcript %s: unreadable stored facts at %s", transcript_id, start)
            return None
        if len(chunk) != count:
            return None
        facts.extend(chunk)
    return facts if len(facts) == message_count else None


def transcript_facts(
    transcript: Transcript, messages: Sequence[EngineMessage]
) -> list[frozenset[Fact]]:
    """The facts of each of ``messages`` (``transcript.to_conversation().messages``):
    stored, or extracted now and stored for the next reader."""
    found = stored_facts(transcript.pk, len(messages))
    if found is not None:
        return found
    facts = factstore.extract_facts(messages)
    try:
        with transaction.atomic():
            MessageFacts.objects.filter(transcript_id=transcript.pk).delete()
            MessageFacts.objects.bulk_create(
                [
                    MessageFacts(
                        transcript_id=transcript.pk,
                        start=start,
                        count=len(facts[start : start + CHUNK_MESSAGES]),
                        extractor=extract.VERSION,
                        data=factstore.pack_facts(facts[start : start + CHUNK_MESSAGES]),
                    )
                    for start in range(0, len(facts), CHUNK_MESSAGES)
                ]
            )
    except DatabaseError:  # derived data: the next reader extracts them again
        log.exception("transcript %s: could not store its messages' facts", transcript.pk)
    return facts
