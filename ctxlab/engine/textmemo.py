"""Memos of a function of a text, bounded by the characters of the texts they hold.

``functools.lru_cache(maxsize=8192)`` bounds entries, not memory: keyed by the texts
themselves, the offline summariser's line scans and the fact scans of summary material
each held 8,192 texts at the end of a long replay (up to ~20 MiB apiece on the realistic
20,000-message transcript: texts rendered for one summary and dead but for the cache).
Their hits come at short distances (an item read again within one summary, or by the next
summaries over the same messages): per strategy on that transcript, 2 million characters
keep 94-100% of the hits of the functions that have many (the first readable line, the
facts of message heads), and the rest hit a few hundred times in thousands of calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, cast

V = TypeVar("V")
SCAN_MEMO_CHARS = 2_000_000  # each memo of the summariser's and fact scans (see above)
_MISSING = object()


class TextMemo(Generic[V]):
    """``function(text, *rest)`` memoised by its arguments; the least recently used go
    once the texts held pass ``max_chars`` characters (a longer text is never held).
    Thread-safe; ``function`` must not raise for the memo to stay consistent (a raised
    call is simply not memoised)."""

    __slots__ = ("__wrapped__", "_chars", "_items", "_lock", "_max")

    def __init__(self, function: Callable[..., V], max_chars: int) -> None:
        self.__wrapped__ = function
        self._max = max_chars
        self._items: dict[str | tuple[Any, ...], V] = {}  # least recently used first
        self._chars = 0
        self._lock = threading.Lock()

    def __call__(self, text: str, *rest: Hashable) -> V:
        key: str | tuple[Any, ...] = (text, *rest) if rest else text
        items = self._items
        with self._lock:
            found = items.pop(key, _MISSING)
            if found is not _MISSING:
                items[key] = cast(V, found)  # now the most recent
                return cast(V, found)
        value = self.__wrapped__(text, *rest)
        size = len(text)
        if size > self._max:
            return value
        with self._lock:
            if key not in items:
                self._chars += size
                while self._chars > self._max:
                    old = next(iter(items))
                    del items[old]
                    self._chars -= len(old[0] if isinstance(old, tuple) else old)
            items[key] = value
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)


def text_memo(max_chars: int) -> Callable[[Callable[..., V]], TextMemo[V]]:
    """Decorator: ``TextMemo(function, max_chars)``."""
    return lambda function: TextMemo(function, max_chars)
