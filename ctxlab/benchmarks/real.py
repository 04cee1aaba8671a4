"""Replay benchmark on a realistic transcript: texts repeat as little as in a
real session, so per-text caches cannot make a replay look faster than it is.

Transcript: ``synth_realistic.realistic_bench_conversation`` (the sessions and message mix
of the ``replay`` section's repeated-text transcript, repeated copies rewritten: >= 95% of
block texts distinct). Every time is CPU time of this process (``time.process_time``): the
machine is shared, wall time would measure the neighbours.

Definitions (result lines at the end of ``manage.py bench``):
- ``floor_s``: one single-threaded tiktoken ``cl100k_base`` pass over the distinct block
  texts: the floor of every ratio.
- ``real_distinct_share``: distinct block texts / all block texts.
- The worker's path (every ratio below but the in-memory ones): each replay from a
  conversation decoded fresh from the JSON text its rows hold, with the counts stored at
  import (per-message reference counts, the running counts of long texts, CoPaw's
  Qwen2.5 entries: counted before any timer, seeded inside it), every per-text cache a
  worker would not have warm emptied (``_real_timing.worker_replay``). The decode is
  untimed and reported on its own line (``real_decode_s``).
- ``real_presets_vs_floor_ratio``: the five presets on the worker's path / ``floor_s``.
- ``real_strategy_floor_ratio_max <strategy> floor=<name>``: the worst over the library of
  a strategy's worker-path replay / its floor: ``floor_s``, or, for a strategy counting
  with a tokenizer of its own (not the reference), one pass of its own estimator over
  every message when that costs more (named ``own estimator``).
- ``real_scaling_2x_max <strategy>``: the worst over the library of a strategy's
  worker-path replay at 40,000 messages / at 20,000 (built the same way), the median of
  its paired rounds (a reading of a short replay is the mean of enough replays to last
  ``MIN_READING_S``, the row's ``replays_per_reading``): a strategy near the goal (first rounds' median >= 2.0) is measured in
  ``EXTRA_ROUNDS`` confirmation rounds and its scaling is their median alone, free of the
  upward bias of the rounds that chose it (``rounds=`` on the line is the worst strategy's
  count, the row's ``scaling_2x_first`` the first rounds' median; see ``_real_timing``).
  ``real_scaling_2x_of_fastest_max <strategy>``: the same worst with each size's fastest
  reading of those rounds (other work only adds time: on a loaded machine the median of 34
  strategies' paired ratios has its worst above 2.1 by chance while their Python work grows
  2.00-2.03x).
- In memory, a second line each, named so (the older figures: one conversation object
  replayed again and again, counts just computed in memory):
  ``real_presets_with_reference_ratio`` (the shared reference count plus the five presets
  / ``floor_s``) and ``real_strategy_floor_ratio_max_in_memory`` ((reference count +
  replay) / (``floor_s`` + the strategy's own estimator pass)).

How these ratios are timed (``_real_timing``): after an untimed warm-up replay of every
strategy, ``ROUNDS`` interleaved rounds each measure every quantity once (the floor pass,
the reference count, each strategy at both sizes back to back, in memory, and its
estimator pass), every replay from the same cold state; each round gives each ratio one
paired value, and the line reports the median with the lowest and highest (``min=`` /
``max=``) beside it.
- ``qwen_fast_identical`` / ``speedup``: the tiktoken-built Qwen2.5 counter against
  ``tokenizers`` (one text at a time) over every distinct text of the transcript.
- ``engine_cli_start_s``: CPU seconds (user + system) of ``python -m ctxlab.engine replay
  --help`` in a child process, the median of ``CLI_RUNS`` after one untimed run, with the
  bytecode as an installed copy has it (``_child``): interpreter start plus the engine's
  imports.
"""

from __future__ import annotations

import gc
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens import qwen_tokens

from ._child import installed_env
from ._real_timing import (
    Spread,
    Stored,
    block_texts,
    cpu,
    decode_seconds,
    floor_pass,
    measure,
    row_spread,
    worker_replay,
)

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
ROOT = Path(__file__).resolve().parents[2]

__all__ = ["floor_pass", "worker_times", "qwen_check", "cli_start", "run"]


def worker_times(stored: Stored, names: list[str]) -> dict[str, float]:
    """CPU seconds of each strategy replayed as the worker replays it (``worker_replay``:
    a fresh decode, the counts stored at import, cold caches)."""
    return {name: worker_replay(stored, name) for name in names}


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


CLI_RUNS = 5  # one reading moves 0.16-0.25 s at load 1: the median of five


def cli_start() -> tuple[float, float, list[float]]:
    """(median CPU s, median wall s, every CPU reading) of ``python -m ctxlab.engine replay
    --help`` in a child, ``CLI_RUNS`` times after one untimed run, the bytecode as an
    installed ctxlab has it (``_child``)."""
    command = [sys.executable, "-m", "ctxlab.engine", "replay", "--help"]
    env = installed_env()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, env=env)
    cpus, walls = [], []
    for _ in range(CLI_RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True, env=env)
        walls.append(time.perf_counter() - wall)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(cpus), statistics.median(walls), cpus


def _span(readings: list[float]) -> str:
    return f"{Spread(readings).value:6.2f} s [{min(readings):.2f}-{max(readings):.2f}]"


