"""langchain_trim's linear path (running sums, only the sources whose items moved) gives the
same replay as the trim_messages port run over the whole history at every call."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from test_perf_golden import digest

from ctxlab.engine import cli, synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.langchain_trim import LangChainTrimStrategy

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

OPTIONS: dict[str, dict[str, Any]] = {
    "recipe": {},
    "small": {"max_tokens": 40},
    "large": {"max_tokens": 20_000},
    "no-start-end": {"max_tokens": 3000, "start_on": None, "end_on": []},
    "end-ai": {"max_tokens": 3000, "end_on": ["ai"], "start_on": ["human", "ai"]},
    "system-in-state": {"max_tokens": 2500, "system_prompt_in_state": True},
    "system-bigger-than-budget": {"max_tokens": 5, "system_prompt_in_state": True},
    "no-system": {"max_tokens": 2500, "include_system": False},
    "first": {"strategy": "first", "include_system": False, "start_on": None,
              "max_tokens": 6000},
    "first-end-any": {"strategy": "first", "include_system": False, "start_on": None,
                      "end_on": [], "max_tokens": 9000},
    "anthropic-format": {"max_tokens": 3000, "message_format": "anthropic"},
    "chars-per-token": {"max_tokens": 900, "chars_per_token": 1.5},
}  # fmt: skip


@functools.cache
def _conversation(name: str) -> Conversation:
    if name == "joined":
        return synth.bench_conversation(CORPUS, messages=700, seed=2)
    return cli.load_file(CORPUS / "claude-code" / "agentcmd-full-session.jsonl")


def _both(conversation: Conversation, params: dict[str, Any]) -> tuple[str, str, int]:
    linear = run(conversation, "langchain_trim", params=params)
    LangChainTrimStrategy._force_general = True
    try:
        general = run(conversation, "langchain_trim", params=params)
    finally:
        LangChainTrimStrategy._force_general = False
    return digest(linear), digest(general), len(general.events)


@pytest.mark.parametrize("source", ["joined", "claude-code"])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_linear_path_replays_identically(source: str, name: str) -> None:
    linear, general, _ = _both(_conversation(source), OPTIONS[name])
    assert linear == general


def test_the_comparison_covers_trims_partial_views_and_restores() -> None:
    """The cases above are not vacuous: messages are dropped, shown in part (one source
    message -> several LangChain messages) and brought back."""
    kinds = set()
    for name in ("recipe", "no-start-end", "end-ai"):
        kinds |= {e.kind for e in run(_conversation("joined"), "langchain_trim",
                                      params=OPTIONS[name]).events}  # fmt: skip
    assert {"trim", "trim_partial", "restore_request"} <= kinds, kinds
