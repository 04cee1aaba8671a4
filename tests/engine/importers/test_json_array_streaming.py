"""Issue 32, item 3: a whole-file JSON array (OpenAI chat messages, ShareGPT records,
OpenHands events) is read one item at a time with ijson, and gives exactly what parsing it
whole gives; a file the whole-file reader reads differently (notes, errors) is still
parsed whole. The memory
figures are ``manage.py bench --only import_memory``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_streamed_import import assembled

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError
from ctxlab.engine.importers import _json_stream, openai_chat, openhands, sharegpt

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CHAT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "read the log"},
    {"role": "assistant", "content": None, "model": "gpt-4o", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{x"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "1.5 ok \u00e9\u4e2d"},
    {"note": "not a message"},
    {"role": "assistant", "content": "done", "usage": {"prompt_tokens": 9, "completion_tokens": 0.5}},
]  # fmt: skip
SHAREGPT = [
    {"id": "a", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]},
    {"id": "a", "conversations": [{"from": "human", "value": "again"}]},
    {"nothing": True},
    {"conversations": []},
]  # fmt: skip


def same_either_way(data: bytes, name: str) -> None:
    try:
        whole = importers.parse(data, name=name)
    except TranscriptError as exc:
        with pytest.raises(TranscriptError) as streamed_error:
            assembled(importers.stream(data, name=name))
        assert str(streamed_error.value) == str(exc)
        return
    assert assembled(importers.stream(data, name=name)) == whole


@pytest.mark.parametrize("path", sorted(p for p in CORPUS.rglob("*.json")), ids=lambda p: p.name)
def test_corpus_json_same_streamed_or_whole(path: Path) -> None:
    same_either_way(path.read_bytes(), path.name)


@pytest.mark.parametrize("indent", [None, 2])
def test_chat_array_is_streamed_and_equal(indent: int | None) -> None:
    data = json.dumps(CHAT, indent=indent).encode()
    assert openai_chat.stream(data, name="chat.json") is not None
    same_either_way(data, "chat.json")


def test_sharegpt_array_and_jsonl_are_streamed_and_equal() -> None:
    array = json.dumps(SHAREGPT).encode()
    lines = "".join(json.dumps(r) + "\n" for r in SHAREGPT).encode()
    for data, name in ((array, "s.json"), (lines, "s.jsonl")):
        assert sharegpt.stream(data, name=name) is not None
        same_either_way(data, name)


def test_sharegpt_with_no_conversation_refused_as_whole() -> None:
    data = json.dumps([{"conversations": []}]).encode()
    same_either_way(data, "empty.json")
    with pytest.raises(TranscriptError, match="no ShareGPT conversations found"):
        assembled(importers.stream(data, name="empty.json", format="sharegpt"))


@pytest.mark.parametrize(
    "text",
    [
        '[{"role": "user", "content": "a", "content": "dup"}]',  # noted by the whole reader
        '[{"role": "user", "content": "x", "n": NaN}]',
        '[{"role": "user", "content": "\\ud800 lone"}]',
        '[{"role": "user", "content": "big", "n": 123456789012345678901234567890}]',
        '[{"role": "user", "content": "cut"',  # located by the whole reader
        '[{"role": "user", "content": "x"}] trailing',
    ],
)
def test_what_the_whole_reader_reads_its_own_way_is_parsed_whole(text: str) -> None:
    data = text.encode()
    assert _json_stream.array_items(data) is None
    same_either_way(data, "odd.json")


def test_items_come_one_at_a_time() -> None:
    """The parser is handed the file's bytes and yields items as it reads them."""
    items = _json_stream.array_items(json.dumps(CHAT).encode())
    assert items is not None
    assert next(items) == CHAT[0]
    assert list(items) == CHAT[1:]


def test_invalid_utf8_is_parsed_whole() -> None:
    data = b'[{"role": "user", "content": "caf\xe9"}]'
    assert _json_stream.array_items(data) is None
    same_either_way(data, "latin1.json")


def test_openhands_events_and_instances_are_streamed_and_equal() -> None:
    jsonl = (CORPUS / "openhands" / "resolver-mock-output.jsonl").read_bytes()
    history = json.loads(jsonl.splitlines()[0])["history"]
    events = json.dumps(history).encode()
    chat_only = json.dumps([{"role": "user", "content": "no OpenHands events"}]).encode()
    for data, name in ((jsonl, "out.jsonl"), (events, "events.json"), (chat_only, "c.json")):
        assert openhands.stream(data, name=name) is not None
        same_either_way(data, name)
    with pytest.raises(TranscriptError, match="no OpenHands events found"):
        assembled(importers.stream(chat_only, name="c.json", format="openhands"))
