"""``bench --only paper``: The Complexity Trap reproduced on a real SWE-agent trajectory."""

from __future__ import annotations

import io
from decimal import Decimal

from ctxlab.benchmarks import paper
from ctxlab.engine.cost.ledger import LedgerStep, build_ledger

TRAJ = paper.CORPUS / "ctf-i_got_id_demo.traj"


def test_qwen_cost_prices_the_ledgers_cache_split_by_prompt_tier() -> None:
    # step 0: 1,000 new tokens; step 1: the same 1,000 (cache read) + 40,000 new (32k+ tier)
    ledger = build_ledger(
        [
            LedgerStep(keys=["a"], tokens=[1_000], output_tokens=10),
            LedgerStep(keys=["a", "b"], tokens=[1_000, 40_000], output_tokens=20),
        ],
        model="claude-sonnet-4-5",
    )
    first = (1_000 * Decimal(1) + 10 * Decimal(5)) / paper.MTOK
    second = (40_000 * Decimal("1.8") + 1_000 * Decimal("0.72") + 20 * Decimal(9)) / paper.MTOK
    assert paper.qwen_cost(ledger) == first + second


def test_masking_cuts_input_and_ratios_come_from_the_replays() -> None:
    row = paper.replay_trajectory(TRAJ.name, paper.load(TRAJ))
    assert row.turns == 21
    assert row.input_tokens["masking"] < row.input_tokens["raw"]
    # 21 calls < N + M = 31: no checkpoint, so the summary columns equal their bases
    assert row.summaries["summary"] == row.summaries["hybrid"] == 0
    assert row.cost["summary"] == row.cost["raw"]
    assert row.input_tokens["hybrid"] == row.input_tokens["masking"]

    out = io.StringIO()
    lines = dict(
        r["line"].split("=") for r in paper.run_on([TRAJ], out) if "line" in r
    )  # one trajectory: the ratio is this row's
    masking_ratio = float(lines["paper_masking_vs_raw_ratio"])
    assert masking_ratio == round(float(row.cost["masking"] / row.cost["raw"]), 3)
    assert masking_ratio != float(paper.PAPER_COST["masking"] / paper.PAPER_COST["raw"])
    text = out.getvalue()
    assert "identical actions" in text and "fewer than 31 calls" in text
    assert f"{row.input_tokens['raw']:,}" in text


def test_a_joined_long_run_reaches_the_summary_checkpoints() -> None:
    joined = paper.joined_trajectory([TRAJ], 202)
    row = paper.replay_trajectory("joined", joined)
    assert row.turns >= 2 * 31  # long enough for two checkpoints (N + M = 31, then every N)
    assert row.summaries["summary"] == row.summaries["hybrid"] >= 2
    # one task: later copies' own tasks were dropped
    assert sum(1 for m in joined.messages if m.role.value == "user" and not m.tool_results) == 1
    tok = row.input_tokens
    assert tok["hybrid"] < tok["summary"] < tok["raw"] and tok["masking"] < tok["raw"]
    assert row.cost["summary"] < row.cost["raw"]
