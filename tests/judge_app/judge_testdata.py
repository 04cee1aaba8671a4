"""Test data for the probe pages: a coding session whose compactions remove errors, edits,
a test command, the open task and a decision, and finished runs over it."""

from __future__ import annotations

import json
from typing import Any

from sessions_app import services as session_services
from sessions_app.models import Transcript

try:  # replay_app grouped by purpose
    from replay_app.runs.executor import run_execute
    from replay_app.runs.services import RunSpec, run_create
except ImportError:  # the flat layout
    from replay_app.services import RunSpec, run_create, run_execute  # type: ignore[no-redef]


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
