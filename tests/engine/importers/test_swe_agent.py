from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError
from ctxlab.engine.importers import swe_agent

DIR = Path(__file__).parents[2] / "data" / "corpus" / "swe-agent-traj"


# Equal to MANIFEST.tsv. The CTF demo uses the text protocol: its 21 actions become
# tool_use blocks and the 20 observations that follow them tool_results (the final
# `submit` has no observation).
@pytest.mark.parametrize(
    ("file", "expected", "title", "model"),
    [
        pytest.param(
            "ctf-i_got_id_demo.traj",
            (43, 21, 20),
            "We're currently solving the following CTF challenge.",
            "",
            id="ctf-text",
        ),
        pytest.param(
            "marshmallow-1867-fc-replace-from-source.traj",
            (28, 13, 13),
            "marshmallow-code__marshmallow-1867",
            "replay",
            id="fc-replay",
        ),
        pytest.param(
            "marshmallow-1867-fc.traj",
            (24, 11, 11),
            "marshmallow-code__marshmallow-1867",
            "gpt-4o",
            id="fc",
        ),
    ],
)
def test_swe_agent_corpus_counts(
    file: str, expected: tuple[int, int, int], title: str, model: str
) -> None:
    data = (DIR / file).read_bytes()
    assert importers.detect(data, file) == "swe-agent"
    parsed = importers.parse(data, name=file)
    (conv,) = parsed.conversations
    assert (len(conv.messages), conv.tool_call_count, conv.tool_result_count) == expected
    assert conv.title.startswith(title)
    assert conv.model == model
    assert parsed.warnings == ()
    assert conv.messages[0].role is Role.SYSTEM
    assert dict(conv.metadata)["exit_status"] == "submitted"


def test_swe_agent_text_protocol_action_is_faithful() -> None:
    name = "ctf-i_got_id_demo.traj"
    raw = json.loads((DIR / name).read_bytes())["history"]
    conv = swe_agent.parse((DIR / name).read_bytes(), name=name).conversations[0]
    action, observation = conv.messages[2], conv.messages[3]
    text, use = action.blocks
    assert text.text == raw[2]["thought"]
    assert (use.kind, use.tool_name, use.tool_input) == (
        BlockKind.TOOL_USE,
        "curl",
        {"command": raw[2]["action"]},
    )
    assert observation.role is Role.TOOL
    (result,) = observation.tool_results
    assert (result.tool_id, result.text) == (use.tool_id, raw[3]["content"])
    last = conv.messages[-1]
    assert last.tool_uses[0].tool_name == "submit" and last.role is Role.ASSISTANT


def test_swe_agent_unsplittable_action_stays_text() -> None:
    doc = {
        "history": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": "I will run ls somehow",
                "thought": "I will",
                "action": "ls\n",
            },
            {"role": "user", "content": "a b c", "is_demo": True},
        ],
        "info": {"model_stats": {"tokens_sent": 10, "tokens_received": 2}},
    }
    parsed = swe_agent.parse(json.dumps(doc).encode(), name="x.traj")
    conv = parsed.conversations[0]
    assert conv.tool_call_count == 0
    assert [m.role for m in conv.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]
    assert conv.messages[2].text == "I will run ls somehow"
    assert "demonstration" in conv.messages[3].flags
    assert "kept as text" in parsed.warnings[0].message
    assert dict(conv.metadata)["model_stats.tokens_sent"] == "10"


def test_swe_agent_trajectory_fallback() -> None:
    doc = {
        "trajectory": [
            {
                "response": "look\n```\nls\n```",
                "thought": "look\n",
                "action": "ls\n",
                "observation": "file",
            },
        ]
    }
    parsed = swe_agent.parse(json.dumps(doc).encode(), name="t.traj")
    conv = parsed.conversations[0]
    assert [m.role for m in conv.messages] == [Role.ASSISTANT, Role.TOOL]
    assert conv.messages[0].tool_uses[0].tool_id == conv.messages[1].tool_results[0].tool_id
    assert "rebuilt from trajectory" in parsed.warnings[0].message


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param([], id="array"),
        pytest.param({"info": {}}, id="no-history"),
        pytest.param({"history": []}, id="empty-history"),
    ],
)
def test_swe_agent_without_history_is_an_error(doc: object) -> None:
    with pytest.raises(TranscriptError, match="expected a SWE-agent trajectory"):
        swe_agent.parse(json.dumps(doc).encode(), name="e.traj")
