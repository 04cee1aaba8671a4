"""The facts of a transcript's messages as bytes, to extract them once and keep them.

Fact extraction (``extract.message_facts``) is the costly part of the retention and
survival analysis (regular-expression scans of every message). The web app extracts the
facts of each message once, when the transcript is imported, and stores them with
``pack_facts``; every run over the transcript reads them back with ``unpack_facts``
instead of scanning the messages again. ``extract.VERSION`` goes with the stored bytes:
facts of another extractor version are extracted again.

Format: zlib-compressed compact JSON, one ``[codes, values]`` pair per message: its facts
sorted, ``codes`` a string with one digit per fact (its kind's index in
``extract.KINDS``), ``values`` their values. About 5% of the messages' text.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence

from ..core.model import Message
from .extract import KINDS, LocalMemo, message_facts

Fact = tuple[str, str]

_KIND_CODE = {kind: str(i) for i, kind in enumerate(KINDS)}  # one character each
_KIND_OF_CODE = {code: kind for kind, code in _KIND_CODE.items()}
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def extract_facts(messages: Iterable[Message]) -> list[frozenset[Fact]]:
    """``extract.message_facts`` of each message, in order. Repeated texts are scanned once
    (a memo for this call only: the process-wide memos stay as they were)."""
    local: LocalMemo = {}
    return [message_facts(m, local=local) for m in messages]


def pack_facts(facts: Sequence[frozenset[Fact]]) -> bytes:
    """The fact sets of consecutive messages as bytes (``unpack_facts`` reads them)."""
    rows = []
    for found in facts:
        ordered = sorted(found)
        rows.append(["".join(_KIND_CODE[k] for k, _ in ordered), [v for _, v in ordered]])
    # surrogatepass: a lone surrogate from an untrusted text round-trips instead of failing
    return zlib.compress(_ENCODER.encode(rows).encode("utf-8", "surrogatepass"), 1)


def unpack_facts(data: bytes) -> list[frozenset[Fact]]:
    """The fact sets ``pack_facts`` wrote, one per message (ValueError for other bytes)."""
    try:
        rows = json.loads(zlib.decompress(data).decode("utf-8", "surrogatepass"))
        kind = _KIND_OF_CODE.__getitem__
        return [frozenset(zip(map(kind, codes), values, strict=True)) for codes, values in rows]
    except (zlib.error, TypeError, KeyError) as exc:
        raise ValueError(f"not packed facts: {exc}") from exc
