from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError
from ctxlab.engine.importers import sharegpt

DIR = Path(__file__).parents[2] / "data" / "corpus" / "sharegpt"


# Totals equal MANIFEST.tsv: one message per turn, function_call -> tool_use,
# observation -> tool_result. (The manifest's "[flags: 500 conversations]" is the record
# count; its 2,000 is messages.)
@pytest.mark.parametrize(
    ("file", "conversations", "totals"),
    [
        pytest.param("fastchat-dummy_conversation.json", 500, (2000, 0, 0), id="fastchat"),
        pytest.param(
            "llamafactory-glaive_toolcall_en_demo.json", 300, (1914, 211, 211), id="glaive"
        ),
    ],
)
def test_sharegpt_corpus_totals(file: str, conversations: int, totals: tuple[int, ...]) -> None:
    data = (DIR / file).read_bytes()
    assert importers.detect(data, file) == "sharegpt"
    parsed = importers.parse(data, name=file)
    convs = parsed.conversations
    assert len(convs) == conversations
    got = (
        sum(len(c.messages) for c in convs),
        sum(c.tool_call_count for c in convs),
        sum(c.tool_result_count for c in convs),
    )
    assert got == totals
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    ("file", "index", "conv_id", "expected", "title"),
    [
        pytest.param(
            "fastchat-dummy_conversation.json",
            0,
            "identity_0",
            (4, 0, 0),
            "Who are you?",
            id="fastchat-first",
        ),
        pytest.param(
            "fastchat-dummy_conversation.json",
            499,
            "identity_499",
            (2, 0, 0),
            "Are you created by Meta?",
            id="fastchat-last",
        ),
        pytest.param(
            "llamafactory-glaive_toolcall_en_demo.json",
            0,
            "llamafactory-glaive_toolcall_en_demo.json#0",
            (8, 1, 1),
            "Hi, I have some ingredients",
            id="glaive-tool",
        ),
        pytest.param(
            "llamafactory-glaive_toolcall_en_demo.json",
            1,
            "llamafactory-glaive_toolcall_en_demo.json#1",
            (10, 0, 0),
            'Write a definition of "photoshop".',
            id="glaive-plain",
        ),
    ],
)
def test_sharegpt_individual_conversations(
    file: str, index: int, conv_id: str, expected: tuple[int, int, int], title: str
) -> None:
    conv = sharegpt.parse((DIR / file).read_bytes(), name=file).conversations[index]
    assert (len(conv.messages), conv.tool_call_count, conv.tool_result_count) == expected
    assert conv.id == conv_id
    assert conv.title.startswith(title)


def test_sharegpt_function_call_links_to_observation() -> None:
    name = "llamafactory-glaive_toolcall_en_demo.json"
    conv = sharegpt.parse((DIR / name).read_bytes(), name=name).conversations[0]
    call_msg, result_msg = conv.messages[3], conv.messages[4]
    (use,) = call_msg.tool_uses
    (result,) = result_msg.tool_results
    assert call_msg.role is Role.ASSISTANT and result_msg.role is Role.TOOL
    assert use.tool_name == "search_recipes" == result.tool_name
    assert use.tool_input == {"ingredients": ["chicken", "bell peppers", "rice"]}
    assert use.tool_id == result.tool_id == f"{name}#0:call1"
    assert [t.name for t in conv.tools] == ["search_recipes"]


def test_sharegpt_parallel_calls_link_in_order() -> None:
    data = json.dumps(
        [
            {
                "system": "be nice",
                "conversations": [
                    {"from": "human", "value": "go"},
                    {
                        "from": "function_call",
                        "value": json.dumps(
                            [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]
                        ),
                    },
                    {"from": "observation", "value": "ra"},
                    {"from": "observation", "value": "rb"},
                    {"from": "alien", "value": "?"},
                ],
            }
        ]
    ).encode()
    parsed = sharegpt.parse(data, name="p.json")
    conv = parsed.conversations[0]
    assert conv.messages[0].role is Role.SYSTEM and conv.messages[0].text == "be nice"
    uses = conv.messages[2].tool_uses
    results = [m.tool_results[0] for m in conv.messages[3:]]
    assert [(r.tool_id, r.tool_name, r.text) for r in results] == [
        (uses[0].tool_id, "a", "ra"),
        (uses[1].tool_id, "b", "rb"),
    ]
    assert parsed.warnings[0].message == "skipped a turn from unknown speaker 'alien'"


def test_sharegpt_typed_content_variant() -> None:
    data = json.dumps(
        [
            {
                "messages": [
                    {"role": "user", "content": [{"type": "text", "value": "hi"}]},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "reasoning", "value": "think"},
                            {"type": "tool_call", "value": '{"name": "f", "arguments": {"x": 1}}'},
                        ],
                    },
                    {"role": "tool", "content": "42"},
                    {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                ]
            }
        ]
    ).encode()
    assert sharegpt.sniff(data, "x.json") > 0
    conv = sharegpt.parse(data, name="v1.json").conversations[0]
    kinds = [[b.kind for b in m.blocks] for m in conv.messages]
    assert kinds == [
        [BlockKind.TEXT],
        [BlockKind.THINKING, BlockKind.TOOL_USE],
        [BlockKind.TOOL_RESULT],
        [BlockKind.TEXT],
    ]
    assert conv.messages[2].tool_results[0].tool_id == conv.messages[1].tool_uses[0].tool_id
    assert conv.messages[1].tool_uses[0].tool_input == {"x": 1}


def test_sharegpt_without_conversations_is_an_error() -> None:
    with pytest.raises(TranscriptError, match="no ShareGPT conversations") as info:
        sharegpt.parse(b'[{"role": "user", "content": "x"}]', name="w.json")
    assert "w.json" in str(info.value) and "expected ShareGPT records" in str(info.value)


