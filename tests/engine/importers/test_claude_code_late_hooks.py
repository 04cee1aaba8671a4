"""A call's hook lines written late (Claude Code 2.1.72-2.1.78): the ``hook_progress`` lines
of a call's PostToolUse hooks and the turn's ``stop_hook_summary`` are written after the
turn's later lines, parented to the call's line, and the next prompt chains from them. Seen
in ElixirTrials/rune (2.1.72, 2.1.78; no permissive licence: measured only, not vendored):
the thread went on through the hook lines, and the call's result with the rest of its turn
became an "alternate branch", the call left without its result. The turn is the thread's
own, written before the hook lines: it stays on the thread, in file order. The session
here is synthetic, of that shape."""

from __future__ import annotations

import json
from typing import Any

from ctxlab.engine.importers import parse


def _line(uuid: str, parent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "sessionId": "s1",
        "version": "2.1.78",
        "timestamp": "2026-03-20T13:41:00.000Z",
        **fields,
    }


def _user(uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
    return _line(uuid, parent, "user", message={"role": "user", "content": content})


def _assistant(uuid: str, parent: str, mid: str, block: dict[str, Any]) -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {
        "id": mid,
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [block],
        "usage": usage,
    }
    return _line(uuid, parent, "assistant", message=message)


def _hook(uuid: str, parent: str) -> dict[str, Any]:
    data = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash"}
    return _line(uuid, parent, "progress", data=data, toolUseID="t1")


LINES = [
    _user("u1", None, "Go over the review comments."),
    _assistant(
        "a1",
        "u1",
        "m1",
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "gh pr view"}},
    ),
    _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "3 comments"}]),
    _assistant(
        "a2",
        "r1",
        "m2",
        {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/a.py"}},
    ),
    _user("r2", "a2", [{"type": "tool_result", "tool_use_id": "t2", "content": "code"}]),
    _assistant("a3", "r2", "m3", {"type": "text", "text": "Here is what they ask."}),
    # written after the turn, parented to the first call's line
    _hook("h1", "a1"),
    _hook("h2", "h1"),
    _line("s1", "h2", "system", subtype="stop_hook_summary", content=""),
    _user("u2", "s1", "Make a plan for them."),
    _assistant("a4", "u2", "m4", {"type": "text", "text": "The plan."}),
]


def test_a_turn_cut_off_by_late_hook_lines_stays_on_the_thread() -> None:
    data = "".join(json.dumps(line) + "\n" for line in LINES).encode()
    parsed = parse(data, name="late-hooks.jsonl")
    (main,) = parsed.conversations
    texts = [m.text for m in main.messages if m.text]
    assert texts[0] == "Go over the review comments."
    assert texts[-2:] == ["Make a plan for them.", "The plan."]
    calls = [b.tool_id for m in main.messages for b in m.tool_uses]
    results = [b.tool_id for m in main.messages for b in m.tool_results]
    assert calls == results == ["t1", "t2"]
    assert "Here is what they ask." in texts
    assert not [w for w in parsed.warnings if "alternate" in str(w)]
