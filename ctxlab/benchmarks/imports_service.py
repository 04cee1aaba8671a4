"""Import service benchmark: the whole stored path, ``sessions_app.services``.

Parse, secret masking, reference token counts, codec and the database writes, in a
throwaway test database (as the pages section): the two 4 MB corpus files through
``upload_import`` (target: < 10 s and < 500 MB peak each), the 20,000-message
bench conversation through ``conversation_import``, and ``Transcript.to_conversation`` of
it (first decode, then the per-process cache). Each timing is an untraced run; the peak is
a second, tracemalloc-traced run of the same work (the upload is deleted in between so the
second run is not a duplicate). Result lines: ``import_service_aider_s=…``,
``import_service_taubench_s=…``, ``import_service_20k_s=…``, ``import_service_ok=…``.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
FILES = (
    ("aider", "aider history (4 MB)", "aider/aider-repo-chat-history.md"),
    ("taubench", "tau-bench airline (4 MB)", "openai-chat/taubench-gpt-4o-airline.json"),
)
MESSAGES = 20_000
MAX_SECONDS = 10.0
MAX_PEAK_MB = 500.0


def _timed(work: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def _peak_mb(work: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _row(
    name: str, seconds: float, peak_mb: float, *, target: bool, **extra: Any
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "seconds": round(seconds, 3),
        "peak_mb": round(peak_mb, 1),
        **extra,
    }
    if target:
        row["ok"] = seconds < MAX_SECONDS and peak_mb < MAX_PEAK_MB
    return row


def _write(out: TextIO, row: dict[str, Any]) -> None:
    verdict = "" if "ok" not in row else ": ok" if row["ok"] else ": FAIL"
    out.write(
        f"  {row['name']}: {row['seconds']:.2f} s, peak {row['peak_mb']:.0f} MB (tracemalloc)"
        f"{verdict}\n"
    )
    out.flush()


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    from ctxlab.engine import synth
    from sessions_app import services
    from sessions_app.models import Transcript, Upload

    user = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    rows: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []

    def again(work: Callable[[], Any]) -> float:
        Upload.objects.filter(owner=user).delete()  # else the traced run is a duplicate
        return _peak_mb(work)

    for key, label, relative in FILES:
        data = (CORPUS / relative).read_bytes()

        def work(data: bytes = data, relative: str = relative) -> Any:
            outcome = services.upload_import(owner=user, name=Path(relative).name, data=data)
            if not outcome.ok or outcome.duplicate:
                raise RuntimeError(f"{relative}: {outcome.error or 'duplicate'}")
            return outcome

        outcome, seconds = _timed(work)
        assert outcome.upload is not None
        counts = {"bytes": len(data), "messages": outcome.upload.message_count}
        row = _row(f"upload_import {label}", seconds, again(work), target=True, **counts)
        rows.append(row)
        _write(out, row)
        lines.append({"line": f"import_service_{key}_s={row['seconds']}"})

    conversation = synth.bench_conversation(CORPUS, messages=MESSAGES)

    def store() -> Any:
        outcome = services.conversation_import(
            owner=user, name="bench-20k.json", conversations=(conversation,), source_format="x"
        )
        if not outcome.ok or outcome.duplicate:
            raise RuntimeError(f"bench conversation: {outcome.error or 'duplicate'}")
        return outcome

    outcome, seconds = _timed(store)
    row = _row(f"conversation_import {MESSAGES:,} messages", seconds, again(store), target=False)
    rows.append(row)
    _write(out, row)
    lines.append({"line": f"import_service_20k_s={row['seconds']}"})

    transcript_id = Transcript.objects.get(owner=user, upload__name="bench-20k.json").pk

    def decode() -> Any:
        from sessions_app.models import _CONVERSATIONS

        _CONVERSATIONS.clear()
        return Transcript.objects.get(pk=transcript_id).to_conversation()

    decoded, seconds = _timed(decode)
    assert len(decoded.messages) == MESSAGES
    row = _row(f"to_conversation {MESSAGES:,} messages", seconds, _peak_mb(decode), target=False)
    rows.append(row)
    _write(out, row)
    decode()
    _, seconds = _timed(lambda: Transcript.objects.get(pk=transcript_id).to_conversation())
    row = _row(f"to_conversation {MESSAGES:,} messages (cached)", seconds, 0.0, target=False)
    rows.append(row)
    _write(out, row)

    ok = all(r["ok"] for r in rows if "ok" in r)
    return [*rows, *lines, {"line": f"import_service_ok={str(ok).lower()}"}]


def run(out: TextIO) -> list[dict[str, Any]]:
    """Create a throwaway test database, measure, and drop it again."""
    out.write("imports_service: upload_import / conversation_import / to_conversation\n")
    out.flush()
    return in_test_db(_measure, out)
