from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Conversation, ParsedFile, Role, TranscriptError
from ctxlab.engine.importers import openai_chat

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
DIR = CORPUS / "openai-chat"


def parse(obj: object, *, jsonl: bool = False, name: str = "t.json") -> ParsedFile:
    if jsonl:
        assert isinstance(obj, list)
        data = "\n".join(json.dumps(o) for o in obj).encode()
    else:
        data = json.dumps(obj).encode()
    return openai_chat.parse(data, name=name)


def counts(conv: Conversation) -> tuple[int, int, int]:
    return len(conv.messages), conv.tool_call_count, conv.tool_result_count


# Totals equal MANIFEST.tsv (messages, tool_calls, tool_results): one message per source
# message, one tool_use per tool_calls entry, one tool_result per role=tool message.
@pytest.mark.parametrize(
    ("file", "conversations", "totals"),
    [
        pytest.param("taubench-gpt-4o-airline.json", 200, (5308, 1164, 1164), id="taubench"),
        pytest.param(
            "taubench-gpt-4o-airline-task2-messages.json", 1, (62, 27, 27), id="task2-array"
        ),
    ],
)
def test_openai_chat_corpus_totals(file: str, conversations: int, totals: tuple[int, ...]) -> None:
    data = (DIR / file).read_bytes()
    assert importers.detect(data, file) == "openai-chat"
    parsed = importers.parse(data, name=file)
    assert len(parsed.conversations) == conversations
    got = tuple(sum(x) for x in zip(*(counts(c) for c in parsed.conversations), strict=True))
    assert got == totals
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    ("index", "expected", "title_start"),
    [
        pytest.param(0, (32, 8, 8), "task 0 trial 0: Hi! I'm looking", id="first"),
        pytest.param(1, (12, 0, 0), "task 1 trial 0:", id="no-tools"),
        pytest.param(52, (62, 27, 27), "task 2 trial 1:", id="longest"),
        pytest.param(199, (12, 2, 2), "task 49 trial 3:", id="last"),
    ],
)
def test_openai_chat_taubench_conversations(
    index: int, expected: tuple[int, int, int], title_start: str
) -> None:
    name = "taubench-gpt-4o-airline.json"
    conv = openai_chat.parse((DIR / name).read_bytes(), name=name).conversations[index]
    assert counts(conv) == expected
    assert conv.id == f"{name}#{index}"
    assert conv.title.startswith(title_start)
    assert conv.messages[0].role is Role.SYSTEM
    assert ("task_id", conv.metadata[0][1]) == conv.metadata[0]


def test_openai_chat_task2_matches_its_source_conversation() -> None:
    whole = openai_chat.parse((DIR / "taubench-gpt-4o-airline.json").read_bytes(), name="a")
    alone = openai_chat.parse(
        (DIR / "taubench-gpt-4o-airline-task2-messages.json").read_bytes(), name="a"
    )
    assert [m.blocks for m in alone.conversations[0].messages] == [
        m.blocks for m in whole.conversations[52].messages
    ]


def test_openai_chat_tool_calls_and_results_link() -> None:
    parsed = parse(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "ls", "arguments": '{"path": "/"}'},
                        },
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "cat", "arguments": "{not json"},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "c2", "content": "oops"},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}]},
            ],
            "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}],
        }
    )
    conv = parsed.conversations[0]
    uses = conv.messages[1].tool_uses
    assert [(u.tool_id, u.tool_name, u.tool_input) for u in uses] == [
        ("c1", "ls", {"path": "/"}),
        ("c2", "cat", "{not json"),
    ]
    results = [m.tool_results[0] for m in conv.messages[2:]]
    assert [(r.tool_id, r.tool_name, r.text) for r in results] == [
        ("c2", "cat", "oops"),
        ("c1", "ls", "a"),
    ]
    assert results[1].parts[0].text == "a"
    assert [t.name for t in conv.tools] == ["ls"]


