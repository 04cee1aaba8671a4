"""Which Claude Code versions count a response's later lines again on top of its usage
(``later_blocks``): ``tokenCountWithEstimation`` in each published cli.js (npm
``@anthropic-ai/claude-code``) takes the usage of the last line that has one and, in 2.1.64
and 2.1.69+, walks back to the response's first line before estimating the lines after it,
so the response's own later lines are counted again; 2.1.43-2.1.63 and 2.1.67-2.1.68 do not.

A real 2.1.47 session (ElixirTrials/medgemma-hackathon, no licence: measured only, not
vendored) showed it: the response before its boundary was a text line and a 9 KB ``Write``
line; with the walk back the count was 168,178 one call before the agent compacted, over
the 167,000 threshold, yet the agent went on and compacted one call later (``preTokens``
168,672). The synthetic session here has the same shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from claude_code_decisions import replay

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.importers import parse

THRESHOLD = 167_000


def _line(uuid: str, parent: str | None, kind: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "sessionId": "s1",
        "version": "2.1.47",
        "timestamp": "2026-02-20T10:00:00.000Z",
        "message": message,
    }


def _response(uuid: str, parent: str, mid: str, block: dict[str, Any], context: int, out: int):
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1_000,
        "cache_read_input_tokens": context - 1_003,
        "output_tokens": out,
    }
    message = {"id": mid, "role": "assistant", "model": "claude-opus-4-6", "content": [block]}
    return _line(uuid, parent, "assistant", {**message, "stop_reason": None, "usage": usage})


def _result(uuid: str, parent: str, tool_id: str, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
    return _line(uuid, parent, "user", {"role": "user", "content": [block]})


def _session() -> Conversation:
    write = {"file_path": "/w/r.md", "content": "x" * 9_000}
    lines = [
        _line("u1", None, "user", {"role": "user", "content": "Write the report."}),
        _response(
            "a1",
            "u1",
            "msg_1",
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/a.txt"}},
            150_000,
            40,
        ),
        _result("u2", "a1", "t1", "ok"),
        # one response written as two lines: a text, then a call with a long input
        _response("a2", "u2", "msg_2", {"type": "text", "text": "Writing it now."}, 160_000, 1),
        _response(
            "a3",
            "a2",
            "msg_2",
            {"type": "tool_use", "id": "t2", "name": "Write", "input": write},
            160_000,
            5_000,
        ),
        _result("u3", "a3", "t2", "written"),
        _response("a4", "u3", "msg_3", {"type": "text", "text": "Done."}, 165_020, 10),
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    parsed = parse(data, name="walk-back.jsonl")
    return next(c for c in parsed.conversations if c.parent_id is None)


@pytest.mark.parametrize(
    ("version", "rules_range", "compacts"),
    [
        ("", "2.1.43-2.1.63", False),  # the file's own 2.1.47
        ("2.1.63", "2.1.43-2.1.63", False),
        ("2.1.64", "2.1.64-2.1.66", True),
        ("2.1.67", "2.1.67-2.1.68", False),
        ("2.1.68", "2.1.67-2.1.68", False),
        ("2.1.69", "2.1.69 and later", True),
    ],
)
def test_only_versions_that_walk_back_fire_on_the_response_s_later_line(
    version: str, rules_range: str, compacts: bool
) -> None:
    """After the two-line response the usage is 165,000 (160,000 + 5,000 output): under the
    threshold alone, over it with the ``Write`` line's estimate (2,262) counted again."""
    result = replay(_session(), **({"agent_version": version} if version else {}))
    fired = [
        (step.index, dict(event.detail))
        for step in result.steps
        for event in step.events
        if event.kind == "compact"
    ]
    if not compacts:
        assert fired == []
        return
    ((step, detail),) = fired
    assert step == 2 and detail["rules_range"] == rules_range
    assert detail["estimated_tail"] == 2_262
    assert detail["tokens"] - detail["estimated_tail"] < THRESHOLD <= detail["tokens"]
