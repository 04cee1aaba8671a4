from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
ROLLOUTS = CORPUS / "codex-rollout"
EXEC = CORPUS / "codex-exec-json"

# (messages, tool_use blocks, tool_result blocks). Messages: user messages + one assistant
# message per model response (reasoning + call/text items grouped) + one tool message per
# function_call_output. The totals equal the manifest's (which counts message + call +
# output items) because every response here holds exactly one call or text item.
ROLLOUT_COUNTS = {
    "agentcmd-rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl": (
        270,
        123,
        123,
    ),
    "agentcmd-rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl": (37, 16, 16),
    "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl": (
        119,
        57,
        57,
    ),
    "agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": (71, 34, 34),
}

# The manifest counts reasoning items as messages and has no tool results; here reasoning is
# part of the assistant message and a command_execution / file_change item is a call plus
# its result (the item carries both the command and its output).
EXEC_COUNTS = {
    "agentcmd-stream-output-1.jsonl": [(1, 0, 0)],
    "agentcmd-stream-output-2.jsonl": [(3, 1, 1)],
    "agentcmd-stream-output-3.jsonl": [(3, 1, 1)],
    "agentcmd-stream-output-4.jsonl": [(3, 1, 1)],
    "agentcmd-stream-output-5.jsonl": [(3, 1, 1)],
    "agentcmd-stream-output-multi-1.jsonl": [(0, 0, 0)],
}

FIRST = next(iter(ROLLOUT_COUNTS))


def _counts(file: Path) -> list[tuple[int, int, int]]:
    parsed = importers.parse(file.read_bytes(), name=file.name)
    return [(len(c.messages), c.tool_call_count, c.tool_result_count) for c in parsed.conversations]


@pytest.mark.parametrize("file", sorted(ROLLOUT_COUNTS), ids=lambda f: f[17:36])
def test_codex_rollout_corpus_counts(file: str) -> None:
    data = (ROLLOUTS / file).read_bytes()
    assert importers.detect(data, file) == "codex-rollout"
    parsed = importers.parse(data, name=file)
    assert parsed.warnings == ()
    assert _counts(ROLLOUTS / file) == [ROLLOUT_COUNTS[file]]
    (conv,) = parsed.conversations
    assert conv.id in file and conv.usage_convention == "openai"
    assert all(m.usage is not None for m in conv.messages if m.role is Role.ASSISTANT)
    assert all(m.source.line for m in conv.messages)


@pytest.mark.parametrize("file", sorted(EXEC_COUNTS), ids=lambda f: f[21:-6])
def test_codex_exec_corpus_counts(file: str) -> None:
    data = (EXEC / file).read_bytes()
    assert importers.detect(data, file) == "codex-exec-json"
    assert _counts(EXEC / file) == EXEC_COUNTS[file]


def test_codex_exec_stream_without_items_is_empty_conversation_with_warning() -> None:
    file = EXEC / "agentcmd-stream-output-multi-1.jsonl"
    parsed = importers.parse(file.read_bytes(), name=file.name)
    (conv,) = parsed.conversations
    assert conv.id == "019a2d7b-c0ed-75a0-8908-de832785d47f" and conv.messages == ()
    assert "no items" in parsed.warnings[0].message


def test_codex_exec_command_and_usage() -> None:
    file = EXEC / "agentcmd-stream-output-2.jsonl"
    conv = importers.parse(file.read_bytes(), name=file.name).conversations[0]
    call, result, answer = conv.messages
    assert [b.kind for b in call.blocks] == [BlockKind.THINKING, BlockKind.TOOL_USE]
    assert call.tool_uses[0].tool_input == {"command": "bash -lc ls"}
    assert result.tool_results[0].text.startswith("stream-output-1.jsonl")
    assert answer.usage is not None
    assert (answer.usage.input_uncached, answer.usage.cache_read) == (6040 - 4992, 4992)
    assert answer.usage.output == 129


def test_codex_rollout_double_encoded_output_decoded() -> None:
    conv = importers.parse((ROLLOUTS / FIRST).read_bytes(), name=FIRST).conversations[0]
    results = [b for m in conv.messages for b in m.tool_results]
    assert not any(b.text.startswith('{"output"') for b in results)
    assert any("Success. Updated the following files" in b.text for b in results)
    assert results[0].tool_id.startswith("call_")


def test_codex_rollout_encrypted_reasoning_is_opaque_summary_is_thinking() -> None:
    conv = importers.parse((ROLLOUTS / FIRST).read_bytes(), name=FIRST).conversations[0]
    blocks = [b for m in conv.messages for b in m.blocks]
    opaque = [b for b in blocks if b.kind is BlockKind.OPAQUE]
    assert len(opaque) == 125 and all(b.size > 100 and b.raw_type == "reasoning" for b in opaque)
    assert all(not b.text.startswith("gAAAA") for b in opaque)
    assert any(b.kind is BlockKind.THINKING and b.text.startswith("**") for b in blocks)


