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
    'mid-qwenpaw': (589, 86, 3, 0, 'c55c570505c7de0a7177d489220b90cab763d87985ee35ce4ed84fcd83c453a5'),
    'mid-copaw': (589, 5, 5, 27, '3704896c503cccc6fed33f4ae1304d2da8dca1675bd1cffa254975316fad9c1a'),
    'mid-copaw-toolcompact': (589, 231, 14, 151, 'cc86925f59594e33c58a94ca7ab596077e3547db5af1a1b3126f36187f8910e6'),
    'mid-copaw-bytes4': (589, 19, 19, 175, '11a504a59fd97a0d630fb5f87e75cb491d5787d50c0d9503f1c7c1a51eccf48a'),
    'mid-cowagent': (589, 45, 13, 0, '368182bc122e341fee18202d25e07d85944a93112573d4e3f83f5fc87dc65c6e'),
    'mid-cowagent-small': (589, 93, 34, 2, 'f0e6a778d163200c743c2a2b419bcb5bf2060d7069c9f490746316872c286a24'),
    'mid-picoclaw': (589, 63, 94, 0, '97a3ecf499d0d336627505240a910edac014893a8317773c2b5609cb3dcad717'),
    'mid-baseagent': (589, 19, 2, 6, 'e6764bb16c3d9c9055f06e8a8697dada42de5b4b40a438ee3cc28dbcaf3862bf'),
    'mid-baseagent-small': (589, 25, 16, 107, '2c52fa6aa327c8773f886b8eeaca4781aadf55f59298e66f94c480fd35914ed2'),
    'mid-custom': (589, 143, 10, 53, '5dde3d758d518fb1250a8ad5179a7dba63fee16d69118cdabdde6a007045e058'),
    'cc-qwenpaw-small': (10, 2, 2, 5, 'bb7605fd73adf21bd793efc5408a2a1c18bfc7b583c3dc986f3282c9250ab4ef'),
    'cc-copaw-small': (10, 2, 2, 5, 'e97902a59ef0a60f60929ecd1334b74fa54ac19d5b1ff900755cbd6bb2c59921'),
    'cc-cowagent-small': (10, 0, 0, 0, 'ef8a54a2442b892601ce30d9a202ddff55d11f2e84f31e0cc4b515eab39234bd'),
    'cc-picoclaw-small': (10, 5, 0, 1, '144ad9b1c6d06663be8ddbab6507a7e01dbed0b33418b373ffe068c758894d92'),
    'cc-baseagent-small': (10, 1, 1, 4, '91691bb93b4d67fac4b2fd8ef5e0a4203d7537f16eb0d1300c1dd24ce3676757'),
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
