"""Suites: runs per minute with the embedded worker at concurrency 1 and 2, and
the per-run overhead of a suite beyond the replay itself.

In a throwaway test database: import ``TRANSCRIPTS`` realistic synthetic transcripts of
``MESSAGES`` messages (``synth_realistic``, different seeds) and run a suite of them × two
presets on a real embedded Celery worker (threads), once at concurrency 1 and once at 2.
Wall time: the worker's threads are what a user waits for.

- ``runs_per_minute``: runs ÷ the suite's wall time (create → last run finished).
- overhead: the suite's wall time at concurrency 1 minus the time spent inside the run
  executor (``run_execute``: replay, analysis, row writes, the worker path any run takes),
  per run and as a share of that executor time: task dispatch, claiming, the summary row,
  progress pushes, the finish check. Goal ≤ 10 %.

Result lines: ``suites_runs_per_minute_c1=``, ``suites_runs_per_minute_c2=``,
``suites_overhead_ratio=<share> per_run_s=<s>``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
MESSAGES = 5_000
TRANSCRIPTS = 3
PRESETS = ("qwenpaw", "picoclaw")


class _ExecutorClock:
    """Wraps the glue's ``execute_run`` to add up the wall time spent inside it."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.lock = threading.Lock()

    def wrap(self, execute: Any) -> Any:
        def timed(run: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return execute(run, **kwargs)
            finally:
                with self.lock:
                    self.seconds += time.perf_counter() - start

        return timed


def _suite_once(user: Any, transcripts: list[Any], concurrency: int, out: TextIO) -> dict[str, Any]:
    from ctxlab.celery import app
    from ctxlab.engine.evaluate import lost
    from ctxlab.serving.embedded import start_embedded_worker, stop_embedded_worker
    from suites_app import configs, replay_glue, services

    from .replay import _cold

    _cold()  # each pass from the same cold caches (per-text token counts, fact scans)
    lost.clear_caches()
    clock = _ExecutorClock()
    original = replay_glue.execute_run
    replay_glue.execute_run = clock.wrap(original)
    app.conf.task_always_eager = False
    start_embedded_worker(concurrency=concurrency)
    try:
        start = time.perf_counter()
        suite = services.suite_create(
            owner=user, name=f"bench c{concurrency}", transcripts=transcripts,
            configs=configs.preset_configs(PRESETS, window=None), enqueue=False,
        )  # fmt: skip
        services.suite_enqueue(suite)
        while not services.suite_state(suite)["finished"]:
            time.sleep(0.05)
        wall = time.perf_counter() - start
    finally:
        stop_embedded_worker()
        replay_glue.execute_run = original
    state = services.suite_state(suite)
    if state["done"] != state["total"]:
        raise RuntimeError(f"suite bench: {state}")
    runs = state["total"]
    per_minute = runs / wall * 60
    overhead = (wall * concurrency - clock.seconds) / runs if concurrency == 1 else None
    out.write(
        f"  concurrency {concurrency}: {runs} runs in {wall:.1f} s wall ({per_minute:.2f} "
        f"runs/min); inside run_execute {clock.seconds:.1f} s; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n"
    )
    return {
        "section": "suites",
        "concurrency": concurrency,
        "runs": runs,
        "wall_s": round(wall, 2),
        "executor_s": round(clock.seconds, 2),
        "runs_per_minute": round(per_minute, 2),
        **({"overhead_per_run_s": round(overhead, 3)} if overhead is not None else {}),
    }


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    from ctxlab.engine.synth import realistic as synth_realistic
    from sessions_app import services as session_services

    user = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    transcripts = []
    for seed in range(TRANSCRIPTS):
        conversation = synth_realistic.realistic_bench_conversation(
            CORPUS, messages=MESSAGES, seed=seed
        )
        outcome = session_services.conversation_import(
            owner=user, name=f"bench-suite-{seed}.json", conversations=(conversation,),
            source_format="synthetic",
        )  # fmt: skip
        assert outcome.upload is not None, outcome.error
        transcripts.append(outcome.upload.transcripts.get())
    out.write(f"  imported {TRANSCRIPTS} × {MESSAGES:,} messages\n")
    rows = [_suite_once(user, transcripts, c, out) for c in (1, 2)]
    one = rows[0]
    share = one["overhead_per_run_s"] * one["runs"] / one["executor_s"]
    rows.append({"line": f"suites_runs_per_minute_c1={rows[0]['runs_per_minute']:.2f}"})
    rows.append({"line": f"suites_runs_per_minute_c2={rows[1]['runs_per_minute']:.2f}"})
    rows.append(
        {
            "line": f"suites_overhead_ratio={share:.3f} per_run_s={one['overhead_per_run_s']:.3f} "
            f"(goal <= 0.10 of run_execute at {MESSAGES:,} messages)"
        }
    )
    return rows


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write(
        f"suites: {TRANSCRIPTS} realistic {MESSAGES:,}-message transcripts × {len(PRESETS)} "
        "presets on the embedded worker, concurrency 1 and 2 (throwaway test database)\n"
    )
    out.flush()
    return in_test_db(_measure, out)
