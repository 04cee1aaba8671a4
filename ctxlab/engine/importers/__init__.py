"""Transcript importers: bytes on disk -> ``ParsedFile`` (frozen engine values).

One module per format, each defining::

    FORMAT = "claude-code"            # the name users pass as --format
    LABEL = "Claude Code session"     # shown in the UI
    def sniff(head: bytes, name: str) -> int: ...   # 0..100 confidence from the first 64 KiB
    def parse(data: bytes, *, name: str) -> ParsedFile: ...

``parse`` raises only ``TranscriptError`` (naming the line or byte offset and what was
expected). Modules are discovered, so adding a format is adding a module.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from types import ModuleType
from typing import Any, TypeVar

from ..core.model import Conversation, ImportWarning, ParsedFile, TranscriptError
from . import _source
from ._common import WarningTally, collecting_notes, notes_into
from ._kit import is_junk_title, title_from
from ._source import Source, read_source
from ._stream import ConversationStream, StreamedFile, TextCleaner, finished_stream, from_parsed

SNIFF_BYTES = 64 * 1024
# Recorded on each upload; raised when importers' output changes, so uploads read by an
# older one can be found and re-parsed. 2: Claude Code main-thread rule and alternates,
# one title rule, coded warnings, BOM/UTF-16 handling. 3: Claude Code 2.1.x one main
# thread (parallel calls, boundaries, sub-agent progress), microcompactions, continued
# files; pi sessions; Codex replacement histories and window chains; claude-trace /compact
# joined; lenient JSONL (bad lines skipped with a warning, a cut last line left out).
# 4: OpenCode exports, GitHub Copilot CLI event logs and OpenHands V1 events (read before as
# other formats or refused); Codex multi-agent messages; one title rule skipping preambles.
# 5: Cline / Roo Code tasks (a lone api_conversation_history.json was read as OpenAI chat);
# mini-swe-agent 2.x trajectories (read as OpenAI chat), their exit message left out.
# 6: a lone Cline 3.x history named Cline (not Roo Code); an OpenHands V1 eval line's
# instruction as its first user message when its history lacks it.
# 7: a Claude Code partial compaction (2.1.2xx preservedSegment) in the main thread (its
# boundary and summary were an alternate branch), its kept segment as detail first_kept.
VERSION = "7"


def _discover() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found[module.FORMAT] = module
    return dict(sorted(found.items()))


IMPORTERS: dict[str, ModuleType] = _discover()
FORMATS: tuple[str, ...] = tuple(IMPORTERS)


def detect(data: bytes, name: str = "") -> str:
    """The most likely format of ``data``; raises ``TranscriptError`` when none fits."""
    return _detect(read_source(data, name).data, name)


# What ``detect_head`` reads of a file: enough for ``SNIFF_BYTES`` once UTF-16 is decoded.
HEAD_BYTES = 4 * SNIFF_BYTES


def detect_head(head: bytes, name: str = "", *, whole: bool) -> str | None:
    """``detect`` from a file's first ``HEAD_BYTES`` (``whole``: that is all of it), so a
    file that is no transcript is refused before the rest is read. The same answer or
    error as ``detect`` on the whole file; None when the head cannot tell (blank so far)."""
    if not whole and not head.strip():
        return None
    if not whole:
        head = _whole_units(head)
    return _detect(read_source(head, name).data, name)


def _whole_units(head: bytes) -> bytes:
    """``head`` without a UTF-16 code unit or surrogate pair cut at its end."""
    encoding, _ = _source._utf16(head)
    if not encoding:
        return head
    head = head[: len(head) - len(head) % 2]
    last = head[-2:] if encoding == "utf-16-le" else head[-2:][::-1]
    if len(last) == 2 and 0xD8 <= last[1] <= 0xDB:  # a high surrogate without its pair
        head = head[:-2]
    return head


def _detect(data: bytes, name: str) -> str:
    # (``data[:SNIFF_BYTES]`` first: a big file is not copied to find it is not blank)
    if not data[:SNIFF_BYTES].strip() and not data.strip():
        raise TranscriptError("the file is empty", file=name, expected="a transcript")
    head = data[:SNIFF_BYTES]
    if b"\x00" in head[:8192]:
        # Checked before sniffing so a binary file is named as such, not as "unrecognised".
        raise TranscriptError(
            "this looks like a binary file (a NUL byte)",
            file=name,
            offset=head.index(b"\x00"),
            expected="UTF-8 text",
        )
    scores = sorted(((m.sniff(head, name), fmt) for fmt, m in IMPORTERS.items()), reverse=True)
    best, fmt = scores[0]
    if best <= 0:
        raise _unrecognised(head, name)
    return fmt


def _json_scalar(line: bytes) -> str:
    """What JSON value other than an object or array ``line`` is ("" if none)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return ""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, str):
        return "string"
    return "number" if isinstance(value, int | float) else ""