def run(out: TextIO) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    names = [n for n in LIBRARY if n in STRATEGIES]
    presets = [n for n in PRESETS if n in STRATEGIES]

    cli_cpu, wall, cli_cpus = cli_start()
    out.write(f"engine CLI start: {cli_cpu:.3f} s CPU [{min(cli_cpus):.3f}-{max(cli_cpus):.3f}] "
              f"({wall:.3f} s wall), median of {len(cli_cpus)}\n")  # fmt: skip
    rows.append({"section": "real", "name": "engine_cli_start", "cpu_s": round(cli_cpu, 3),
                 "cpu_min_s": round(min(cli_cpus), 3), "cpu_max_s": round(max(cli_cpus), 3),
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
    stored = Stored.of(one), Stored.of(two)  # what the import stores: before any timer
    del one, two  # a worker holds no decoded conversation but its run's (``measure``)
    gc.collect()
    decode_s = min(decode_seconds(stored[0]) for _ in range(3))
    out.write(f"real: a fresh decode of the 20,000 messages' stored JSON: {decode_s:.2f} s "
              "(the worker's read, untimed in the replays below)\n")  # fmt: skip
    got = measure(stored, names, out)
    del stored
    gc.collect()

    ratios = {name: got.floor_ratio(name) for name in names}
    memory = {name: got.memory_ratio(name) for name in names}
    scaling = {name: got.scaling(name) for name in names}
    out.write(f"real tiktoken pass over the distinct texts {_span(got.floor)}; reference count "
              f"{_span(got.reference)} (median [min-max] of {len(got.floor)} rounds)\n")  # fmt: skip
    for name in names:
        out.write(f"real {name:<24} worker path {_span(got.at_20k[name])}  40k "
                  f"{_span(got.at_40k[name])}  (mean of {got.repeats[name]})  "
                  f"x{scaling[name].text()}  own estimator "
                  f"{_span(got.own[name])}  floor ({got.floor_name(name)}) ratio "
                  f"{ratios[name].text()}\n"
                  f"real {name:<24} in memory   {_span(got.memory[name])}  (reference count + "
                  f"replay) / (tiktoken + own estimator) {memory[name].text()}\n")  # fmt: skip
        rows.append({"section": "real", "name": name, **row_spread(got.at_20k[name]),
                     "seconds_40k": row_spread(got.at_40k[name])["median_s"],
                     "replays_per_reading": got.repeats[name],
                     "in_memory_s": row_spread(got.memory[name])["median_s"],
                     "estimator_s": row_spread(got.own[name])["median_s"],
                     "floor": got.floor_name(name),
                     "floor_ratio": round(ratios[name].value, 3),
                     "floor_ratio_min": round(min(ratios[name].samples), 3),
                     "floor_ratio_max": round(max(ratios[name].samples), 3),
                     "in_memory_ratio": round(memory[name].value, 3),
                     "scaling_2x": round(scaling[name].value, 3),
                     "scaling_2x_min": round(min(scaling[name].samples), 3),
                     "scaling_2x_max": round(max(scaling[name].samples), 3),
                     "scaling_2x_rounds": len(scaling[name].samples),
                     "scaling_2x_first": round(got.first_scaling(name).value, 3),
                     "scaling_2x_of_fastest": round(got.scaling_of_fastest(name), 3),
                     "distinct_share": round(share, 3)})  # fmt: skip
    with_reference = got.with_reference_ratio(presets)
    presets_ratio = got.presets_ratio(presets)
    out.write(f"real five presets on the worker's path = {presets_ratio.value:.3f}x the tiktoken "
              f"pass ({presets_ratio.bounds()}; distinct share {share:.3f})\n"
              f"real in memory: reference count + five presets = {with_reference.value:.3f}x the "
              f"tiktoken pass ({with_reference.bounds()})\n")  # fmt: skip

    worst = max(ratios, key=lambda n: ratios[n].value)
    worst_memory = max(memory, key=lambda n: memory[n].value)
    worst_scaling = max(scaling, key=lambda n: scaling[n].value)
    fastest = {name: got.scaling_of_fastest(name) for name in names}
    worst_fastest = max(fastest, key=fastest.__getitem__)
    rounds = f"rounds={len(got.floor)}"
    rows += [
        {"line": f"real_distinct_share={share:.3f}"},
        {"line": f"real_decode_s={decode_s:.3f}"},
        {"line": f"real_presets_vs_floor_ratio={presets_ratio.text()} {rounds} "
                 f"distinct_share={share:.3f}"},
        {"line": f"real_presets_with_reference_ratio={with_reference.text()} {rounds} "
                 f"in_memory distinct_share={share:.3f}"},
        {"line": f"real_strategy_floor_ratio_max={ratios[worst].value:.3f} {worst} "
                 f"floor={got.floor_name(worst).replace(' ', '_')} {ratios[worst].bounds()} "
                 f"{rounds} distinct_share={share:.3f}"},
        {"line": f"real_strategy_floor_ratio_max_in_memory={memory[worst_memory].value:.3f} "
                 f"{worst_memory} {memory[worst_memory].bounds()} {rounds}"},
        {"line": f"real_scaling_2x_max={scaling[worst_scaling].value:.3f} {worst_scaling} "
                 f"{scaling[worst_scaling].bounds()} "
                 f"rounds={len(scaling[worst_scaling].samples)}"},
        {"line": f"real_scaling_2x_of_fastest_max={fastest[worst_fastest]:.3f} {worst_fastest} "
                 f"rounds={len(got.readings_20k(worst_fastest))}"},
        {"line": f"qwen_fast_identical={'true' if identical else 'false'} speedup={speedup:.2f}"},
        {"line": f"engine_cli_start_s={cli_cpu:.3f} min={min(cli_cpus):.3f} "
                 f"max={max(cli_cpus):.3f} runs={len(cli_cpus)}"},
    ]  # fmt: skip
    return rows
