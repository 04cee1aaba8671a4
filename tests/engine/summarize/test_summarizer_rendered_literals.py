"""BaseAgent renders tool-call arguments as Python ``str(dict)``; the offline summariser
decodes them again. ``remember_literal`` lets it look the value up instead of parsing:
the lookup must give exactly what ``ast.literal_eval`` gives (or the raw text where that
fails), on every corpus tool input and on values built to break the round trip, and a
BaseAgent replay's summaries must not change."""

from __future__ import annotations

import ast
import gc
import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import BlockMemo
from ctxlab.engine.evaluate.extract import input_strings
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _baseagent_rules
from ctxlab.engine.summarize import offline

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _parsed(text: str) -> Any:
    """What ``_call_args`` answered before the lookup existed."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if text.startswith("{") and len(text) <= offline.LITERAL_MAX:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return text


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x"}
    for _ in range(depth):
        value = {"k": value}
    return value


class _Owner:
    """Stands for the block a text was rendered from (weakly referenced)."""


class _Str(str):
    def __repr__(self) -> str:
        return "'changed'"


# Values whose rendering literal_eval does not read back equal (or too long / too deep):
# never kept, decoded as before.
REFUSED: list[Any] = [
    {"a": float("inf")},
    {"a": float("nan")},
    {1: "int key"},
    {("t",): "tuple key"},
    {"t": ("a", "b")},
    {"set": {"a"}},
    {"s": _Str("original")},
    {"long": "x" * (offline.LITERAL_MAX + 10)},
    _deep(80),
]
BUILT: list[Any] = [
    {},
    {"a": -0.0, "b": 1e300, "c": 10**30, "d": True, "e": None},
    {"q": "it's", "r": 'say "hi"', "s": "both ' and \"", "t": "back\\slash\n\t\x07"},
    {"cjk": "决定 ✓ 😀", "surrogate": "\ud800"},
    _deep(45),
    _deep(300),
    {"argv": ["bash", "-lc", "cd x && ls"], "nested": [{"path": "/a/b.py"}, [1, 2.5]]},
    *REFUSED,
]


def _corpus_inputs() -> list[Any]:
    out: list[Any] = []
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            out.extend(
                b.tool_input
                for b in message.blocks
                if b.kind.value == "tool_use" and not isinstance(b.tool_input, str)
            )
    return out


@pytest.fixture
def fresh_literals():  # type: ignore[no-untyped-def]
    offline._RENDERED.clear()
    yield
    offline._RENDERED.clear()


@pytest.mark.usefixtures("fresh_literals")
def test_lookup_answers_what_a_parse_answers() -> None:
    values = _corpus_inputs()
    assert len(values) > 200
    looked_up = 0
    owner = _Owner()
    for value in values + BUILT:
        text = str(value)
        offline.remember_literal(text, value, owner)
        looked_up += offline._RENDERED.get(text) is not None
        got = offline._call_args(text)
        expected = _parsed(text)
        if isinstance(expected, float) or isinstance(got, float):
            continue  # never at the top level: the texts are dicts
        assert type(got) is type(expected), text[:200]
        assert got == expected or got is text, text[:200]
        assert list(input_strings(got)) == list(input_strings(expected)), text[:200]
    assert looked_up > 200  # the corpus's inputs were answered by the lookup


@pytest.mark.usefixtures("fresh_literals")
def test_values_that_do_not_read_back_are_not_kept() -> None:
    owner = _Owner()
    for value in REFUSED:
        offline.remember_literal(str(value), value, owner)
        assert offline._RENDERED.get(str(value)) is None, str(value)[:80]
    # what is refused is still decoded as before: inf/nan are no literal (raw text)
    assert offline._call_args(str({"a": float("inf")})) == "{'a': inf}"
    assert offline._call_args(str(_deep(45))) == _deep(45)


def test_baseagent_summaries_unchanged_without_the_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    conversation = max(synth.corpus_conversations(CORPUS), key=lambda c: len(c.messages))
    params = {"model_context_limit": 8000, "output_token_max": 1000}
    offline._RENDERED.clear()
    with_lookup = run(conversation, "baseagent", params=params)
    assert len(offline._RENDERED) > 0
    offline._RENDERED.clear()
    monkeypatch.setattr(_baseagent_rules, "remember_literal", lambda text, value, owner: None)
    monkeypatch.setattr(_baseagent_rules, "_ARGUMENTS", BlockMemo())
    without = run(conversation, "baseagent", params=params)
    assert len(offline._RENDERED) == 0
    assert with_lookup.summaries  # the replay did summarise
    assert [(s.input, s.output) for s in with_lookup.summaries] == [
        (s.input, s.output) for s in without.summaries
    ]


@pytest.mark.usefixtures("fresh_literals")
def test_an_entry_goes_with_the_block_it_was_rendered_from() -> None:
    first, second = _Owner(), _Owner()
    value, again = {"path": "/a/b.py"}, {"path": "/a/b.py"}
    offline.remember_literal(str(value), value, first)
    offline.remember_literal(str(again), again, second)  # another block, same text
    del first
    gc.collect()
    assert offline._RENDERED.get(str(value)) is again  # the other block's entry stays
    del second
    gc.collect()
    assert str(value) not in offline._RENDERED
    assert offline._call_args(str(value)) == value  # parsed again


def _parses(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def test_a_text_refused_unparsed_does_not_parse() -> None:
    # every corpus input and built value, whole and cut short (the summariser scans only a
    # message's head: a long call's line is cut), and endings the parser skips after "}"
    texts = [str(v) for v in _corpus_inputs() + BUILT]
    texts += [t[:cut] for t in texts for cut in (1, len(t) // 2, len(t) - 1)]
    texts += [
        "{'a': 1}" + tail
        for tail in (" # note", "\t", "\f", "\r", " \\\n ", "\\", "}", ")", " x", "\x0b")
    ]
    refused = 0
    for text in texts:
        if not text.startswith("{") or offline._may_be_literal(text):
            continue
        refused += 1
        assert not _parses(text), text[:200]
        assert offline._call_args(text) is text
    assert refused > 200
    assert offline._may_be_literal("{'a': 1} \\\n ") and _parses("{'a': 1} \\\n ")
    assert offline._may_be_literal("{'a': 1} # note") and _parses("{'a': 1} # note")
