from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError
from ctxlab.engine.importers import gemini_cli

DIR = Path(__file__).parents[2] / "data" / "corpus" / "gemini-cli"
FILE = "agentcmd-session-2025-10-27T19-55-981c87cb.json"


def test_gemini_cli_corpus_session() -> None:
    data = (DIR / FILE).read_bytes()
    assert importers.detect(data, FILE) == "gemini-cli"
    parsed = importers.parse(data, name=FILE)
    (conv,) = parsed.conversations
    # The manifest counts the 18 records (3 user + 15 gemini); each of the 13 gemini records
    # that ran tools is followed here by a tool message holding its results: 18 + 13 = 31.
    assert (len(conv.messages), conv.tool_call_count, conv.tool_result_count) == (31, 13, 13)
    assert conv.id == "981c87cb-90ef-4c7f-948d-23173ff43e4e"
    assert conv.title.startswith("Can you make me an ai agent in python")
    assert conv.model == "gemini-2.5-pro" and conv.usage_convention == "gemini"
    assert parsed.warnings == ()


def test_gemini_cli_calls_thoughts_and_usage() -> None:
    conv = gemini_cli.parse((DIR / FILE).read_bytes(), name=FILE).conversations[0]
    call, result = conv.messages[1], conv.messages[2]
    assert [b.kind for b in call.blocks] == [BlockKind.THINKING, BlockKind.TOOL_USE]
    assert call.blocks[0].text.startswith("Considering Project Structure\n")
    use = call.tool_uses[0]
    assert use.tool_name == "list_directory" and "path" in use.tool_input
    assert result.role is Role.TOOL
    assert result.tool_results[0].tool_id == use.tool_id
    assert result.tool_results[0].text.startswith("Directory /Users/")
    usage = conv.messages[3].usage  # input 5423 (1381 cached), output 170 + 48 thoughts
    assert usage is not None
    assert (usage.input_uncached, usage.cache_read, usage.output, usage.reasoning) == (
        4042,
        1381,
        218,
        48,
    )


def _jsonl(*records: object) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


def test_gemini_cli_jsonl_replace_rewind_and_notices() -> None:
    data = _jsonl(
        {"sessionId": "s1", "projectHash": "h", "startTime": "t0", "kind": "main"},
        {"id": "u1", "type": "user", "content": "first"},
        {"id": "g1", "type": "gemini", "content": "draft"},
        {
            "id": "g1",
            "type": "gemini",
            "content": "final",
            "model": "gemini-x",
            "toolCalls": [
                {
                    "id": "c1",
                    "name": "ls",
                    "args": {},
                    "result": [
                        {
                            "functionResponse": {
                                "id": "c1",
                                "name": "ls",
                                "response": {"error": "denied"},
                            }
                        }
                    ],
                    "status": "error",
                }
            ],
        },
        {"id": "i1", "type": "info", "content": "switched model"},
        {"id": "u2", "type": "user", "content": "second"},
        {"id": "g2", "type": "gemini", "content": "gone"},
        {"$rewindTo": "u2"},
        {"$set": {"summary": "A named session"}},
    )
    parsed = gemini_cli.parse(data, name="session.jsonl")
    conv = parsed.conversations[0]
    assert [m.text for m in conv.messages] == ["first", "final", "denied"]
    assert conv.messages[2].tool_results[0].is_error
    assert conv.title == "A named session" and conv.id == "s1"
    assert conv.messages[1].source.line == 4
    assert "UI notices" in parsed.warnings[0].message


def test_gemini_cli_checkpoint_contents() -> None:
    data = json.dumps(
        [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "plan", "thought": True},
                    {"functionCall": {"name": "ls", "args": {"p": 1}}},
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a b"}}}],
            },
        ]
    ).encode()
    assert gemini_cli.sniff(data, "checkpoint-x.json") > 0
    conv = gemini_cli.parse(data, name="checkpoint-x.json").conversations[0]
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert conv.messages[1].blocks[0].kind is BlockKind.THINKING
    assert conv.messages[2].tool_results[0].tool_id == conv.messages[1].tool_uses[0].tool_id
    assert conv.messages[2].text == "a b"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"sessionId": "x", "messages": []}', id="no-messages"),
        pytest.param(b'{"hello": "world"}', id="other-object"),
        pytest.param(
            _jsonl({"sessionId": "x"}, {"id": "i", "type": "info", "content": "n"}),
            id="only-notices",
        ),
    ],
)
def test_gemini_cli_without_messages_is_an_error(data: bytes) -> None:
    with pytest.raises(TranscriptError, match="expected a Gemini CLI session"):
        gemini_cli.parse(data, name="g.json")