def test_openai_chat_legacy_function_call_links_by_order() -> None:
    conv = parse(
        [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            {"role": "function", "name": "f", "content": "done"},
        ]
    ).conversations[0]
    (use,) = conv.messages[1].tool_uses
    (result,) = conv.messages[2].tool_results
    assert use.tool_id == result.tool_id != ""
    assert result.text == "done" and conv.messages[2].role is Role.TOOL


def test_openai_chat_image_parts_keep_type_and_size() -> None:
    conv = parse(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}},
                    {"type": "mystery", "x": 1},
                ],
            }
        ]
    )
    blocks = conv.conversations[0].messages[0].blocks
    assert [b.kind for b in blocks] == [
        BlockKind.TEXT,
        BlockKind.MEDIA,
        BlockKind.MEDIA,
        BlockKind.OPAQUE,
    ]
    assert (blocks[1].media_type, blocks[1].size, blocks[1].text) == ("image/png", 3, "")
    assert blocks[2].text == "https://x.example/a.png"
    assert conv.warnings[0].message.startswith("unknown content part type 'mystery'")


def test_openai_chat_response_usage_is_disjoint() -> None:
    conv = parse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
            "usage": {
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 800},
                "completion_tokens_details": {"reasoning_tokens": 20},
            },
        }
    ).conversations[0]
    usage = conv.messages[0].usage
    assert usage is not None
    assert (usage.input_uncached, usage.cache_read, usage.output, usage.reasoning) == (
        200,
        800,
        50,
        20,
    )
    assert usage.prompt_tokens == 1000 and usage.convention == "openai"
    assert conv.model == "gpt-4o" and conv.usage_convention == "openai"


@pytest.mark.parametrize(
    ("lines", "conversations", "messages"),
    [
        pytest.param(
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
            1,
            [2],
            id="message-per-line",
        ),
        pytest.param(
            [
                {"messages": [{"role": "user", "content": "a"}]},
                {
                    "messages": [
                        {"role": "user", "content": "b"},
                        {"role": "assistant", "content": "c"},
                    ]
                },
            ],
            2,
            [1, 2],
            id="conversation-per-line",
        ),
    ],
)
def test_openai_chat_jsonl_shapes(
    lines: list[object], conversations: int, messages: list[int]
) -> None:
    parsed = parse(lines, jsonl=True, name="t.jsonl")
    assert [len(c.messages) for c in parsed.conversations] == messages
    assert len(parsed.conversations) == conversations
    assert parsed.conversations[-1].messages[-1].source.line == len(lines)


def test_openai_chat_unknown_role_is_counted() -> None:
    parsed = parse([{"role": "user", "content": "a"}, {"role": "robot"}, {"role": "robot"}])
    assert len(parsed.conversations[0].messages) == 1
    (warning,) = parsed.warnings
    assert warning.count == 2 and "robot" in warning.message


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"hello": 1}, id="object"),
        pytest.param([1, 2, 3], id="numbers"),
        pytest.param([{"conversations": [{"from": "human", "value": "x"}]}], id="sharegpt"),
    ],
)
def test_openai_chat_no_messages_is_an_error(obj: object) -> None:
    with pytest.raises(TranscriptError, match="no chat messages") as info:
        parse(obj)
    assert "expected OpenAI chat messages" in str(info.value)


def test_openai_chat_missing_content_and_unnamed_call_are_said() -> None:
    data = (
        b'[{"role": "user"}, {"role": "assistant", "content": null, "tool_calls": '
        b'[{"id": "c1", "function": {"arguments": "{}"}}]}, '
        b'{"role": "tool", "tool_call_id": "c1", "content": "ok"}]'
    )
    parsed = importers.parse(data, name="x.json", format="openai-chat")
    assert len(parsed.conversations[0].messages) == 3
    assert {w.message for w in parsed.warnings} == {
        "a message without a content key: kept empty",
        "a tool call without a function name: kept unnamed",
    }
    # content: null beside tool calls is the API's own shape: no warning for it
    ok = b'[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}]'
    assert importers.parse(ok, name="y.json", format="openai-chat").warnings == ()
