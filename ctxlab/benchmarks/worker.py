"""The worker path on the realistic transcript: what a user waits for after
starting a run until it is done (replay + row writes + metrics), against the replay alone;
and, apart, what the same task does after (the ledger, the analysis, the compare inputs).

In a throwaway test database: import ``synth_realistic.realistic_bench_conversation`` (20,000
messages, >= 95% distinct block texts) for a fresh user, then for each of the five presets,
from the same cold caches (the process's decoded-conversation cache emptied too):

- the replay as the worker replays it: the conversation decoded from its rows, the counts
  stored at import read and seeded, the replay (``replay_s``);
- ``replay_app.runs.executor.run_execute`` (the worker's own call), with the time spent in
  each part of its work after (and around) the replay read off as it runs: row writes
  while replaying (``writes``: building and flushing the step, event, summary rows),
  metrics, the costs (LLM totals, ground truth) and the done write; the rest is the
  replay itself (decode and seeding included). That is the **worker path**: the run is
  ``done`` at its end (its pages show every row and metric).
- After done, the same task analyses the replay still in memory (``executor._analyse``:
  the prompt-caching ledger, retention and survival, the compare page's inputs with the offline probe set, the
  summary inputs as textstore pieces, their writes and ``finished_at``); the run's pages
  say "analysing…" meanwhile (``replay_app.runs.analysis_state``). Timed apart (``after
  done``, with its parts), not in the ratio.

CPU time of this process (the worker's heartbeat thread included).

Result lines: ``real_worker_vs_replay_ratio=<worst> <preset> distinct_share=<share>`` (the
worker path until done over the replay), ``real_worker_after_replay_share=<worst> <preset>``
(the parts outside the replay's share of the worker path until done) and
``real_worker_after_done_ratio=<worst> <preset>`` (the analysis after done over the replay).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
MESSAGES = 20_000

# The worker's parts timed apart (``executor`` attribute or ``_BatchWriter`` method -> part)
PARTS = {
    "_BatchWriter.add": "writes",
    "_BatchWriter.flush": "writes",
    "compute_metrics": "metrics",
    "agreement_rows": "metrics",
    "run_costs.finish": "costs",
    "run_costs.finish_ledger": "ledger",
    "run_survival.finished": "analysis",
    "compare_inputs.finished": "compare inputs",
    "textstore.TextWriter.summaries_later": "summary inputs",
    "lost_analysis.store_retention": "final writes",
    "run_survival.store": "final writes",
    "compare_inputs.store": "final writes",
}
AFTER_DONE = (
    "ledger",
    "analysis",
    "compare inputs",
    "summary inputs",
    "final writes",
)  # inside ``executor._analyse``


@contextmanager
def timed_parts() -> Iterator[dict[str, float]]:
    """CPU seconds spent in each of ``PARTS`` while the block runs (outermost calls), and
    in ``executor._analyse`` (``after done``, around its own parts)."""
    from replay_app.runs import executor

    spent: dict[str, float] = defaultdict(float)
    undo: list[tuple[Any, str, Any]] = []
    depth = [0]  # of PARTS (``after done`` is timed around them, apart)

    def wrap(part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        outer = part == "after done"

        def timed(*args: Any, **kwargs: Any) -> Any:
            if depth[0] and not outer:
                return fn(*args, **kwargs)
            depth[0] += not outer
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += time.process_time() - start
                depth[0] -= not outer

        return timed

    parts = {**PARTS, "_analyse": "after done"}
    for dotted, part in parts.items():
        *path, attr = dotted.split(".")
        owner: Any = executor
        for name in path:
            owner = getattr(owner, name)
        undo.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, wrap(part, getattr(owner, attr)))
    try:
        yield spent
    finally:
        for owner, attr, fn in reversed(undo):
            setattr(owner, attr, fn)


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    from ctxlab.engine.evaluate import lost
    from ctxlab.engine.strategies import PRESETS
    from ctxlab.engine.synth import realistic as synth_realistic
    from ctxlab.engine.tokens.cl100k import block_text
    from replay_app.models import RunStatus
    from replay_app.runs import executor, services
    from replay_app.runs import survival as run_survival
    from sessions_app import services as session_services
    from sessions_app.models import _CONVERSATIONS

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
    rows: list[dict[str, Any]] = []
    ratios: dict[str, float] = {}
    shares: dict[str, float] = {}
    analysed: dict[str, float] = {}
    for preset in PRESETS:
        _cold()
        lost.clear_caches()
        _CONVERSATIONS.clear()
        replay_s = _worker_replay(transcript, preset)
        _cold()
        _CONVERSATIONS.clear()
        lost.clear_caches()
        run_survival.clear_fact_indexes()  # each run reads the facts stored at import
        run = services.run_create(
            owner=user, transcript=transcript,
            spec=services.RunSpec(strategy=preset), enqueue=False,
        )  # fmt: skip
        start = time.process_time()
        with timed_parts() as spent:
            run = executor.run_execute(run=run)
        total_s = time.process_time() - start
        if run.status != RunStatus.DONE:
            raise RuntimeError(f"{preset} run failed: {run.error}")
        after_done = spent.pop("after done", 0.0)
        worker_s = total_s - after_done  # until done
        ratios[preset] = worker_s / replay_s if replay_s else float("inf")
        before = {k: v for k, v in spent.items() if k not in AFTER_DONE}
        later = {k: v for k, v in spent.items() if k in AFTER_DONE}
        after = sum(before.values())
        shares[preset] = after / worker_s if worker_s else 0.0
        analysed[preset] = after_done / replay_s if replay_s else float("inf")

        def listed(parts: dict[str, float]) -> str:
            return ", ".join(
                f"{k} {v:.2f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
            )

        out.write(f"  {preset:<10} replay {replay_s:6.2f} s  worker path until done "
                  f"{worker_s:6.2f} s  x{ratios[preset]:.2f}  (distinct share {share:.3f}); of "
                  f"it, {after:.2f} s ({shares[preset]:.0%}) outside the replay: "
                  f"{listed(before)}; after done (analysis in the same task, pages say "
                  f"analysing): {after_done:.2f} s x{analysed[preset]:.2f} of the replay: "
                  f"{listed(later)}\n")  # fmt: skip
        rows.append({"section": "worker", "name": preset, "replay_s": round(replay_s, 3),
                     "worker_s": round(worker_s, 3), "ratio": round(ratios[preset], 3),
                     "after_replay_s": round(after, 3), "after_done_s": round(after_done, 3),
                     **{f"{k.replace(' ', '_')}_s": round(v, 3) for k, v in spent.items()},
                     "distinct_share": round(share, 3)})  # fmt: skip
    worst = max(ratios, key=ratios.__getitem__)
    most = max(shares, key=shares.__getitem__)
    rows.append({"line": f"real_worker_vs_replay_ratio={ratios[worst]:.3f} {worst} "
                         f"distinct_share={share:.3f}"})  # fmt: skip
    rows.append({"line": f"real_worker_after_replay_share={shares[most]:.3f} {most}"})
    slowest = max(analysed, key=analysed.__getitem__)
    rows.append({"line": f"real_worker_after_done_ratio={analysed[slowest]:.3f} {slowest}"})
    return rows


def _worker_replay(transcript: Any, preset: str) -> float:
    """The replay as the worker replays it (``executor._execute`` up to its loop): the
    conversation decoded from the rows, the stored counts read and seeded, the replay."""
    from ctxlab.engine.replay import run as replay_run
    from ctxlab.engine.strategies import _copaw_stored as copaw_stored
    from ctxlab.engine.strategies import make_strategy, stored_counts

    start = time.process_time()
    conversation = transcript.to_conversation()
    rows = transcript.messages.order_by("index").values_list(*stored_counts.COLUMNS, "qwen_counts")
    reference = stored_counts.seeded(conversation, stored_counts.from_rows([r[:-1] for r in rows]))
    qwen = [r[-1] for r in rows]
    if copaw_stored.wants_stored_counts(make_strategy(preset)):
        copaw_stored.seed_stored_counts(conversation.messages, list(qwen))
    replay_run(conversation, preset, reference=reference)
    return time.process_time() - start


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write(f"worker: 5 preset runs over the realistic {MESSAGES:,}-message transcript "
              "(throwaway test database)\n")  # fmt: skip
    out.flush()
    return in_test_db(_measure, out)
