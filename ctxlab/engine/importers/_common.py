"""Shared parsing helpers: every error names the line or byte offset."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..core.model import ImportWarning, TranscriptError

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


# Notes: warnings raised below the importers' own collectors (JSON reading, shared
# helpers). ``importers.parse`` collects them around each file and adds them to its warnings.
_NOTES: ContextVar[WarningTally | None] = ContextVar("import_notes", default=None)


def note(code: str, message: str, where: str = "", count: int = 1) -> None:
    """Record a counted warning (``code`` from ``import_warnings.CODES``) for this file."""
    tally = _NOTES.get()
    if tally is not None:
        tally.add(message, where, code=code, count=count)


@contextmanager
def collecting_notes() -> Iterator[WarningTally]:
    with notes_into(WarningTally()) as tally:
        yield tally


@contextmanager
def notes_into(tally: WarningTally) -> Iterator[WarningTally]:
    """Notes go to ``tally`` inside the block (a streamed file enters it once per step)."""
    token = _NOTES.set(tally)
    try:
        yield tally
    finally:
        _NOTES.reset(token)


# Found while decoding one value, reported by ``loads`` with its place. Per thread: the
# web process imports in worker threads. (One shared decoder: building one per line, as
# ``json.loads`` with hooks does, cost more than the hooks.)
_FOUND = threading.local()


def _found() -> list[tuple[str, str, int]]:
    found: list[tuple[str, str, int]] | None = getattr(_FOUND, "items", None)
    if found is None:
        found = _FOUND.items = []
    return found


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        repeated = [k for k, n in Counter(k for k, _ in pairs).items() if n > 1]
        keys = ", ".join(repr(k)[:40] for k in repeated[:3])
        _found().append(("duplicate-key", keys, len(pairs) - len(obj)))
    return obj


def _constant(name: str) -> None:
    _found().append(("non-finite-number", name, 1))
    return None


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)
_FOUND_MESSAGES = {
    "duplicate-key": "duplicate JSON key; the last value was used",
    "non-finite-number": "NaN/Infinity is not a JSON number; read as missing",
}


_LONG_DIGITS = re.compile(rb"\d{%d,}" % (sys.get_int_max_str_digits() + 1))


def loads(text: str, *, name: str, where: str, line: int | None, start: int, raw: bytes) -> Any:
    """``json.loads`` that notes duplicate keys and NaN/Infinity, and turns a number too
    long to read into a located error (``start``: byte offset of ``raw`` in the file)."""
    found = _found()
    found.clear()
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # Python refuses to convert integers of > 4,300 digits
        long = _LONG_DIGITS.search(raw)
        if long is None:
            raise TranscriptError(f"unreadable value: {exc}", file=name, line=line) from None
        digits = long.end() - long.start()
        if line is None:
            line = raw.count(b"\n", 0, long.start()) + 1
        raise TranscriptError(
            f"a number {digits:,} digits long is too long to read",
            file=name,
            line=line,
            offset=start + long.start(),
            expected=f"numbers of at most {sys.get_int_max_str_digits():,} digits",
        ) from None
    for code, what, count in found:
        note(code, _FOUND_MESSAGES[code], f"{where}: {what}", count=count)
    found.clear()
    return value


def _json_reason(exc: json.JSONDecodeError) -> str:
    """The decoder's words without their dangling "at" ("Unterminated string starting
    at"): the position it named is given as the line and byte offset."""
    return exc.msg.removesuffix(" starting at").removesuffix(" at")


def load_json(data: bytes, name: str = "") -> Any:
    """Parse a whole-file JSON document."""
    text = decode_text(data, name)
    try:
        return loads(text, name=name, where="document", line=None, start=0, raw=data)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"invalid JSON: {_json_reason(exc)}",
            file=name,
            line=exc.lineno,
            offset=len(text[: exc.pos].encode("utf-8", "surrogatepass")),
            expected="a JSON document",
        ) from None


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, line)`` one at a time, as ``data.split(b"\\n")`` would give them: a
    million-line file split at once holds a million more bytes objects (~90 MB)."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        if end < 0:
            yield start, data[start:]
            return
        yield start, data[start:end]
        start = end + 1


