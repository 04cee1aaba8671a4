"""Approximate deep memory size of a value, cheap enough to weigh every cache entry.

``sys.getsizeof`` counts a container's own slots, not what they point at; a cache bounded
by entries alone then holds 256 fate logs or curves of any size (the web process grew to
2.3 GB in a day). Long containers are sampled: the mean size of a spread of their items
times their length, so weighing a 100,000-change fate log costs microseconds, not a walk.
Shared objects are counted at each reference (an over-estimate, which is the safe side for
a memory bound).
"""

from __future__ import annotations

import sys
from typing import Any

SAMPLE = 32  # items looked at in a long container
MAX_DEPTH = 6  # beyond this, values count by their shallow size


def approx_size(value: Any, *, _depth: int = 0) -> int:
    """Bytes ``value`` keeps alive, approximately (see the module doc)."""
    size = sys.getsizeof(value)
    if isinstance(value, str | bytes | bytearray | int | float | bool | complex | type(None)):
        return size
    if _depth >= MAX_DEPTH:
        return size
    if isinstance(value, dict):
        items = list(_spread(value.items(), len(value)))
        each = sum(approx_size(k, _depth=_depth + 1) + approx_size(v, _depth=_depth + 1)
                   for k, v in items)  # fmt: skip
        return size + _scaled(each, len(items), len(value))
    if isinstance(value, tuple | list):
        step = max(1, len(value) // SAMPLE)
        picked = value[::step][:SAMPLE]  # a slice: no walk over a long sequence
        each = sum(approx_size(v, _depth=_depth + 1) for v in picked)
        return size + _scaled(each, len(picked), len(value))
    if isinstance(value, set | frozenset):
        items = list(_spread(value, len(value)))
        each = sum(approx_size(v, _depth=_depth + 1) for v in items)
        return size + _scaled(each, len(items), len(value))
    for name in _attribute_names(type(value)):
        attribute = getattr(value, name, None)
        if attribute is not None:
            size += approx_size(attribute, _depth=_depth + 1)
    inner = getattr(value, "__dict__", None)
    if isinstance(inner, dict):
        size += approx_size(inner, _depth=_depth + 1)
    return size


def _spread(items: Any, length: int) -> Any:
    """Up to ``SAMPLE`` items spread evenly over a container of ``length`` items."""
    if length <= SAMPLE:
        yield from items
        return
    step = length / SAMPLE
    wanted = {int(i * step) for i in range(SAMPLE)}
    for position, item in enumerate(items):
        if position in wanted:
            yield item


def _scaled(total: int, sampled: int, length: int) -> int:
    return total if sampled >= length or not sampled else total * length // sampled


def _attribute_names(cls: type) -> tuple[str, ...]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return tuple(n for n in names if n not in ("__dict__", "__weakref__"))
