"""The replay memory benchmark's machinery on a small realistic transcript: the high-water
mark counts what the measured work adds (and only that), a child process replays exactly
what an in-process replay does, and the result line names the worst strategy."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ctxlab.benchmarks import replay_memory
from ctxlab.benchmarks.real import CORPUS
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.synth import realistic as synth_realistic

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.access("/proc/self/clear_refs", os.W_OK),
    reason="reads /proc/self/status and resets the high-water mark through clear_refs",
)
MIB = replay_memory.MIB


def test_peak_growth_counts_what_the_work_allocates_and_frees() -> None:
    def allocate() -> int:
        block = bytearray(48 * MIB)  # touched (zeroed), so resident
        size = len(block)
        del block  # freed before the work returns: only the high-water mark remembers it
        return size

    size, peak = replay_memory.peak_growth(allocate)
    assert size == 48 * MIB
    assert 44 * MIB <= peak <= 64 * MIB
    _, idle = replay_memory.peak_growth(lambda: None)
    assert idle < 8 * MIB  # the mark was reset: the earlier 48 MiB peak is not seen again


@pytest.mark.slow  # child interpreters (~15 s on the loaded machine)
def test_child_replays_as_in_process_and_rows_add_up() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=1_500, seed=0)
    seen: list[str] = []
    rows = replay_memory.measure(
        conversation, ["langchain_trim", "codex"], lambda r: seen.append(r["name"])
    )
    assert seen == ["langchain_trim", "codex"]
    for row in rows:
        assert "error" not in row, row
        expected = replay_run(conversation, row["name"])
        assert (row["steps"], row["events"]) == (len(expected.steps), len(expected.events))
        assert row["events"] > 0  # the small transcript does compact: a real replay ran
        assert row["conversation_mib"] > 1  # 1,500 messages of real-sized text (~5 MiB)
        assert row["peak_mib"] > 0
        assert row["ratio"] == pytest.approx(row["peak_mib"] / row["conversation_mib"])
    worst = max(rows, key=lambda r: r["ratio"])
    assert replay_memory.result_line(rows) == (
        f"real_replay_peak_rss_ratio_max={worst['ratio']:.2f} {worst['name']}"
    )


@pytest.mark.slow  # a child interpreter
def test_result_line_names_a_failed_child(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pkl"
    row = replay_memory.measure_child(missing, missing, "codex")
    assert "FileNotFoundError" in row["error"]
    ok = {"name": "aider", "ratio": 1.5}
    assert replay_memory.result_line([ok, row]) == "real_replay_peak_rss_ratio_max=failed codex"
    assert replay_memory.result_line([ok]) == "real_replay_peak_rss_ratio_max=1.50 aider"
