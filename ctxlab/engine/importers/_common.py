"""Shared parsing helpers: every error names the line or byte offset."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..model import ImportWarning, TranscriptError

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSONL record larger than this is refused, not parsed


def decode_text(data: bytes, name: str = "") -> str:
    """UTF-8 (with or without BOM) or a clear error at the first bad byte."""
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TranscriptError("this looks like a binary file", file=name, expected="UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TranscriptError(
            f"invalid UTF-8 byte 0x{data[exc.start]:02x}",
            file=name,
            line=line,
            offset=exc.start,
            expected="UTF-8 text",
        ) from None


def load_json(data: bytes, name: str = "") -> Any:
    """Parse a whole-file JSON document."""
    text = decode_text(data, name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"invalid JSON: {exc.msg}",
            file=name,
            line=exc.lineno,
            offset=len(text[: exc.pos].encode()),
            expected="a JSON document",
        ) from None


def iter_jsonl(data: bytes, name: str = "") -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file."""
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES:
            raise TranscriptError(
                f"line is {len(raw):,} bytes long",
                file=name,
                line=number,
                offset=start,
                expected=f"JSONL records under {MAX_LINE_BYTES:,} bytes",
            )
        try:
            text = decode_text(raw, name)
        except TranscriptError as exc:
            # decode_text sees one line: make its line/offset file-relative.
            raise TranscriptError(
                exc.reason,
                file=name,
                line=number,
                offset=start + (exc.offset or 0),
                expected=exc.expected,
            ) from None
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"invalid JSON: {exc.msg}",
                file=name,
                line=number,
                offset=start + len(text[: exc.pos].encode()),
                expected="one JSON object per line",
            ) from None


def expect(condition: bool, what: str, *, name: str = "", line: int | None = None) -> None:
    """Raise a located ``TranscriptError`` unless ``condition`` holds."""
    if not condition:
        raise TranscriptError(f"unexpected structure: {what}", file=name, line=line)


class WarningTally:
    """Counts repeated warnings (same message) and remembers where each first happened."""

    def __init__(self) -> None:
        self._seen: dict[str, list[Any]] = {}  # message -> [first where, count]

    def add(self, message: str, where: str = "") -> None:
        entry = self._seen.get(message)
        if entry is None:
            self._seen[message] = [where, 1]
        else:
            entry[1] += 1

    def __len__(self) -> int:
        return len(self._seen)

    def freeze(self) -> tuple[ImportWarning, ...]:
        return tuple(
            ImportWarning(message, where=str(where), count=int(count))
            for message, (where, count) in self._seen.items()
        )


def short_title(text: str, limit: int = 80) -> str:
    """One line of human text for a title: whitespace collapsed, cut at ``limit``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def require_content(data: bytes, name: str, expected: str) -> None:
    """Refuse empty or whitespace-only files with a clear error (not a JSON parse error)."""
    if not data.strip():
        raise TranscriptError("the file is empty", file=name, offset=0, expected=expected)
