"""Up to Claude Code 2.1.1 the auto-compact check reads the last response's usage alone
(``tokenCountFromLastAPIResponse`` in cli.js 2.0.50, 2.0.64, 2.0.76 and 2.1.1); from 2.1.2 it
adds the estimate of the messages after that response (``tokenCountWithEstimation``):
``estimate_after`` in the version table. A real 2.0.76 Sonnet 4.5 session
(xiaomoziyi/session-logs, no licence: measured only, not vendored) went on past usage
154,619 plus a 3,573-character ``Read`` result (threshold 155,000) and compacted one call
later. The synthetic session here has that shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from claude_code_decisions import replay

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.importers import parse


def _line(uuid: str, parent: str | None, kind: str, message: dict[str, Any]) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid,
            "sessionId": "s1", "version": "2.0.76", "timestamp": "2026-01-19T14:09:00.000Z",
            "message": message}  # fmt: skip


def _response(uuid: str, parent: str, call: str, context: int) -> dict[str, Any]:
    usage = {"input_tokens": 13, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": context - 13, "output_tokens": 100}  # fmt: skip
    block = {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": "/w/a.ts"}}
    message = {"id": f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
               "content": [block], "stop_reason": "tool_use", "usage": usage}  # fmt: skip
    return _line(uuid, parent, "assistant", message)


def _result(uuid: str, parent: str, call: str, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call, "content": text}
    return _line(uuid, parent, "user", {"role": "user", "content": [block]})


def _session() -> Conversation:
    lines = [
        _line("u1", None, "user", {"role": "user", "content": "Add the validation."}),
        _response("a1", "u1", "t1", 140_000),
        _result("r1", "a1", "t1", "ok"),
        _response("a2", "r1", "t2", 154_500),  # usage 154,600 with its output
        _result("r2", "a2", "t2", "x" * 4_000),  # about 1,000 tokens more
        _response("a3", "r2", "t3", 155_700),
        _result("r3", "a3", "t3", "ok"),
        {
            **_line("b1", "r3", "system", {}),
            "subtype": "compact_boundary",
            "content": "",
            "compactMetadata": {"trigger": "auto", "preTokens": 155_800},
        },
        {
            **_line("s1", "b1", "user", {"role": "user", "content": "Summary: the validation."}),
            "isCompactSummary": True,
        },
        _response("a4", "s1", "t4", 20_000),
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    parsed = parse(data, name="usage-alone.jsonl")
    return next(c for c in parsed.conversations if c.parent_id is None)


@pytest.mark.parametrize(
    ("version", "rules_range", "step", "tokens"),
    [
        ("", "up to 2.0.x", 3, 155_800),  # the file's own 2.0.76: usage alone, as the agent
        ("2.1.1", "2.1.0-2.1.1", 3, 155_800),
        ("2.1.2", "2.1.2-2.1.6", 2, 155_600),  # usage 154,600 + the result's 1,000
    ],
)
def test_up_to_2_1_1_the_check_reads_the_usage_alone(
    version: str, rules_range: str, step: int, tokens: int
) -> None:
    result = replay(_session(), **({"agent_version": version} if version else {}))
    fired = [
        (s.index, dict(e.detail)) for s in result.steps for e in s.events if e.kind == "compact"
    ]
    (at, detail), *_ = fired
    assert at == step and detail["rules_range"] == rules_range
    assert detail["tokens"] == tokens
