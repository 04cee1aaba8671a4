"""Memoised derived values of finished runs (curves, fate logs, retention, ledgers, the
HTML of their page sections).

Two layers: a byte-capped LRU in this process, and (in served processes only, see
``enable_disk``) files shared by the server's processes that outlive a restart, so the
first view of a page after a restart, or in another page process, reads what an earlier
view built instead of building it again. Keys name the run by id, creation and finish
time, so a retried run or a fresh database never meets an old entry; the directory is
per code version (a changed template or module starts empty).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.conf import settings

from ctxlab.engine.core.lru import BoundedLRU
from ctxlab.engine.core.sizeof import approx_size
from replay_app.models import Run, RunStatus

T = TypeVar("T")

CACHE_ENTRIES = 256  # derived values of finished runs (curves, fate logs, retention)
# ... and at most this many MB of them: a 20,000-message run's fate log, curve and chart
# weigh tens of MB each, so 256 entries alone let the process grow past 2 GB.
DEFAULT_MEMO_MB = 256
DEFAULT_DISK_MB = 1024  # the shared files (enable_disk), oldest removed past this

log = logging.getLogger(__name__)


def memo_bytes() -> int:
    return int(getattr(settings, "CTXLAB_MEMO_MB", DEFAULT_MEMO_MB)) * 1024 * 1024


def _cache_key(run: Run, name: str) -> str | None:
    """Finished runs never change: cache their derived data (key includes finish time)."""
    finished = run.finished_at
    if run.status != RunStatus.DONE or finished is None:
        return None
    created = getattr(run, "created_at", None)  # with the id: this database's run
    return f"{name}:{run.pk}:{_times(run, created, finished)}"


def _times(run: Run, created: Any, finished: Any) -> str:
    """``created:finished`` as timestamps, written once per run instance (a view asks
    ~25 keys of the same five runs; each float's repr cost ~1-4 µs). Kept beside the two
    values it was written from: an instance given another time writes it again."""
    kept = run.__dict__.get("_memo_times")
    if kept is not None and kept[0] is created and kept[1] is finished:
        return str(kept[2])
    born = created.timestamp() if created is not None else ""
    text = f"{born}:{finished.timestamp()}"
    run.__dict__["_memo_times"] = (created, finished, text)
    return text


def keeps(run: Run) -> bool:
    """Whether values derived from ``run`` are memoised (it is finished)."""
    return _cache_key(run, "") is not None


# A small in-process LRU of immutable derived values. Not Django's cache: its backends
# pickle every value on get, which costs more than some of the pages' budgets (a fate log of
# 100K changes unpickles in ~90 ms).
MEMO: BoundedLRU[Any] = BoundedLRU(CACHE_ENTRIES, memo_bytes())


FREEZE_BYTES = 1024 * 1024  # a value this large is frozen out of the collector's sight
_FREEZE = False


def freeze_large_values() -> None:
    """Served processes: a large value kept here (a ledger, fate log, retention) is moved
    out of the garbage collector's sight once kept (``page_server.freeze_heap``); every
    later full collection walked its containers again (~50 ms for five runs' sections,
    with the interpreter lock held). Evicted values are freed by their reference counts."""
    global _FREEZE
    _FREEZE = True


def _remember(key: str, value: Any, weight: int) -> None:
    """Keep ``value`` weighed by its approximate size (in bytes) against the budget."""
    MEMO.max_chars = memo_bytes()  # settings may change (tests, a reload)
    MEMO.set(key, value, weight=weight)
    if _FREEZE and weight >= FREEZE_BYTES:
        from ctxlab.serving.page_server import freeze_heap

        freeze_heap()


def _lookup(key: str, build: Callable[[], T]) -> T:
    value: T | None = MEMO.get(key)
    if value is None:
        # the weight travels with the file: weighing a fate log again cost ~10 ms
        value, weight = DISK.get(key) if DISK is not None else (None, 0)
        if value is None:
            value = build()
            weight = approx_size(value)
            if DISK is not None:
                DISK.set(key, value, weight)
        _remember(key, value, weight)
    return value


def query_key(
    query: Mapping[str, Any], *, reads: frozenset[str], scrubs: frozenset[str]
) -> str | None:
    """The part of a page's query string its memo key names: the parameters the page
    reads, sorted. None (render it, keep nothing) when the query scrubs to a step
    (``scrubs``: one page per step of a 20,000-step run would fill this memo and its disk
    files) or carries a parameter the page does not read (its links copy every parameter
    along, so each new value would be one more entry)."""
    if not reads.issuperset(query) or not scrubs.isdisjoint(query):
        return None
    getlist = getattr(query, "getlist", None)
    pairs = [(k, v) for k in sorted(query) for v in (getlist(k) if getlist else [query[k]])]
    return urlencode(pairs)


def cached(run: Run, name: str, build: Callable[[], T]) -> T:
    """``build()``, memoised while the run stays finished."""
    key = _cache_key(run, name)
    if key is None:
        return build()
    return _lookup(key, build)


def cached_many(runs: Sequence[Run], name: str, build: Callable[[], T]) -> T:
    """``build()`` over several runs, memoised while all of them stay finished."""
    keys = [_cache_key(run, name) for run in runs]
    if any(k is None for k in keys):
        return build()
    return _lookup("|".join(k for k in keys if k), build)


# --- the shared files ----------------------------------------------------------------------


class DiskMemo:
    """Pickled values in ``directory``, one file per key, the oldest removed past
    ``max_bytes``. Written to a temporary file and renamed: a reader never sees half."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self._written = 0
        self._lock = threading.Lock()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _path(self, key: str) -> Path:
        return self.directory / (hashlib.sha256(key.encode()).hexdigest() + ".pickle")

    def get(self, key: str) -> tuple[Any, int]:
        """(value, its in-memory weight), or (None, 0)."""
        try:
            with self._path(key).open("rb") as handle:
                stored_key, value, weight = pickle.load(handle)  # noqa: S301 (our 0700 directory)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError):
            return None, 0
        return (value, int(weight)) if stored_key == key else (None, 0)

    def set(self, key: str, value: Any, weight: int) -> None:
        try:
            data = pickle.dumps((key, value, weight), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            log.debug("memo %s: not picklable, kept in memory only", key.split(":")[0])
            return
        if len(data) > self.max_bytes // 8:
            return
        try:
            fd, temp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, self._path(key))
        except OSError:  # a full disk costs the shortcut, not the page
            log.warning("memo: could not write to %s", self.directory, exc_info=True)
            return
        with self._lock:
            self._written += len(data)
            if self._written < self.max_bytes // 16:
                return
            self._written = 0
        self.trim()

    def trim(self) -> None:
        """Remove the least recently written files until the rest fit."""
        try:
            files = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.directory.iterdir()]
        except OSError:
            return
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size


DISK: DiskMemo | None = None


CODE_DIRS = ("ctxlab", "replay_app", "sessions_app", "suites_app", "judge_app", "templates")


def code_version() -> str:
    """A digest of the project's Python modules and templates (names, sizes, times)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in CODE_DIRS:
        for path in sorted((root / name).rglob("*")):
            if path.suffix in (".py", ".html"):
                stat = path.stat()
                digest.update(
                    f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode()
                )
    return digest.hexdigest()[:16]


def enable_disk() -> None:
    """Share memoised values through files under ``CTXLAB_MEMO_DIR`` (``manage.py serve``
    and its page processes call this; tests and commands keep memory only). Directories
    of other code versions are removed."""
    global DISK
    if DISK is not None:
        return
    size_mb = int(getattr(settings, "CTXLAB_MEMO_DISK_MB", DEFAULT_DISK_MB))
    if size_mb <= 0:
        return
    base = Path(getattr(settings, "CTXLAB_MEMO_DIR", None) or settings.DATA_DIR / "memo")
    version = code_version()
    if base.is_dir():
        for old in base.iterdir():
            if old.name != version:
                shutil.rmtree(old, ignore_errors=True)
    DISK = DiskMemo(base / version, size_mb * 1024 * 1024)
