"""bench real's scaling ratio keeps the fastest of SCALING_RUNS replays of each strategy it is
given (best_times); any other keeps its single first run."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.benchmarks import real
from ctxlab.engine import synth

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def test_best_times_replays_only_the_strategies_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conversation = synth.bench_conversation(CORPUS, messages=300, seed=1)
    replayed: list[str] = []
    monkeypatch.setattr(real, "replay_run", lambda c, name: replayed.append(name))
    first = {"reference": 1.0, "observation_masking": 4.0, "langchain_trim": 1e9}
    best = real.best_times(conversation, ["observation_masking"], first)
    assert replayed == ["observation_masking"] * (real.SCALING_RUNS - 1)
    assert best["observation_masking"] < 4.0  # a replay that does nothing is faster
    assert best["langchain_trim"] == 1e9 and best["reference"] == 1.0
    assert first["observation_masking"] == 4.0  # the first run's figures are left alone


def test_best_times_never_exceeds_the_first_run() -> None:
    conversation = synth.bench_conversation(CORPUS, messages=300, seed=1)
    first = real.replay_times(conversation, ["observation_masking"])
    best = real.best_times(conversation, ["observation_masking"], first)
    assert 0 < best["observation_masking"] <= first["observation_masking"]
