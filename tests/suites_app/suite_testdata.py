"""Transcripts for suite tests: small OpenAI-chat coding sessions, different per seed."""

from __future__ import annotations

import json
import random
from typing import Any

from sessions_app import services as session_services
from sessions_app.models import Transcript


def coding_chat(*, turns: int = 12, size: int = 2000, seed: int = 1) -> bytes:
    rnd = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix the failing tests in src/app_{seed}.py"},
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
        if i % 5 == 4:
            messages.append({"role": "user", "content": f"Continue with part {i}"})
    messages.append({"role": "assistant", "content": "All tests pass now."})
    return json.dumps(messages).encode()


def import_chat(owner: Any, *, seed: int, turns: int = 12, size: int = 2000) -> Transcript:
    data = coding_chat(turns=turns, size=size, seed=seed)
    outcome = session_services.upload_import(owner=owner, name=f"chat-{seed}.json", data=data)
    assert outcome.error is None, outcome.error
    assert outcome.upload is not None
    return outcome.upload.transcripts.get()
