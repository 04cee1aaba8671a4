"""The summary-input encoder leaves out the source messages that cannot occur in the input
(``textstore_candidates``) and writes exactly the pieces it wrote looking for all of them."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import cli, synth
from ctxlab.engine.core.records import SourceIndexes
from ctxlab.engine.replay import run
from replay_app.runs import textstore, textstore_candidates

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
ROLLOUT = (
    "codex-rollout/agentcmd-rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl"
)


def _encode_both(
    monkeypatch: pytest.MonkeyPatch, messages: Any, cases: list[tuple[str, Any]]
) -> tuple[list[Any], list[Any]]:
    monkeypatch.setattr(textstore_candidates, "worthwhile", lambda text, indexes: True)
    writer = textstore.TextWriter(None, messages)  # type: ignore[arg-type]  # encode only
    filtered = [writer.encode(text, indexes) for text, indexes in cases]
    monkeypatch.setattr(textstore_candidates, "worthwhile", lambda text, indexes: False)
    writer = textstore.TextWriter(None, messages)  # type: ignore[arg-type]
    every = [writer.encode(text, indexes) for text, indexes in cases]
    return filtered, every


@pytest.mark.parametrize("source", [ROLLOUT, "synthetic"])
def test_aider_summaries_encode_the_same(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if source == "synthetic":
        conversation = synth.bench_conversation(CORPUS, messages=900, seed=3)
        params: dict[str, Any] = {"max_input_tokens": 32_000}
    else:
        conversation = cli.load_file(CORPUS / source)
        params = {"max_chat_history_tokens": 300}
    result = run(conversation, "aider", params=params)
    cases = [(s.input, s.messages) for s in result.summaries]
    assert any(isinstance(m, SourceIndexes) and len(m) > 50 for _, m in cases)
    filtered, every = _encode_both(monkeypatch, conversation.messages, cases)
    assert filtered == every
    assert any(isinstance(p, list) for pieces in every for p in pieces)  # references found
    prefixes = textstore_candidates.SourcePrefixes(
        conversation.messages, textstore.source_forms, textstore.ANCHOR
    )
    kept = sum(len(prefixes.may_match(text, m)) for text, m in cases)
    assert kept * 3 < sum(len(m) for _, m in cases)  # most indexes never searched


def test_shuffled_repeated_and_shared_starts_encode_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inputs cut from many messages' texts (in any order, some twice, some cut short),
    indexes in any order with repeats and out-of-range ones: the same pieces."""
    conversation = cli.load_file(CORPUS / ROLLOUT)
    messages = conversation.messages
    rng = random.Random(11)
    texts = [
        (i, t)
        for i, m in enumerate(messages)
        for b in m.blocks
        for t in textstore.source_forms(b)
        if len(t) >= textstore.ANCHOR
    ]
    cases: list[tuple[str, Any]] = []
    for _ in range(40):
        picked = rng.sample(texts, 6)
        parts = [t[: rng.randint(40, len(t))] for _, t in picked] + [picked[0][1]]
        text = "\n--\n".join(parts)
        indexes = [i for i, _ in picked] + rng.sample(range(len(messages)), 30) + [-1, 10**6]
        rng.shuffle(indexes)
        cases.append((text, indexes))
        runs = SourceIndexes.join(sorted({i for i in indexes if 0 <= i < len(messages)}))
        cases.append((text, runs))
    filtered, every = _encode_both(monkeypatch, messages, cases)
    assert filtered == every