_KEY = re.compile(rb'"((?:[^"\\\n]|\\.){1,40})"\s*:')


def declined() -> tuple[tuple[str, str], ...]:
    """Each format, with what its importer looks for in a file's start (its own
    ``_EXPECTED`` words, else its label's markers): said when none of them took a file."""
    return tuple(
        (fmt, str(getattr(module, "_EXPECTED", "")) or f"the markers of a {module.LABEL}")
        for fmt, module in IMPORTERS.items()
    )


def _unrecognised(head: bytes, name: str) -> TranscriptError:
    """Why no format fits, said of what the file's start is: JSON of the wrong kind, a
    JSON object or array without any format's fields (its first keys named), or text."""
    text = head.lstrip()
    at = len(head) - len(text)
    line = head.count(b"\n", 0, at) + 1
    first = text[:1]
    formats = "one of " + ", ".join(FORMATS)
    kind = _json_scalar(text.split(b"\n", 1)[0])
    if kind:
        return TranscriptError(
            f"the file starts with a JSON {kind}, not an object or array: no transcript "
            "format is a single JSON value of that kind",
            file=name, line=line, offset=at,
            expected="a JSON object or array (or one JSON object per line) of " + formats,
            declined=declined(),
        )  # fmt: skip
    if first in (b"{", b"["):
        keys = list(dict.fromkeys(k.decode("utf-8", "replace") for k in _KEY.findall(text)))
        shown = ", ".join(repr(k) for k in keys[:6]) or "none"
        kind = "object" if first == b"{" else "array"
        return TranscriptError(
            f"a JSON {kind} with none of the fields a known transcript format has "
            f"(its first keys: {shown})",
            file=name, line=line, offset=at, expected=formats, declined=declined(),
        )  # fmt: skip
    start = text.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
    return TranscriptError(
        f"plain text in no known transcript format (it starts {start!r})",
        file=name, line=line, offset=at, expected=formats, declined=declined(),
    )  # fmt: skip


def _looks_like(exc: TranscriptError, fmt: str) -> TranscriptError:
    """``exc`` saying which format the file was read as (the parser's own error)."""
    if exc.looks_like:
        return exc
    return TranscriptError(
        exc.reason, file=exc.file, line=exc.line, offset=exc.offset, expected=exc.expected,
        looks_like=IMPORTERS[fmt].LABEL,
    )  # fmt: skip


