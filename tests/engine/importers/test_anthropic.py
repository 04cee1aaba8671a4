from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
DIR = CORPUS / "anthropic-messages"

# (messages, tool_use blocks, tool_result blocks). The request's system prompt is message 0,
# so the request has one message more than the manifest's 27.
PINNED = {
    "claude-trace-req34-request.json": [(28, 11, 11)],
    "claude-trace-req34-response.json": [(1, 0, 0)],
}


def _sse(*events: dict[str, object]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


STREAM = _sse(
    {
        "type": "message_start",
        "message": {
            "id": "msg_s1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4",
            "content": [],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"command": "l'},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": 's"}'},
    },
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}},
    {"type": "message_stop"},
)


@pytest.mark.parametrize("file", sorted(PINNED))
def test_anthropic_corpus_counts(file: str) -> None:
    data = (DIR / file).read_bytes()
    assert importers.detect(data, file) == "anthropic-messages"
    parsed = importers.parse(data, name=file)
    got = [(len(c.messages), c.tool_call_count, c.tool_result_count) for c in parsed.conversations]
    assert got == PINNED[file]
    assert parsed.warnings == ()


def test_anthropic_request_has_system_tools_and_title() -> None:
    file = "claude-trace-req34-request.json"
    conv = importers.parse((DIR / file).read_bytes(), name=file).conversations[0]
    assert conv.messages[0].role is Role.SYSTEM and "summar" in conv.messages[0].text
    assert [t.name for t in conv.tools] == ["Read"]
    assert conv.title.startswith("create a folder weather")
    assert conv.model == "claude-sonnet-4-20250514"
    assert conv.messages[-1].role is Role.USER  # the /compact instruction, no response


def test_anthropic_response_usage_normalised() -> None:
    file = "claude-trace-req34-response.json"
    (message,) = importers.parse((DIR / file).read_bytes(), name=file).conversations[0].messages
    assert message.id == "msg_01KZWnDMW4SieMF8SMAyXtud"
    assert message.usage is not None
    assert (message.usage.input_uncached, message.usage.cache_write_5m) == (3, 12072)
    assert message.usage.output == 1206 and message.usage.convention == "anthropic"
    assert message.text.startswith("<analysis>")


def test_anthropic_sse_stream_reassembled() -> None:
    data = STREAM.encode()
    assert importers.detect(data, "s.txt") == "anthropic-messages"
    (message,) = importers.parse(data, name="s.txt").conversations[0].messages
    assert [b.kind for b in message.blocks] == [BlockKind.TEXT, BlockKind.TOOL_USE]
    assert message.blocks[0].text == "Hello"
    assert message.blocks[1].tool_input == {"command": "ls"}
    assert message.usage is not None
    assert (message.usage.prompt_tokens, message.usage.output) == (100, 42)


def test_anthropic_sse_stream_cut_off_names_the_line() -> None:
    # A stream saved while it was still arriving: its last event is half a JSON object.
    cut = STREAM[: STREAM.index('"partial_json": "s')]
    warnings = importers.parse(cut.encode(), name="cut.sse").warnings
    (warning,) = [w for w in warnings if w.code == "unreadable-json-text"]
    line = cut.count("\n") + 1  # the unfinished last line
    assert cut.splitlines()[line - 1].startswith("data: ")
    assert warning.where.startswith(f"cut.sse, stream line {line}: ")


def _record(messages: list[dict[str, object]], response: object, *, tools: bool) -> str:
    body = {"model": "claude-sonnet-4", "max_tokens": 100, "messages": messages}
    if tools:
        body["tools"] = [{"name": "Bash", "description": "run", "input_schema": {}}]
    resp: dict[str, object] = {"status_code": 200, "headers": {}}
    if isinstance(response, str):
        resp["body_raw"] = response
    else:
        resp["body"] = response
    url = "https://api.anthropic.com/v1/messages"
    return json.dumps({"request": {"url": url, "body": body}, "response": resp})


def test_anthropic_proxy_log_rebuilds_main_conversation() -> None:
    u1 = {"role": "user", "content": [{"type": "text", "text": "list files"}]}
    first = {
        "id": "msg_a",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
        "usage": {"input_tokens": 50, "output_tokens": 7},
    }
    u2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}
    title_call = {"role": "user", "content": "write a title"}
    title_resp = {"type": "message", "role": "assistant", "content": [], "usage": {}}
    lines = [
        _record([u1], first, tools=True),
        _record([title_call], title_resp, tools=False),
        _record([u1, {"role": "assistant", "content": first["content"]}, u2], STREAM, tools=True),
    ]
    data = "\n".join(lines).encode()
    assert importers.detect(data, "log.jsonl") == "anthropic-messages"
    parsed = importers.parse(data, name="log.jsonl")
    (conv,) = parsed.conversations
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert (conv.tool_call_count, conv.tool_result_count) == (2, 1)
    # the first call's usage is put back on the message it produced
    assert conv.messages[1].usage is not None and conv.messages[1].usage.output == 7
    assert conv.messages[3].usage is not None and conv.messages[3].usage.output == 42
    assert conv.messages[3].source.line == 3
    assert parsed.warnings[0].message.startswith("side call") and parsed.warnings[0].count == 1


def test_anthropic_server_compaction_block_recorded() -> None:
    twin = CORPUS / "api-cassettes" / "pydanticai-test_anthropic_compaction_end_to_end.json"
    body = json.loads(twin.read_bytes())[0]["response_body"]
    conv = importers.parse(json.dumps(body).encode(), name="resp.json").conversations[0]
    (message,) = conv.messages
    assert message.blocks[0].kind is BlockKind.OPAQUE and message.blocks[0].raw_type == "compaction"
    assert message.blocks[0].size > 100 and "compact_summary" in message.flags
    (comp,) = conv.compactions
    assert (comp.kind, comp.before_index, comp.summary_index) == ("server_compaction", 0, 0)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "empty"),
        (b'{"model": "claude", "messages": [{"role": "user", "content": "hi"', "invalid JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20, "binary"),
        (
            '{"model": "x", "messages": [{"role": "user", "content": "\xe9"}]}'.encode("latin-1"),
            "UTF-8",
        ),
        (b'{"hello": "world"}', "not an Anthropic"),
        (b"event: ping\ndata: {}\n\n", "message_start"),
        (b'{"model": "m", "max_tokens": 1, "messages": []}', "no messages"),
    ],
    ids=["empty", "truncated", "binary", "latin1", "other-json", "sse-no-start", "no-messages"],
)
def test_anthropic_bad_input_raises_located_error(data: bytes, needle: str) -> None:
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="bad.json", format="anthropic-messages")
    assert needle in str(info.value) and "bad.json" in str(info.value)


@pytest.mark.parametrize(
    "other",
    [
        "claude-code/sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl",
        "codex-exec-json/agentcmd-stream-output-2.jsonl",
    ],
)
def test_anthropic_forced_on_other_format_raises(other: str) -> None:
    with pytest.raises(TranscriptError, match="expected"):
        importers.parse((CORPUS / other).read_bytes(), name=other, format="anthropic-messages")
