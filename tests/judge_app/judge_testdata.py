"""Test data for the probe pages: a coding session whose compactions remove errors, edits,
a test command, the open task and a decision, and finished runs over it."""

from __future__ import annotations

import json
from typing import Any

from replay_app.runs.executor import run_execute
from replay_app.runs.services import RunSpec, run_create
from sessions_app import services as session_services
from sessions_app.models import Transcript

COWAGENT = {"agent_max_context_tokens": 3000}
QWENPAW = {"max_input_length": 3000}


def _call(i: int, name: str, args: dict[str, Any], text: str = "") -> dict[str, Any]:
    call = {"id": f"c{i}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip
    return {"role": "assistant", "content": text, "tool_calls": [call]}


def coding_session(rounds: int = 6) -> bytes:
    """An OpenAI-chat transcript: each round the user asks, the agent runs the tests (they
    fail), decides, edits a file and reads a large file."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    n = 0
    for r in range(rounds):
        messages.append(
            {"role": "user", "content": f"Please fix the parser bug number {r} in src/parse_{r}.py"}
        )
        messages.append(_call(n, "bash", {"command": f"pytest -x tests/test_parse_{r}.py"}))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{n}",
                "content": f"collected 4 items\nE   ValueError: bad token at column {r}7\n1 failed",
            }
        )
        n += 1
        messages.append(
            {
                "role": "assistant",
                "content": f"A regex for round {r} doesn't work here because tokens nest, so I will use a stack instead of the regex.",
            }
        )
        messages.append(
            _call(n, "edit_file", {"path": f"src/parse_{r}.py", "old": "a", "new": "b"})
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "edited"})
        n += 1
        messages.append(_call(n, "read_file", {"path": f"src/big_{r}.py"}))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{n}",
                "content": "\n".join(f"line {j}: x_{r}_{j} = {j}" for j in range(300)),
            }
        )
        n += 1
    messages.append({"role": "assistant", "content": "All parser bugs are fixed."})
    return json.dumps(messages).encode()  # fmt: skip


def import_session(owner: Any, data: bytes | None = None, name: str = "coding.json") -> Transcript:
    outcome = session_services.upload_import(
        owner=owner, name=name, data=data if data is not None else coding_session()
    )
    assert outcome.error is None, outcome.error
    assert outcome.upload is not None
    return outcome.upload.transcripts.first()


def finished_run(owner: Any, transcript: Transcript, strategy: str, params: dict[str, Any]) -> Any:
    run = run_create(
        owner=owner, transcript=transcript, spec=RunSpec(strategy=strategy, params=params),
        enqueue=False,
    )  # fmt: skip
    run = run_execute(run=run)
    assert run.status == "done", run.error
    return run


# --- a Claude Code session with a compaction whose after-effects are known ---------------

SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\nSummary: fixing the parser."
)


def _line(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> str:
    row = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
           "timestamp": f"2025-06-01T10:{len(uuid):02d}:{int(uuid[1:]):02d}Z",
           "message": {"role": kind, "content": content}, **extra}  # fmt: skip
    if kind == "assistant":
        row["message"]["model"] = "claude-sonnet-4-5"
    return json.dumps(row)


def _use(tid: str, name: str, **args: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": tid, "name": name, "input": args}]


def _result(tid: str, text: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": tid, "content": text}]


def compacted_session() -> bytes:
    lines = [
        _line("user", "u1", None, "Fix the parser in src/parse.py"),
        _line("assistant", "a2", "u1", _use("r1", "Read", file_path="/repo/src/parse.py")),
        _line("user", "u3", "a2", _result("r1", "def parse(): ...")),
        _line("assistant", "a4", "u3", _use("b1", "Bash", command="pytest -q tests/test_parse.py")),
        _line("user", "u5", "a4", _result("b1", "1 failed")),
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "b6",
                    "parentUuid": None, "logicalParentUuid": "u5", "sessionId": "s1",
                    "timestamp": "2025-06-01T10:30:00Z", "content": "Conversation compacted",
                    "compactMetadata": {"trigger": "auto", "preTokens": 150000}}),  # fmt: skip
        _line("user", "u7", "b6", SUMMARY, isCompactSummary=True),
        _line("assistant", "a8", "u7", [{"type": "text", "text": "Sorry, I lost track. What would you like me to do next?"}]),
        _line("user", "u9", "a8", "continue fixing the parser"),
        _line("assistant", "a10", "u9", _use("r2", "Read", file_path="/repo/src/parse.py")),
        _line("user", "u11", "a10", _result("r2", "def parse(): ...")),
        _line("assistant", "a12", "u11", _use("b2", "Bash", command="pytest -q tests/test_parse.py")),
        _line("user", "u13", "a12", _result("b2", "ok")),
        _line("assistant", "a14", "u13", [{"type": "text", "text": "Fixed."}]),
    ]  # fmt: skip
    return ("\n".join(lines) + "\n").encode()
