"""Performance guard rail: every preset's complete replay output is pinned.

The digests below were recorded before the replay performance work (bench, issue 4) and
must never change from a speed-up: they hash every step (tokens, zones, context ranges,
summary id, pending), every event (kind, messages, tokens, detail, each change with the
modified message), every summary (input, output, usage), every finding, every offloaded
file and the metrics. A change in behaviour breaks the digest; the readable numbers next
to it say roughly where.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from builders import SMALL_WINDOWS as SMALL
from builders import plain

from ctxlab.engine import cli, synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.replay import run

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
MID_MESSAGES = 1200  # ~500K reference tokens: every preset fires with its defaults

CUSTOM = {
    "strategy": "custom",
    "params": {
        "window": 32768,
        "stages": [
            {"stage": "truncate_tool_results", "max_bytes": 2000, "keep_recent": 2},
            {"stage": "drop_oldest_turns", "keep_turns": 6},
            {"stage": "summarise", "keep_tokens": 6000},
        ],
    },
}

# (conversation, strategy spec, params) -> (steps, events, summaries, findings, digest)
CASES: dict[str, tuple[str, Any, dict[str, Any] | None]] = {
    "mid-qwenpaw": ("mid", "qwenpaw", None),
    "mid-copaw": ("mid", "copaw", None),
    "mid-copaw-toolcompact": ("mid", "copaw", {"enable_tool_result_compact": True,
                                               "max_input_length": 32768}),
    "mid-copaw-bytes4": ("mid", "copaw", {"token_counter": "bytes4",
                                          "max_input_length": 32768}),
    "mid-cowagent": ("mid", "cowagent", None),
    "mid-cowagent-small": ("mid", "cowagent", {"agent_max_context_tokens": 20000,
                                               "agent_max_context_turns": 4}),
    "mid-picoclaw": ("mid", "picoclaw", None),
    "mid-baseagent": ("mid", "baseagent", None),
    "mid-baseagent-small": ("mid", "baseagent", {"model_context_limit": 32000,
                                                 "output_token_max": 4000}),
    "mid-custom": ("mid", CUSTOM, None),
    **{f"cc-{p}-small": ("cc", p, SMALL[p]) for p in SMALL},
}  # fmt: skip

GOLDEN: dict[str, tuple[int, int, int, int, str]] = {
    'mid-qwenpaw': (589, 86, 3, 0, '0cdba1231a5df80f2708be6af396c83f5e4e1508ca8046e65b72b63fc1471a36'),
    'mid-copaw': (589, 5, 5, 27, 'ffc83ce80644aaed7192339f29f7826edaf278879477499bc0f6ce32a6815992'),
    'mid-copaw-toolcompact': (589, 231, 14, 151, 'aae67b70ab3daa56d2ff93ae8e391dc35ca41b3da9d4c220b0f83734c1e53b7f'),
    'mid-copaw-bytes4': (589, 19, 19, 177, '584069cc8fabe08ad961f8924b30fd177c2268e706a06694a12398099465cb42'),
    'mid-cowagent': (589, 45, 13, 0, 'a4e2be7254d758a9e300ba2bef1a74c16cea45a7bcad7c23a88b337d8d4eea88'),
    'mid-cowagent-small': (589, 93, 34, 3, 'e9dbcf337aed25c57bc69c46c0b029edc773195f70fb8a938b90f1aa52ffa41b'),
    'mid-picoclaw': (589, 63, 94, 0, '4267d3c41fecc49ae82f464cbeb16c9372f33ec9fa8d4f5d503409abbe6cb2ff'),
    'mid-baseagent': (589, 19, 2, 6, 'a95904d7460bb5c3af38448fb48fb6503715942a7956be30f96e97395bed5e59'),
    'mid-baseagent-small': (589, 25, 16, 107, '919a9a2ba9f6988232a8ae9fbead653c5bb8743ac11d31761cefd282aa5f13a4'),
    'mid-custom': (589, 143, 10, 53, 'b21e3c6d2a9dddec21e27aed80762af89e3c670d4002804a1d89113655d7b223'),
    'cc-qwenpaw-small': (10, 2, 2, 5, 'df2eedc8cfeb2a36ca88ec50df02b2d39a2528a70e9320cc3a6fa99a37d8eac9'),
    'cc-copaw-small': (10, 2, 2, 5, '97a5d6e3b5e45e17ef94ae406eccb3847464699b8be41ecc0e99f138ba11973f'),
    'cc-cowagent-small': (10, 0, 0, 0, 'ef8a54a2442b892601ce30d9a202ddff55d11f2e84f31e0cc4b515eab39234bd'),
    'cc-picoclaw-small': (10, 5, 0, 1, '144ad9b1c6d06663be8ddbab6507a7e01dbed0b33418b373ffe068c758894d92'),
    'cc-baseagent-small': (10, 1, 1, 4, 'f5c1bf7904a6b48db21fb68629026822b45f9c1822abfb86b48557996a29f9fe'),
}  # fmt: skip


@functools.cache
def _conversation(name: str) -> Conversation:
    if name == "mid":
        return synth.bench_conversation(CORPUS, messages=MID_MESSAGES, seed=0)
    return cli.load_file(CORPUS / "claude-code" / "agentcmd-full-session.jsonl")


# Fields added after the pins were recorded: left out at their default so the pins hold.
LATER_FIELDS = {("Zones", "unseen"): 0, ("Zones", "not_in_file"): 0, ("Block", "data"): ""}
# Metrics added after the pins, each a function of the pinned steps (checked against them in
# the test below, so leaving them out of the digest hides nothing).
LATER_METRICS = ("overflow_steps_strategy",)


def _plain(value: Any) -> Any:
    return plain(value, later_fields=LATER_FIELDS)


def digest(result: ReplayResult) -> str:
    """sha256 of the whole result (steps, events, summaries, findings, offloads, metrics)."""
    h = hashlib.sha256()
    for part in (result.steps, result.events, result.summaries, result.findings):
        for item in part:
            h.update(json.dumps(_plain(item), sort_keys=True, ensure_ascii=False).encode())
            h.update(b"\n")
    h.update(json.dumps(_plain(result.offloads), sort_keys=True, ensure_ascii=False).encode())
    metrics = {k: v for k, v in result.metrics.items() if k not in LATER_METRICS}
    h.update(json.dumps(_plain(metrics), sort_keys=True, ensure_ascii=False).encode())
    h.update(json.dumps([result.strategy, result.estimator, _plain(result.params)]).encode())
    return h.hexdigest()


def summary(result: ReplayResult) -> tuple[int, int, int, int, str]:
    return (
        len(result.steps),
        len(result.events),
        len(result.summaries),
        len(result.findings),
        digest(result),
    )


@pytest.mark.parametrize("case", list(CASES))
def test_perf_golden_replay_unchanged(case: str) -> None:
    conv, spec, params = CASES[case]
    result = run(_conversation(conv), spec, params=params)
    assert result.steps, "the golden transcripts have inference steps"
    assert summary(result) == GOLDEN[case]
    over = [s for s in result.steps if s.zones.window and s.tokens.strategy > s.zones.window]
    assert result.metrics["overflow_steps_strategy"] == len(over)