def test_codex_rollout_token_count_usage_lands_on_its_response() -> None:
    data = (ROLLOUTS / FIRST).read_bytes()
    lines = [json.loads(x) for x in data.splitlines()]
    first_usage = next(
        x["payload"]["info"]["last_token_usage"]
        for x in lines
        if x["type"] == "event_msg"
        and x["payload"]["type"] == "token_count"
        and x["payload"]["info"]
    )
    conv = importers.parse(data, name=FIRST).conversations[0]
    first = next(m for m in conv.messages if m.role is Role.ASSISTANT)
    assert first.usage is not None and first.model == "gpt-5-codex"
    assert first.usage.prompt_tokens == first_usage["input_tokens"]
    assert first.usage.cache_read == first_usage["cached_input_tokens"]
    assert first.usage.reasoning == first_usage["reasoning_output_tokens"]


def test_codex_rollout_turn_aborted_and_meta_flags() -> None:
    conv = importers.parse((ROLLOUTS / FIRST).read_bytes(), name=FIRST).conversations[0]
    assert ("turn_aborted", "4") in conv.metadata
    assert sum("turn_aborted" in m.flags for m in conv.messages) == 2  # 2 aborts had items
    assert "meta" in conv.messages[0].flags  # <environment_context>
    assert conv.title.startswith("Updating a team")  # the request inside the IDE wrapper


def test_codex_rollout_input_image_kept_as_media() -> None:
    file = "agentcmd-rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl"
    conv = importers.parse((ROLLOUTS / file).read_bytes(), name=file).conversations[0]
    media = [b for m in conv.messages for b in m.blocks if b.kind is BlockKind.MEDIA]
    assert media and all(b.media_type.startswith("image/") and b.size > 1000 for b in media)
    assert all(not b.text for b in media)  # the data URL itself is not kept as text


def _envelope(kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}


def test_codex_rollout_compacted_line_records_compaction() -> None:
    records = [
        _envelope("session_meta", {"id": "sess-1", "cwd": "/w"}),
        _envelope("turn_context", {"model": "gpt-5"}),
        _envelope("response_item", {"type": "message", "role": "user", "content": "do it"}),
        _envelope("response_item", {"type": "message", "role": "assistant", "content": "ok"}),
        _envelope("compacted", {"message": "summary of work so far", "replacement_history": []}),
        _envelope("response_item", {"type": "message", "role": "user", "content": "next"}),
        _envelope("mystery_record", {}),
    ]
    data = "\n".join(json.dumps(r) for r in records).encode()
    parsed = importers.parse(data, name="r.jsonl")
    (conv,) = parsed.conversations
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT, Role.USER, Role.USER]
    (comp,) = conv.compactions
    assert (comp.kind, comp.before_index, comp.summary_index) == ("compacted", 2, 2)
    assert conv.messages[2].text == "summary of work so far"
    assert "compact_summary" in conv.messages[2].flags
    assert "mystery_record" in parsed.warnings[0].message


def test_codex_rollout_legacy_form_without_envelope() -> None:
    shell_output = '{"output":"a\\nb","metadata":{"exit_code":1}}'
    done = [{"type": "output_text", "text": "done"}]
    records = [
        {"id": "legacy-1", "timestamp": "2025-04-01", "instructions": "be nice", "git": {}},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"record_type": "state"},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["ls"]}',
            "call_id": "c1",
        },
        {"type": "function_call_output", "call_id": "c1", "output": shell_output},
        {"type": "message", "role": "assistant", "content": done},
    ]
    data = "\n".join(json.dumps(r) for r in records).encode()
    assert importers.detect(data, "x.jsonl") == "codex-rollout"
    (conv,) = importers.parse(data, name="x.jsonl").conversations
    assert conv.id == "legacy-1"
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert conv.messages[1].tool_uses[0].tool_input == {"command": ["ls"]}
    result = conv.messages[2].tool_results[0]
    assert (result.text, result.is_error) == ("a\nb", True)


@pytest.mark.parametrize(
    ("fmt", "other"),
    [
        ("codex-rollout", "claude-code/sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"),
        ("codex-rollout", "codex-exec-json/agentcmd-stream-output-2.jsonl"),
        ("codex-exec-json", "claude-code/sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"),
        ("codex-exec-json", f"codex-rollout/{FIRST}"),
    ],
    ids=["rollout<-claude", "rollout<-exec", "exec<-claude", "exec<-rollout"],
)
def test_codex_forced_on_other_format_raises(fmt: str, other: str) -> None:
    with pytest.raises(TranscriptError, match="expected"):
        importers.parse((CORPUS / other).read_bytes(), name=other, format=fmt)


@pytest.mark.parametrize("fmt", ["codex-rollout", "codex-exec-json"])
@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"  \n", "empty"),
        (b'{"timestamp":"x","type":"session_meta","payload":{"id":', "invalid JSON"),
        (bytes(range(256)) * 4, "binary"),
        (b'{"type":"turn.started"}\n{"x":"\xe9t\xe9"}\n', "invalid UTF-8"),
    ],
    ids=["empty", "truncated", "binary", "latin1"],
)
def test_codex_bad_input_raises_located_error(fmt: str, data: bytes, needle: str) -> None:
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="bad.jsonl", format=fmt)
    assert needle in str(info.value) and "bad.jsonl" in str(info.value)
    if needle == "invalid UTF-8":
        assert info.value.line == 2 and info.value.offset == 24 + 6
