"""Import benchmark: the two 4 MB corpus files through ``importers.parse``, each format
with a sample in ``SCALED`` (the sample grown to about 4 MB: OpenCode, Copilot CLI, OpenHands
V1, Cline, pi), and an Entire checkpoints branch read from a git repository with every
session on it parsed, as MB/s and peak memory.

Target: each imports in under 10 s with a peak under 500 MB. Run by
``python manage.py bench``; not a timed test.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine import importers, sources
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


def _renamed(value: Any, copy: int) -> Any:
    """``value`` with every id (a key ending in id / Id / ids) made the copy's own, so the
    copies of one session are new events and calls, not repeats of the first ones."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key.endswith(("id", "Id", "ID")) and isinstance(item, str) and item:
                out[key] = f"{item}-{copy}"
            elif key.endswith(("ids", "Ids")) and isinstance(item, list):
                out[key] = [f"{i}-{copy}" if isinstance(i, str) else i for i in item]
            else:
                out[key] = _renamed(item, copy)
        return out
    if isinstance(value, list):
        return [_renamed(item, copy) for item in value]
    return value


def _jsonl_scaled(data: bytes) -> bytes:
    """An event log (one JSON object per line) whose events after the first (the session's
    start) are repeated, each copy with its own ids, to ``SCALED_BYTES``."""
    lines = data.splitlines()
    head, body = lines[:1], [json.loads(line) for line in lines[1:] if line.strip()]
    out = list(head)
    copy = 0
    size = len(lines[0]) + 1
    while size < SCALED_BYTES:
        for event in body:
            line = json.dumps(_renamed(event, copy) if copy else event, ensure_ascii=False)
            out.append(line.encode())
            size += len(out[-1]) + 1
        copy += 1
    return b"\n".join(out) + b"\n"


