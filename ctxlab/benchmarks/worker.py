"""The worker path on the realistic transcript: what a user waits for after
starting a run (replay + retention analysis + ledger + row writes), against the replay alone.

In a throwaway test database: import ``synth_realistic.realistic_bench_conversation`` (20,000
messages, >= 95% distinct block texts) for a fresh user, then for each of the five presets,
from the same cold caches: the engine replay alone (reference count included) on the
stored conversation, and ``replay_app.runs.executor.run_execute`` (the worker's own call). CPU
time of this process (the worker's heartbeat thread included).

Result line: ``real_worker_vs_replay_ratio=<worst> <preset> distinct_share=<share>``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
MESSAGES = 20_000


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    from ctxlab.engine.evaluate import lost
    from ctxlab.engine.replay import run as replay_run
    from ctxlab.engine.strategies import PRESETS
    from ctxlab.engine.synth import realistic as synth_realistic
    from ctxlab.engine.tokens.cl100k import block_text
    from replay_app.models import RunStatus
    from replay_app.runs import executor, services
    from replay_app.runs import survival as run_survival
    from sessions_app import services as session_services

    from .replay import _cold

    user = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=MESSAGES)
    texts = [t for m in conversation.messages for b in m.blocks if (t := block_text(b))]
    share = len(set(texts)) / max(len(texts), 1)
    start = time.process_time()
    outcome = session_services.conversation_import(
        owner=user, name="bench-real-20k.json", conversations=(conversation,),
        source_format="synthetic",
    )  # fmt: skip
    assert outcome.upload is not None, outcome.error
    transcript = outcome.upload.transcripts.get()
    out.write(f"  imported {transcript.message_count:,} messages in "
              f"{time.process_time() - start:.1f} s CPU\n")  # fmt: skip
    stored = session_services.load_conversation(transcript.pk)
    rows: list[dict[str, Any]] = []
    ratios: dict[str, float] = {}
    for preset in PRESETS:
        _cold()
        lost.clear_caches()
        start = time.process_time()
        replay_run(stored, preset)
        replay_s = time.process_time() - start
        _cold()
        lost.clear_caches()
        run_survival.clear_fact_indexes()  # each run reads the facts stored at import
        run = services.run_create(
            owner=user, transcript=transcript,
            spec=services.RunSpec(strategy=preset), enqueue=False,
        )  # fmt: skip
        start = time.process_time()
        run = executor.run_execute(run=run)
        worker_s = time.process_time() - start
        if run.status != RunStatus.DONE:
            raise RuntimeError(f"{preset} run failed: {run.error}")
        ratios[preset] = worker_s / replay_s if replay_s else float("inf")
        out.write(f"  {preset:<10} replay {replay_s:6.2f} s  worker path {worker_s:6.2f} s  "
                  f"x{ratios[preset]:.2f}  (distinct share {share:.3f})\n")  # fmt: skip
        rows.append({"section": "worker", "name": preset, "replay_s": round(replay_s, 3),
                     "worker_s": round(worker_s, 3), "ratio": round(ratios[preset], 3),
                     "distinct_share": round(share, 3)})  # fmt: skip
    worst = max(ratios, key=ratios.__getitem__)
    rows.append({"line": f"real_worker_vs_replay_ratio={ratios[worst]:.3f} {worst} "
                         f"distinct_share={share:.3f}"})  # fmt: skip
    return rows


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write(f"worker: 5 preset runs over the realistic {MESSAGES:,}-message transcript "
              "(throwaway test database)\n")  # fmt: skip
    out.flush()
    return in_test_db(_measure, out)
