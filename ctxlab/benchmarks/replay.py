"""Replay benchmark on the REPEATED-TEXT transcript: all five presets over 20,000
messages cycled from a few real sessions (a few percent of its block texts are distinct; the
``real`` section is the realistic one). Times are CPU time of this process.

Definitions:
- ``tokenize_s``: one single-threaded tiktoken ``cl100k_base`` pass (``encode_ordinary``)
  over the text of every block of every message, repeats included: "tokenising the
  transcript once", the same texts the replay's reference counting covers.
- ``replay_s``: CPU time to replay all five presets with the offline summariser, starting
  from cold caches (reference counts, Qwen2.5 memo): the shared reference counts, CoPaw's
  Qwen2.5 counts and every strategy's own estimator are all included.
- ``repeated_text_replay_vs_tokenize_ratio = replay_s / tokenize_s``, printed with the
  transcript's ``distinct_share`` (distinct block texts / all block texts).
- ``repeated_text_replay_scaling_2x = replay_s(40,000 messages) / replay_s(20,000 messages)``.

Counting is cached by content (per-message token counts are computed once), so the
shared reference pass tokenizes each *distinct* text once, single-threaded like the baseline.
The bench transcript is joined from a small corpus of real sessions, cycled, so it repeats
its texts far more than a real 20,000-message session would: the table prints how many
texts are distinct and the time of a tiktoken pass over those alone, so the ratio can be
read against both.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.stages import agentscope
from ctxlab.engine.strategies import PRESETS, STRATEGIES
from ctxlab.engine.summarize import offline
from ctxlab.engine.tokens import reference as reference_mod
from ctxlab.engine.tokens.cl100k import _encoding, block_text, reference_counter

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"


def _cold() -> None:
    reference_mod._CACHE.clear()
    reference_counter().count.cache_clear()  # type: ignore[attr-defined]
    offline.clear_caches()  # the offline summariser's per-text scans
    agentscope.as_timestamp.cache_clear()
    try:
        from ctxlab.engine.tokens import qwen_tokens

        qwen_tokens.qwen_counter().clear()
    except ImportError:
        pass
    gc.collect()


def tokenize_pass(conversation: Conversation) -> tuple[float, int]:
    encode = _encoding().encode_ordinary
    texts = [block_text(b) for m in conversation.messages for b in m.blocks]
    start = time.process_time()
    total = sum(len(encode(t)) for t in texts if t)
    return time.process_time() - start, total


def distinct_pass(conversation: Conversation) -> tuple[float, int, int]:
    """(seconds, distinct texts, all texts) of a tiktoken pass over the distinct texts."""
    encode = _encoding().encode_ordinary
    texts = [t for m in conversation.messages for b in m.blocks if (t := block_text(b))]
    distinct = list(dict.fromkeys(texts))
    start = time.process_time()
    for t in distinct:
        encode(t)
    return time.process_time() - start, len(distinct), len(texts)


def replay_all(conversation: Conversation) -> tuple[float, dict[str, float], dict[str, Any]]:
    _cold()
    presets = [p for p in PRESETS if p in STRATEGIES]
    per: dict[str, float] = {}
    info: dict[str, Any] = {}
    start = time.process_time()
    t0 = time.process_time()
    reference_mod.reference_tokens(conversation)
    per["reference"] = time.process_time() - t0
    for name in presets:
        t0 = time.process_time()
        result = replay_run(conversation, name)
        per[name] = time.process_time() - t0
        info[name] = {
            "steps": len(result.steps),
            "events": len(result.events),
            "peak": result.metrics["peak_reference"],
        }
    return time.process_time() - start, per, info


def run(out: TextIO) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    out.write("replay: building the 20,000-message transcript ... ")
    out.flush()
    one = synth.bench_conversation(CORPUS, messages=20_000, seed=0)
    tok_s, ref_total = tokenize_pass(one)
    out.write(f"{len(one.messages):,} messages, {ref_total:,} cl100k tokens; "
              f"tiktoken pass {tok_s:.2f} s\n")  # fmt: skip
    distinct_s, n_distinct, n_texts = distinct_pass(one)
    out.write(f"{n_distinct:,} distinct texts of {n_texts:,}; tiktoken pass over the distinct "
              f"ones {distinct_s:.2f} s\n")  # fmt: skip
    total_1, per_1, info = replay_all(one)
    for name, seconds in per_1.items():
        extra = info.get(name, {})
        out.write(f"replay {name:<10} {seconds:6.2f} s  {extra}\n")
        rows.append({"section": "replay", "name": name, "seconds": round(seconds, 3), **extra})
    out.write(f"replay all five (20k): {total_1:.2f} s\n")
    del one
    gc.collect()
    two = synth.bench_conversation(CORPUS, messages=40_000, seed=0)
    total_2, _, _ = replay_all(two)
    out.write(f"replay all five (40k): {total_2:.2f} s\n")
    ratio = total_1 / tok_s if tok_s else float("inf")
    scaling = total_2 / total_1 if total_1 else float("inf")
    worst = max((s for n, s in per_1.items() if n != "reference"), default=0.0)
    rows.append({"section": "replay", "name": "tokenize", "seconds": round(tok_s, 3),
                 "tokens": ref_total})  # fmt: skip
    rows.append({"section": "replay", "name": "tokenize_distinct", "seconds": round(distinct_s, 3),
                 "texts": n_distinct, "of": n_texts})  # fmt: skip
    rows.append({"section": "replay", "name": "per_preset_max_ratio",
                 "value": round(worst / tok_s, 3) if tok_s else None,
                 "distinct_share": round(n_distinct / max(n_texts, 1), 3)})  # fmt: skip
    share = n_distinct / max(n_texts, 1)
    rows.append({"line": f"repeated_text_replay_vs_tokenize_ratio={ratio:.3f} "
                         f"distinct_share={share:.3f}"})  # fmt: skip
    rows.append({"line": f"repeated_text_replay_scaling_2x={scaling:.3f}"})
    return rows
