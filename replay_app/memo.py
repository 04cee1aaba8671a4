"""Memoised derived values of finished runs (curves, fate logs, retention, ledgers)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings

from ctxlab.engine.lru import BoundedLRU
from ctxlab.engine.sizeof import approx_size
from replay_app.models import Run, RunStatus

T = TypeVar("T")

CACHE_ENTRIES = 256  # derived values of finished runs (curves, fate logs, retention)
# ... and at most this many MB of them: a 20,000-message run's fate log, curve and chart
# weigh tens of MB each, so 256 entries alone let the process grow past 2 GB.
DEFAULT_MEMO_MB = 256


def memo_bytes() -> int:
    return int(getattr(settings, "CTXLAB_MEMO_MB", DEFAULT_MEMO_MB)) * 1024 * 1024


def _cache_key(run: Run, name: str) -> str | None:
    """Finished runs never change: cache their derived data (key includes finish time)."""
    if run.status != RunStatus.DONE or run.finished_at is None:
        return None
    return f"{name}:{run.pk}:{run.finished_at.timestamp()}"


# A small in-process LRU of immutable derived values. Not Django's cache: its backends
# pickle every value on get, which costs more than some of the pages' budgets (a fate log of
# 100K changes unpickles in ~90 ms).
MEMO: BoundedLRU[Any] = BoundedLRU(CACHE_ENTRIES, memo_bytes())


def _remember(key: str, value: Any) -> None:
    """Keep ``value`` weighed by its approximate size (in bytes) against the budget."""
    MEMO.max_chars = memo_bytes()  # settings may change (tests, a reload)
    MEMO.set(key, value, weight=approx_size(value))


def cached(run: Run, name: str, build: Callable[[], T]) -> T:
    """``build()``, memoised while the run stays finished."""
    key = _cache_key(run, name)
    if key is None:
        return build()
    value: T | None = MEMO.get(key)
    if value is None:
        value = build()
        _remember(key, value)
    return value


def cached_many(runs: Sequence[Run], name: str, build: Callable[[], T]) -> T:
    """``build()`` over several runs, memoised while all of them stay finished."""
    keys = [_cache_key(run, name) for run in runs]
    if any(k is None for k in keys):
        return build()
    key = "|".join(k for k in keys if k)
    value: T | None = MEMO.get(key)
    if value is None:
        value = build()
        _remember(key, value)
    return value
