"""Small transcripts of the two shapes whose window suggestions were wrong (issue 31,
item 13): a Claude Code session whose provider-reported requests are far larger than its
messages (the system prompt and tools are not in the file), and OpenAI-chat traffic that
carries ~10k tokens of tool definitions around a small conversation."""

from __future__ import annotations

import json
from typing import Any

# The requests the provider reported, in order (input incl. cache + output).
REPORTED = (21_000, 38_000, 52_000, 69_824)


def claude_code_with_usage() -> bytes:
    """Four calls of a Claude Code session: short messages, large reported usage."""
    lines: list[dict[str, Any]] = []
    parent = None
    session = "5e55a0c1-0000-4000-8000-000000000001"

    def add(kind: str, message: dict[str, Any], n: int) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{n:012d}"
        lines.append({
            "parentUuid": parent, "isSidechain": False, "userType": "external",
            "cwd": "/work/app", "sessionId": session, "version": "1.0.17", "type": kind,
            "message": message, "uuid": uuid, "timestamp": f"2025-06-10T12:{n:02d}:00.000Z",
        })  # fmt: skip
        parent = uuid

    add("user", {"role": "user", "content": "List the files and fix the failing test."}, 1)
    n = 2
    for i, total in enumerate(REPORTED):
        output = 200
        usage = {"input_tokens": 4, "cache_creation_input_tokens": 1_000,
                 "cache_read_input_tokens": total - 1_004 - output, "output_tokens": output}  # fmt: skip
        call = f"toolu_{i:04d}"
        add("assistant", {
            "id": f"msg_{i:04d}", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": f"Step {i}: reading."},
                        {"type": "tool_use", "id": call, "name": "Bash",
                         "input": {"command": f"cat src/m{i}.py"}}],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": usage,
        }, n)  # fmt: skip
        n += 1
        add("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": f"def f{i}():\n    return {i}\n"},
        ]}, n)  # fmt: skip
        n += 1
    add("assistant", {
        "id": "msg_last", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-20250514", "content": [{"type": "text", "text": "Fixed."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 4, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 1_000, "output_tokens": 10},
    }, n)  # fmt: skip
    return "\n".join(json.dumps(line) for line in lines).encode() + b"\n"


def traffic_with_big_tools(*, tools: int = 19, steps: int = 13) -> bytes:
    """An OpenAI chat request body: a system prompt, ``tools`` verbose tool definitions
    (~10k cl100k tokens in all) and ``steps`` calls of a small conversation."""
    defs = []
    for t in range(tools):
        props = {
            f"arg_{p}": {"type": "string", "description": (
                f"Argument {p} of tool {t}: the path, pattern or option the operation reads; "
                "relative paths resolve against the workspace root, globs are expanded, and "
                "an empty value means the default described in the tool's own help text. "
            ) * 2}
            for p in range(4)
        }  # fmt: skip
        defs.append({"type": "function", "function": {
            "name": f"tool_{t}", "description": f"Tool {t} of the workspace toolkit. " * 6,
            "parameters": {"type": "object", "properties": props, "required": ["arg_0"]},
        }})  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent. Use the tools."},
        {"role": "user", "content": "Find why the build fails and fix it."},
    ]
    for i in range(steps):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": f"tool_{i % tools}", "arguments": json.dumps({"arg_0": f"src/{i}.py"})}}  # fmt: skip
        messages.append(
            {"role": "assistant", "content": f"Looking at part {i}.", "tool_calls": [call]}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"ok {i}\n" * 40})
    messages.append({"role": "assistant", "content": "The build passes now."})
    return json.dumps({"model": "gpt-4o", "messages": messages, "tools": defs}).encode()