def parse(data: bytes, *, name: str = "", format: str | None = None) -> ParsedFile:
    """Parse one file's bytes, detecting the format unless one is forced.

    Around the format's own parser: the bytes are named or decoded first (``_source``),
    warnings noted by the shared JSON reader are added, tool results are checked against
    their calls and text a database cannot store is made safe, each with a counted warning.
    """
    if format is not None and format not in IMPORTERS:
        raise TranscriptError(
            f"unknown format {format!r}", file=name, expected="one of " + ", ".join(FORMATS)
        )
    source = read_source(data, name)
    try:
        fmt = format or _detect(source.data, name)
    except TranscriptError as exc:
        raise source.locate(exc if exc.file else exc.with_file(name)) from None
    try:
        with collecting_notes() as notes:
            parsed: ParsedFile = IMPORTERS[fmt].parse(source.data, name=name)
    except TranscriptError as exc:
        raise _looks_like(source.locate(exc if exc.file else exc.with_file(name)), fmt) from None
    except RecursionError:
        raise TranscriptError(
            "the data is nested too deeply", file=name, looks_like=IMPORTERS[fmt].LABEL
        ) from None
    if not parsed.conversations:
        raise _nothing_read(parsed.warnings, name, fmt)
    extra = (*source.warnings, *notes.freeze(), *unknown_tool_results(parsed))
    conversations = tuple(_titled(c, name) for c in parsed.conversations)
    parsed = ParsedFile(parsed.format, conversations, (*parsed.warnings, *extra))
    if _SURROGATE_ESCAPE.search(source.data) or _NUL.search(source.data):
        parsed = _safe_text(parsed)
    return parsed


T = TypeVar("T")


def stream(data: bytes, *, name: str = "", format: str | None = None) -> StreamedFile:
    """``parse`` for a caller that stores messages as they come (``_stream`` says how).

    A format module with ``stream(data, *, name)`` is read incrementally when it can read
    this file so (a million-message chat JSONL); any other file is parsed whole. Errors are
    the same ``TranscriptError``s as ``parse`` raises, but may come while iterating.
    """
    if format is not None and format not in IMPORTERS:
        raise TranscriptError(
            f"unknown format {format!r}", file=name, expected="one of " + ", ".join(FORMATS)
        )
    source = read_source(data, name)
    try:
        fmt = format or _detect(source.data, name)
    except TranscriptError as exc:
        raise source.locate(exc if exc.file else exc.with_file(name)) from None
    opener = getattr(IMPORTERS[fmt], "stream", None)
    notes = WarningTally()
    guard = _guard(source, notes, name, fmt)
    streamed: StreamedFile | None = (
        guard(lambda: opener(source.data, name=name)) if opener is not None else None
    )
    if streamed is None:
        return from_parsed(parse(data, name=name, format=fmt))
    unsafe = _SURROGATE_ESCAPE.search(source.data) or _NUL.search(source.data)
    return _refusing_nothing_read(
        finished_stream(
            streamed,
            name=name,
            guard=guard,
            extra_warnings=lambda: (*source.warnings, *notes.freeze()),
            cleaner=TextCleaner(_UNSAFE, NUL_SHOWN_AS) if unsafe else None,
        ),
        name,
        fmt,
    )


def _nothing_read(warnings: tuple[ImportWarning, ...], name: str, fmt: str) -> TranscriptError:
    """A file of the format in which no conversation could be read (every line or record
    set aside): refused, saying where the first one was and why, not stored as empty."""
    first = warnings[0] if warnings else None
    why = f"; first: {first.where}: {first.message}" if first and first.where else ""
    return TranscriptError(
        f"no conversation could be read from the file{why}",
        file=name,
        looks_like=IMPORTERS[fmt].LABEL,
        expected="at least one conversation with a message",
    )


def _refusing_nothing_read(streamed: StreamedFile, name: str, fmt: str) -> StreamedFile:
    count = 0

    def conversations() -> Iterator[ConversationStream]:
        nonlocal count
        for conversation in streamed.conversations:
            count += 1
            yield conversation

    def finish() -> tuple[ImportWarning, ...]:
        warnings = streamed.finish()
        if not count:
            raise _nothing_read(warnings, name, fmt)
        return warnings

    return StreamedFile(streamed.format, conversations(), finish)


