"""QwenPaw's, CoPaw's, BaseAgent's and CowAgent's summary inputs are made again when read from the
messages they formatted (``stages.remade_input``) instead of being kept packed
(``summary_input``): each read equals the text the summariser was given at the call, on a
realistic transcript (multibyte text, long tool outputs, offloads, re-truncations) and on
real sessions joined, and a pickled record carries that text."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run
from ctxlab.engine.stages.remade_input import RemadeInput
from ctxlab.engine.synth import realistic as synth_realistic
from tests.engine.summarize.test_lazy_summary_input import EagerCapture

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


@functools.cache
def _conversation(kind: str) -> Conversation:
    if kind == "realistic":  # multibyte text, long tool outputs, offloads, re-truncations
        return synth_realistic.realistic_bench_conversation(CORPUS, messages=2_000, seed=5)
    return synth.bench_conversation(CORPUS, messages=1_500, seed=1)  # real sessions joined


@pytest.mark.parametrize("kind", ["realistic", "corpus"])
@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("qwenpaw", {"max_input_length": 20_000}),
        ("qwenpaw", {"max_input_length": 20_000, "compact_with_thinking_block": False}),
        ("copaw", {"max_input_length": 20_000}),
        ("baseagent", {"model_context_limit": 40_000, "output_token_max": 4_000}),
        ("cowagent", {}),
    ],
)
def test_remade_inputs_read_as_given(kind: str, name: str, params: dict[str, object]) -> None:
    capture = EagerCapture()
    result = run(_conversation(kind), name, params=params, summarizer=capture)
    assert len(capture.inputs) >= 3, "the strategy summarises several times here"
    # the fast path is the one taken (the record keeps the function, not packed parts)
    assert all(isinstance(s.__dict__["_input"], RemadeInput) for s in result.summaries)
    assert [s.input for s in result.summaries] == capture.inputs
    assert [s.input for s in result.summaries] == capture.inputs  # every read, not the first
    for record in result.summaries[:5]:
        again = pickle.loads(pickle.dumps(record))
        assert type(again.__dict__["_input"]) is str  # the text travels, not the messages
        assert again == record


def test_remade_input_renders_at_each_read_and_pickles_as_text() -> None:
    calls: list[int] = []

    def render(a: str, b: int) -> str:
        calls.append(b)
        return a * b

    remade = RemadeInput(render, "ab", 3)
    assert remade() == "ababab" and remade() == "ababab"
    assert calls == [3, 3]
    assert pickle.loads(pickle.dumps(remade)) == "ababab"
