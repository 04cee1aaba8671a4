"""Importers on bent and broken bytes (issue 15): valid-but-odd input imports with a named,
counted warning; broken input gives a located error; offsets point at the real byte."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core import codec
from ctxlab.engine.core.import_warnings import CODES
from ctxlab.engine.core.model import ParsedFile, TranscriptError

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"


def _codes(parsed: ParsedFile) -> dict[str, int]:
    return {w.code: w.count for w in parsed.warnings if w.code}


def _chat(*messages: dict[str, object], **extra: object) -> bytes:
    return json.dumps({"messages": list(messages), **extra}).encode()


def test_utf8_bom_and_crlf_jsonl_imports_like_the_plain_file() -> None:
    plain = SESSION.read_bytes()
    bent = b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n")
    expected = importers.parse(plain, name="s.jsonl")
    got = importers.parse(bent, name="s.jsonl")
    assert importers.detect(bent, "s.jsonl") == "claude-code"
    assert [len(c.messages) for c in got.conversations] == [
        len(c.messages) for c in expected.conversations
    ]
    assert got.conversations[0].title == expected.conversations[0].title
    assert got.warnings == ()


def test_error_offset_points_at_the_real_byte_after_a_bom_and_crlf() -> None:
    # Nothing readable (a Claude Code session skips a bad line among good ones): refused at
    # the bad line.
    lines = [b'{"note": "no session line"}', b'{"type": oops}']
    data = b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n"
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="b.jsonl", format="claude-code")
    assert info.value.line == 2
    assert data[info.value.offset : info.value.offset + 4] == b"oops"


def test_error_offset_points_at_the_real_byte_after_multibyte_text() -> None:
    data = json.dumps({"messages": [{"role": "user", "content": "héllo ✓"}]}, ensure_ascii=False)
    broken = data.encode()[:-2] + b"?}"
    with pytest.raises(TranscriptError) as info:
        importers.parse(broken, name="c.json", format="openai-chat")
    assert broken[info.value.offset : info.value.offset + 1] == b"?"


def test_five_thousand_digit_integer_is_a_located_error() -> None:
    head = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","n":1}\n'
    line = b'{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"s","n":' + b"7" * 5000 + b"}"
    data = head + line + b"\n"
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="big.jsonl")
    err = info.value
    assert "5,000 digits" in str(err) and "big.jsonl" in str(err)
    assert err.line == 2 and data[err.offset : err.offset + 5000] == b"7" * 5000
    whole = b'{"messages": [{"role": "user", "content": "hi", "n": ' + b"9" * 5000 + b"}]}"
    with pytest.raises(TranscriptError, match="digits long") as info:
        importers.parse(whole, name="big.json", format="openai-chat")
    assert whole[info.value.offset] == ord("9") and whole[info.value.offset - 1] == ord(" ")


def test_duplicate_keys_are_a_named_counted_warning() -> None:
    data = (
        b'{"messages": [{"role": "user", "role": "user", "content": "a"},'
        b' {"role": "assistant", "content": "b", "content": "c"}]}'
    )
    parsed = importers.parse(data, name="d.json", format="openai-chat")
    assert _codes(parsed)["duplicate-key"] == 2
    assert parsed.conversations[0].messages[1].text == "c"  # the last value, as parsers do


def test_tool_arguments_that_are_not_json_are_kept_and_warned() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
    data = _chat(
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    )
    parsed = importers.parse(data, name="t.json", format="openai-chat")
    assert _codes(parsed) == {"tool-arguments-not-json": 1}
    (use,) = parsed.conversations[0].messages[1].tool_uses
    assert use.tool_input == "{oops"


def test_tool_result_with_an_unknown_id_is_kept_and_warned() -> None:
    data = _chat(
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
        {"role": "tool", "tool_call_id": "nobody2", "content": "orphan 2"},
    )
    parsed = importers.parse(data, name="o.json", format="openai-chat")
    assert _codes(parsed) == {"tool-result-unknown-id": 2}
    texts = [b.text for m in parsed.conversations[0].messages for b in m.tool_results]
    assert texts == ["orphan", "orphan 2"]


def test_nan_and_infinity_in_usage_are_warned_and_read_as_missing() -> None:
    usage = b'{"input_tokens": NaN, "output_tokens": Infinity, "cache_read_input_tokens": 5}'
    line = (
        b'{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":'
        b'{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":'
        + usage
        + b"}}"
    )
    data = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}\n'
    parsed = importers.parse(data + line + b"\n", name="n.jsonl")
    assert _codes(parsed) == {"non-finite-number": 2}
    usage_read = parsed.conversations[0].messages[1].usage
    assert usage_read is not None and (usage_read.input_uncached, usage_read.output) == (0, 0)
    assert usage_read.cache_read == 5
    json.dumps(codec.parsed_file_to_dict(parsed), allow_nan=False)  # storable as strict JSON


def test_numbers_given_as_strings_are_read_and_warned() -> None:
    data = _chat(
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        usage={"prompt_tokens": "120", "completion_tokens": "7"},
    )
    parsed = importers.parse(data, name="s.json", format="openai-chat")
    usages = [m.usage for m in parsed.conversations[0].messages if m.usage is not None]
    if usages:  # this shape carries usage: it must be read, not zeroed
        assert (usages[0].input_uncached, usages[0].output) == (120, 7)
    line = (
        b'{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":'
        b'{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}],'
        b'"usage":{"input_tokens":"12","output_tokens":"3"}}}'
    )
    head = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}\n'
    parsed = importers.parse(head + line + b"\n", name="n.jsonl")
    usage = parsed.conversations[0].messages[1].usage
    assert usage is not None and (usage.input_uncached, usage.output) == (12, 3)
    assert _codes(parsed) == {"number-as-string": 2}


def test_nul_characters_are_made_storable_and_counted() -> None:
    data = _chat(
        {"role": "user", "content": "a\u0000b\u0000c"}, {"role": "assistant", "content": "x"}
    )
    parsed = importers.parse(data, name="z.json", format="openai-chat")
    assert _codes(parsed) == {"nul-character": 2}
    text = parsed.conversations[0].messages[0].text
    assert "\x00" not in text and text == "a\u2400b\u2400c"


def test_utf16_file_is_named_and_decoded() -> None:
    text = SESSION.read_text(encoding="utf-8")
    expected = importers.parse(SESSION.read_bytes(), name="s.jsonl")
    for data in (text.encode("utf-16"), text.encode("utf-16-le"), text.encode("utf-16-be")):
        parsed = importers.parse(data, name="s.jsonl")
        assert parsed.conversations[0].title == expected.conversations[0].title
        assert len(parsed.conversations[0].messages) == len(expected.conversations[0].messages)
        assert _codes(parsed) == {"utf16-decoded": 1}


def test_utf16_error_offset_points_into_the_original_file() -> None:
    data = '{"messages": [{"role": "user", "content": "hi"} ?]}'.encode("utf-16")
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="u.json", format="openai-chat")
    assert data[info.value.offset : info.value.offset + 2] == "?".encode("utf-16-le")


@pytest.mark.parametrize("kind", ["zip", "gzip"])
def test_archives_are_named_as_such(kind: str) -> None:
    raw = SESSION.read_bytes()
    if kind == "gzip":
        data = gzip.compress(raw)
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("s.jsonl", raw)
        data = buffer.getvalue()
    for format in (None, "claude-code"):
        with pytest.raises(TranscriptError) as info:
            importers.parse(data, name=f"s.{kind}", format=format)
        assert ("ZIP archive" if kind == "zip" else "gzip-compressed") in str(info.value)


def test_every_warning_code_used_is_catalogued() -> None:
    data = (
        b'{"messages": [{"role": "user", "content": "a\\u0000", "content": "b"},'
        b' {"role": "tool", "tool_call_id": "x", "content": NaN}]}'
    )
    parsed = importers.parse(data, name="x.json", format="openai-chat")
    assert len(parsed.warnings) >= 3 and all(w.code in CODES for w in parsed.warnings)
    for code in CODES.values():
        assert code.label and code.meaning and code.code == code.code.lower()
