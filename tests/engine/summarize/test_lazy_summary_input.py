"""A summary record's input is rendered when read (``SummaryRecord.input`` given as a
function: see ``summary_input``): every summarising strategy's records must read the
exact text the summariser was given, as the eager rendering made it at the call."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.packed import PACK_CHARS
from ctxlab.engine.core.summary_input import PackedInput
from ctxlab.engine.core.summary_request import (
    MaterialItem,
    PromptMessage,
    SummaryRequest,
    SummaryResponse,
)
from ctxlab.engine.replay import Replay, run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.summarize.offline import OfflineSummarizer
from ctxlab.engine.synth import realistic as synth_realistic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
# Every strategy of the library that calls a summariser with its defaults on these.
SUMMARISING = ("qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent", "codex", "opencode",
               "claude_code", "complexity_trap_summary", "aider", "gemini_cli", "cline",
               "openhands_condenser", "anthropic_server_compaction", "crush",
               "deepagents_summarization")  # fmt: skip


class EagerCapture:
    """The offline summariser, keeping each request's input rendered at the call."""

    def __init__(self) -> None:
        self.inner = OfflineSummarizer()
        self.name = self.inner.name
        self.inputs: list[str] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.inputs.append(request.input_text())
        return self.inner.summarize(request)


@functools.cache
def _conversation(kind: str) -> Conversation:
    if kind == "realistic":  # multibyte text, long tool outputs: a few compactions each
        return synth_realistic.realistic_bench_conversation(CORPUS, messages=1_500, seed=3)
    return synth.bench_conversation(CORPUS, messages=1_200, seed=0)  # real sessions joined


def test_every_summarising_strategy_is_checked() -> None:
    assert set(SUMMARISING) <= {n for n in LIBRARY if n in STRATEGIES}


@pytest.mark.parametrize("name", SUMMARISING)
def test_summary_input_read_equals_eager_rendering(name: str) -> None:
    calls = 0
    for kind in ("realistic", "corpus"):
        capture = EagerCapture()
        result = run(_conversation(kind), name, summarizer=capture)
        assert [s.input for s in result.summaries] == capture.inputs, kind
        for record in result.summaries:
            assert isinstance(record.input, str)
            assert pickle.loads(pickle.dumps(record)) == record
        calls += len(capture.inputs)
    assert calls, "the strategy summarises on these transcripts"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "short é",
        "x" * PACK_CHARS,  # packed from this length on
        ("tool output line 😀\n" * 4_000) + "\ud800 lone surrogate",
        "中文" * PACK_CHARS,
    ],
)
def test_packed_input_renders_the_request_exactly(text: str) -> None:
    request = SummaryRequest(
        "s", text, (PromptMessage("user", text), PromptMessage("assistant", "ok " + text))
    )
    packed = PackedInput(request)
    assert packed() == request.input_text()
    assert pickle.loads(pickle.dumps(packed))() == request.input_text()
    if len(text) >= PACK_CHARS:  # kept compressed, several times smaller than the text
        kept = packed.__getstate__()[2][0][1]
        assert isinstance(kept, bytes) and len(kept) * 3 < len(text)


def test_a_text_the_replay_keeps_is_kept_as_it_is() -> None:
    """A part that is one of the texts the replay holds anyway (``held``: a summarised
    message's block text) is not compressed again; the rendering is the same."""
    long = "tool output line\n" * 1_000
    made = "made for the call " + long
    request = SummaryRequest("s", "system", (PromptMessage("user", long),
                                             PromptMessage("user", made)))  # fmt: skip
    packed = PackedInput(request, {id(long)})
    parts = packed.__getstate__()[2]
    assert parts[0][1] is long
    assert isinstance(parts[1][1], bytes)
    assert packed() == request.input_text()


def test_crush_keeps_its_summarised_messages_texts_by_reference() -> None:
    result = run(_conversation("realistic"), "crush")
    conversation = _conversation("realistic")
    originals = {id(b.text) for m in conversation.messages for b in m.blocks}
    kept = [
        part
        for record in result.summaries
        for _, part in record.__dict__["_input"].__getstate__()[2]  # (the PackedInput)
        if isinstance(part, str) and len(part) >= PACK_CHARS
    ]
    assert result.summaries and kept
    assert all(id(part) in originals for part in kept)


def test_the_texts_held_are_read_from_the_material_not_the_summarised_messages() -> None:
    """A summary of summaries names every source behind it (Aider: millions): the texts
    kept as they are come from the messages the call reads, its material."""
    conversation = _conversation("corpus")
    ctx = Replay(conversation, "crush").ctx
    read = [i for i, m in enumerate(conversation.messages) if m.text][:3]
    material = tuple(MaterialItem("user", conversation.messages[i].text, i) for i in read)
    request = SummaryRequest("s", "system", (), material=material)
    expected = {id(b.text) for i in read for b in conversation.messages[i].blocks}
    assert ctx._held_texts(request) == expected
