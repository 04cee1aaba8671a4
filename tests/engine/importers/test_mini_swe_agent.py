"""mini-swe-agent ``.traj.json`` on a real 2.3.0 trajectory: its format is named at its
end, after the messages, so it is known by ``info.mini_version`` at its start; the
``exit`` message never reached the model."""

from __future__ import annotations

import json
from pathlib import Path

from ctxlab.engine import importers
from ctxlab.engine.core.model import Role

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "mini-swe-agent"
TRAJ = SAMPLE / "astropy__astropy-12907.traj.json"


def test_a_real_mini_swe_agent_2_trajectory_is_read_whole() -> None:
    data = TRAJ.read_bytes()
    document = json.loads(data)
    assert document["trajectory_format"] == "mini-swe-agent-1.1"
    assert importers.detect(data, TRAJ.name) == "swe-agent"
    assert importers.detect_head(data[: importers.HEAD_BYTES], TRAJ.name, whole=False) == (
        "swe-agent"
    )
    parsed = importers.parse(data, name=TRAJ.name)
    assert not parsed.warnings
    (conversation,) = parsed.conversations
    sent = [m for m in document["messages"] if m["role"] != "exit"]
    assert document["messages"][-1]["role"] == "exit"
    assert len(conversation.messages) == len(sent) == 129
    calls = sum(len(m.get("tool_calls") or []) for m in sent)
    results = sum(1 for m in sent if m["role"] == "tool")
    assert conversation.tool_call_count == calls == 64
    assert conversation.tool_result_count == results == 63
    assert conversation.messages[0].role is Role.SYSTEM
    assert conversation.model == "deepseek/deepseek-chat"
    assert conversation.title.startswith("Modeling's `separability_matrix`")
    assert ("exit_status", "Submitted") in conversation.metadata
    assert ("mini_version", "2.3.0") in conversation.metadata
