"""``agentscope.clipped_input`` (a parsed tool input written only as far as the summariser
input's cut) equals ``block.input_json`` cut at the limit plus "...", on the corpus, a
realistic transcript's calls, edge values and generated JSON values."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind
from ctxlab.engine.stages import agentscope
from ctxlab.engine.synth import realistic as synth_realistic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
LIMITS = (1, 2, 3, 7, 64, 1000, 2000)


def expected(block: Block, limit: int) -> str:
    raw = block.input_json
    return raw[:limit] + "..." if len(raw) > limit else raw


def call(value: Any) -> Block:
    return Block(BlockKind.TOOL_USE, tool_id="t", tool_name="x", tool_input=value)


@cache
def _calls() -> list[Block]:
    out: list[Block] = []
    conversations = [*synth.corpus_conversations(CORPUS)]
    conversations.append(synth_realistic.realistic_bench_conversation(CORPUS, messages=3000))
    for conversation in conversations:
        for message in conversation.messages:
            out.extend(b for b in message.blocks if b.kind is BlockKind.TOOL_USE)
    return out


def test_real_calls_equal_the_dump_cut() -> None:
    calls = _calls()
    long = [b for b in calls if len(b.input_json) > 2000]
    assert len(calls) > 1000 and len(long) > 20
    for block in calls:
        for limit in LIMITS:
            assert agentscope.clipped_input(block, limit) == expected(block, limit)


EDGES: list[Any] = [
    {},
    [],
    {"a": ""},
    {'é\n"\\': "ü\u2028\x00\t" * 700},
    {"nested": [{"k": [1, 2.5, -0.0, 1e300, True, False, None]}] * 300},
    {"n": math.nan, "i": math.inf, "m": -math.inf, "big": 10**30},
    ["x" * 5000, {"y": "z" * 5000}],
    "a raw string input\n" * 200,
    12,
    None,
    {"surrogate": "\ud800 lone" * 600},
]


@pytest.mark.parametrize("value", EDGES, ids=range(len(EDGES)))
def test_edge_values(value: Any) -> None:
    for limit in LIMITS:
        assert agentscope.clipped_input(call(value), limit) == expected(call(value), limit)


@pytest.mark.parametrize("value", [{1: "int key"}, [("tuple",)]])
def test_a_value_json_does_not_parse_to_is_dumped_whole(value: Any) -> None:
    block = call(value)
    assert agentscope._json_head(value, 10) is None
    assert agentscope.clipped_input(block, 3) == expected(block, 3)


@pytest.mark.parametrize("value", [{"a": object()}, {"set": {1, 2}}, [1, {2}], {"c": 1.5j}])
def test_an_unserialisable_value_fails_as_the_dump_does(value: Any) -> None:
    with pytest.raises(TypeError):
        agentscope.clipped_input(call(value), 1000)


def test_only_the_kept_part_of_a_long_string_is_written() -> None:
    head = agentscope._json_head({"content": "x" * 1_000_000, "after": 1}, 1000)
    assert head is not None and 1000 < len(head) < 1100
    assert json.dumps({"content": "x" * 1_000_000, "after": 1}).startswith(head)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(json_values, st.integers(min_value=1, max_value=300))
def test_generated_values(value: Any, limit: int) -> None:
    block = call(value)
    assert agentscope.clipped_input(block, limit) == expected(block, limit)
