"""Aider's summary sources held as runs (``SourceIndexes``) give the same replay as the
listed tuples they replaced: every summary's ``messages`` (each repeating the sources of the
summaries before it), events, steps and inputs, on corpus transcripts and a long synthetic
one where summaries of summaries chain."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import cli, synth
from ctxlab.engine.core.records import ReplayResult, SourceIndexes
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import aider

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


class _Listed:
    """What ``summarize_all`` built before: every source listed in one tuple."""

    @staticmethod
    def join(parts: Iterable[int | Sequence[int]]) -> tuple[int, ...]:
        return tuple(
            itertools.chain.from_iterable((p,) if isinstance(p, int) else p for p in parts)
        )


def _outcome(result: ReplayResult) -> list[Any]:
    return [
        result.steps,
        result.events,
        [(s.id, s.step, s.input, s.output, s.error, tuple(s.messages)) for s in result.summaries],
        result.findings,
        result.metrics,
    ]


@pytest.mark.parametrize(
    ("source", "params"),
    [
        ("aider/aider-example-complex-change.md", {"max_chat_history_tokens": 300}),
        ("claude-code/sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl", None),
        (
            "codex-rollout/agentcmd-rollout-2025-09-24T19-22-20-"
            "01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
            {"max_chat_history_tokens": 300},
        ),
        ("openai-chat/taubench-gpt-4o-airline.json", {"max_chat_history_tokens": 300}),
        ("synthetic-900", {"max_input_tokens": 32_000}),
    ],
)
def test_runs_replay_as_the_listed_sources(
    source: str, params: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if source.startswith("synthetic"):
        conversation = synth.bench_conversation(CORPUS, messages=900, seed=3)
    else:
        conversation = cli.load_file(CORPUS / source)
    held = run(conversation, "aider", params=params)
    monkeypatch.setattr(aider, "SourceIndexes", _Listed)
    listed = run(conversation, "aider", params=params)
    assert len(listed.summaries) >= 2, "the case should chain summaries"
    assert all(isinstance(s.messages, tuple) for s in listed.summaries)
    assert all(isinstance(s.messages, SourceIndexes) for s in held.summaries)
    assert _outcome(held) == _outcome(listed)
    # chained: each later summary repeats the sources of the one it summarised again
    total = sum(len(s.messages) for s in held.summaries)
    assert total > len({i for s in held.summaries for i in s.messages})
    runs = sum(len(s.messages.runs) for s in held.summaries)  # type: ignore[attr-defined]
    assert runs * 4 < total  # held in far less room than listed
