"""``importers.stream`` (issue 15, import memory): a one-message-per-line chat JSONL is handed
out a message at a time, and what it adds up to equals ``importers.parse`` of the same bytes,
warnings (and their order), titles, cleaned text and located errors included."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import ParsedFile, TranscriptError
from ctxlab.engine.importers._stream import StreamedFile

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CORPUS_FILES = sorted(
    p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".md")
)


def assembled(streamed: StreamedFile) -> ParsedFile:
    conversations = []
    for stream in streamed.conversations:
        messages = tuple(stream.messages)
        conversations.append(replace(stream.finish(), messages=messages))
    return ParsedFile(streamed.format, tuple(conversations), streamed.finish())


def jsonl(*lines: Any) -> bytes:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()


CALL = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{x"}}
CASES = {
    "plain": jsonl({"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}),
    "warnings-and-skips": jsonl(
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"note": "not a message"},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
        {"role": "wizard", "content": "?"},
        '{"role": "assistant", "content": "a", "content": "dup", "usage": {"prompt_tokens": NaN}}',
        {
            "role": "assistant",
            "content": "x",
            "model": "gpt-4o",
            "usage": {"prompt_tokens": 50, "completion_tokens": 5},
        },
    ),  # fmt: skip
    "result-before-its-call": jsonl(
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "late", "content": "early result"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "late", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
    ),  # fmt: skip
    "junk-title": jsonl(
        {"role": "user", "content": "/clear"},
        {"role": "user", "content": "<command-name>x</command-name>"},
        {"role": "user", "content": "fix the login bug"},
    ),
    "no-user": jsonl({"role": "assistant", "content": "alone"}, {"role": "tool", "content": "r"}),
    "nul-and-surrogate": jsonl(
        {"role": "user", "content": "nul \u0000 here"},
        '{"role": "assistant", "content": "lone \\ud800 surrogate"}',
        '{"role": "tool", "tool_call_id": "zz\\u0000", "content": "x"}',
    ),
    "bom-crlf": b"\xef\xbb\xbf"
    + jsonl({"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}).replace(
        b"\n", b"\r\n"
    ),
    "utf16": "\ufeff".encode("utf-16-le")
    + jsonl({"role": "user", "content": "caf\u00e9"}, {"role": "assistant", "content": "ok"})
    .decode()
    .encode("utf-16-le"),
    "records-per-line": jsonl(
        {"id": "t1", "messages": [{"role": "user", "content": "one"}]},
        {"id": "t2", "messages": [{"role": "user", "content": "two"}]},
    ),
}


@pytest.mark.parametrize("data", CASES.values(), ids=CASES.keys())
def test_streamed_equals_parsed(data: bytes) -> None:
    parsed = importers.parse(data, name="chat.jsonl")
    assert assembled(importers.stream(data, name="chat.jsonl")) == parsed


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_streamed_equals_parsed_on_the_corpus(path: Path) -> None:
    data = path.read_bytes()
    try:
        parsed = importers.parse(data, name=path.name)
    except TranscriptError:
        pytest.skip("not a transcript on its own (a cassette's twin, a response body)")
    assert assembled(importers.stream(data, name=path.name)) == parsed


def test_messages_come_before_the_file_is_read_to_its_end() -> None:
    lines = [{"role": "user" if i % 2 else "assistant", "content": f"m{i}"} for i in range(3000)]
    data = b"\xef\xbb\xbf" + jsonl(*lines) + b'{"role": "user", "content": \n'
    stream = next(importers.stream(data, name="cut.jsonl").conversations)
    first = next(stream.messages)  # the broken last line is not read yet
    assert first.text == "m0" and first.source.line == 1
    with pytest.raises(TranscriptError) as caught:
        list(stream.messages)
    with pytest.raises(TranscriptError) as whole:
        importers.parse(data, name="cut.jsonl")
    # the same located error as a whole-file parse: line 3001, the byte in the original file
    assert caught.value.line == whole.value.line == 3001
    assert caught.value.offset == whole.value.offset
    assert str(caught.value) == str(whole.value)


def test_a_file_with_no_messages_is_refused_when_its_stream_ends() -> None:
    data = jsonl({"role": "wizard", "content": "?"}, {"role": "elf", "content": "!"})
    with pytest.raises(TranscriptError) as whole:
        importers.parse(data, name="none.jsonl")
    stream = next(importers.stream(data, name="none.jsonl").conversations)
    assert list(stream.messages) == []
    with pytest.raises(TranscriptError) as caught:
        stream.finish()
    assert str(caught.value) == str(whole.value)
