from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError

DIR = Path(__file__).parents[2] / "data" / "corpus" / "api-cassettes"

# Per conversation (messages, tool_use blocks, tool_result blocks). Each conversation is its
# largest request plus that request's response, with the system prompt / instructions as
# message 0. The manifest counts only the largest request's messages of one provider:
#  - anthropic compaction: 3 request messages + system + response = 5;
#  - multiple_agent_tool_calls: the Gemini run (3 contents + response = 4) is a separate
#    conversation from the Chat Completions run (7 messages + response = 8, the manifest's 7);
#  - responses compact: 8 input items (the compaction item is its own message) + response;
#  - responses thinking: instructions + user + (reasoning + call) + output + response = 5
#    (the manifest counts the call item and the reasoning item's message separately).
PINNED = {
    "pydanticai-test_anthropic_compaction_end_to_end": [(5, 0, 0)],
    "pydanticai-test_multiple_agent_tool_calls": [(4, 1, 1), (8, 2, 2)],
    "pydanticai-test_openai_responses_compact_stateful_mode": [(9, 0, 0)],
    "pydanticai-test_openai_responses_thinking_with_tool_calls": [(5, 1, 1)],
}
FILES = sorted(f"{stem}.{ext}" for stem in PINNED for ext in ("yaml", "json"))


def _parse(file: str) -> importers.ParsedFile:
    return importers.parse((DIR / file).read_bytes(), name=file)


@pytest.mark.parametrize("file", FILES, ids=lambda f: f[15:45] + f[-4:])
def test_cassette_corpus_counts(file: str) -> None:
    data = (DIR / file).read_bytes()
    assert importers.detect(data, file) == "api-cassettes"
    parsed = _parse(file)
    got = [(len(c.messages), c.tool_call_count, c.tool_result_count) for c in parsed.conversations]
    assert got == PINNED[file.rsplit(".", 1)[0]]
    assert parsed.warnings == ()


@pytest.mark.parametrize("stem", sorted(PINNED), ids=lambda s: s[15:45])
def test_cassette_yaml_and_json_twin_agree(stem: str) -> None:
    from_yaml = _parse(f"{stem}.yaml").conversations
    from_json = _parse(f"{stem}.json").conversations
    assert [c.messages for c in from_yaml] != []
    for a, b in zip(from_yaml, from_json, strict=True):
        assert [(m.role, m.blocks, m.usage) for m in a.messages] == [
            (m.role, m.blocks, m.usage) for m in b.messages
        ]


def test_cassette_anthropic_server_compaction() -> None:
    (conv,) = _parse("pydanticai-test_anthropic_compaction_end_to_end.yaml").conversations
    assert [m.role for m in conv.messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
    ]
    (comp,) = conv.compactions
    assert comp.kind == "server_compaction" and comp.summary_index == 2
    block = conv.messages[2].blocks[0]
    assert block.kind is BlockKind.OPAQUE and block.raw_type == "compaction"
    # both calls' usage: the first response is now message 2 of the history
    usages = [m.usage for m in conv.messages if m.role is Role.ASSISTANT]
    assert [(u.input_uncached, u.output) for u in usages if u] == [(220, 8), (239, 10)]


def test_cassette_gemini_and_chat_runs_are_separate_conversations() -> None:
    gemini, chat = _parse("pydanticai-test_multiple_agent_tool_calls.yaml").conversations
    assert gemini.usage_convention == "gemini" and chat.usage_convention == "openai"
    call = gemini.messages[1].tool_uses[0]
    result = gemini.messages[2].tool_results[0]
    assert call.tool_name == "get_capital" and call.tool_input == {"country": "France"}
    assert result.tool_id == call.tool_id and "Paris" in result.text
    assert gemini.messages[2].role is Role.TOOL
    assert chat.messages[-1].text == "The capital of England is London."
    assert chat.messages[-1].usage is not None and chat.messages[-1].usage.prompt_tokens == 129
    assert [t.name for t in chat.tools] == ["get_capital"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "empty"),
        (b"interactions:\n- request: {uri: 'x'\n  bad: [", "invalid YAML"),
        (b"\x00\x01" * 50, "binary"),
        (b"interactions:\n- request:\n    uri: caf\xe9\n", "UTF-8"),
        (b"interactions: []\n", "no recorded interactions"),
        (b"interactions:\n- request: {uri: 'https://example.org/'}\n", "no LLM API calls"),
    ],
    ids=["empty", "bad-yaml", "binary", "latin1", "none", "not-llm"],
)
def test_cassette_bad_input_raises(data: bytes, needle: str) -> None:
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="bad.yaml", format="api-cassettes")
    assert needle in str(info.value) and "bad.yaml" in str(info.value)


def test_cassette_forced_on_claude_code_raises() -> None:
    other = DIR.parent / "claude-code" / "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
    with pytest.raises(TranscriptError, match="expected"):
        importers.parse(other.read_bytes(), name=other.name, format="api-cassettes")
