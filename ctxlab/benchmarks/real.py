"""Replay benchmark on a realistic transcript: texts repeat as little as in a
real session, so per-text caches cannot make a replay look faster than it is.

Transcript: ``synth_realistic.realistic_bench_conversation`` (the sessions and message mix
of the ``replay`` section's repeated-text transcript, repeated copies rewritten: >= 95% of
block texts distinct). Every time is CPU time of this process (``time.process_time``): the
machine is shared, wall time would measure the neighbours.

Definitions (result lines at the end of ``manage.py bench``):
- ``floor_s``: one single-threaded tiktoken ``cl100k_base`` pass over the text of every
  block of every message (repeats included).
- ``real_distinct_share``: distinct block texts / all block texts.
- ``real_presets_vs_floor_ratio``: the five presets replayed as the worker replays them,
  / ``floor_s``. The product counts the reference tokens once at import and stores them
  per message; the worker reads them (``reference.seed_reference_tokens``) and tokenizes no
  message again. So the per-message counts are computed here before any timer (the import
  rule: ``reference_stored.stored_counts``, with the running counts of long texts that
  copies of them are counted from), and each preset's time is seeding
  them plus its replay, every other cache cold (the counter's memo, the summariser's scans,
  the Qwen2.5 memo ...). Likewise CoPaw's Qwen2.5 counts of every text, which the import
  stores per message and the worker seeds before a CoPaw replay
  (``strategies._copaw_stored``): computed here before any timer, seeded inside it.
- ``real_presets_with_reference_ratio``: the older figure, the shared reference count
  (tokenizing every message once) plus the five presets replayed over it, / ``floor_s``.
- ``real_strategy_floor_ratio_max <strategy>``: the worst over the library of
  (reference count + that strategy's replay) / (``floor_s`` + one pass of the strategy's
  own estimator over every message): what the replay costs beyond counting each message
  once with both yardsticks.
- ``real_scaling_2x_max <strategy>``: the worst over the library of a strategy's replay
  time at 40,000 messages / its time at 20,000 (built the same way).

How these ratios are timed (``_real_timing``): after an untimed warm-up replay of every
strategy, ``ROUNDS`` interleaved rounds each measure every quantity once (the floor pass,
the reference count, the presets from the stored counts, each strategy at both sizes back
to back and its estimator pass), every replay from the same cold state; each round gives
each ratio one paired value, and the line reports the median with the lowest and highest
(``min=`` / ``max=``) beside it.
- ``qwen_fast_identical`` / ``speedup``: the tiktoken-built Qwen2.5 counter against
  ``tokenizers`` (one text at a time) over every distinct text of the transcript.
- ``engine_cli_start_s``: CPU seconds (user + system) of ``python -m ctxlab.engine replay
  --help`` in a child process: interpreter start plus every engine import.
"""

from __future__ import annotations

import functools
import gc
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES, make_strategy
from ctxlab.engine.strategies import _copaw_stored as copaw_stored
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens import qwen_tokens, reference_stored
from ctxlab.engine.tokens.reference import seed_reference_tokens

from ._real_timing import Spread, block_texts, cold_caches, cpu, floor_pass, measure, row_spread

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
ROOT = Path(__file__).resolve().parents[2]

__all__ = ["floor_pass", "worker_times", "stored_for_worker", "qwen_check", "cli_start", "run"]

StoredCounts = tuple[Any, Any, Any]  # (reference counts, long-text tables, Qwen2.5 entries)


def stored_for_worker(conversation: Conversation) -> StoredCounts:
    """What the import stores per message: reference counts (and the running counts of
    long texts) and CoPaw's Qwen2.5 counts."""
    stored, tables = reference_stored.stored_counts(conversation.messages)
    return stored, tables, copaw_stored.message_entries(conversation.messages)


def worker_times(
    conversation: Conversation, names: list[str], counts: StoredCounts | None = None
) -> dict[str, float]:
    """Cold-cache CPU seconds of each strategy replayed as the worker replays it: from the
    per-message reference counts (and CoPaw's Qwen2.5 counts) stored at import, counted
    before the timer (``counts``, or here)."""
    stored, tables, qwen = counts or stored_for_worker(conversation)
    out: dict[str, float] = {}
    for name in names:
        cold_caches()  # nothing counted survives from the stored counts or another preset
        start = cpu()
        reference = seed_reference_tokens(conversation, stored, tables)
        if qwen is not None and copaw_stored.wants_stored_counts(make_strategy(name)):
            copaw_stored.seed_stored_counts(conversation.messages, qwen)
        result = replay_run(conversation, name, reference=reference)
        out[name] = cpu() - start
        del result, reference
    return out


def qwen_check(conversation: Conversation) -> tuple[bool, float, float, int]:
    """(identical, fast s, tokenizers s, distinct texts) over the transcript's texts."""
    distinct = list(dict.fromkeys(block_texts(conversation)))
    fast = qwen_tokens._fast_count()
    slow = qwen_tokens._tokenizer()
    if fast is None or slow is None:
        return False, 0.0, 0.0, len(distinct)
    start = cpu()
    a = [fast(t) for t in distinct]
    fast_s = cpu() - start
    start = cpu()
    b = [len(slow.encode(t, add_special_tokens=False).ids) for t in distinct]
    slow_s = cpu() - start
    return a == b, fast_s, slow_s, len(distinct)


