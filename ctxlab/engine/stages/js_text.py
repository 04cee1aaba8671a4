"""Text lengths as JavaScript sees them, for estimators ported from TypeScript agents.

OpenCode's ``Token.estimate`` and Claude Code's ``roughTokenCountEstimation`` are the same
rule, ``Math.round(text.length / 4)``: ``length`` counts UTF-16 code units (a character
above U+FFFF is 2) and ``Math.round`` rounds halves up.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def utf16_length(text: str) -> int:
    """JavaScript's ``string.length``: UTF-16 code units (a character above U+FFFF is 2)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def quarter_length_tokens(text: str) -> int:
    """``Math.round(text.length / 4)``, halves up (never negative: lengths are not)."""
    return (utf16_length(text) + CHARS_PER_TOKEN // 2) // CHARS_PER_TOKEN
