"""Performance guard rail: every preset's complete replay output is pinned.

The digests below were recorded before the replay performance work (bench, issue 4) and
must never change from a speed-up: they hash every step (tokens, zones, context ranges,
summary id, pending), every event (kind, messages, tokens, detail, each change with the
modified message), every summary (input, output, usage), every finding, every offloaded
file and the metrics. A change in behaviour breaks the digest; the readable numbers next
to it say roughly where.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from builders import SMALL_WINDOWS as SMALL

from ctxlab.engine import cli, synth
from ctxlab.engine.model import Conversation
from ctxlab.engine.records import ReplayResult
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
    'mid-qwenpaw': (589, 86, 3, 0, '36d23da8a3bb02c1a03f60f178335d7b24e4bfe83e2659ab12c06041c5faf117'),
    'mid-copaw': (589, 5, 5, 27, '425c78588af38effe5dc5415d724942fb225f1495060be92468044d6ad618c39'),
    'mid-copaw-toolcompact': (589, 231, 14, 151, '31039082d078a11733bedb5b57ebec5726d72761e141db752ceab8d0bf1367dc'),
    'mid-copaw-bytes4': (589, 19, 19, 175, '9ed4df963d81e3eb264bff365f0fe999dcc4107628783ac65cfe03a814668d94'),
    'mid-cowagent': (589, 45, 13, 0, 'ee5cf1d64f929adcf51be8733dfc4b610a98baf24e33bfcc5a82a5871cb608c3'),
    'mid-cowagent-small': (589, 93, 34, 3, 'ca75cc4a47e1106148f6b694fbc32691e2fc21d1c43dde058abf149a5908a4ba'),
    'mid-picoclaw': (589, 63, 94, 0, '34df8975e540ab55610593fc5aa242d8defc207eb42fac06e634ac783807b620'),
    'mid-baseagent': (589, 19, 2, 6, 'acc14ecde0192b8c0f7fe6973a5d584166e14a486d997a69ae20df7eb96f83a6'),
    'mid-baseagent-small': (589, 25, 16, 107, '6b4795a8ee38d3337977d8d14f02e40bcf1a67baea695ace707f3f1c1887c98b'),
    'mid-custom': (589, 143, 10, 53, '320a16ebf083160ed802a227a5852079795fa2b5ea9676b753b16a0b6766bab6'),
    'cc-qwenpaw-small': (10, 2, 2, 5, '65c25d508b4b997151b581c2f3b56b32bc67fc23cc5ff695146ad507187fc800'),
    'cc-copaw-small': (10, 2, 2, 5, 'e589ac6c764fd07f958fc26a41b35b29d0985d775803439aae1856a2cf462ea2'),
    'cc-cowagent-small': (10, 0, 0, 0, 'ef8a54a2442b892601ce30d9a202ddff55d11f2e84f31e0cc4b515eab39234bd'),
    'cc-picoclaw-small': (10, 0, 0, 5, '87612a8b6847da0bd04c33caab989a84ce5b953fb616c47168a9320f9c7b7cc5'),
    'cc-baseagent-small': (10, 1, 1, 4, '6741dba2dbb7209e52d66ad14328532ce9cf3ccce2544c9f55b577c1cb87bb57'),
}  # fmt: skip


@functools.cache
def _conversation(name: str) -> Conversation:
    if name == "mid":
        return synth.bench_conversation(CORPUS, messages=MID_MESSAGES, seed=0)
    return cli.load_file(CORPUS / "claude-code" / "agentcmd-full-session.jsonl")


# Fields added after the pins were recorded: left out at their default so the pins hold.
LATER_FIELDS = {("Zones", "unseen"): 0}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value).__name__
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if LATER_FIELDS.get((kind, f.name), ...) != getattr(value, f.name)
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    return value


def digest(result: ReplayResult) -> str:
    """sha256 of the whole result (steps, events, summaries, findings, offloads, metrics)."""
    h = hashlib.sha256()
    for part in (result.steps, result.events, result.summaries, result.findings):
        for item in part:
            h.update(json.dumps(_plain(item), sort_keys=True, ensure_ascii=False).encode())
            h.update(b"\n")
    h.update(json.dumps(_plain(result.offloads), sort_keys=True, ensure_ascii=False).encode())
    h.update(json.dumps(_plain(result.metrics), sort_keys=True, ensure_ascii=False).encode())
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
