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
from types import ModuleType

from ..model import ParsedFile, TranscriptError

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
        return parsed
    except TranscriptError as exc:
        raise exc if exc.file else exc.with_file(name) from None
    except RecursionError:
        raise TranscriptError("the data is nested too deeply", file=name) from None
