"""Page benchmark: run and compare pages over a 20,000-message transcript.

In a throwaway test database: import ``synth.bench_conversation(messages=20_000)`` for a
fresh user, store a run of each of the five presets through ``replay_app.runs`` (the
worker's path: each run also stores its retention analysis, so the run times include it),
then time the pages with ``django.test.Client`` (server time: the request through
middleware, view and template; no network). Caches start cold. One warm-up request per page
first (``first_ms``): a finished run's curve and fate log are derived once and cached; its
retention analysis is read from the database.

Targets: run page p95 < 150 ms (worst of the five runs), compare page p95 < 300 ms, each
over 20 requests. Result lines: ``run_page_p95_ms=…``, ``compare_page_p95_ms=…``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
MESSAGES = 20_000
REQUESTS = 20
RUN_TARGET_MS = 150.0
COMPARE_TARGET_MS = 300.0


def p95(samples: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(samples)
    rank = max(1, -(-95 * len(ordered) // 100))
    return ordered[rank - 1]


def _time(client: Any, url: str, out: TextIO) -> dict[str, Any]:
    first = time.perf_counter()
    response = client.get(url)
    warm_ms = (time.perf_counter() - first) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"GET {url} -> {response.status_code}")
    samples = []
    for _ in range(REQUESTS):
        start = time.perf_counter()
        response = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    row = {
        "url": url,
        "first_ms": round(warm_ms, 1),
        "p95_ms": round(p95(samples), 1),
        "median_ms": round(sorted(samples)[len(samples) // 2], 1),
        "bytes": len(response.content),
    }
    out.write(f"  GET {url}: p95 {row['p95_ms']} ms (first {row['first_ms']} ms)\n")
    return row


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from ctxlab.engine import lost, synth
    from ctxlab.engine.strategies import PRESETS
    from replay_app import memo
    from replay_app.models import RunAnalysis, RunStatus
    from replay_app.runs import executor, services
    from sessions_app import services as session_services

    lost.clear_caches()  # memoised facts (and extract's other caches)
    memo.MEMO.clear()
    user = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    start = time.perf_counter()
    conversation = synth.bench_conversation(CORPUS, messages=MESSAGES)
    outcome = session_services.conversation_import(
        owner=user, name="bench-20k.json", conversations=(conversation,), source_format="synthetic"
    )
    assert outcome.upload is not None, outcome.error
    transcript = outcome.upload.transcripts.get()
    out.write(
        f"  imported {transcript.message_count:,} messages in {time.perf_counter() - start:.1f} s\n"
    )
    runs = []
    for preset in PRESETS:
        start = time.perf_counter()
        run = services.run_create(
            owner=user,
            transcript=transcript,
            spec=services.RunSpec(strategy=preset),
            enqueue=False,
        )
        run = executor.run_execute(run=run)
        if run.status != RunStatus.DONE:
            raise RuntimeError(f"{preset} run failed: {run.error}")
        analysed = RunAnalysis.objects.filter(run=run, attempts=run.attempts).exists()
        out.write(
            f"  {preset}: {run.steps_total:,} steps, {run.events_count:,} events "
            f"in {time.perf_counter() - start:.1f} s"
            f"{' (retention analysis stored)' if analysed else ' (NO retention analysis)'}\n"
        )
        runs.append(run)
    client = Client()
    client.force_login(user)
    rows = []
    run_rows = [_time(client, f"/runs/{run.pk}/", out) for run in runs]
    for run, row in zip(runs, run_rows, strict=True):
        rows.append({"page": f"run ({run.strategy})", **row})
    ids = ",".join(str(r.pk) for r in runs)
    compare_row = _time(client, f"/compare/?runs={ids}", out)
    rows.append({"page": "compare (5 runs)", **compare_row})
    step_row = _time(client, f"/runs/{runs[0].pk}/steps/{runs[0].steps_total // 2}/", out)
    rows.append({"page": "step fragment", **step_row})
    worst_run = max(r["p95_ms"] for r in run_rows)
    rows.append({"line": f"run_page_p95_ms={worst_run}"})
    rows.append({"line": f"compare_page_p95_ms={compare_row['p95_ms']}"})
    rows.append(
        {
            "line": "pages_ok="
            + str(worst_run < RUN_TARGET_MS and compare_row["p95_ms"] < COMPARE_TARGET_MS).lower()
        }
    )
    return rows


def run(out: TextIO) -> list[dict[str, Any]]:
    """Create a throwaway test database, measure, and drop it again."""
    out.write(f"pages: 5 preset runs over {MESSAGES:,} messages (throwaway test database)\n")
    out.flush()
    return in_test_db(_measure, out)