def iter_jsonl(data: bytes, name: str = "") -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file.

    A last line with no newline after it that does not read (a session still being
    written, cut mid-record) is left out with a ``cut-off-last-line`` note naming it; every
    complete line before it is read. Any other unreadable line (or a file of that one
    line) is an error."""
    read = False
    for number, (start, raw) in enumerate(_lines(data), start=1):
        if not raw.strip():
            continue
        if read and start + len(raw) == len(data):  # the last line, no newline closes it
            try:
                value = _read_line(name, number, start, raw)
            except TranscriptError as exc:
                if exc.expected not in ("one JSON object per line", "UTF-8 text"):
                    raise
                note(
                    "cut-off-last-line",
                    f"the last line ({len(raw):,} bytes, no newline) is cut off: left out",
                    f"line {number}: {exc.reason}",
                )
                return
            yield number, value
            return
        yield number, _read_line(name, number, start, raw)
        read = True


def _read_line(name: str, number: int, start: int, raw: bytes) -> Any:
    """Line ``number`` (at byte ``start``) as a JSON value; errors placed in the file."""
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
        value = loads(text, name=name, where=f"line {number}", line=number, start=start, raw=raw)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"invalid JSON: {_json_reason(exc)}",
            file=name,
            line=number,
            offset=start + len(text[: exc.pos].encode("utf-8", "surrogatepass")),
            expected="one JSON object per line",
        ) from None
    return value


def expect(condition: bool, what: str, *, name: str = "", line: int | None = None) -> None:
    """Raise a located ``TranscriptError`` unless ``condition`` holds."""
    if not condition:
        raise TranscriptError(f"unexpected structure: {what}", file=name, line=line)


class WarningTally:
    """Counts repeated warnings (same message) and remembers where each first happened."""

    def __init__(self) -> None:
        self._seen: dict[str, list[Any]] = {}  # message -> [first where, count, code]

    def add(self, message: str, where: str = "", *, code: str = "", count: int = 1) -> None:
        """``code``: a key of ``import_warnings.CODES``; ``count``: how many it stands for."""
        entry = self._seen.get(message)
        if entry is None:
            self._seen[message] = [where, count, code]
        else:
            entry[1] += count

    def __len__(self) -> int:
        return len(self._seen)

    def freeze(self) -> tuple[ImportWarning, ...]:
        return tuple(
            ImportWarning(message, where=str(where), count=int(count), code=str(code))
            for message, (where, count, code) in self._seen.items()
        )


def short_title(text: str, limit: int = 80) -> str:
    """One line of human text for a title: whitespace collapsed, cut at ``limit``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def require_content(data: bytes, name: str, expected: str) -> None:
    """Refuse empty or whitespace-only files with a clear error (not a JSON parse error)."""
    if not data.strip():
        raise TranscriptError("the file is empty", file=name, offset=0, expected=expected)


# What ``iter_jsonl`` expects of a line it refuses for its content, not its size: such a
# line can be skipped (a session torn mid-write, two writes run together) and the rest read.
BAD_LINE_EXPECTED = frozenset({"one JSON object per line", "UTF-8 text"})


def iter_jsonl_lenient(
    data: bytes, name: str, warnings: Any, unreadable: list[TranscriptError] | None = None
) -> Iterator[tuple[int, Any]]:
    """``iter_jsonl``, except that one bad line does not refuse the file: JSON records
    written back to back on one line are each read (``unreadable-json-text`` warning naming
    the line), any other line that is not JSON is skipped with a located warning (its
    error appended to ``unreadable``), a cut-off last line is left out. ``warnings`` has
    ``add(message, where, code=...)``. From the first such line on the rest is read line
    by line (the fast path reads the whole file once)."""
    try:
        yield from iter_jsonl(data, name)
        return
    except TranscriptError as exc:
        if exc.line is None or exc.offset is None or exc.expected not in BAD_LINE_EXPECTED:
            raise
        start, number = data.rfind(b"\n", 0, exc.offset) + 1, exc.line
    # iter_jsonl yielded every line before ``number`` already
    while start <= len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        raw = data[start:end]
        if raw.strip():
            try:
                value = _read_line(name, number, start, raw)
            except TranscriptError as error:
                if error.expected not in BAD_LINE_EXPECTED:
                    raise
                values = run_together(raw)
                if values:
                    warnings.add(
                        f"{len(values)} JSON records run together on one line; each read",
                        f"line {number}",
                        code="unreadable-json-text",
                    )
                    for value in values:
                        yield number, value
                else:
                    if unreadable is not None:
                        unreadable.append(error)
                    if end == len(data):  # a session still being written
                        warnings.add(
                            f"the last line ({len(raw):,} bytes, no newline) is cut off: left out",
                            f"line {number}: {error.reason}",
                            code="cut-off-last-line",
                        )
                    else:
                        warnings.add(
                            "line that is not valid JSON skipped",
                            f"line {number}: {error.reason}",
                            code="unreadable-json-text",
                        )
            else:
                yield number, value
        start, number = end + 1, number + 1


def run_together(raw: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a line holding several written back to back, else []."""
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return []
    decoder = json.JSONDecoder()
    values: list[dict[str, Any]] = []
    pos = 0
    while pos < len(text):
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return []
        if not isinstance(value, dict):
            return []
        values.append(value)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return values if len(values) > 1 else []
