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
import pkgutil
import re
from types import ModuleType
from typing import Any

from ..model import ImportWarning, ParsedFile, TranscriptError

SNIFF_BYTES = 64 * 1024


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
    if not data.strip():
        raise TranscriptError("the file is empty", file=name, expected="a transcript")
    head = data[:SNIFF_BYTES]
    if b"\x00" in head[:8192]:
        # Checked before sniffing so a binary file is named as such, not as "unrecognised".
        raise TranscriptError("this looks like a binary file", file=name, expected="UTF-8 text")
    scores = sorted(((m.sniff(head, name), fmt) for fmt, m in IMPORTERS.items()), reverse=True)
    best, fmt = scores[0]
    if best <= 0:
        raise TranscriptError(
            "could not recognise the format",
            file=name,
            expected="one of " + ", ".join(FORMATS),
        )
    return fmt


def parse(data: bytes, *, name: str = "", format: str | None = None) -> ParsedFile:
    """Parse one file's bytes, detecting the format unless one is forced."""
    if format is not None and format not in IMPORTERS:
        raise TranscriptError(
            f"unknown format {format!r}", file=name, expected="one of " + ", ".join(FORMATS)
        )
    fmt = format or detect(data, name)
    try:
        parsed: ParsedFile = IMPORTERS[fmt].parse(data, name=name)
    except TranscriptError as exc:
        raise exc if exc.file else exc.with_file(name) from None
    except RecursionError:
        raise TranscriptError("the data is nested too deeply", file=name) from None
    if _SURROGATE_ESCAPE.search(data):
        parsed = _replace_lone_surrogates(parsed)
    return parsed


# JSON may spell an unpaired UTF-16 surrogate ("\ud800"): valid JSON, but a Python string
# holding one cannot be encoded as UTF-8, so databases, tokenizers and pages would choke on it.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_lone_surrogates(parsed: ParsedFile) -> ParsedFile:
    """Swap unpaired surrogates for U+FFFD (the kept original bytes still hold them)."""
    from .. import codec

    replaced = 0

    def clean(value: Any) -> Any:
        nonlocal replaced
        if isinstance(value, str):
            fixed, n = _LONE_SURROGATE.subn("\ufffd", value)
            replaced += n
            return fixed
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    document = clean(codec.parsed_file_to_dict(parsed))
    if not replaced:
        return parsed
    fixed = codec.parsed_file_from_dict(document)
    warning = ImportWarning(f"{replaced} unpaired UTF-16 surrogate(s) shown as U+FFFD")
    return ParsedFile(fixed.format, fixed.conversations, (*fixed.warnings, warning))