def cli_start() -> tuple[float, float]:
    """(CPU s, wall s) of ``python -m ctxlab.engine replay --help`` in a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ctxlab.engine", "replay", "--help"],
        cwd=ROOT, check=True, capture_output=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu_s, wall


def _span(readings: list[float]) -> str:
    return f"{Spread(readings).value:6.2f} s [{min(readings):.2f}-{max(readings):.2f}]"


def run(out: TextIO) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    names = [n for n in LIBRARY if n in STRATEGIES]
    presets = [n for n in PRESETS if n in STRATEGIES]

    cli_cpu, wall = cli_start()
    out.write(f"engine CLI start: {cli_cpu:.3f} s CPU ({wall:.3f} s wall)\n")
    rows.append({"section": "real", "name": "engine_cli_start", "cpu_s": round(cli_cpu, 3),
                 "wall_s": round(wall, 3)})  # fmt: skip

    out.write("real: building the realistic 20,000-message transcript ... ")
    out.flush()
    start = cpu()
    one = synth_realistic.realistic_bench_conversation(CORPUS, messages=20_000, seed=0)
    build_s = cpu() - start
    texts = block_texts(one)
    share = len(set(texts)) / max(len(texts), 1)
    floor_s, tokens = floor_pass(one)
    out.write(f"{len(one.messages):,} messages, {tokens:,} cl100k tokens, "
              f"{share:.1%} of {len(texts):,} block texts distinct (built in {build_s:.1f} s); "
              f"tiktoken pass {floor_s:.2f} s\n")  # fmt: skip

    del texts
    identical, fast_s, slow_s, n_distinct = qwen_check(one)
    speedup = slow_s / fast_s if fast_s else 0.0
    out.write(f"Qwen2.5 over {n_distinct:,} distinct texts: tiktoken-built {fast_s:.2f} s, "
              f"tokenizers {slow_s:.2f} s, identical {identical}\n")  # fmt: skip

    two = synth_realistic.realistic_bench_conversation(CORPUS, messages=40_000, seed=0)
    counts = stored_for_worker(one)  # stored at import: counted before any timer
    worker = functools.partial(worker_times, one, presets, counts)
    got = measure(one, two, names, worker, out)
    del one, two, counts, worker
    gc.collect()

    ratios = {name: got.floor_ratio(name) for name in names}
    scaling = {name: got.scaling(name) for name in names}
    out.write(f"real tiktoken pass {_span(got.floor)}; reference count {_span(got.reference)} "
              f"(median [min-max] of {len(got.floor)} rounds)\n")  # fmt: skip
    for name in names:
        out.write(f"real {name:<24} {_span(got.at_20k[name])}  40k {_span(got.at_40k[name])}  "
                  f"x{scaling[name].text()}  own estimator {_span(got.own[name])}  "
                  f"floor ratio {ratios[name].text()}\n")  # fmt: skip
        rows.append({"section": "real", "name": name, **row_spread(got.at_20k[name]),
                     "seconds_40k": row_spread(got.at_40k[name])["median_s"],
                     "estimator_s": row_spread(got.own[name])["median_s"],
                     "floor_ratio": round(ratios[name].value, 3),
                     "floor_ratio_min": round(min(ratios[name].samples), 3),
                     "floor_ratio_max": round(max(ratios[name].samples), 3),
                     "scaling_2x": round(scaling[name].value, 3),
                     "scaling_2x_min": round(min(scaling[name].samples), 3),
                     "scaling_2x_max": round(max(scaling[name].samples), 3),
                     "distinct_share": round(share, 3)})  # fmt: skip
    with_reference = got.with_reference_ratio(presets)
    out.write(f"real reference count + five presets = {with_reference.value:.3f}x the tiktoken "
              f"pass ({with_reference.bounds()}; distinct share {share:.3f})\n")  # fmt: skip
    presets_ratio = got.presets_ratio()
    for name in presets:
        out.write(f"real {name:<24} {_span(got.worker[name])}  from the stored reference counts\n")
        rows.append({"section": "real", "name": f"{name}@stored_reference",
                     **row_spread(got.worker[name])})  # fmt: skip
    out.write(f"real five presets from the stored reference counts = {presets_ratio.value:.3f}x "
              f"the tiktoken pass ({presets_ratio.bounds()}; distinct share {share:.3f})\n")  # fmt: skip

    worst = max(ratios, key=lambda n: ratios[n].value)
    worst_scaling = max(scaling, key=lambda n: scaling[n].value)
    rounds = f"rounds={len(got.floor)}"
    rows += [
        {"line": f"real_distinct_share={share:.3f}"},
        {"line": f"real_presets_vs_floor_ratio={presets_ratio.text()} {rounds} "
                 f"distinct_share={share:.3f}"},
        {"line": f"real_presets_with_reference_ratio={with_reference.text()} {rounds} "
                 f"distinct_share={share:.3f}"},
        {"line": f"real_strategy_floor_ratio_max={ratios[worst].value:.3f} {worst} "
                 f"{ratios[worst].bounds()} {rounds} distinct_share={share:.3f}"},
        {"line": f"real_scaling_2x_max={scaling[worst_scaling].value:.3f} {worst_scaling} "
                 f"{scaling[worst_scaling].bounds()} {rounds}"},
        {"line": f"qwen_fast_identical={'true' if identical else 'false'} speedup={speedup:.2f}"},
        {"line": f"engine_cli_start_s={cli_cpu:.3f}"},
    ]  # fmt: skip
    return rows
