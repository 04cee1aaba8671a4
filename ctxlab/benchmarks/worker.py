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
  summary inputs as textstore pieces (rendered only then: an offline run's rows are written
  without them, ``executor.INPUTS_AFTER_DONE``), their writes and ``finished_at``); the run's pages
  say "analysing…" meanwhile (``replay_app.runs.analysis_state``). Timed apart (``after
  done``, with its parts), not in the ratio.

CPU time of this process (the worker's heartbeat thread included).

How it is timed (as ``bench real``, ``_real_timing``): one reading of a 2 s replay moves by
a third between runs on the shared machine (the worst ratio read 1.32 and 1.69 in two runs
of the same code), and the first replay in a process runs 20-25% slower (lazy imports,
the heap grown). So every preset is replayed once untimed first (warm-up), then
``ROUNDS`` interleaved rounds each take one reading of each preset's replay and one of its
worker path, back to back (which goes first alternates from round to round and preset to
preset), each from the same cold state and a fresh run row: the conversation decoded
again from the rows, as the worker finds it. Each round gives each ratio one paired value
(that round's worker path over that round's replay); a line reports the median of the
rounds with the lowest and highest (``min=`` / ``max=``) beside it, the table the median
seconds of each part.

Result lines: ``real_worker_vs_replay_ratio=<worst> <preset> min= max= rounds=
distinct_share=<share>`` (the worker path until done over the replay),
``real_worker_after_replay_share=<worst> <preset> min= max= rounds=`` (the parts outside the
replay's share of the worker path until done) and ``real_worker_after_done_ratio=<worst>
<preset> min= max= rounds=`` (the analysis after done over the replay); the worst is the
preset with the highest median.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db
from ._real_timing import Spread

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


ROUNDS = 3  # ~12 s of CPU a preset a round: the section ~3.6 min CPU (1.5 min with 1 reading)


@dataclass
class Readings:
    """One preset's readings, one per round (CPU s; ``parts``: each part's seconds)."""

    replay: list[float] = field(default_factory=list)
    worker: list[float] = field(default_factory=list)  # the worker path until done
    after: list[float] = field(default_factory=list)  # its parts outside the replay
    after_done: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def ratio(self) -> Spread:
        """The worker path until done / the replay, paired per round."""
        return Spread([w / r for w, r in zip(self.worker, self.replay, strict=True)])

    def share(self) -> Spread:
        """The parts outside the replay / the worker path until done, per round."""
        return Spread([a / w for a, w in zip(self.after, self.worker, strict=True)])

    def analysed(self) -> Spread:
        """What the task does after done / the replay, paired per round."""
        return Spread([a / r for a, r in zip(self.after_done, self.replay, strict=True)])


def _measure(out: TextIO, rounds: int = ROUNDS) -> list[dict[str, Any]]:
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
    del conversation, texts  # the worker reads the rows, not this object
    assert outcome.upload is not None, outcome.error
    transcript = outcome.upload.transcripts.get()
    out.write(f"  imported {transcript.message_count:,} messages in "
              f"{time.process_time() - start:.1f} s CPU\n")  # fmt: skip

    def cold() -> None:
        """The state a worker starts a run from: no decoded conversation, no per-text memo."""
        _cold()
        _CONVERSATIONS.clear()
        lost.clear_caches()
        run_survival.clear_fact_indexes()  # each run reads the facts stored at import

    def replay_reading(got: Readings, preset: str) -> None:
        cold()
        got.replay.append(_worker_replay(transcript, preset))

    def worker_reading(got: Readings, preset: str) -> None:
        cold()
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
        got.worker.append(total_s - after_done)  # until done
        got.after_done.append(after_done)
        got.after.append(sum(v for k, v in spent.items() if k not in AFTER_DONE))
        for part in {*PARTS.values()}:
            got.parts[part].append(spent.get(part, 0.0))

    presets = list(PRESETS)
    for preset in presets:  # warm-up, untimed
        cold()
        _worker_replay(transcript, preset)
    readings = {preset: Readings() for preset in presets}
    for r in range(rounds):
        wall = time.perf_counter()
        for i, preset in enumerate(presets):
            order = [replay_reading, worker_reading]
            if (r + i) % 2:
                order.reverse()
            for reading in order:
                reading(readings[preset], preset)
        out.write(f"  round {r + 1}/{rounds} done ({time.perf_counter() - wall:.0f} s wall): "
                  + ", ".join(f"{p} x{readings[p].ratio().samples[r]:.2f}" for p in presets)
                  + "\n")  # fmt: skip
        out.flush()

    rows: list[dict[str, Any]] = []
    for preset in presets:
        got = readings[preset]
        ratio, part_share, analysed = got.ratio(), got.share(), got.analysed()
        parts = {k: statistics.median(v) for k, v in got.parts.items()}
        before = {k: v for k, v in parts.items() if k not in AFTER_DONE}
        later = {k: v for k, v in parts.items() if k in AFTER_DONE}

        def listed(parts: dict[str, float]) -> str:
            return ", ".join(
                f"{k} {v:.2f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
            )

        replay_s, worker_s = statistics.median(got.replay), statistics.median(got.worker)
        after, after_done = statistics.median(got.after), statistics.median(got.after_done)
        out.write(f"  {preset:<10} replay {_span(got.replay)}  worker path until done "
                  f"{_span(got.worker)}  x{ratio.text()}  (distinct share {share:.3f}); of "
                  f"it, {after:.2f} s ({part_share.value:.0%}) outside the replay: "
                  f"{listed(before)}; after done (analysis in the same task, pages say "
                  f"analysing): {_span(got.after_done)} x{analysed.text()} of the replay: "
                  f"{listed(later)} (median [min-max] of {rounds} rounds)\n")  # fmt: skip
        rows.append({"section": "worker", "name": preset, "replay_s": round(replay_s, 3),
                     "worker_s": round(worker_s, 3), "ratio": round(ratio.value, 3),
                     "ratio_min": round(min(ratio.samples), 3),
                     "ratio_max": round(max(ratio.samples), 3),
                     "after_replay_s": round(after, 3), "after_done_s": round(after_done, 3),
                     **{f"{k.replace(' ', '_')}_s": round(v, 3) for k, v in parts.items()},
                     "rounds": rounds, "distinct_share": round(share, 3)})  # fmt: skip

    def worst(spread: Callable[[Readings], Spread]) -> tuple[str, Spread]:
        name = max(presets, key=lambda p: spread(readings[p]).value)
        return name, spread(readings[name])

    tail = f"rounds={rounds}"
    name, got_ratio = worst(Readings.ratio)
    rows.append({"line": f"real_worker_vs_replay_ratio={got_ratio.value:.3f} {name} "
                         f"{got_ratio.bounds()} {tail} distinct_share={share:.3f}"})  # fmt: skip
    name, got_share = worst(Readings.share)
    rows.append({"line": f"real_worker_after_replay_share={got_share.value:.3f} {name} "
                         f"{got_share.bounds()} {tail}"})  # fmt: skip
    name, got_done = worst(Readings.analysed)
    rows.append({"line": f"real_worker_after_done_ratio={got_done.value:.3f} {name} "
                         f"{got_done.bounds()} {tail}"})  # fmt: skip
    return rows


def _span(readings: list[float]) -> str:
    return f"{statistics.median(readings):6.2f} s [{min(readings):.2f}-{max(readings):.2f}]"


def _worker_replay(transcript: Any, preset: str) -> float:
    """The replay as the worker replays it (``executor._execute`` up to its loop): the
    conversation decoded from the rows, the stored counts read and seeded, the replay."""
    from ctxlab.engine.core.heap import existing_heap_frozen
    from ctxlab.engine.replay import run as replay_run
    from ctxlab.engine.strategies import _copaw_stored as copaw_stored
    from ctxlab.engine.strategies import make_strategy, stored_counts

    start = time.process_time()
    with existing_heap_frozen():  # as the executor: one pause from the decode to the end
        conversation = transcript.to_conversation()
        columns = (*stored_counts.COLUMNS, "qwen_counts")
        rows = transcript.messages.order_by("index").values_list(*columns)
        counts = stored_counts.from_rows([r[:-1] for r in rows])
        reference = stored_counts.seeded(conversation, counts)
        qwen = [r[-1] for r in rows]
        if copaw_stored.wants_stored_counts(make_strategy(preset)):
            copaw_stored.seed_stored_counts(conversation.messages, list(qwen))
        replay_run(conversation, preset, reference=reference)
    return time.process_time() - start


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write(f"worker: 5 preset runs over the realistic {MESSAGES:,}-message transcript, "
              f"{ROUNDS} interleaved rounds (throwaway test database)\n")  # fmt: skip
    out.flush()
    return in_test_db(_measure, out)