def _guard(
    source: Source, notes: WarningTally, name: str, fmt: str
) -> Callable[[Callable[[], T]], T]:
    """Runs one step of a format's streamed parser as ``parse`` runs the whole of it: notes
    from the shared JSON reader go to ``notes``, errors name the file, the original byte
    and the format."""

    def run(step: Callable[[], T]) -> T:
        try:
            with notes_into(notes):
                return step()
        except TranscriptError as exc:
            located = source.locate(exc if exc.file else exc.with_file(name))
            raise _looks_like(located, fmt) from None
        except RecursionError:
            raise TranscriptError(
                "the data is nested too deeply", file=name, looks_like=IMPORTERS[fmt].LABEL
            ) from None

    return run


def _titled(conversation: Conversation, name: str) -> Conversation:
    """One title rule for every format: a title that is a slash command, markup, caveat
    boilerplate or "(no content)" is replaced by the first real user request."""
    if not is_junk_title(conversation.title):
        return conversation
    fallback = conversation.id or name or "conversation"
    return replace(conversation, title=title_from(conversation.messages, fallback=fallback))


def unknown_tool_results(parsed: ParsedFile) -> tuple[ImportWarning, ...]:
    """Tool results whose id no tool call of their conversation carries (kept, unpaired)."""
    tally = WarningTally()
    for conversation in parsed.conversations:
        calls = {b.tool_id for m in conversation.messages for b in m.tool_uses}
        for message in conversation.messages:
            for block in message.tool_results:
                if block.tool_id and block.tool_id not in calls:
                    tally.add(
                        "tool result for a call id no tool call has",
                        f"{message.source}: {block.tool_id[:60]!r}",
                        code="tool-result-unknown-id",
                    )
    return tally.freeze()


# JSON may spell an unpaired UTF-16 surrogate ("\ud800"): valid JSON, but a Python string
# holding one cannot be encoded as UTF-8, so databases, tokenizers and pages would choke on it.
# NUL ("\u0000", or a raw NUL byte in a text format) is valid too, but PostgreSQL refuses it
# in text columns.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_NUL = re.compile(rb"\\u0000|\x00")
_UNSAFE = re.compile("[\ud800-\udfff\x00]")
NUL_SHOWN_AS = "\u2400"  # SYMBOL FOR NULL


def _safe_text(parsed: ParsedFile) -> ParsedFile:
    """Unpaired surrogates become U+FFFD and NULs U+2400 (the kept original bytes still
    hold them), each counted in a warning."""
    from ..core import codec

    counts = {"\x00": 0, "surrogate": 0}

    def swap(match: re.Match[str]) -> str:
        if match.group() == "\x00":
            counts["\x00"] += 1
            return NUL_SHOWN_AS
        counts["surrogate"] += 1
        return "\ufffd"

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return _UNSAFE.sub(swap, value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    document = codec.parsed_file_to_dict(parsed)
    # Counted in the messages only (a title repeats the first message's text).
    conversations = [
        {key: value for key, value in c.items() if key != "messages"}
        for c in document["conversations"]
    ]
    for conversation, plain in zip(document["conversations"], conversations, strict=True):
        messages = clean(conversation.get("messages", []))
        before = dict(counts)
        conversation.update(clean(plain), messages=messages)
        counts.update(before)
    document = {**document, "warnings": clean(document["warnings"])}
    if not any(counts.values()):
        return parsed
    fixed = codec.parsed_file_from_dict(document)
    warnings = list(fixed.warnings)
    if counts["surrogate"]:
        warnings.append(
            ImportWarning(
                "unpaired UTF-16 surrogate(s) shown as U+FFFD",
                count=counts["surrogate"],
                code="lone-surrogate",
            )
        )
    if counts["\x00"]:
        warnings.append(
            ImportWarning(
                f"NUL character(s) shown as {NUL_SHOWN_AS}",
                count=counts["\x00"],
                code="nul-character",
            )
        )
    return ParsedFile(fixed.format, fixed.conversations, tuple(warnings))
