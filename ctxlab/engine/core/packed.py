"""Texts kept zlib-compressed while held, read back byte for byte: a summary call's input
parts (``summary_input``) and a replay's offloaded files (``PackedTexts``).

A text shorter than ``PACK_CHARS`` is kept as it is; a longer one as zlib-compressed UTF-8
(``surrogatepass``: a lone surrogate from a transcript's JSON round-trips), about 3x smaller
than its UTF-8 and up to 12x smaller than a ``str`` holding one emoji (4 bytes a character).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, MutableMapping

PACK_CHARS = 4_096  # below this a part is kept as given
_LEVEL = 1  # ~100 MB/s here; higher levels gain little on prose and tool output


def pack(text: str) -> str | bytes:
    if len(text) < PACK_CHARS:
        return text
    return zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)


def unpack(part: str | bytes) -> str:
    if isinstance(part, str):
        return part
    return zlib.decompress(part).decode("utf-8", "surrogatepass")


class PackedTexts(MutableMapping[str, str]):
    """Path -> text, each text of ``PACK_CHARS`` or more kept zlib-compressed: a replay's
    offloaded files (``ReplayResult.offloads``). One can hold a whole history (deepagents'
    history file: every summarised message rendered, 30 M characters at 20,000 messages,
    which as text was twice the conversation's memory); a reader unpacks one at a time."""

    __slots__ = ("_packed",)

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        self._packed: dict[str, str | bytes] = {k: pack(v) for k, v in items}

    def __getitem__(self, path: str) -> str:
        return unpack(self._packed[path])

    def __setitem__(self, path: str, text: str) -> None:
        self._packed[path] = pack(text)

    def keep(self, path: str, text: str) -> None:
        """Hold ``text`` as it is: a text something else keeps alive anyway (an original
        message's tool output, which its conversation holds) costs no memory here, and
        packing it cost QwenPaw's replay ~0.1 s CPU at 20,000 messages (1,551 outputs)."""
        self._packed[path] = text

    def __delitem__(self, path: str) -> None:
        del self._packed[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __repr__(self) -> str:
        return f"PackedTexts({list(self._packed)!r})"
