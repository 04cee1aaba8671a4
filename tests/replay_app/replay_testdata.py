"""Test data for the replay lab: a transcript big enough that every preset acts on it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from sessions_app import services as session_services
from sessions_app.models import Transcript

# A real Claude Code session (82 messages, long tool outputs) the stored-counts tests replay.
FULL_SESSION_FOUR = (
    Path(__file__).resolve().parents[1]
    / "data" / "corpus" / "claude-code" / "agentcmd-full-session-four.jsonl"
)  # fmt: skip


def agent_chat(*, turns: int = 60, size: int = 8000, seed: int = 1) -> bytes:
    """An OpenAI-chat transcript: a coding agent reading ``turns`` large files."""
    rnd = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests in src/app.py"},
    ]
    for i in range(turns):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})},
        }
        messages.append({"role": "assistant", "content": f"Reading {i}", "tool_calls": [call]})
        body = "\n".join(
            f"line {j}: value={rnd.randint(0, 10**6)} path=/srv/app/f{j}.py"
            for j in range(size // 40)
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": body[:size]})
        if i % 10 == 9:
            messages.append({"role": "user", "content": f"Continue with part {i}"})
    messages.append({"role": "assistant", "content": "All tests pass now."})
    return json.dumps(messages).encode()


def import_transcript(owner: Any, data: bytes, name: str = "agent.json") -> Transcript:
    outcome = session_services.upload_import(owner=owner, name=name, data=data)
    assert outcome.error is None, outcome.error
    assert outcome.upload is not None
    return outcome.upload.transcripts.get()


def executed_group(
    owner: Any,
    transcript: Transcript,
    specs: list[tuple[str, dict[str, Any]]],
    summarizer: str = "recorded",
) -> list[Any]:
    """One group of runs of ``transcript`` (a ``(strategy, params)`` each), executed in
    this process by the worker's own call, read back done, in order."""
    from replay_app.runs import executor, services

    group = services.group_create(
        enqueue=False,
        owner=owner,
        transcript=transcript,
        summarizer=summarizer,
        specs=[services.RunSpec(strategy=name, params=params) for name, params in specs],
    )
    done = []
    for run in group.runs.order_by("pk"):
        executor.run_execute(run=run)
        run.refresh_from_db()
        assert run.status == "done", run.error
        done.append(run)
    return done


def afresh_step_tokens(
    transcript: Any, strategy: str, params: dict[str, Any], field: str
) -> list[int]:
    """``field`` of every step's tokens of ``strategy`` replayed here, counted afresh (not
    from the counts stored at import): what ``worker_step_column`` must equal."""
    from ctxlab.engine.replay import run
    from ctxlab.engine.tokens.reference import ReferenceTokens

    conversation = transcript.to_conversation()
    result = run(conversation, strategy, params=params, reference=ReferenceTokens(conversation))
    return [getattr(s.tokens, field) for s in result.steps]


def worker_step_column(
    user: Any, transcript: Any, strategy: str, params: dict[str, Any], column: str
) -> list[int]:
    """``column`` of every stored step of ``strategy`` run through the worker's own call."""
    from replay_app.models import RunStep
    from replay_app.runs import executor, services

    run = services.run_create(
        owner=user, transcript=transcript,
        spec=services.RunSpec(strategy=strategy, params=params), enqueue=False,
    )  # fmt: skip
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    return list(RunStep.objects.filter(run=run).order_by("index").values_list(column, flat=True))
