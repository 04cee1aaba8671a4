"""Run storage on the realistic transcript: what one stored run of each preset costs.

In a throwaway test database: import ``synth_realistic.realistic_bench_conversation``
(20,000 messages) for a fresh user, execute one run of each of the five presets through
the worker's own call (``replay_app.runs.executor.run_execute``), then measure every row
the run stored (``replay_app.runs.run_size``: payload bytes per table, shared texts the run
points at counted in full).

Result line: ``run_storage_mb_max=<worst MB> <preset> offloads_mb=<that run's offloads>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
MESSAGES = 20_000
MB = 1_000_000


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    from ctxlab.engine.strategies import PRESETS
    from ctxlab.engine.synth import realistic as synth_realistic
    from replay_app.models import RunStatus
    from replay_app.runs import executor, run_size, services
    from sessions_app import services as session_services

    user = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=MESSAGES)
    outcome = session_services.conversation_import(
        owner=user, name="bench-real-20k.json", conversations=(conversation,),
        source_format="synthetic",
    )  # fmt: skip
    assert outcome.upload is not None, outcome.error
    transcript = outcome.upload.transcripts.get()
    rows: list[dict[str, Any]] = []
    sizes: dict[str, dict[str, int]] = {}
    for preset in PRESETS:
        run = services.run_create(
            owner=user, transcript=transcript,
            spec=services.RunSpec(strategy=preset), enqueue=False,
        )  # fmt: skip
        run = executor.run_execute(run=run)
        if run.status != RunStatus.DONE:
            raise RuntimeError(f"{preset} run failed: {run.error}")
        sizes[preset] = by_table = run_size.run_bytes_by_table(run)
        total = sum(by_table.values())
        parts = "  ".join(f"{k} {v / MB:.2f}" for k, v in by_table.items() if v)
        out.write(f"  {preset:<10} {total / MB:7.2f} MB  ({parts})\n")
        out.flush()
        rows.append({"section": "storage", "name": preset, "mb": round(total / MB, 3),
                     **{f"{k}_mb": round(v / MB, 3) for k, v in by_table.items()}})  # fmt: skip
    worst = max(sizes, key=lambda p: sum(sizes[p].values()))
    total = sum(sizes[worst].values())
    offloads = sizes[worst].get("runoffload", 0)
    rows.append({"line": f"run_storage_mb_max={total / MB:.2f} {worst} "
                         f"offloads_mb={offloads / MB:.2f}"})  # fmt: skip
    return rows


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write(f"storage: one stored run per preset over the realistic {MESSAGES:,}-message "
              "transcript (throwaway test database)\n")  # fmt: skip
    out.flush()
    return in_test_db(_measure, out)
