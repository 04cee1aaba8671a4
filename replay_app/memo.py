"""Memoised derived values of finished runs (curves, fate logs, retention, ledgers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxlab.engine.lru import BoundedLRU
from replay_app.models import Run, RunStatus

CACHE_ENTRIES = 256  # derived values of finished runs (curves, fate logs, retention)


def _cache_key(run: Run, name: str) -> str | None:
    """Finished runs never change: cache their derived data (key includes finish time)."""
    if run.status != RunStatus.DONE or run.finished_at is None:
        return None
    return f"{name}:{run.pk}:{run.finished_at.timestamp()}"


# A small in-process LRU of immutable derived values. Not Django's cache: its backends
# pickle every value on get, which costs more than some of the pages' budgets (a fate log of
# 100K changes unpickles in ~90 ms).
MEMO: BoundedLRU[Any] = BoundedLRU(CACHE_ENTRIES)


def cached(run: Run, name: str, build: Any) -> Any:
    """``build()``, memoised while the run stays finished."""
    key = _cache_key(run, name)
    if key is None:
        return build()
    value = MEMO.get(key)
    if value is None:
        value = build()
        MEMO.set(key, value)
    return value


def cached_many(runs: Sequence[Run], name: str, build: Any) -> Any:
    """``build()`` over several runs, memoised while all of them stay finished."""
    keys = [_cache_key(run, name) for run in runs]
    if any(k is None for k in keys):
        return build()
    key = "|".join(k for k in keys if k)
    value = MEMO.get(key)
    if value is None:
        value = build()
        MEMO.set(key, value)
    return value
