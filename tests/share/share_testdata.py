"""A comparison to share: a coding-agent chat with a credential in it, replayed by two
presets that both compact (used by the report tests, unit and browser)."""

from __future__ import annotations

import json
import random
from typing import Any

# An Anthropic key in the user's request: masked at import, must stay masked in a report.
RAW_KEY = (
    "sk-ant-api03-Q7x9LmN2pR4tV6wY8zA1bC3dE5fG7hJ9kL0mN2pQ4rS6tU8vW0xY2zA4bC6dE8fG0hJ2k"
    "L4mN6pQ8rS0tU2v-AbCdEfAA"
)
MASKED_PREFIX = "sk-ant…[masked"


def secret_agent_chat(turns: int = 40, size: int = 6000) -> bytes:
    rnd = random.Random(7)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {
            "role": "user",
            "content": f"Fix the failing tests in src/app.py; the API key is {RAW_KEY}",
        },
    ]
    for i in range(turns):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})},
        }
        messages.append(
            {"role": "assistant", "content": f"Reading module {i}", "tool_calls": [call]}
        )
        body = "\n".join(
            f"line {j}: value={rnd.randint(0, 10**6)} path=/srv/app/f{j}.py"
            for j in range(size // 40)
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": body[:size]})
    messages.append({"role": "assistant", "content": "All tests pass now."})
    return json.dumps(messages).encode()


def make_comparison(owner: Any, capture_on_commit: Any) -> list[Any]:
    """Two done runs (qwenpaw, claude_code at a 24K window) of the chat above."""
    from replay_app.models import RunStatus
    from replay_app.runs import services
    from sessions_app import services as session_services

    outcome = session_services.upload_import(
        owner=owner, name="agent.json", data=secret_agent_chat()
    )
    assert outcome.upload is not None, outcome.error
    transcript = outcome.upload.transcripts.get()
    with capture_on_commit(execute=True):
        group = services.group_create(
            owner=owner,
            transcript=transcript,
            specs=[services.RunSpec(strategy=s, window=24_000) for s in ("qwenpaw", "claude_code")],
        )
    runs = list(group.runs.order_by("pk"))
    assert {r.status for r in runs} == {RunStatus.DONE}, [r.error for r in runs]
    return runs
