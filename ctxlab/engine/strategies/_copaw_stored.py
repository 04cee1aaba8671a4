"""CoPaw's Qwen2.5 counts of a transcript, computed once at import and stored per message.

CoPaw's replay starts with one exact Qwen2.5 pass over every block text and tool call
(``CoPaw.prepare`` -> ``QwenCounter.prime``): about as long as the tiktoken pass of the
reference counts, which are stored at import for the same reason. ``message_entries``
gives, per message, what ``prime`` keeps for each of its texts (``QwenCounter.stored_entry``:
its length, its count and, for a longer text, its count up to a few cut points);
``seed_stored_counts`` hands them back to the shared counter before a replay, so ``prime``
finds every text counted. Counts are identical either way (tests/engine/strategies/test_copaw_stored.py
replays seeded and unseeded). A message whose texts no longer match its entries (count or
length) is skipped and counted in the replay as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.model import BlockKind, Message
from ..tokens.qwen_tokens import MEMO_LIMIT, QwenCounter, qwen_counter
from ._copaw_format import CLIP

ENDS = (CLIP,)  # as ``CoPaw.prepare`` primes


def _walk(message: Message) -> list[tuple[str, str]]:
    """(head, text) of each string ``CoPaw.prepare`` primes for ``message``, in order: its
    block texts (``copaw._texts``: head "") then its tool calls (name, input)."""
    out: list[tuple[str, str]] = []
    calls: list[tuple[str, str]] = []
    for b in message.blocks:
        kind = b.kind
        if kind is BlockKind.TEXT or kind is BlockKind.THINKING:
            if b.text:
                out.append(("", b.text))
        elif kind is BlockKind.TOOL_RESULT:
            if b.parts:
                out.extend(("", p.text) for p in b.parts if p.text)
            elif b.text:
                out.append(("", b.text))
        elif kind is BlockKind.TOOL_USE:
            if b.tool_name or b.input_json:
                calls.append((b.tool_name, b.input_json))
        elif kind is BlockKind.MEDIA and b.text:
            out.append(("", b.text))
    return out + calls if calls else out


def message_entries(messages: Sequence[Message]) -> list[list[Any]] | None:
    """Per message, the stored entries of its texts (see the module docstring); None when
    no exact Qwen2.5 tokenizer loads (nothing worth storing: the replay's fallback is
    bytes // 4). A fresh counter per call: the caller's batch bounds the memory."""
    counter = QwenCounter()
    if not counter.exact:
        return None
    return [[counter.stored_entry(text, ENDS, head) for head, text in _walk(m)] for m in messages]


def seed_stored_counts(
    messages: Sequence[Message],
    stored: Sequence[list[Any] | None],
    counter: QwenCounter | None = None,
) -> int:
    """Seed the shared Qwen2.5 counter from the entries stored at import (one list per
    message, None for a message imported without them); the number of messages seeded."""
    counter = qwen_counter() if counter is None else counter
    if not counter.exact or len(stored) != len(messages):
        return 0
    if counter.memoised() + sum(len(e) for e in stored if e) > MEMO_LIMIT:
        counter.clear()
    seeded = covered = 0
    seed = counter.seed
    for message, entries in zip(messages, stored, strict=True):
        if entries is None:
            continue
        if not entries:
            covered += not _walk(message)  # (a message without texts has nothing to seed)
            continue
        pairs = _walk(message)
        if len(pairs) != len(entries):
            continue
        for (head, text), entry in zip(pairs, entries, strict=True):  # no generator per message
            if not seed(text, entry, head):
                break
        else:
            seeded += 1
    if seeded + covered == len(messages):
        counter.mark_seeded(messages)  # ``CoPaw.prepare`` has nothing left to prime
    return seeded


def wants_stored_counts(strategy: object) -> bool:
    """True for a CoPaw replay counting with the exact Qwen2.5 tokenizer (the only reader
    of the stored entries): the worker reads them for it alone."""
    from .copaw import CoPaw  # (copaw.py does not import this module)

    return isinstance(strategy, CoPaw) and strategy.counts_qwen
