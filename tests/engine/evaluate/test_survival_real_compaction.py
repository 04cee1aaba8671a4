"""Survival on a real Claude Code /compact (claude-trace, derived into a session by
tests/data/recorded/derive_claude_trace_req34.py): the original's own summary, and replays."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from ctxlab.engine import budget, cli
from ctxlab.engine.evaluate import survival
from ctxlab.engine.replay import run
from ctxlab.engine.summarize.recorded import RecordedSummarizer

RECORDED = Path(__file__).resolve().parents[2] / "data" / "recorded"
FILE = RECORDED / "claude-trace-req34-compacted.jsonl"


def test_the_derived_session_is_what_the_script_writes() -> None:
    spec = importlib.util.spec_from_file_location(
        "derive", RECORDED / "derive_claude_trace_req34.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = [json.loads(line) for line in FILE.read_text("utf-8").splitlines()]
    assert written == module.lines()


def test_real_summary_keeps_the_request_but_few_paths_commands_or_numbers() -> None:
    conv = cli.load_file(FILE)
    (compaction,) = conv.compactions
    assert compaction.pre_tokens and compaction.pre_tokens > 10_000
    data = survival.analyse_original(conv).as_dict()
    cats = data["categories"]
    assert cats["paths"]["at_risk"] >= 10 and cats["paths"]["share"] < 0.25
    assert cats["numbers"]["at_risk"] >= 10 and cats["numbers"]["share"] < 0.25
    assert cats["commands"]["survived"] == 0  # the mkdir the agent ran is not in the summary
    assert cats["instructions"]["share"] == 1.0  # both requests paraphrased in section 1
    assert 0 < data["survival"] < 0.5


def test_a_replay_answered_with_the_same_real_summary_keeps_the_same_paths() -> None:
    conv = cli.load_file(FILE)
    original = survival.analyse_original(conv).as_dict()["categories"]
    params = budget.window_params("claude_code", 8000)
    res = run(conv, "claude_code", params=params, summarizer=RecordedSummarizer())
    _, replay = survival.analyse_replay(res, conv.messages)
    data = replay.as_dict()
    assert data["compactions_count"] == 1
    for kind in ("paths", "commands", "numbers", "urls"):
        assert data["categories"][kind]["survived"] == original[kind]["survived"], kind
