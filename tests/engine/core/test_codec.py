from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine.core import codec
from ctxlab.engine.core.model import (
    Block,
    BlockKind,
    Conversation,
    ImportWarning,
    Message,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    ToolDef,
    Usage,
)


def through_json(data: object) -> object:
    return json.loads(json.dumps(data))


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        pytest.param(Block(BlockKind.TEXT), {"kind": "text"}, id="empty-text"),
        pytest.param(Block(BlockKind.TEXT, text="hi"), {"kind": "text", "text": "hi"}, id="text"),
        pytest.param(
            Block(BlockKind.TOOL_USE, tool_id="t1", tool_name="ls", tool_input={"a": 1}),
            {
                "kind": "tool_use",
                "tool_id": "t1",
                "tool_name": "ls",
                "tool_input": {"a": 1},
            },
            id="tool-use",
        ),
        pytest.param(
            Block(BlockKind.TOOL_USE, tool_input=0),
            {"kind": "tool_use", "tool_input": 0},
            id="falsy-tool-input-kept",
        ),
        pytest.param(
            Block(BlockKind.TOOL_USE, tool_input=""),
            {"kind": "tool_use", "tool_input": ""},
            id="empty-string-tool-input-kept",
        ),
        pytest.param(
            Block(BlockKind.TOOL_RESULT, tool_id="t1", is_error=True, text="boom"),
            {"kind": "tool_result", "tool_id": "t1", "is_error": True, "text": "boom"},
            id="error-result",
        ),
        pytest.param(
            Block(BlockKind.OPAQUE, raw_type="redacted_thinking", size=123),
            {"kind": "opaque", "raw_type": "redacted_thinking", "size": 123},
            id="opaque",
        ),
    ],
)
def test_block_to_dict_omits_defaults(block: Block, expected: dict[str, object]) -> None:
    assert codec.block_to_dict(block) == expected
    assert codec.block_from_dict(through_json(expected)) == block  # type: ignore[arg-type]


def test_block_parts_round_trip() -> None:
    block = Block(
        BlockKind.TOOL_RESULT,
        tool_id="t",
        text="a\nimg",
        parts=(
            Block(BlockKind.TEXT, text="a"),
            Block(BlockKind.MEDIA, media_type="image/png", size=9),
        ),
    )
    assert codec.block_from_dict(through_json(codec.block_to_dict(block))) == block  # type: ignore[arg-type]


def test_message_to_dict_minimal() -> None:
    message = Message(Role.USER, (Block(BlockKind.TEXT, text="q"),))
    assert codec.message_to_dict(message) == {
        "role": "user",
        "blocks": [{"kind": "text", "text": "q"}],
    }


def test_message_usage_none_differs_from_zero_usage() -> None:
    without = Message(Role.ASSISTANT, ())
    zero = Message(Role.ASSISTANT, (), usage=Usage())
    assert codec.message_from_dict(codec.message_to_dict(without)).usage is None
    assert codec.message_from_dict(codec.message_to_dict(zero)).usage == Usage()


# Property: every field of every value survives a JSON round trip.

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
short = st.text(max_size=6)
opt_int = st.none() | st.integers(min_value=0, max_value=10**9)


def blocks(depth: int = 1) -> st.SearchStrategy[Block]:
    parts = st.just(()) if depth == 0 else st.lists(blocks(depth - 1), max_size=2).map(tuple)
    return st.builds(
        Block,
        kind=st.sampled_from(BlockKind),
        text=short,
        tool_id=short,
        tool_name=short,
        tool_input=json_values,
        is_error=st.booleans(),
        media_type=short,
        size=st.integers(min_value=0, max_value=10**9),
        raw_type=short,
        parts=parts,
    )


sources = st.builds(SourcePos, file=short, line=opt_int, record=opt_int)
usages = st.builds(
    Usage,
    input_uncached=st.integers(0, 10**7),
    cache_read=st.integers(0, 10**7),
    cache_write_5m=st.integers(0, 10**7),
    cache_write_1h=st.integers(0, 10**7),
    output=st.integers(0, 10**7),
    reasoning=st.integers(0, 10**7),
    convention=short,
)
messages = st.builds(
    Message,
    role=st.sampled_from(Role),
    blocks=st.lists(blocks(), max_size=3).map(tuple),
    source=sources,
    timestamp=st.none() | short,
    model=short,
    usage=st.none() | usages,
    id=short,
    name=short,
    flags=st.frozensets(short, max_size=3),
)
conversations = st.builds(
    Conversation,
    id=short,
    title=short,
    messages=st.lists(messages, max_size=4).map(tuple),
    tools=st.lists(
        st.builds(ToolDef, name=short, description=short, parameters=json_values),
        max_size=2,
    ).map(tuple),
    parent_id=st.none() | short,
    compactions=st.lists(
        st.builds(
            OriginalCompaction,
            before_index=st.integers(0, 100),
            kind=short,
            trigger=short,
            pre_tokens=opt_int,
            summary_index=opt_int,
            source=sources,
        ),
        max_size=2,
    ).map(tuple),
    model=short,
    metadata=st.lists(st.tuples(short, short), max_size=3).map(tuple),
    usage_convention=short,
)


@settings(max_examples=200)
@given(conversations)
def test_conversation_round_trip_through_json(conversation: Conversation) -> None:
    data = through_json(codec.conversation_to_dict(conversation))
    assert codec.conversation_from_dict(data) == conversation  # type: ignore[arg-type]


@settings(max_examples=50)
@given(
    st.builds(
        ParsedFile,
        format=short,
        conversations=st.lists(conversations, max_size=2).map(tuple),
        warnings=st.lists(
            st.builds(ImportWarning, message=short, where=short, count=st.integers(0, 9)),
            max_size=2,
        ).map(tuple),
    )
)
def test_parsed_file_round_trip_through_json(parsed: ParsedFile) -> None:
    data = through_json(codec.parsed_file_to_dict(parsed))
    assert codec.parsed_file_from_dict(data) == parsed  # type: ignore[arg-type]
