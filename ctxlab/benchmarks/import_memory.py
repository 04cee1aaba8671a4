"""Import memory benchmark (target: peak <= 3x the file size + 100 MB).

Through the real service (``upload_import``: parse, mask, count, store) in a throwaway test
database, for generated files that stress memory:

* ``single_line_60mb``: a 59 MiB OpenAI chat JSON array on one line (big tool results);
* ``sharegpt_40mb``: a 40 MiB ShareGPT JSON array of short conversations (both arrays are
  read an item at a time, ``importers/_json_stream.py``);
* ``gemini_40mb``, ``swe_agent_40mb``: a ~40 MiB Gemini CLI session and SWE-agent
  trajectory built from the corpus files (single JSON objects, still parsed whole);
* ``many_messages``: a JSONL file of 1,000,000 short messages.

The peak is the process's resident set high-water mark (``VmHWM``, reset through
``/proc/self/clear_refs`` before each import) minus the resident set before it. Result
lines: ``import_memory_<name>_mb=…`` and ``import_memory_ok=…``.
"""

from __future__ import annotations

import functools
import gc
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

MIB = 1024 * 1024


def _status(field: str) -> int:
    match = re.search(rf"{field}:\s+(\d+) kB", Path("/proc/self/status").read_text())
    return int(match.group(1)) * 1024 if match else 0


def _peak_growth(work: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, seconds, peak RSS growth in bytes) of ``work``."""
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status("VmRSS")
    start = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - start
    return result, seconds, max(0, _status("VmHWM") - before)


def single_line(size: int) -> bytes:
    """An OpenAI chat array on one line, about ``size`` bytes, mostly tool results."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the logs."}]
    chunk = "".join(f"log line {i}: status=ok latency={i % 97}ms; " for i in range(2_000))
    i = 0
    while sum(len(m.get("content") or "") for m in messages) < size:
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": f"/l/{i}"})}}  # fmt: skip
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} {chunk}"})
        i += 1
    return json.dumps(messages, separators=(",", ":")).encode()


def sharegpt_records(size: int) -> bytes:
    """A ShareGPT JSON array of about ``size`` bytes: many conversations, pretty-printed."""
    turn = "".join(f"step {i}: the build passed, 12 tests ran; " for i in range(40))
    records = []
    i = 0
    total = 0
    while total < size:
        record = {"id": f"r{i}", "conversations": [
            {"from": "human", "value": f"question {i}: {turn}"},
            {"from": "gpt", "value": f"answer {i}: {turn}"}]}  # fmt: skip
        records.append(record)
        total += 2 * len(turn) + 120
        i += 1
    return json.dumps(records, indent=1).encode()


CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"


def gemini_session(size: int) -> bytes:
    """A Gemini CLI session JSON of about ``size`` bytes: the corpus session's messages
    repeated (fresh ids); parsed whole (one JSON object)."""
    doc = json.loads((CORPUS / "gemini-cli" / GEMINI).read_bytes())
    base: list[Any] = doc["messages"]
    messages: list[Any] = []
    while len(json.dumps(messages)) < size:
        messages.extend(json.loads(json.dumps(base)))
    for i, message in enumerate(messages):
        message["id"] = f"m{i}"
    return json.dumps({**doc, "messages": messages}, indent=2).encode()


def swe_agent_trajectory(size: int) -> bytes:
    """A SWE-agent .traj of about ``size`` bytes: the corpus trajectory's steps and history
    repeated; parsed whole (one JSON object)."""
    doc = json.loads((CORPUS / "swe-agent-traj" / SWE_AGENT).read_bytes())
    steps: list[Any] = []
    history: list[Any] = []
    while len(json.dumps(steps)) + len(json.dumps(history)) < size:
        steps.extend(doc["trajectory"])
        history.extend(doc.get("history", []))
    return json.dumps({**doc, "trajectory": steps, "history": history}, indent=2).encode()


GEMINI = "agentcmd-session-2025-10-27T19-55-981c87cb.json"
SWE_AGENT = "ctf-i_got_id_demo.traj"


def many_messages(count: int) -> bytes:
    roles = ("user", "assistant")
    return "".join(
        json.dumps({"role": roles[i % 2], "content": f"message {i}: short text"}) + "\n"
        for i in range(count)
    ).encode()


CASES: tuple[tuple[str, Callable[[], bytes]], ...] = (
    ("single_line_60mb", lambda: single_line(59 * MIB)),
    ("sharegpt_40mb", lambda: sharegpt_records(40 * MIB)),
    ("gemini_40mb", lambda: gemini_session(40 * MIB)),
    ("swe_agent_40mb", lambda: swe_agent_trajectory(40 * MIB)),
    ("many_messages", lambda: many_messages(1_000_000)),
)


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    from sessions_app import services

    user = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    rows: list[dict[str, Any]] = []
    for name, make in CASES:
        data = make()
        target = 3 * len(data) + 100 * MIB
        outcome, seconds, peak = _peak_growth(
            functools.partial(
                services.upload_import,
                owner=user,
                name=f"{name}.jsonl" if "many" in name else f"{name}.json",
                data=data,
            )
        )
        ok = outcome.ok and peak <= target
        out.write(
            f"  {name}: {len(data) / MIB:.0f} MiB, {seconds:.1f} s, peak +{peak / MIB:.0f} MiB "
            f"(target {target / MIB:.0f} MiB){'' if outcome.ok else f' error: {outcome.error}'}"
            f"{': ok' if ok else ': FAIL'}\n"
        )
        out.flush()
        rows.append(
            {
                "name": name,
                "file_mib": round(len(data) / MIB, 1),
                "seconds": round(seconds, 1),
                "peak_mib": round(peak / MIB),
                "target_mib": round(target / MIB),
                "ok": ok,
            }
        )
        del data, outcome
    rows += [{"line": f"import_memory_{r['name']}_mb={r['peak_mib']}"} for r in list(rows)]
    rows.append({"line": f"import_memory_ok={all(r['ok'] for r in rows if 'ok' in r)}"})
    return rows


def run(out: TextIO) -> list[dict[str, Any]]:
    return in_test_db(_measure, out)
