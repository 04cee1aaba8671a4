"""Issue 32, item 8: a kit of malformed shapes made from one real file per importer family
(truncated, a bad JSONL line, the wrong top-level JSON type, binary junk, empty, UTF-16
with a BOM and cut mid-unit, a file of the right format missing what it needs). Every
refusal says where (line or byte), why, and the format the file looked like; none is the
generic "could not recognise the format"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
FAMILIES = {
    d.name: sorted(p for p in d.iterdir() if p.is_file() and p.suffix != ".md" or d.name == "aider")[0]
    for d in sorted(CORPUS.iterdir())
    if d.is_dir() and any(p.is_file() for p in d.iterdir())
}  # fmt: skip
LABELS = {m.LABEL for m in importers.IMPORTERS.values()}


def refusal(data: bytes, name: str) -> TranscriptError:
    with pytest.raises(TranscriptError) as caught:
        importers.parse(data, name=name)
    error = caught.value
    assert "could not recognise" not in str(error)
    assert error.file == name and error.reason
    return error


def truncated(data: bytes) -> bytes:
    cut = len(data) * 2 // 3
    return data[:cut]


@pytest.mark.parametrize("family", FAMILIES)
def test_truncated_is_located_and_names_its_format(family: str) -> None:
    path = FAMILIES[family]
    data = truncated(path.read_bytes())
    try:
        parsed = importers.parse(data, name=path.name)
    except TranscriptError as error:
        assert "could not recognise" not in str(error)
        if path.suffix != ".md":
            assert error.line is not None and error.offset is not None, str(error)
            assert error.looks_like in LABELS and f"looks like: {error.looks_like}" in str(error)
        return
    # A format that keeps what it can (a cut last line set aside) says so in a warning.
    assert parsed.conversations
    assert parsed.warnings or path.suffix == ".md"


@pytest.mark.parametrize("family", [f for f, p in FAMILIES.items() if p.suffix == ".jsonl"])
def test_bad_jsonl_line_is_located(family: str) -> None:
    path = FAMILIES[family]
    lines = path.read_bytes().split(b"\n")
    bad = min(3, len(lines) - 2)  # the fourth line, or the last full one
    lines[bad] = b'{"type": "user", "broken'
    data = b"\n".join(lines)
    try:
        parsed = importers.parse(data, name=path.name)
    except TranscriptError as error:
        assert "could not recognise" not in str(error)
        assert error.line == bad + 1, str(error)
        assert error.offset == sum(len(x) + 1 for x in lines[:bad]) + len(lines[bad]) - 7
        assert error.looks_like == importers.IMPORTERS[importers.detect(data)].LABEL
        return
    assert any(f"line {bad + 1}" in w.where for w in parsed.warnings)  # kept going, said where


@pytest.mark.parametrize(
    ("text", "kind"),
    [('"just a string"', "string"), ("42", "number"), ("  \n true", "true"), ("null", "null")],
)
def test_wrong_top_level_type_says_what_it_is(text: str, kind: str) -> None:
    error = refusal(text.encode(), "x.json")
    assert f"starts with a JSON {kind}" in error.reason
    start = len(text) - len(text.lstrip())
    assert (error.line, error.offset) == (text[:start].count("\n") + 1, start)


def test_json_without_any_format_fields_names_its_keys() -> None:
    error = refusal(b'\n{"alpha": 1, "beta": {"gamma": 2}}', "x.json")
    assert "JSON object with none of the fields" in error.reason
    assert "'alpha', 'beta', 'gamma'" in error.reason and (error.line, error.offset) == (2, 1)
    error = refusal(b"nothing to see, no JSON\n", "n.jsonl")  # starts like null, is not
    assert error.reason.startswith("plain text in no known transcript format")
    error = refusal(b"hello, this is my diary\nday one", "diary.txt")
    assert (
        error.reason
        == "plain text in no known transcript format (it starts 'hello, this is my diary')"
    )


def test_binary_names_the_first_nul() -> None:
    error = refusal(b"GIF89a\x01\x02\x00\x00junk" * 50, "x.jsonl")
    assert "binary file" in error.reason and error.offset == 8


def test_archive_and_empty() -> None:
    assert "ZIP archive" in refusal(b"PK\x03\x04rest", "a.jsonl").reason
    assert refusal(b" \n\t\n", "e.jsonl").reason == "the file is empty"


@pytest.mark.parametrize("family", FAMILIES)
def test_utf16_with_bom_imports_and_cut_mid_unit_is_located(family: str) -> None:
    path = FAMILIES[family]
    original = importers.parse(path.read_bytes(), name=path.name)
    utf16 = b"\xff\xfe" + path.read_bytes().decode("utf-8").encode("utf-16-le")
    parsed = importers.parse(utf16, name=path.name)
    assert [c.messages for c in parsed.conversations] == [
        c.messages for c in original.conversations
    ]
    assert "utf16-decoded" in {w.code for w in parsed.warnings}
    error = refusal(utf16[:-1], path.name)
    assert "UTF-16-LE" in error.reason and error.offset == len(utf16) - 2  # the cut unit


@pytest.mark.parametrize(
    ("data", "name", "label"),
    [
        (b'{"messages": [{"role": 7}], "model": "gpt-4o", "tool_calls": 1}', "c.json", "openai-chat"),
        (b'[{"id": "x", "conversations": "no", "from": 1, "value": 2}]', "s.json", "sharegpt"),
        (b'{"sessionId": "a", "projectHash": "h", "startTime": "t", "lastUpdated": "x"}', "session-1.json", "gemini-cli"),
        (b'{"model": "claude-x", "max_tokens": 5, "messages": "no", "anthropic_version": "1"}', "a.json", "anthropic-messages"),
        (b'[{"type": "message", "content": [{"type": "output_text"}]}]', "r.json", "openai-responses"),
        (b"interactions:\n- request: {}\n", "c.yaml", "api-cassettes"),
    ],
)  # fmt: skip
def test_right_format_missing_what_it_needs_names_the_format(
    data: bytes, name: str, label: str
) -> None:
    error = refusal(data, name)
    assert error.looks_like == importers.IMPORTERS[label].LABEL
    assert error.expected  # what the format needs


def test_streamed_errors_name_the_format_too() -> None:
    lines = (
        b'{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n{"role": \n'
        b'{"role": "user", "content": "c"}\n'
    )
    with pytest.raises(TranscriptError) as caught:
        streamed = importers.stream(lines, name="chat.jsonl")
        for conversation in streamed.conversations:
            list(conversation.messages)
    assert caught.value.looks_like == importers.IMPORTERS["openai-chat"].LABEL
    assert (caught.value.line, caught.value.offset) == (3, 80)


def test_nothing_readable_is_refused_not_stored_empty() -> None:
    """Lines of the right format that all lack what a conversation needs: before, an
    upload of zero conversations."""
    data = (
        b'{"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": null}\n'
        b'{"type": "assistant", "sessionId": "s", "uuid": "u2", "parentUuid": "u1"}\n'
    )
    error = refusal(data, "c.jsonl")
    assert error.looks_like == importers.IMPORTERS["claude-code"].LABEL
    assert error.reason.startswith("no conversation could be read from the file; first: line 1")
    with pytest.raises(TranscriptError, match="no conversation could be read"):
        streamed = importers.stream(data, name="c.jsonl")
        for conversation in streamed.conversations:
            list(conversation.messages)
            conversation.finish()
        streamed.finish()
