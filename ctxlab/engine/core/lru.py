"""A small thread-safe least-recently-used map with string keys.

Bounded by the number of entries and, optionally, by the total length of the keys (when
the keys are the texts themselves, as in the fact-set memo, the keys are most of the
memory). Used by the engine's fact memo and the web app's memo of derived run data; the
embedded worker runs tasks in threads, hence the lock.

Kept rather than ``cachetools.LRUCache`` (judged again for the library swaps): that bounds
one quantity, weighed from the *value* (``getsizeof(value)``), and is not thread-safe on its
own; the memos here need two bounds at once (entries and the total weight of the keys or an
explicit per-entry weight) under a lock, which would mean wrapping every value and keeping
the entry count beside it: more code than this ``OrderedDict``, and one more dependency for
the framework-free engine.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedLRU(Generic[V]):
    def __init__(self, max_entries: int, max_chars: int | None = None) -> None:
        self.max_entries, self.max_chars = max_entries, max_chars
        self.items: OrderedDict[str, V] = OrderedDict()
        self.weights: dict[str, int] = {}  # only entries whose weight is not len(key)
        self.chars = 0  # total weight held (by default the length of the keys)
        self.lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def set(self, key: str, value: V, *, weight: int | None = None) -> None:
        """``weight`` (default ``len(key)``) counts against ``max_chars``: a memo keyed by
        a hash of a text weighs the entry by the text's length."""
        size = len(key) if weight is None else weight
        if self.max_chars is not None and size > self.max_chars:
            return  # would evict everything else and still not fit
        with self.lock:
            if key not in self.items:
                self.chars += size
                if weight is not None:
                    self.weights[key] = weight
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.max_entries or (
                self.max_chars is not None and self.chars > self.max_chars
            ):
                old, _ = self.items.popitem(last=False)
                self.chars -= self.weights.pop(old, len(old))

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.weights.clear()
            self.chars = 0