def test_sharegpt_turn_without_value_is_kept_and_said() -> None:
    data = b'[{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt"}]}]'
    parsed = importers.parse(data, name="x.json", format="sharegpt")
    assert [m.role.value for m in parsed.conversations[0].messages] == ["user", "assistant"]
    (warning,) = parsed.warnings
    assert warning.message == "a turn without a value: kept as an empty message"
    assert warning.where == "x.json:record 1"  # the second turn


# Issue 31 item 3: LLaMA-Factory parallel calls. One function_call turn with 2-3 calls,
# then ONE observation turn carrying a JSON array of their results. Each result pairs with
# its own call of that turn (by order: these files have no ids), never with a call of
# another turn; counts that do not match are warned.


def _call(*names: str) -> dict[str, str]:
    calls = [{"name": n, "arguments": {"q": n}} for n in names]
    return {"from": "function_call", "value": json.dumps(calls if len(calls) > 1 else calls[0])}


def _obs(*results: object) -> dict[str, str]:
    value = results[0] if len(results) == 1 else list(results)
    return {"from": "observation", "value": json.dumps(value)}


def _parse(turns: list[dict[str, str]]) -> tuple[list[tuple[str, str, str]], object]:
    record = [{"conversations": [{"from": "human", "value": "go"}, *turns]}]
    parsed = sharegpt.parse(json.dumps(record).encode(), name="par.json")
    conv = parsed.conversations[0]
    calls = {b.tool_id: b.tool_name for m in conv.messages for b in m.blocks
             if b.kind is BlockKind.TOOL_USE}  # fmt: skip
    pairs = [(calls.get(b.tool_id, "?"), b.tool_name, b.text) for m in conv.messages
             for b in m.blocks if b.kind is BlockKind.TOOL_RESULT]  # fmt: skip
    return pairs, parsed


def test_parallel_results_in_one_turn_pair_with_their_calls() -> None:
    pairs, parsed = _parse(
        [
            _call("weather", "time"),
            _obs({"t": 21}, {"now": "09:00"}),
            {"from": "gpt", "value": "ok"},
            {"from": "human", "value": "more"},
            _call("news", "stocks", "rates"),
            _obs({"n": 1}, {"s": 2}, {"r": 3}),
            {"from": "gpt", "value": "done"},
        ]
    )
    assert pairs == [
        ("weather", "weather", '{"t": 21}'),
        ("time", "time", '{"now": "09:00"}'),
        ("news", "news", '{"n": 1}'),
        ("stocks", "stocks", '{"s": 2}'),
        ("rates", "rates", '{"r": 3}'),
    ]
    conv = parsed.conversations[0]  # type: ignore[attr-defined]
    assert (conv.tool_call_count, conv.tool_result_count) == (5, 5)
    assert parsed.warnings == ()  # type: ignore[attr-defined]


def test_single_call_result_that_is_a_list_stays_one_result() -> None:
    pairs, parsed = _parse([_call("search"), {"from": "observation", "value": '["a", "b"]'}])
    assert pairs == [("search", "search", '["a", "b"]')]
    assert parsed.warnings == ()  # type: ignore[attr-defined]


def test_a_result_never_pairs_with_a_call_of_an_earlier_turn() -> None:
    pairs, parsed = _parse(
        [
            _call("a", "b", "c"),
            _obs({"ra": 1}, {"rb": 2}),  # one result missing: said, not shifted onward
            {"from": "gpt", "value": "ok"},
            _call("d"),
            _obs({"rd": 4}),
        ]
    )
    assert pairs == [("a", "a", '{"ra": 1}'), ("b", "b", '{"rb": 2}'), ("d", "d", '{"rd": 4}')]
    codes = {w.code for w in parsed.warnings}  # type: ignore[attr-defined]
    assert codes == {"tool-results-paired-by-order"}
    assert any("2 results for 3 calls" in w.message for w in parsed.warnings)  # type: ignore[attr-defined]


def test_results_pair_by_id_where_ids_exist() -> None:
    calls = [
        {"id": "c1", "name": "weather", "arguments": {}},
        {"id": "c2", "name": "time", "arguments": {}},
    ]
    results = [{"tool_call_id": "c2", "content": "09:00"}, {"tool_call_id": "c1", "content": "21C"}]
    pairs, parsed = _parse(
        [{"from": "function_call", "value": json.dumps(calls)},
         {"from": "observation", "value": json.dumps(results)}]
    )  # fmt: skip
    assert pairs == [("time", "time", "09:00"), ("weather", "weather", "21C")]
    assert parsed.warnings == ()  # type: ignore[attr-defined]


def test_one_observation_turn_per_parallel_call_still_pairs_in_order() -> None:
    pairs, parsed = _parse([_call("a", "b"), _obs({"ra": 1}), _obs({"id": 7, "rb": 2})])
    assert pairs == [("a", "a", '{"ra": 1}'), ("b", "b", '{"id": 7, "rb": 2}')]
    assert parsed.warnings == ()  # type: ignore[attr-defined]


def test_tool_turns_naming_their_call_pair_by_that_id() -> None:
    calls = [
        {"id": "c1", "name": "weather", "arguments": {}},
        {"id": "c2", "name": "time", "arguments": {}},
    ]
    pairs, parsed = _parse(
        [
            {"from": "function_call", "value": json.dumps(calls)},
            {"from": "observation", "tool_call_id": "c2", "value": "09:00"},
            {"from": "observation", "tool_call_id": "c1", "value": "21C"},
        ]
    )
    assert pairs == [("time", "time", "09:00"), ("weather", "weather", "21C")]
    assert parsed.warnings == ()  # type: ignore[attr-defined]
