""" "The Complexity Trap" (arXiv 2508.21433) reproduced on real SWE-agent trajectories.

Every SWE-agent ``.traj`` in the corpus is replayed four ways at the paper's settings:
no compaction (the raw agent), observation masking (M = 10), the LLM summary (N = 21,
M = 10) and the hybrid (summary, then masking M = 10). Each replay's requests are priced
with the cache-aware ledger (``ledger_from_records``: a request's prefix shared with the
previous request is a cache read, the rest is new input), at the paper's Qwen3-Coder 480B
prices, next to the paper's published per-instance costs.

Prices: the paper's own post-hoc cost script (``notebooks/posthoc_compute_qwen_costs.py``
of its SWE-agent fork, github.com/Recursive-Safeguarding/the-complexity-trap @ 1b07decf),
USD per million tokens, tiered by the request's whole prompt (input + cached input):
< 32k: input 1, cached 0.4, output 5; 32k-128k: 1.8 / 0.72 / 9; 128k-256k: 3 / 1.2 / 15;
256k-1M: 6 / 2.4 / 60. It has no cache-write surcharge: a write costs plain input.

What this compares (said beside the numbers): a replay cannot change what the agent did
next, so every strategy sees the same actions and the same number of calls; the paper's
runs let each agent act on its own context (different trajectories, different lengths).
Here the difference is per-call input cost at identical actions. Output tokens are the
transcript's own (equal in every column); summary calls are priced from the offline
summariser's estimated usage at the tier of their input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine import importers
from ctxlab.engine.core.model import Conversation, Message, Role
from ctxlab.engine.cost.ledger import Ledger, ledger_from_records
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.synth import join_conversations
from ctxlab.engine.tokens.reference import reference_tokens

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus" / "swe-agent-traj"
MTOK = Decimal(1_000_000)
PRICE_SOURCE = (
    "Qwen3-Coder 480B tiers of the paper's notebooks/posthoc_compute_qwen_costs.py "
    "(Recursive-Safeguarding/the-complexity-trap @ 1b07decf)"
)
# (prompt tokens below, input, cached input, output) USD per million tokens
QWEN3_CODER_TIERS: tuple[tuple[int, Decimal, Decimal, Decimal], ...] = tuple(
    (limit, Decimal(i), Decimal(c), Decimal(o))
    for limit, i, c, o in (
        (32_000, "1", "0.4", "5"),
        (128_000, "1.8", "0.72", "9"),
        (256_000, "3", "1.2", "15"),
        (1_000_000, "6", "2.4", "60"),
    )
)
# The paper's Table (Qwen3-Coder 480B, SWE-agent, SWE-bench Verified): USD per instance.
PAPER_COST = {"raw": Decimal("1.29"), "masking": Decimal("0.61"), "summary": Decimal("0.64")}
PAPER_HYBRID_SAVING = "7-11% below the better of masking and summary"
# The paper's own runs, per instance (mean model calls, mean prompt tokens per call):
# auxiliary-data/experiment_instance_costs_combined.csv of the fork @ 1b07decf, the three
# Qwen3-Coder 480B SWE-bench Verified experiments (baseline_raw, baseline_N_1_M_10,
# turn-summaries N_21_M_10; 500, 500 and 498 instances).
PAPER_RUNS: dict[str, tuple[float, int]] = {
    "raw": (58.5, 22_767),
    "masking": (61.0, 10_904),
    "summary": (70.1, 14_648),
}

# column -> (strategy, params): the paper's configurations
STRATEGIES: dict[str, tuple[str, dict[str, Any]]] = {
    # masking that never masks: the request is the whole history (SWE-agent without
    # history processors), and every strategy shares the same replay machinery
    "raw": ("observation_masking", {"n": 1_000_000}),
    "masking": ("observation_masking", {"n": 10}),
    "summary": ("complexity_trap_summary", {"mode": "summary", "n": 21, "keep_last_m_turns": 10}),
    "hybrid": (
        "complexity_trap_summary",
        {"mode": "hybrid", "n": 21, "keep_last_m_turns": 10, "masking_n": 10},
    ),
}


def tier(prompt_tokens: int) -> tuple[Decimal, Decimal, Decimal]:
    for limit, inp, cached, out in QWEN3_CODER_TIERS:
        if prompt_tokens < limit:
            return inp, cached, out
    raise ValueError(f"a {prompt_tokens:,}-token prompt is beyond Qwen3-Coder's 1M window")


def qwen_uncached_cost(ledger: Ledger) -> Decimal:
    """The same requests with every prompt token billed as new input (no caching)."""
    total = Decimal(0)
    for step in ledger.steps:
        inp, _, out = tier(step.total_tokens)
        total += (step.total_tokens * inp + step.output_tokens * out) / MTOK
    return total


def qwen_cost(ledger: Ledger) -> Decimal:
    """The ledger's per-request split (cache reads / new input / output) at the tier of
    each request's whole prompt, as the paper's script prices a turn."""
    total = Decimal(0)
    for step in ledger.steps:
        inp, cached, out = tier(step.total_tokens)
        new = step.write_tokens + step.uncached_tokens
        total += (new * inp + step.read_tokens * cached + step.output_tokens * out) / MTOK
    return total


@dataclass(frozen=True)
class Replayed:
    name: str
    turns: int  # model calls (requests) of the trajectory
    input_tokens: dict[str, int]  # column -> prompt tokens summed over the calls
    cost: dict[str, Decimal]  # column -> USD (requests + summary calls)
    summaries: dict[str, int]
    uncached: dict[str, Decimal]  # column -> USD if no request hit the cache


def load(path: Path) -> Conversation:
    parsed = importers.parse(path.read_bytes(), name=path.name, format="swe-agent")
    return parsed.conversations[0]


def replay_trajectory(name: str, conversation: Conversation) -> Replayed:
    reference = reference_tokens(conversation)
    tokens: dict[str, int] = {}
    cost: dict[str, Decimal] = {}
    summaries: dict[str, int] = {}
    uncached: dict[str, Decimal] = {}
    turns = 0
    for column, (strategy, params) in STRATEGIES.items():
        result = replay_run(conversation, strategy, params=params, reference=reference)
        ledger = ledger_from_records(
            result.steps, conversation=conversation, reference=reference, model="claude-sonnet-4-5"
        )
        turns = len(ledger.steps)
        tokens[column] = sum(s.total_tokens for s in ledger.steps)
        summary_cost = Decimal(0)
        for s in result.summaries:
            inp, _, out = tier(s.input_tokens)
            summary_cost += (s.input_tokens * inp + s.output_tokens * out) / MTOK
        cost[column] = qwen_cost(ledger) + summary_cost
        summaries[column] = len(result.summaries)
        uncached[column] = qwen_uncached_cost(ledger) + summary_cost
    return Replayed(name, turns, tokens, cost, summaries, uncached)


def trajectory_paths(paths: Iterable[Path] | None = None) -> list[Path]:
    return sorted(CORPUS.glob("*.traj*")) if paths is None else list(paths)


def trajectories(paths: Iterable[Path] | None = None) -> list[Replayed]:
    return [replay_trajectory(p.name, load(p)) for p in trajectory_paths(paths)]


JOINED_MESSAGES = (202, 502)  # ~100 and ~250 model calls (the paper's turn limit is 250)


def _without_task(copy: int, source: Conversation, messages: list[Message]) -> list[Message]:
    """Later copies lose what precedes their first model call (their own task and
    demonstrations): the joined run is one task followed by real turns only."""
    if copy == 1:
        return messages
    first = next((i for i, m in enumerate(messages) if m.role is Role.ASSISTANT), 0)
    return messages[first:]


def joined_trajectory(paths: Sequence[Path], messages: int) -> Conversation:
    """Real SWE-agent turns joined (seeded) into one long run: the public trajectories are
    all shorter than the summary's first checkpoint (N + M = 31 calls)."""
    return join_conversations(
        [load(p) for p in paths], target_messages=messages, seed=0, rewrite=_without_task
    )


