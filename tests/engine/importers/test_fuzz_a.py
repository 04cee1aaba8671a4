"""Fuzz the Claude Code, Codex, Anthropic, Responses, cassette, pi, Copilot CLI and OpenHands V1
importers with mutated real samples: whatever the bytes, only ``TranscriptError`` may escape,
and a success returns well-formed values."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.engine import importers
from ctxlab.engine.core.model import Conversation, ParsedFile, TranscriptError

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
MAX_BYTES = 24_000  # samples are cut to keep each example fast

SAMPLES = {
    "claude-code": "claude-code/ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "codex-rollout": "codex-rollout/agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
    "codex-exec-json": "codex-exec-json/agentcmd-stream-output-5.jsonl",
    "anthropic-messages": "anthropic-messages/claude-trace-req34-request.json",
    "openai-responses": None,  # built from a cassette twin's request + response
    "api-cassettes": "api-cassettes/pydanticai-test_multiple_agent_tool_calls.yaml",
    "pi-session": "../pi/before-compaction.jsonl",  # tests/data/pi (pi-mono, MIT)
    "copilot-cli": "../copilot-cli/list-models.events.jsonl",  # copilot-session-viewer, MIT
    "openhands-v1": "../openhands-v1/pr-review.events.jsonl",  # software-agent-sdk, MIT
}


def _sample(fmt: str) -> bytes:
    path = SAMPLES[fmt]
    if path is None:
        twin = (
            CORPUS / "api-cassettes/pydanticai-test_openai_responses_thinking_with_tool_calls.json"
        )
        call = json.loads(twin.read_bytes())[1]
        doc = {**call["request_body"], "output": call["response_body"]["output"]}
        return json.dumps(doc, indent=1).encode()
    return (CORPUS / path).read_bytes()


def _jsonl_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    out, size = [], 0
    for line in lines:  # whole lines, so JSONL samples stay mostly valid
        if size + len(line) > MAX_BYTES and out:
            break
        out.append(line)
        size += len(line) + 1
    return out


def _swap_values(value: object, rng: random.Random) -> object:
    """Replace some JSON values by values of another type."""
    others: list[object] = [None, 0, -1, "", "x", [], {}, True, 1e308, [None], {"type": 1}]
    if rng.random() < 0.08:
        return rng.choice(others)
    if isinstance(value, dict):
        return {k: _swap_values(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_values(v, rng) for v in value]
    return value


def _mutate(data: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    lines = _jsonl_lines(data)
    for op, a, b in ops:
        if op == "flip" and lines:
            i = a % len(lines)
            line = bytearray(lines[i])
            if line:
                line[b % len(line)] ^= 1 << (a % 8)
            lines[i] = bytes(line)
        elif op == "truncate":
            joined = b"\n".join(lines)
            cut = joined[: b % (len(joined) + 1)]
            lines = cut.split(b"\n")
        elif op == "shuffle" and len(lines) > 1:
            rng = random.Random(a * 7919 + b)
            rng.shuffle(lines)
        elif op == "drop" and lines:
            del lines[a % len(lines)]
        elif op == "dup" and lines:
            i = a % len(lines)
            lines.insert(b % (len(lines) + 1), lines[i])
        elif op == "swap":
            rng = random.Random(a * 31 + b)
            joined = b"\n".join(lines)
            try:
                doc = json.loads(joined)
                lines = json.dumps(_swap_values(doc, rng)).encode().split(b"\n")
            except ValueError:
                new = []
                for line in lines:
                    try:
                        new.append(json.dumps(_swap_values(json.loads(line), rng)).encode())
                    except ValueError:
                        new.append(line)
                lines = new
    return b"\n".join(lines)


OPS = st.lists(
    st.tuples(
        st.sampled_from(["flip", "truncate", "shuffle", "drop", "dup", "swap"]),
        st.integers(0, 10_000),
        st.integers(0, 1_000_000),
    ),
    min_size=1,
    max_size=4,
)


def _check(parsed: ParsedFile, fmt: str) -> None:
    assert parsed.format == fmt
    for conv in parsed.conversations:
        assert isinstance(conv, Conversation) and isinstance(conv.id, str)
        for m in conv.messages:
            assert isinstance(m.blocks, tuple)
            _ = m.text, conv.tool_call_count, conv.tool_result_count


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=OPS)
def test_fuzz_a_only_transcript_error_escapes(fmt: str, ops: list[tuple[str, int, int]]) -> None:
    data = _mutate(_sample(fmt), ops)
    try:
        parsed = importers.parse(data, name="fuzz", format=fmt)
    except TranscriptError as exc:
        assert str(exc)
        return
    _check(parsed, fmt)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=2000))
def test_fuzz_a_random_bytes(fmt: str, data: bytes) -> None:
    try:
        parsed = importers.parse(data, name="fuzz", format=fmt)
    except TranscriptError:
        return
    _check(parsed, fmt)
