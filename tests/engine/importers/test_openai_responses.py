from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
TWINS = CORPUS / "api-cassettes"


def _twin(stem: str) -> list[dict[str, object]]:
    return json.loads((TWINS / f"pydanticai-{stem}.json").read_bytes())  # type: ignore[no-any-return]


def _parse(doc: object, name: str = "r.json") -> importers.ParsedFile:
    data = json.dumps(doc).encode()
    assert importers.detect(data, name) == "openai-responses"
    return importers.parse(data, name=name)


def test_openai_responses_input_output_pair_from_real_call() -> None:
    calls = _twin("test_openai_responses_thinking_with_tool_calls")
    request, response = calls[1]["request_body"], calls[1]["response_body"]
    assert isinstance(request, dict) and isinstance(response, dict)
    (conv,) = _parse({**request, "output": response["output"]}).conversations
    roles = [m.role for m in conv.messages]
    assert roles == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    reasoning_call = conv.messages[2]
    kinds = [b.kind for b in reasoning_call.blocks]
    assert kinds == [BlockKind.THINKING, BlockKind.OPAQUE, BlockKind.TOOL_USE]
    assert (
        reasoning_call.blocks[1].size == 9572 and reasoning_call.blocks[1].raw_type == "reasoning"
    )
    call = reasoning_call.tool_uses[0]
    assert call.tool_name == "update_plan" and isinstance(call.tool_input, dict)
    assert conv.messages[3].tool_results[0].tool_id == call.tool_id
    assert (conv.tool_call_count, conv.tool_result_count) == (1, 1)
    assert [t.name for t in conv.tools] == ["update_plan"]


def test_openai_responses_response_object_usage() -> None:
    response = _twin("test_openai_responses_thinking_with_tool_calls")[0]["response_body"]
    (conv,) = _parse(response).conversations
    system, reply = conv.messages
    assert system.role is Role.SYSTEM  # the response echoes its instructions
    assert reply.usage is not None and reply.model == "gpt-5-2025-08-07"
    assert (reply.usage.input_uncached, reply.usage.output, reply.usage.reasoning) == (
        124,
        1926,
        1792,
    )
    assert reply.usage.convention == "openai"


def test_openai_responses_compaction_item_is_opaque_and_recorded() -> None:
    items = _twin("test_openai_responses_compact_stateful_mode")[3]["request_body"]
    assert isinstance(items, dict)
    (conv,) = _parse(items["input"]).conversations
    assert len(conv.messages) == 8
    summary = conv.messages[6]
    assert [b.kind for b in summary.blocks] == [BlockKind.OPAQUE]
    assert summary.blocks[0].raw_type == "compaction" and summary.blocks[0].size > 4000
    assert "gAAAA" not in summary.text and "compact_summary" in summary.flags
    (comp,) = conv.compactions
    assert (comp.kind, comp.before_index, comp.summary_index) == ("server_compaction", 7, 6)


def test_openai_responses_string_input_and_unknown_items() -> None:
    doc = {
        "model": "gpt-4.1",
        "input": "hello",
        "output": [
            {"type": "brand_new_item", "x": 1},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ],
    }  # fmt: skip
    parsed = _parse(doc)
    (conv,) = parsed.conversations
    assert [m.text for m in conv.messages] == ["hello", "hi"]
    assert conv.messages[1].blocks[1].raw_type == "web_search_call"
    assert "brand_new_item" in parsed.warnings[0].message


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "empty"),
        (b'{"input": [{"type": "message", "role": "user", "content": "x"}', "invalid JSON"),
        (b"\x00" * 64, "binary"),
        (b'[{"type": "input_text", "text": "\xe9"}]', "UTF-8"),
        (b'{"hello": 1}', "not a Responses"),
        (b'[{"type": "mystery"}, {"type": "mystery"}]', "no Responses items"),
    ],
    ids=["empty", "truncated", "binary", "latin1", "other-json", "unknown-items"],
)
def test_openai_responses_bad_input_raises(data: bytes, needle: str) -> None:
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="bad.json", format="openai-responses")
    assert needle in str(info.value) and "bad.json" in str(info.value)


@pytest.mark.parametrize(
    "other",
    [
        "claude-code/sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl",
        "codex-rollout/agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
        "anthropic-messages/claude-trace-req34-response.json",
    ],
    ids=["claude", "codex", "anthropic"],
)
def test_openai_responses_forced_on_other_format_raises(other: str) -> None:
    with pytest.raises(TranscriptError, match="expected"):
        importers.parse((CORPUS / other).read_bytes(), name=other, format="openai-responses")
