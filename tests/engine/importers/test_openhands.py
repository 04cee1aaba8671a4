from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Role, TranscriptError
from ctxlab.engine.importers import openhands

DIR = Path(__file__).parents[2] / "data" / "corpus" / "openhands"


# Per conversation: (id, messages, tool_use blocks, tool_result blocks). The manifest counts
# every event as a message (52, 4, 18); here state bookkeeping that never reaches the model
# (agent_state_changed, change_agent_state, empty `null` observations) is not a message, so
# basic_gui_mode has 10 messages instead of 18. Tool counts equal the manifest's.
@pytest.mark.parametrize(
    ("file", "expected"),
    [
        pytest.param(
            "resolver-mock-output.jsonl",
            [("neubig/pr-viewer#5", 8, 4, 3), ("neubig/pr-viewer#1", 44, 22, 21)],
            id="resolver-2-instances",
        ),
        pytest.param("trajs-basic.json", [("trajs-basic.json", 4, 2, 1)], id="basic"),
        pytest.param(
            "trajs-basic_gui_mode.json", [("trajs-basic_gui_mode.json", 10, 4, 4)], id="gui"
        ),
    ],
)
def test_openhands_corpus_counts(file: str, expected: list[tuple[str, int, int, int]]) -> None:
    data = (DIR / file).read_bytes()
    assert importers.detect(data, file) == "openhands"
    parsed = importers.parse(data, name=file)
    got = [
        (c.id, len(c.messages), c.tool_call_count, c.tool_result_count)
        for c in parsed.conversations
    ]
    assert got == expected
    assert parsed.warnings == ()


def test_openhands_tool_call_metadata_links_and_usage() -> None:
    conv = openhands.parse((DIR / "trajs-basic.json").read_bytes(), name="b").conversations[0]
    user, call, result, finish = conv.messages
    assert user.role is Role.USER and user.text.startswith("Please create a simple 2048 game")
    (use,) = call.tool_uses
    assert (use.tool_id, use.tool_name) == ("toolu_017nBp7UfiGqyrA7j77HgtFP", "str_replace_editor")
    assert use.tool_input["command"] == "create"  # parsed from the LLM's own arguments
    assert result.tool_results[0].tool_id == use.tool_id
    assert call.usage is not None
    assert (call.usage.input_uncached, call.usage.cache_write_5m, call.usage.output) == (
        4,
        3482,
        1135,
    )
    assert call.usage.prompt_tokens == 3486
    assert finish.tool_uses[0].tool_name == "finish"
    assert conv.model == "claude-3-5-sonnet-20241022" and call.id == "3"


def test_openhands_resolver_flat_history_links_by_order() -> None:
    parsed = openhands.parse((DIR / "resolver-mock-output.jsonl").read_bytes(), name="r")
    conv = parsed.conversations[0]
    assert conv.title == "neubig/pr-viewer#5: Add MIT license"
    assert conv.messages[0].role is Role.USER
    run, output = conv.messages[1], conv.messages[2]
    assert run.tool_uses[0].tool_name == "run"
    assert run.tool_uses[0].tool_input["command"] == "touch LICENSE"
    assert output.tool_results[0].tool_id == run.tool_uses[0].tool_id
    assert conv.messages[0].source.line == 1 and conv.messages[2].source.record == 2
    assert dict(conv.metadata)["accumulated_cost"] == "0.070713"


def test_openhands_command_output_includes_model_visible_suffix() -> None:
    conv = openhands.parse((DIR / "trajs-basic_gui_mode.json").read_bytes(), name="g")
    result = conv.conversations[0].messages[2].tool_results[0]
    assert result.text.endswith("[The command completed with exit code 0.]")


def test_openhands_condensation_and_parallel_calls() -> None:
    response = {"id": "r1", "model": "m", "choices": [{"message": {"content": "two calls"}}]}
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        {
            "id": 2,
            "source": "agent",
            "action": "run",
            "args": {"command": "a", "thought": "t"},
            "tool_call_metadata": {
                "tool_call_id": "x1",
                "function_name": "bash",
                "model_response": response,
            },
        },
        {
            "id": 3,
            "source": "agent",
            "action": "run",
            "args": {"command": "b"},
            "tool_call_metadata": {
                "tool_call_id": "x2",
                "function_name": "bash",
                "model_response": response,
            },
        },
        {"id": 4, "source": "agent", "observation": "run", "content": "B", "cause": 3},
        {"id": 5, "source": "agent", "observation": "error", "content": "A", "cause": 2},
        {
            "id": 6,
            "source": "agent",
            "action": "condensation",
            "args": {"forgotten_event_ids": [2, 3], "summary": "did a and b"},
        },
        {"id": 7, "source": "environment", "strange": True},
    ]
    parsed = openhands.parse(json.dumps(events).encode(), name="c.json")
    conv = parsed.conversations[0]
    assert [m.role for m in conv.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.USER,
    ]
    assert [u.tool_id for u in conv.messages[1].tool_uses] == ["x1", "x2"]
    assert conv.messages[1].text == "t"
    assert [m.tool_results[0].tool_id for m in conv.messages[2:4]] == ["x2", "x1"]
    assert conv.messages[3].tool_results[0].is_error
    (compaction,) = conv.compactions
    assert (compaction.kind, compaction.summary_index, compaction.before_index) == (
        "condensation",
        4,
        4,
    )
    assert "compact_summary" in conv.messages[4].flags
    assert parsed.warnings[0].message.startswith("skipped an event that is neither")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'[{"role": "user", "content": "x"}]', id="chat-array"),
        pytest.param(b'{"instance_id": "a"}\n{"instance_id": "b"}\n', id="jsonl-no-history"),
    ],
)
def test_openhands_without_events_is_an_error(data: bytes) -> None:
    with pytest.raises(TranscriptError, match="expected OpenHands events"):
        openhands.parse(data, name="n.json")
