"""CoPaw's Qwen2.5 counts of a transcript, computed once at import and stored per message.

CoPaw counts every message with the exact Qwen2.5 tokenizer, block by block, when it joins
the history, and counts it again as its summariser formats it when it is compacted
(``<tool_result>name output=...</tool_result>`` ...). Both counts belong to the original
message, so the import computes them once (``message_entries``: one Qwen2.5 pass over its
texts, then the formatted count from those, ``_copaw_format.formatted_count``) and stores
them per message: ``{"m": count, "f": formatted count, "b": formatted UTF-8 bytes,
"k": size, "n": [[tool id, name], ...]}`` (the bytes size the summariser's input, whose
text the offline summariser never makes: ``stages.deferred_prompt``). ``seed_stored_counts`` hands them to the shared counter before a replay
(``QwenCounter.seed_messages``): an original message is then never tokenized, only a
modified one (tool-result compaction) and the summaries are. The formatted count depends
on the names a tool result borrows from the call it answers (``n``: as the import found
them, the calls seen so far); the replay uses it only when its own names are the same,
and counts the message otherwise. ``k`` (the message's size, ``_size``) refuses an entry
of another message. Transcripts imported before stored, per message, what
``QwenCounter.prime`` keeps for each of its texts (``QwenCounter.stored_entry``): those
are still seeded text by text.
Counts are identical either way (tests/engine/strategies/test_copaw_stored.py replays
seeded and unseeded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.model import BlockKind, Message
from ..stages import agentscope
from ..tokens.qwen_tokens import MEMO_LIMIT, QwenCounter, qwen_counter
from ._copaw_format import CLIP, StoredCounts, formatted_count, looked_up

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


def _size(message: Message) -> int:
    """A cheap fingerprint of the message an entry was stored for: its blocks and the
    length of their texts."""
    blocks = message.blocks
    size = len(blocks)
    for b in blocks:  # (a loop, not sum() of a generator: asked for every message)
        size += len(b.text)
    return size


def message_entries(
    messages: Sequence[Message], tool_names: dict[str, str] | None = None
) -> list[dict[str, Any]] | None:
    """Per message, its stored entry (see the module docstring); None when no exact
    Qwen2.5 tokenizer loads (nothing worth storing: the replay's fallback is bytes // 4).
    ``tool_names``: the calls of the messages before these (an import writes a transcript
    in batches), updated with these. A fresh counter per call: the caller's batch bounds
    the memory."""
    from .copaw import _texts, _tool_inputs  # (copaw.py does not import this module)

    counter = QwenCounter()
    if not counter.exact:
        return None
    counter.prime(_texts(tuple(messages)), ends=ENDS)  # one pass, as ``CoPaw.prepare``
    counter.prime_joined(_tool_inputs(tuple(messages)), ends=ENDS)
    names = {} if tool_names is None else tool_names
    out: list[dict[str, Any]] = []
    for m in messages:
        for b in m.blocks:  # as ``CoPaw.after_append``: the calls appended so far
            if b.kind is BlockKind.TOOL_USE:
                names[b.tool_id] = b.tool_name
        entry: dict[str, Any] = {
            "m": agentscope.message_tokens(m, counter.count, files_in_results=True),
            "f": formatted_count(counter, m, names),
            "b": agentscope.formatted_size(
                m, style="reme", include_thinking=False, tool_names=names
            ),
            "k": _size(m),
        }
        borrowed = looked_up(m, names)
        if borrowed:
            entry["n"] = borrowed
        out.append(entry)
    return out


def _message_value(message: Message, entry: dict[str, Any]) -> StoredCounts | None:
    count, formatted = entry.get("m"), entry.get("f")
    if type(count) is not int or type(formatted) is not int or entry.get("k") != _size(message):
        return None
    names = entry.get("n", _NO_NAMES)
    if names is _NO_NAMES:  # (most messages: no tool result borrowing a name)
        names = []
    elif not isinstance(names, list) or not all(isinstance(p, list) and len(p) == 2 for p in names):
        return None
    size = entry.get("b")  # (absent from the entries of an earlier import)
    return StoredCounts(count, formatted, names, size if type(size) is int else None)


_NO_NAMES: list[list[str]] = []  # (a marker: never handed out)


def seed_stored_counts(
    messages: Sequence[Message],
    stored: Sequence[dict[str, Any] | list[Any] | None],
    counter: QwenCounter | None = None,
) -> int:
    """Seed the shared Qwen2.5 counter from the entries stored at import (one per message,
    None for a message imported without them; a list: the texts' entries of a transcript
    imported before); the number of messages seeded."""
    counter = qwen_counter() if counter is None else counter
    if not counter.exact or len(stored) != len(messages):
        return 0
    older = sum(len(e) for e in stored if isinstance(e, list))
    if older and counter.memoised() + older > MEMO_LIMIT:
        counter.clear()
    values: list[StoredCounts | None] = [None] * len(messages)
    seeded = covered = fresh = 0
    seed = counter.seed
    for i, (message, entries) in enumerate(zip(messages, stored, strict=True)):
        if entries is None:
            continue
        if isinstance(entries, dict):
            value = _message_value(message, entries)
            if value is not None:
                values[i] = value
                fresh += 1
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
    if fresh:
        counter.seed_messages(messages, values)
    seeded += fresh
    if seeded + covered == len(messages):
        counter.mark_seeded(messages)  # ``CoPaw.prepare`` has nothing left to prime
    return seeded


def wants_stored_counts(strategy: object) -> bool:
    """True for a CoPaw replay counting with the exact Qwen2.5 tokenizer (the only reader
    of the stored entries): the worker reads them for it alone."""
    from .copaw import CoPaw  # (copaw.py does not import this module)

    return isinstance(strategy, CoPaw) and strategy.counts_qwen
