"""Import benchmark: the two 4 MB corpus files through ``importers.parse``, and each format
with a real sample in ``SCALED`` (the sample grown to about 4 MB), as MB/s and peak memory.

Target: each imports in under 10 s with a peak under 500 MB. Run by
``python manage.py bench``; not a timed test.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
CORPUS = DATA / "corpus"
FILES = (
    ("aider history (4 MB, 1,133 sessions)", "aider/aider-repo-chat-history.md"),
    ("tau-bench airline (4 MB, 200 conversations)", "openai-chat/taubench-gpt-4o-airline.json"),
)
SCALED_BYTES = 4_000_000


def _opencode_scaled(data: bytes) -> bytes:
    """An OpenCode export whose messages are the sample's, repeated to ``SCALED_BYTES``."""
    doc = json.loads(data)
    messages = doc["messages"]
    copies = max(1, SCALED_BYTES // len(data) + 1)
    grown = {**doc, "messages": messages * copies}
    return (json.dumps(grown, indent=2, ensure_ascii=False) + "\n").encode()


# format -> (its real sample under tests/data, how to grow it to about 4 MB)
SCALED = {
    "opencode": ("opencode/curious-sailor-compaction.json", _opencode_scaled),
}
MAX_SECONDS = 10.0
MAX_PEAK_MB = 500.0


def _max_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024  # bytes vs KiB


def measure(label: str, path: Path, data: bytes | None = None) -> dict[str, Any]:
    data = path.read_bytes() if data is None else data
    gc.collect()
    rss_before = _max_rss_mb()
    # Wall time untraced (tracemalloc slows allocation-heavy code several times over),
    # then a second, traced run for the peak of Python allocations.
    start = time.perf_counter()
    try:
        parsed = importers.parse(data, name=path.name)
        error = ""
    except TranscriptError as exc:
        parsed, error = None, str(exc)
    seconds = time.perf_counter() - start
    rss_delta = max(_max_rss_mb() - rss_before, 0.0)
    del parsed
    gc.collect()
    tracemalloc.start()
    try:
        parsed = importers.parse(data, name=path.name)
    except TranscriptError:
        parsed = None
    peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    conversations = len(parsed.conversations) if parsed else 0
    messages = sum(len(c.messages) for c in parsed.conversations) if parsed else 0
    return {
        "name": label,
        "file": path.name,
        "bytes": len(data),
        "seconds": round(seconds, 3),
        "mb_per_s": round(len(data) / 1e6 / seconds, 1) if seconds else 0.0,
        "peak_mb": round(peak_mb, 1),
        # max RSS only grows: a delta of 0 means the process had already been this big
        "rss_delta_mb": round(rss_delta, 1),
        "conversations": conversations,
        "messages": messages,
        "error": error,
        "ok": not error and seconds < MAX_SECONDS and peak_mb < MAX_PEAK_MB,
    }


def run(out: TextIO) -> list[dict[str, Any]]:
    """Import each big file once, print one line per file, return the rows."""
    rows = []
    for label, relative in FILES:
        out.write(f"import {label} ... ")
        out.flush()
        row = measure(label, CORPUS / relative)
        rows.append(row)
        verdict = "ok" if row["ok"] else "FAIL"
        out.write(
            f"{row['seconds']:.2f} s, peak {row['peak_mb']:.0f} MB (tracemalloc), "
            f"max RSS +{row['rss_delta_mb']:.0f} MB, {row['conversations']:,} conversations, "
            f"{row['messages']:,} messages: {verdict}"
            f"{' - ' + row['error'] if row['error'] else ''}\n"
        )
    for fmt, (relative, grow) in SCALED.items():
        path = DATA / relative
        data = grow(path.read_bytes())
        label = f"{fmt} ({len(data) / 1e6:.1f} MB from {path.name})"
        out.write(f"import {label} ... ")
        out.flush()
        row = {"format": fmt, **measure(label, path, data)}
        rows.append(row)
        verdict = "ok" if row["ok"] else "FAIL"
        out.write(
            f"{row['mb_per_s']:.1f} MB/s, peak {row['peak_mb']:.0f} MB (tracemalloc), "
            f"{row['messages']:,} messages: {verdict}"
            f"{' - ' + row['error'] if row['error'] else ''}\n"
        )
        rows.append(
            {"line": f"import_{fmt.replace('-', '_')}_mb_per_s={row['mb_per_s']} "
                     f"peak_mb={row['peak_mb']}"}
        )  # fmt: skip
    return rows
