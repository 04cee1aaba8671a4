"""JSONL is read line by line (issue 15, import memory): same lines, offsets and warnings as a
whole-file pass."""

from __future__ import annotations

import json

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, TranscriptError
from ctxlab.engine.importers._common import _lines


@pytest.mark.parametrize(
    "data",
    [b"", b"a", b"a\n", b"\n\n", b"a\r\nbb\r\n\r\nccc", b'{"x":1}\n{"y":2}\n'],
)
def test_lines_are_split_lines_with_their_byte_offsets(data: bytes) -> None:
    expected, offset = [], 0
    for line in data.split(b"\n"):
        expected.append((offset, line))
        offset += len(line) + 1
    assert list(_lines(data)) == expected


def test_chat_jsonl_keeps_whole_file_warning_order_and_line_numbers() -> None:
    # Line 2 has tool-call arguments that are not JSON (a conversion warning), line 3 is not
    # a chat message (a skip): a whole-file pass reported the skip first.
    lines = [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{x"}}
            ],
        },
        {"note": "not a message"},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    parsed = importers.parse(data, name="chat.jsonl", format="openai-chat")
    messages = parsed.conversations[0].messages
    assert [m.source.line for m in messages] == [1, 2, 4]
    assert messages[2].blocks[0].kind is BlockKind.TOOL_RESULT
    texts = [w.message for w in parsed.warnings]
    skipped = texts.index("skipped a line that is not a chat message")
    bad_arguments = next(i for i, t in enumerate(texts) if "not valid JSON" in t)
    assert skipped < bad_arguments
    assert parsed.warnings[skipped].where == "line 3"


def test_chat_jsonl_bad_line_after_many_messages_is_still_an_error() -> None:
    good = "".join(json.dumps({"role": "user", "content": f"m{i}"}) + "\n" for i in range(50))
    with pytest.raises(TranscriptError) as caught:
        importers.parse((good + "{broken\n").encode(), name="c.jsonl", format="openai-chat")
    assert caught.value.line == 51
