"""A whole-file JSON document read one array item at a time (``ijson``'s C parser).

``json.loads`` of a 59 MiB chat array holds every message as Python objects at once, and
the importer then builds its own messages beside them (+726 MiB for that file). Formats
whose document is a big array of messages or conversations take the items one at a time
from ``array_items`` instead, and convert each as it comes.

The result must be the whole-file reader's, value for value, so a file is streamed only
when nothing in it is read differently there: it is checked first, in constant memory
(valid UTF-8, valid JSON, no duplicate key, no lone surrogate escape, no number too long
for Python, no NaN/Infinity: these the whole-file reader notes or locates in its own
words). Anything else gets ``None``, and the format parses the file whole as before.
"""

from __future__ import annotations

import codecs
import io
import re
import sys
from collections.abc import Iterator
from typing import Any

import ijson  # type: ignore[import-untyped]

_CHECK_CHUNK = 1024 * 1024
_LONG_DIGITS = re.compile(rb"\d{%d,}" % (sys.get_int_max_str_digits() + 1))
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def array_items(data: bytes, prefix: str = "item") -> Iterator[Any] | None:
    """The items at ``prefix`` (``"item"``: of the top-level array), one at a time, or None
    when the document is no array or must be read whole (module docstring)."""
    if not data.lstrip().startswith(b"[") or not plain_json(data):
        return None
    items: Iterator[Any] = ijson.items(io.BytesIO(data), prefix, use_float=True)
    return items


def plain_json(data: bytes) -> bool:
    """Whether ``data`` is one valid JSON document that ``json.loads`` and ijson read to the
    same values (the module docstring's list), checked without building any value."""
    if _LONG_DIGITS.search(data) or _SURROGATE_ESCAPE.search(data):
        return False
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(data), _CHECK_CHUNK):
            decoder.decode(data[start : start + _CHECK_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    keys: list[set[str]] = []
    try:
        for event, value in ijson.basic_parse(io.BytesIO(data), use_float=True):
            if event == "start_map":
                keys.append(set())
            elif event == "end_map":
                keys.pop()
            elif event == "map_key":
                if value in keys[-1]:
                    return False
                keys[-1].add(value)
            elif event == "number" and isinstance(value, float) and value != value:
                return False
    except (ijson.JSONError, ijson.IncompleteJSONError, ValueError, OverflowError):
        return False
    return True