def _cline_scaled(data: bytes, folder: Path) -> bytes:
    """The Cline task bundle (``sources/cline.py``) of ``folder`` whose messages are the
    sample's, repeated to ``SCALED_BYTES``, each copy's tool calls with their own ids."""
    from ctxlab.engine.sources import cline

    doc = json.loads(cline.bundle(folder))
    history = doc["api_conversation_history"]
    copies = max(1, SCALED_BYTES // len(json.dumps(history)) + 1)
    grown = [m for k in range(copies) for m in (_renamed(history, k) if k else history)]
    return json.dumps({**doc, "api_conversation_history": grown}).encode()


def _pi_scaled(data: bytes) -> bytes:
    """A pi session carried on past its end: its entries again (own ids), the first of each
    copy the child of the previous copy's last, so the session is one branch."""
    lines = data.splitlines()
    head, body = lines[0], [json.loads(line) for line in lines[1:] if line.strip()]
    out, size, copy, last = [head, *lines[1:]], len(data), 1, body[-1].get("id")
    while size < SCALED_BYTES:
        for n, entry in enumerate(body):
            entry = _renamed(entry, copy)
            if n == 0:
                entry["parentId"] = last
            line = json.dumps(entry, ensure_ascii=False).encode()
            out.append(line)
            size += len(line) + 1
        last = json.loads(out[-1]).get("id")
        copy += 1
    return b"\n".join(out) + b"\n"


_CLINE_TASK = "cline/saoudrizwan.claude-dev/tasks/1769053680585"
# format -> (its real sample under tests/data, how to grow it to about 4 MB)
SCALED: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "opencode": ("opencode/curious-sailor-compaction.json", _opencode_scaled),
    "copilot-cli": ("copilot-cli/subagent-demo.events.jsonl", _jsonl_scaled),
    "openhands-v1": ("openhands-v1/pr-review.events.jsonl", _jsonl_scaled),
    # a task folder, read as the bundle sources/cline.py makes of it (synthetic, real shape)
    "cline": (
        f"{_CLINE_TASK}/api_conversation_history.json",
        lambda _: _cline_scaled(_, DATA / _CLINE_TASK),
    ),
    "pi-session": ("pi/before-compaction.jsonl", _pi_scaled),
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


# Entire: real Claude Code sessions on a checkpoints branch of a git repository
ENTIRE_SESSIONS = (
    "claude-code/ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "claude-code/sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl",
    "claude-code/agentcmd-full-session-four.jsonl",
    "claude-code/agentcmd-full-session-five.jsonl",
)
ENTIRE_CHECKPOINTS = 3  # each session's checkpoints: the transcript so far at each commit
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def entire_repo(repo: Path) -> int:
    """A git repository whose ``entire/checkpoints/v1`` branch holds the real sessions of
    ``ENTIRE_SESSIONS`` (copies until their transcripts make ``SCALED_BYTES``), each over
    ``ENTIRE_CHECKPOINTS`` checkpoints as newer Entire writes them (the whole transcript so
    far at each). Returns the bytes of the rebuilt transcripts."""
    repo.mkdir(parents=True)
    total, n = 0, 0
    while total < SCALED_BYTES:
        for relative in ENTIRE_SESSIONS:
            data = (CORPUS / relative).read_bytes()
            lines = data.splitlines(keepends=True)
            session = f"session-{n:04d}"
            for k in range(1, ENTIRE_CHECKPOINTS + 1):
                checkpoint = f"{n:02x}"[-2:] + f"{n * 10 + k:010x}"
                folder = repo / checkpoint[:2] / checkpoint[2:] / "0"
                folder.mkdir(parents=True)
                part = b"".join(lines[: len(lines) * k // ENTIRE_CHECKPOINTS])
                (folder / "full.jsonl").write_bytes(part)
                meta = {"checkpoint_id": checkpoint, "session_id": session,
                        "agent": "Claude Code", "created_at": f"2026-01-01T{k:02d}:00:{n % 60:02d}Z"}  # fmt: skip
                (folder / "metadata.json").write_text(json.dumps(meta))
            total += len(data)
            n += 1
    env = {**os.environ, **_GIT_ENV}
    for args in (["init", "-q", "-b", "entire/checkpoints/v1"], ["add", "."],
                 ["commit", "-q", "-m", "Checkpoints"]):  # fmt: skip
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    return total


def _entire_import(repo: Path) -> tuple[int, int]:
    """Every session of the branch read (``sources``) and parsed: (sessions, messages)."""
    place = sources.find(repo)
    messages = 0
    for item in place.sessions:
        loaded = item.load()
        parsed = importers.parse(loaded.data, name=item.name, format=loaded.format)
        messages += sum(len(c.messages) for c in parsed.conversations)
    return len(place.sessions), messages


def measure_entire(work: Path) -> dict[str, Any]:
    """The Entire branch read where it lives (a git repository: ``git ls-tree`` and one
    ``git cat-file --batch``) and every session on it parsed, as MB/s of rebuilt
    transcript and the peak of Python allocations."""
    repo = work / "repo"
    size = entire_repo(repo)
    gc.collect()
    start = time.perf_counter()
    error = ""
    try:
        found, messages = _entire_import(repo)
    except (TranscriptError, OSError) as exc:
        found, messages, error = 0, 0, str(exc)
    seconds = time.perf_counter() - start
    gc.collect()
    tracemalloc.start()
    try:
        _entire_import(repo)
    except (TranscriptError, OSError):
        pass
    peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return {
        "format": "entire",
        "name": f"entire ({size / 1e6:.1f} MB of Claude Code sessions, {found} sessions over "
        f"{found * ENTIRE_CHECKPOINTS} checkpoints, git repository)",
        "bytes": size,
        "seconds": round(seconds, 3),
        "mb_per_s": round(size / 1e6 / seconds, 1) if seconds else 0.0,
        "peak_mb": round(peak_mb, 1),
        "conversations": found,
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
    out.write("import entire (a checkpoints branch in a git repository) ... ")
    out.flush()
    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-entire-") as work:
        row = measure_entire(Path(work))
    rows.append(row)
    out.write(
        f"{row['mb_per_s']:.1f} MB/s, peak {row['peak_mb']:.0f} MB (tracemalloc), "
        f"{row['conversations']} sessions, {row['messages']:,} messages: "
        f"{'ok' if row['ok'] else 'FAIL'}{' - ' + row['error'] if row['error'] else ''}\n"
    )
    rows.append({"line": f"import_entire_mb_per_s={row['mb_per_s']} peak_mb={row['peak_mb']}"})
    return rows
