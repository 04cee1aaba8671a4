"""Replay memory benchmark (goal: peak RSS of any replay <= 2x the loaded conversation).

On the realistic 20,000-message transcript of the ``real`` section
(``synth_realistic.realistic_bench_conversation``), every strategy of the library is
replayed as the worker replays it (from the per-message counts stored at import, and
CoPaw's stored Qwen2.5 counts: ``real.worker_times``), each in a fresh child process
(``python -m ctxlab.benchmarks.replay_memory``) so that no strategy's garbage or caches
count for the next. The children run one after another (parallel ones would disturb each
other's figures on a 2-core machine). In each child, in this order:

1. every engine module is imported and the token tables a replay may load lazily (tiktoken
   ``cl100k_base``, the Qwen2.5 counter) are loaded: a fixed cost whatever the transcript,
   paid once per worker process (``tables_mib``, reported, in neither figure);
2. the conversation is unpickled: **the denominator** (``conversation_mib``) is the
   process's resident set (``VmRSS``) after it minus before it, each read after
   ``gc.collect()`` and glibc's ``malloc_trim(0)`` (so that memory freed before is not
   silently reused). It is still a little under the objects' own size (about 53 MiB
   against 60 MiB that ``tracemalloc`` sees at 20,000 messages: free slots of Python's
   small-object pools get reused), so the ratio errs high;
3. the counts stored at import are unpickled (what the worker reads with the messages);
4. garbage is released as in 2, the resident set high-water mark is reset (``/proc/self/clear_refs`` with ``5``, as in
   ``import_memory``) and read as the baseline;
5. the stored counts are seeded and the strategy replays the whole conversation
   (``replay.run``: steps, events, summaries, findings, offloads and metrics kept, as the
   worker keeps them until the run's analysis is done): **the numerator** (``peak_mib``)
   is ``VmHWM`` afterwards minus that baseline.

``ratio = peak / conversation``. Result line:
``real_replay_peak_rss_ratio_max=<ratio> <strategy>`` (the worst over the library).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine.core.model import Conversation

from .import_memory import _status

MIB = 1024 * 1024
GOAL = 2.0  # peak replay growth / loaded conversation
ROOT = Path(__file__).resolve().parents[2]
try:
    _TRIM: Callable[[int], int] | None = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
except (OSError, AttributeError, TypeError):  # not glibc: free pages stay resident
    _TRIM = None


def _release() -> None:
    """Collect garbage and hand free heap pages back to the system (glibc ``malloc_trim``):
    memory freed earlier (imports, the token tables' parsing) would otherwise be reused
    without growing the resident set, and what reuses it would look smaller than it is."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


def _rss() -> int:
    _release()
    return _status("VmRSS")


def peak_growth(work: Callable[[], Any]) -> tuple[Any, int]:
    """(result of ``work``, its peak resident set growth in bytes): the high-water mark
    reset to the current resident set first, so only what ``work`` adds is counted."""
    _release()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status("VmRSS")
    result = work()
    return result, max(0, _status("VmHWM") - before)


def _load_tables() -> None:
    from ctxlab.engine.tokens import qwen_tokens
    from ctxlab.engine.tokens.cl100k import _encoding

    _encoding()
    qwen_tokens._fast_count()


def measure_in_this_process(
    conversation_path: Path, counts_path: Path, name: str
) -> dict[str, Any]:
    """Steps 1-5 of the module docstring for one strategy (meant for a fresh process)."""
    from ctxlab.engine.replay import run as replay_run
    from ctxlab.engine.strategies import _copaw_stored as copaw_stored
    from ctxlab.engine.strategies import make_strategy, stored_counts

    start = _rss()
    _load_tables()
    loaded_tables = _rss()
    with conversation_path.open("rb") as f:
        conversation: Conversation = pickle.load(f)
    loaded_conversation = _rss()
    with counts_path.open("rb") as f:
        columns, qwen = pickle.load(f)

    def replay() -> Any:
        reference = stored_counts.seeded(conversation, columns)
        if qwen is not None and copaw_stored.wants_stored_counts(make_strategy(name)):
            copaw_stored.seed_stored_counts(conversation.messages, qwen)
        return replay_run(conversation, name, reference=reference)

    wall = time.perf_counter()
    cpu = time.process_time()
    result, peak = peak_growth(replay)
    return {
        "name": name,
        "tables_mib": (loaded_tables - start) / MIB,
        "conversation_mib": (loaded_conversation - loaded_tables) / MIB,
        "peak_mib": peak / MIB,
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "steps": len(result.steps),
        "events": len(result.events),
    }


def write_inputs(conversation: Conversation, directory: Path) -> tuple[Path, Path]:
    """The conversation and what an import stores for it (``stored_counts.counted``'s
    columns, CoPaw's Qwen2.5 entries), pickled for the children."""
    from ctxlab.engine.strategies import _copaw_stored as copaw_stored
    from ctxlab.engine.strategies import stored_counts

    columns = stored_counts.counted(conversation.messages)
    qwen = copaw_stored.message_entries(conversation.messages)
    conversation_path, counts_path = directory / "conversation.pkl", directory / "counts.pkl"
    with conversation_path.open("wb") as f:
        pickle.dump(conversation, f, protocol=pickle.HIGHEST_PROTOCOL)
    with counts_path.open("wb") as f:
        pickle.dump((columns, qwen), f, protocol=pickle.HIGHEST_PROTOCOL)
    return conversation_path, counts_path


def measure_child(conversation_path: Path, counts_path: Path, name: str) -> dict[str, Any]:
    """``measure_in_this_process`` in a fresh interpreter; its row, or ``{"error": ...}``."""
    done = subprocess.run(
        [sys.executable, "-m", __name__, str(conversation_path), str(counts_path), name],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"name": name, "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    row: dict[str, Any] = json.loads(lines[-1])
    row["ratio"] = row["peak_mib"] / max(row["conversation_mib"], 1 / MIB)
    return row


def measure(
    conversation: Conversation,
    names: Sequence[str],
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per strategy (``measure_child``), one child after another; ``progress`` is
    called with each row as it comes."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ctxlab-replay-memory-") as tmp:
        paths = write_inputs(conversation, Path(tmp))
        for name in names:
            rows.append(measure_child(*paths, name))
            if progress is not None:
                progress(rows[-1])
    return rows


def result_line(rows: Sequence[dict[str, Any]]) -> str:
    """``real_replay_peak_rss_ratio_max=<ratio> <strategy>`` over the rows measured (a
    failed child makes the line say so instead of hiding behind the others)."""
    failed = [r["name"] for r in rows if "error" in r]
    if failed:
        return f"real_replay_peak_rss_ratio_max=failed {','.join(failed)}"
    worst = max(rows, key=lambda r: r["ratio"])
    return f"real_replay_peak_rss_ratio_max={worst['ratio']:.2f} {worst['name']}"


def _print_row(out: TextIO, row: dict[str, Any]) -> None:
    if "error" in row:
        out.write(f"  {row['name']:<28} FAILED: {row['error']}\n")
    else:
        over = "" if row["ratio"] <= GOAL else " (over 2x)"
        out.write(
            f"  {row['name']:<28} conversation {row['conversation_mib']:4.0f} MiB  replay peak "
            f"+{row['peak_mib']:4.0f} MiB  ratio {row['ratio']:.2f}{over}  "
            f"({row['cpu_s']:.1f} s CPU; tables {row['tables_mib']:.0f} MiB)\n"
        )
    out.flush()


def run(out: TextIO) -> list[dict[str, Any]]:
    from ctxlab.engine.strategies import LIBRARY, STRATEGIES
    from ctxlab.engine.synth import realistic as synth_realistic

    from .real import CORPUS

    wall = time.perf_counter()
    out.write("replay_memory: the realistic 20,000-message transcript, one child per strategy\n")
    out.flush()
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=20_000, seed=0)
    names = [n for n in LIBRARY if n in STRATEGIES]
    rows = measure(conversation, names, lambda row: _print_row(out, row))
    out.write(f"replay_memory: {time.perf_counter() - wall:.0f} s wall in all\n")
    table = [
        {
            "section": "replay_memory",
            **{k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()},
        }  # fmt: skip
        for row in rows
    ]
    return [*table, {"line": result_line(rows)}]


if __name__ == "__main__":  # a child of ``measure_child``: one JSON row on stdout
    conversation_arg, counts_arg, strategy_arg = sys.argv[1:4]
    print(
        json.dumps(measure_in_this_process(Path(conversation_arg), Path(counts_arg), strategy_arg))
    )