def ratio(value: Decimal, base: Decimal) -> float:
    return float(value / base) if base else 0.0


def table(rows: Sequence[Replayed], label: str = "instances") -> list[str]:
    n = len(rows)
    cols = list(STRATEGIES)
    mean_cost = {c: sum((r.cost[c] for r in rows), Decimal(0)) / n for c in cols}
    mean_tok = {c: sum(r.input_tokens[c] for r in rows) // n for c in cols}
    mean_nocache = {c: sum((r.uncached[c] for r in rows), Decimal(0)) / n for c in cols}
    calls = max(sum(r.turns for r in rows), 1)
    per_call = {c: sum(r.input_tokens[c] for r in rows) // calls for c in cols}
    paper_raw = PAPER_COST["raw"]
    lines = [
        f"{'trajectory':<46} {'turns':>5} "
        + " ".join(f"{c + ' tok':>13} {c + ' $':>9}" for c in cols),
    ]
    for r in rows:
        cells = " ".join(f"{r.input_tokens[c]:>13,} {float(r.cost[c]):>9.4f}" for c in cols)
        lines.append(f"{r.name[:46]:<46} {r.turns:>5} {cells}")
    lines.append(f"{label}={n}  (means per run below; ratio = strategy / raw)")
    lines.append(
        f"{'strategy':<10} {'input tok':>11} {'tok ratio':>9} {'USD':>9} {'ratio':>6} "
        f"{'no-cache $':>10} {'ratio':>6} {'tok/call':>8}   "
        f"paper: USD  ratio  calls  tok/call"
    )
    for c in cols:
        paper = PAPER_COST.get(c)
        runs = PAPER_RUNS.get(c)
        paper_cells = (
            f"{float(paper):>10.2f} {ratio(paper, paper_raw):>6.2f} {runs[0]:>6.1f} {runs[1]:>9,}"
            if paper is not None and runs is not None
            else f"{'-':>10} {PAPER_HYBRID_SAVING}"
        )
        lines.append(
            f"{c:<10} {mean_tok[c]:>11,} {mean_tok[c] / max(mean_tok['raw'], 1):>9.2f} "
            f"{float(mean_cost[c]):>9.4f} {ratio(mean_cost[c], mean_cost['raw']):>6.2f} "
            f"{float(mean_nocache[c]):>10.4f} "
            f"{ratio(mean_nocache[c], mean_nocache['raw']):>6.2f} {per_call[c]:>8,}   "
            f"{paper_cells}"
        )
    lines.append(
        "same actions in every column: a replay cannot change what the agent did next, so "
        "this is per-call input cost at identical actions (the paper's agents acted on "
        "their own contexts). USD is cache-aware: masking rewrites an old observation at "
        "every call, so the prompt cache breaks there and the rest of the prompt is new "
        "input again; 'no-cache $' bills every prompt token as new input."
    )
    short = [r.name for r in rows if r.turns < 31]
    if short:
        lines.append(
            f"{len(short)} of {n} trajectories have fewer than 31 calls (N + M): the summary "
            "never triggers there, so summary = raw and hybrid = masking on them."
        )
    return lines


def run(out: TextIO) -> list[dict[str, Any]]:
    return run_on(None, out)


def _means(rows: Sequence[Replayed], field: str) -> dict[str, Decimal]:
    return {
        c: sum((getattr(r, field)[c] for r in rows), Decimal(0)) / len(rows) for c in STRATEGIES
    }


def run_on(paths: Iterable[Path] | None, out: TextIO) -> list[dict[str, Any]]:
    chosen = trajectory_paths(paths)
    rows = trajectories(chosen)
    out.write(f"prices: {PRICE_SOURCE}\n")
    out.write("-- real SWE-agent trajectories (one instance each)\n")
    for line in table(rows):
        out.write(line + "\n")
    joined = [
        replay_trajectory(f"joined-{n}-messages", joined_trajectory(chosen, n))
        for n in JOINED_MESSAGES
    ]
    out.write(
        "-- long runs joined from the same real turns (one task, later tasks dropped, seed 0):"
        " not instances, they show where the summary starts to pay\n"
    )
    for line in table(joined, label="joined runs"):
        out.write(line + "\n")
    n = len(rows)
    mean, nocache = _means(rows, "cost"), _means(rows, "uncached")
    result: list[dict[str, Any]] = [
        {
            "section": "paper",
            "instances": n,
            "turns_max": max(r.turns for r in rows),
            **{f"{c}_usd": round(float(mean[c]), 4) for c in STRATEGIES},
        }
    ]
    for c in ("masking", "summary", "hybrid"):
        result.append({"line": f"paper_{c}_vs_raw_ratio={ratio(mean[c], mean['raw']):.3f}"})
        result.append(
            {"line": f"paper_{c}_vs_raw_nocache_ratio={ratio(nocache[c], nocache['raw']):.3f}"}
        )
    longest = joined[-1]
    for c in ("masking", "summary", "hybrid"):
        value = ratio(longest.cost[c], longest.cost["raw"])
        result.append({"line": f"paper_joined_long_{c}_vs_raw_ratio={value:.3f}"})
    result.append({"line": f"paper_joined_long_calls={longest.turns}"})
    result.append({"line": f"paper_instances={n}"})
    return result
