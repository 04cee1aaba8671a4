"""The reference counts an import stores with a transcript (``stored_counts``), read back by
``reference.ReferenceTokens(conversation, stored, tables)`` in the worker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.model import BlockKind, Message
from .cl100k import MEDIA_TOKENS, PER_MESSAGE_OVERHEAD, block_text, reference_counter
from .reference import TABLE_MIN, _checksum, counted_in_pieces


def stored_counts(messages: Sequence[Message]) -> tuple[list[int], list[list[list[Any]] | None]]:
    """What an import stores per message (``ReferenceTokens(..., stored, tables)`` reads it
    back): its count (as ``ReferenceTokens.per_message``) and, for each block of at least
    ``TABLE_MIN`` characters, ``[block index, crc32, count, safe points, counts up to
    each]`` (None when it has none): a copy of that text is then counted from its running
    counts. One pass: each distinct text tokenized once, the long ones in pieces."""
    counts: dict[str, int] = {}
    pieces: dict[str, tuple[list[int], list[int]]] = {}
    short: list[str] = []
    for message in messages:
        for block in message.blocks:
            if block.kind is BlockKind.MEDIA:
                continue
            text = block_text(block)
            if not text or text in counts:
                continue
            if len(text) >= TABLE_MIN:
                counts[text], bounds, cums = counted_in_pieces(text)
                pieces[text] = (bounds, cums)
            else:
                counts[text] = -1
                short.append(text)
    for text, n in zip(short, reference_counter().count_distinct(short), strict=True):
        counts[text] = n
    totals: list[int] = []
    tables: list[list[list[Any]] | None] = []
    for message in messages:
        total = PER_MESSAGE_OVERHEAD
        entries: list[list[Any]] = []
        for b, block in enumerate(message.blocks):
            if block.kind is BlockKind.MEDIA:
                total += MEDIA_TOKENS
                continue
            text = block_text(block)
            if not text:
                continue
            total += counts[text]
            table = pieces.get(text)
            if table is not None and table[0]:
                entries.append([b, _checksum(text), counts[text], table[0], table[1]])
        totals.append(total)
        tables.append(entries or None)
    return totals, tables
