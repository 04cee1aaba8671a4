"""A small thread-safe least-recently-used map with string keys.

Bounded by the number of entries and, optionally, by the total length of the keys (when
the keys are the texts themselves, as in the fact-set memo, the keys are most of the
memory). Used by the engine's fact memo and the web app's memo of derived run data; the
embedded worker runs tasks in threads, hence the lock.
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
        self.chars = 0  # total length of the keys held
        self.lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def set(self, key: str, value: V) -> None:
        if self.max_chars is not None and len(key) > self.max_chars:
            return  # would evict everything else and still not fit
        with self.lock:
            if key not in self.items:
                self.chars += len(key)
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.max_entries or (
                self.max_chars is not None and self.chars > self.max_chars
            ):
                old, _ = self.items.popitem(last=False)
                self.chars -= len(old)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.chars = 0
