"""Byte-exact truncation routines and marker texts of the seed systems.

Pure ``str -> str`` functions; strategies and the composable stages call them.
"""

from __future__ import annotations

import re

QWENPAW_MARKER = "<<<TRUNCATED>>>"
REME_END_MARKER = "<<<END_TRUNCATED>>>"
_STARTS_AT = re.compile(r"starts at line (\d+)")
_COVERS = re.compile(r"covers the next \d+ bytes")
_START_LINE = re.compile(r"start_line=\d+ to read more")


def _cut_bytes(text: str, max_bytes: int) -> str:
    """The first ``max_bytes`` UTF-8 bytes, a split multibyte character dropped."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def qwenpaw_truncate_fresh(
    text: str, *, max_bytes: int, start_line: int, total_lines: int, path: str
) -> str:
    """QwenPaw ``_truncate_fresh``: cut at ``max_bytes`` and append the continuation
    notice; a single-line text comes back cut with no notice at all."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    cut = _cut_bytes(text, max_bytes)
    next_line = start_line + max(1, cut.count("\n"))
    if next_line <= total_lines:
        read_from = next_line
    elif start_line < total_lines:
        read_from = total_lines
    else:
        return cut
    return (
        cut
        + QWENPAW_MARKER
        + "\nThe output above was truncated."
        + f"\nThe full content is saved to the file and contains {total_lines} lines in total."
        + f"\nThis excerpt starts at line {start_line} and covers the next {max_bytes} bytes."
        + "\nIf the current content is not enough, call `read_file` with "
        + f"file_path={path or ''} start_line={read_from} to read more."
    )


def qwenpaw_retruncate(text: str, *, max_bytes: int) -> str:
    """QwenPaw ``_retruncate``: shrink an already-truncated text, rewriting the old
    notice's byte count and continuation line; unchanged within the 100-byte slack or
    when the old notice cannot be parsed."""
    original, _, notice = text.partition(QWENPAW_MARKER)
    raw = original.encode("utf-8")
    if len(raw) <= max_bytes + 100:
        return text
    start = _STARTS_AT.search(notice)
    if start is None or not _COVERS.search(notice):
        return text
    cut = raw[:max_bytes].decode("utf-8", errors="ignore")
    next_line = int(start.group(1)) + max(1, cut.count("\n"))
    notice = _COVERS.sub(f"covers the next {max_bytes} bytes", notice)
    notice = _START_LINE.sub(f"start_line={next_line} to read more", notice)
    return cut + QWENPAW_MARKER + notice


def reme_truncate_text(text: str, n: int) -> str:
    """ReMe 0.3.0.6b3 ``truncate_text``: head and tail halves in characters (an odd ``n``
    makes the omitted count off by one, as in the original)."""
    half = n // 2
    return (
        f"{text[:half]}\n\n{QWENPAW_MARKER} ({len(text) - n} characters omitted) "
        f"{REME_END_MARKER}\n\n{text[-half:]}"
    )


def middle_out_truncate(text: str, max_tokens: int = 2500) -> str:
    """BaseAgent ``middle_out_truncate``: bytes//4 tokens, head + tail bytes."""
    if not text:
        return text
    raw = text.encode("utf-8")
    if len(raw) // 4 <= max_tokens:
        return text
    keep = max_tokens * 4
    head_n = keep // 2
    head = raw[:head_n].decode("utf-8", errors="ignore")
    tail = raw[len(raw) - (keep - head_n) :].decode("utf-8", errors="ignore")
    removed = (len(raw) - keep) // 4
    return f"{head}\n\n...{removed} tokens truncated...\n\n{tail}"
