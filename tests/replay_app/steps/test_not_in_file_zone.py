"""A Claude Code file that starts after a compaction (a real entireio/cli checkpoint cut,
tests/data/claude-code-2.1/continued-session.jsonl): the step view and its stored zones show
the context the file does not hold as its own zone, not as strategy overhead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_helpers import make_run
from replay_testdata import import_transcript

from replay_app.models import RunStep

pytestmark = pytest.mark.django_db

CONTINUED = (
    Path(__file__).resolve().parents[2] / "data" / "claude-code-2.1" / "continued-session.jsonl"
)


def _one_more_request(data: bytes) -> bytes:
    """The checkpoint as the session went on: one more request, answered (two steps)."""
    last = json.loads(data.splitlines()[-1])
    base = {k: last[k] for k in ("sessionId", "cwd", "version", "isSidechain", "userType")}
    answer = {**base, "type": "assistant", "parentUuid": last["uuid"], "uuid": "a-more",
              "timestamp": "2026-01-23T16:20:00.000Z",
              "message": {"id": "msg_more", "type": "message", "role": "assistant",
                          "model": "claude-opus-4-5-20251101",
                          "content": [{"type": "text", "text": "Right: nothing to do."}],
                          "usage": {"input_tokens": 3, "cache_read_input_tokens": 61_000,
                                    "cache_creation_input_tokens": 400, "output_tokens": 9}}}  # fmt: skip
    return data.rstrip(b"\n") + b"\n" + json.dumps(answer).encode() + b"\n"


def test_continued_session_step_shows_context_not_in_the_file(client: Any, user: Any) -> None:
    data = _one_more_request(CONTINUED.read_bytes())
    transcript = import_transcript(user, data, name=CONTINUED.name)
    run = make_run(user, transcript, "claude_code")
    steps = list(RunStep.objects.filter(run=run).order_by("index"))
    # Once the first response reports its usage, what it counts beyond the file's messages
    # and a typical fixed overhead is context the file does not hold.
    shown = [s for s in steps if s.zones.get("not_in_file", 0) > 0]
    assert shown, [s.zones for s in steps[:3]]
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/steps/{shown[0].index}/").content.decode()
    assert "Not in this file" in page and "not in this file" in page
