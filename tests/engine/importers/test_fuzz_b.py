"""Bad input and fuzzing for the openai-chat, sharegpt, swe-agent, openhands, aider and
gemini-cli importers: whatever the bytes, only ``TranscriptError`` may escape."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError

CORPUS = Path(__file__).parents[2] / "data" / "corpus"

# One small real sample per format (sliced where the file is big) and its container.
SAMPLES: dict[str, tuple[str, str]] = {
    "openai-chat": ("openai-chat/taubench-gpt-4o-airline-task2-messages.json", "json"),
    "sharegpt": ("sharegpt/llamafactory-glaive_toolcall_en_demo.json", "json"),
    "swe-agent": ("swe-agent-traj/ctf-i_got_id_demo.traj", "json"),
    "openhands": ("openhands/resolver-mock-output.jsonl", "jsonl"),
    "aider": ("aider/aider-example-complex-change.md", "text"),
    "gemini-cli": ("gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json", "json"),
}
EXTRA_JSON = {  # second samples exercising the other container shapes
    "openai-chat": "openai-chat/taubench-gpt-4o-airline.json",
    "openhands": "openhands/trajs-basic_gui_mode.json",
    "swe-agent": "swe-agent-traj/marshmallow-1867-fc.traj",
}
FORMATS = tuple(SAMPLES)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@cache
def sample_bytes(fmt: str) -> bytes:
    path, kind = SAMPLES[fmt]
    data = (CORPUS / path).read_bytes()
    if fmt == "sharegpt":  # 5 of 300 records
        data = json.dumps(json.loads(data)[:5]).encode()
    return data


@cache
def sample_doc(path: str) -> Any:
    data = (CORPUS / path).read_bytes()
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in data.splitlines() if line.strip()]
    doc = json.loads(data)
    if isinstance(doc, list) and len(doc) > 4 and "taubench-gpt-4o-airline.json" in path:
        doc = doc[:3]
    return doc


def must_be_clean(fmt: str, data: bytes, name: str = "fuzz") -> None:
    try:
        parsed = importers.parse(data, name=name, format=fmt)
    except TranscriptError as exc:
        assert str(exc)  # located, readable
        return
    assert parsed.format == fmt
    assert all(c.messages for c in parsed.conversations)


# Structural mutations on the decoded JSON.

_REPLACEMENTS: list[Any] = [
    None,
    0,
    -1,
    1.5,
    10**30,
    True,
    "",
    "x",
    "\x00",
    [],
    {},
    [None],
    {"role": 7},
    {"type": "gemini"},
    [[]],
    "{not json",
]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*path, index))


@cache
def _all_paths(path: str) -> tuple[tuple[Any, ...], ...]:
    return tuple(p for p in _paths(sample_doc(path)) if p)


def _mutate(doc: Any, path: tuple[Any, ...], op: str, value: Any) -> None:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if op == "delete":
        del parent[key]
    elif op == "replace":
        parent[key] = value
    elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
        other = (key + 1) % len(parent)
        parent[key], parent[other] = parent[other], parent[key]
    elif op == "swap" and isinstance(parent, dict) and len(parent) > 1:
        keys = list(parent)
        other = keys[(keys.index(key) + 1) % len(keys)]
        parent[key], parent[other] = parent[other], parent[key]


def _encode(path: str, doc: Any) -> bytes:
    if path.endswith(".jsonl") and isinstance(doc, list):
        return "\n".join(json.dumps(line) for line in doc).encode()
    return json.dumps(doc).encode()


@st.composite
def structurally_mutated(draw: st.DrawFn, fmt: str) -> bytes:
    path = (
        SAMPLES[fmt][0]
        if fmt not in EXTRA_JSON
        else draw(st.sampled_from([SAMPLES[fmt][0], EXTRA_JSON[fmt]]))
    )
    doc = copy.deepcopy(sample_doc(path))
    for _ in range(draw(st.integers(1, 5))):
        target = draw(st.sampled_from(_all_paths(path)))
        op = draw(st.sampled_from(["delete", "replace", "swap"]))
        try:
            _mutate(doc, target, op, copy.deepcopy(draw(st.sampled_from(_REPLACEMENTS))))
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # an earlier mutation removed or reshaped this path
    return _encode(path, doc)


@st.composite
def byte_mutated(draw: st.DrawFn, fmt: str) -> bytes:
    data = bytearray(sample_bytes(fmt))
    for _ in range(draw(st.integers(1, 8))):
        where = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete"]))
        if op == "flip":
            data[where] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[where : where + draw(st.integers(1, 64))]
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_b_byte_mutations_raise_only_transcript_errors(fmt: str) -> None:
    @FUZZ
    @given(byte_mutated(fmt))
    def run(data: bytes) -> None:
        must_be_clean(fmt, data)

    run()


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "aider"])
def test_fuzz_b_structural_mutations_raise_only_transcript_errors(fmt: str) -> None:
    @FUZZ
    @given(structurally_mutated(fmt))
    def run(data: bytes) -> None:
        must_be_clean(fmt, data)

    run()


# Bad input, format by format.


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("data", "match"),
    [
        pytest.param(b"", "empty|no ", id="empty"),
        pytest.param(b"   \n\n", "empty|no |invalid JSON", id="blank"),
        pytest.param(bytes(range(256)) * 64, "binary", id="binary"),
        pytest.param(
            '[{"role": "user", "content": "café"}]'.encode("latin-1"), "invalid UTF-8", id="latin-1"
        ),
    ],
)
def test_fuzz_b_bad_bytes_are_located_errors(fmt: str, data: bytes, match: str) -> None:
    with pytest.raises(TranscriptError, match=match) as info:
        importers.parse(data, name="bad.bin", format=fmt)
    assert "bad.bin" in str(info.value)


def test_fuzz_b_latin1_error_names_the_byte_offset() -> None:
    data = '[{"role": "user", "content": "café"}]'.encode("latin-1")
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="l.json", format="openai-chat")
    assert info.value.offset == data.index(b"\xe9") and info.value.line == 1


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "aider"])
def test_fuzz_b_truncated_json_is_a_located_error(fmt: str) -> None:
    data = sample_bytes(fmt)
    cut = data[: len(data) // 2].rstrip(b"\n")
    if _complete_first_line(cut):  # JSONL being written: its complete lines import
        parsed = importers.parse(cut, name="cut.json", format=fmt)
        assert "cut-off-last-line" in {w.code for w in parsed.warnings}
        return
    with pytest.raises(TranscriptError, match="invalid JSON") as info:
        importers.parse(cut, name="cut.json", format=fmt)
    assert info.value.line is not None and info.value.offset is not None


def _complete_first_line(data: bytes) -> bool:
    """JSONL with at least one complete line before the cut one (issue 31 item 5)."""
    first, newline, _ = data.partition(b"\n")
    try:
        return bool(newline) and isinstance(json.loads(first), dict)
    except ValueError:
        return False


def test_fuzz_b_truncated_aider_history_still_imports() -> None:
    # Markdown has no closing syntax: a cut history is a shorter, valid history.
    data = sample_bytes("aider")
    parsed = importers.parse(data[: len(data) // 2], name="cut.md", format="aider")
    assert len(parsed.conversations) == 1 and parsed.conversations[0].messages


@pytest.mark.parametrize(
    ("fmt", "other"),
    [pytest.param(f, o, id=f"{o}-as-{f}") for f in FORMATS for o in FORMATS if f != o],
)
def test_fuzz_b_forced_wrong_format_names_what_was_expected(fmt: str, other: str) -> None:
    with pytest.raises(TranscriptError, match="expected") as info:
        importers.parse(sample_bytes(other), name="wrong", format=fmt)
    assert str(info.value).startswith("wrong")


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_b_enormous_line(fmt: str) -> None:
    big = b'[{"role": "user", "content": "' + b"a" * 8_000_000  # one 8 MB unterminated line
    with pytest.raises(TranscriptError):
        importers.parse(big, name="big", format=fmt)


def test_fuzz_b_enormous_valid_line_is_kept_whole() -> None:
    text = "a" * 8_000_000
    data = json.dumps([{"role": "user", "content": text}]).encode()
    parsed = importers.parse(data, name="big.json")
    assert parsed.conversations[0].messages[0].text == text
