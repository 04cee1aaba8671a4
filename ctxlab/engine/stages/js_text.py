"""Text lengths as JavaScript sees them, for estimators ported from TypeScript agents.

OpenCode's ``Token.estimate`` and Claude Code's ``roughTokenCountEstimation`` are the same
rule, ``Math.round(text.length / 4)``: ``length`` counts UTF-16 code units (a character
above U+FFFF is 2) and ``Math.round`` rounds halves up. ``js_json`` is ``JSON.stringify``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

CHARS_PER_TOKEN = 4


def utf16_length(text: str) -> int:
    """JavaScript's ``string.length``: UTF-16 code units (a character above U+FFFF is 2)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def quarter_length_tokens(text: str) -> int:
    """``Math.round(text.length / 4)``, halves up (never negative: lengths are not)."""
    return (utf16_length(text) + CHARS_PER_TOKEN // 2) // CHARS_PER_TOKEN


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, with the C encoder
    made once instead of at each call (half of a short value's cost). No circular check:
    the values come from parsed JSON."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    default = json.JSONEncoder().default  # raises the same TypeError for other types
    encode = make(None, default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    escape = json.encoder.encode_basestring

    def dumps(value: Any) -> str:
        if isinstance(value, str):
            return str(escape(value))
        return "".join(encode(value, 0))

    return dumps


js_json: Callable[[Any], str] = _compact_encoder()
js_json.__doc__ = """``JSON.stringify(value)`` (compact, non-ASCII kept)."""
