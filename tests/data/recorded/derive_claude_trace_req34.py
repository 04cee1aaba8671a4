"""Writes claude-trace-req34-compacted.jsonl: a real Claude Code `/compact` as a session.

Source (MIT, zkcpku/claude-trace-dev @ 9237250871c7c20b7b1b684d8ba4ee3d26188c45,
apps/claude-trace/test/test-traffic.jsonl line 35, a fork of badlogic/lemmy's claude-trace;
see ../corpus/MANIFEST.tsv and ../corpus/NOTICE.md): the request
Claude Code sent to summarise a 27-message session (anthropic-messages/
claude-trace-req34-request.json) and the summary the model returned (…-response.json).
Derived by us: the request's messages (the last one, the summarisation prompt, left out)
become Claude Code JSONL lines, then a compact_boundary line and the summary message as
Claude Code writes it (its continuation preamble; the <analysis> block removed and
<summary> turned into "Summary:", as Claude Code's formatCompactSummary does). The session's
system prompt is not part of a Claude Code JSONL, so it is left out too.

Run from the repository root: python tests/data/recorded/derive_claude_trace_req34.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "corpus" / "anthropic-messages"
OUT = HERE / "claude-trace-req34-compacted.jsonl"
SESSION = "claude-trace-req34"
PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
TAIL = (
    "\nPlease continue the conversation from where we left it off without asking the user "
    "any further questions. Continue with the last task that you were asked to work on."
)


def formatted(summary: str) -> str:
    summary = re.sub(r"<analysis>.*?</analysis>", "", summary, flags=re.S)
    found = re.search(r"<summary>(.*?)</summary>", summary, flags=re.S)
    if found:
        summary = summary.replace(found.group(0), "Summary:\n" + found.group(1).strip())
    return re.sub(r"\n\n+", "\n\n", summary).strip()


def lines() -> list[dict[str, object]]:
    request = json.loads((SOURCE / "claude-trace-req34-request.json").read_text())
    response = json.loads((SOURCE / "claude-trace-req34-response.json").read_text())
    out: list[dict[str, object]] = []
    parent = None
    for i, message in enumerate(request["messages"][:-1]):
        uuid = f"{SESSION}-{i:02d}"
        body: dict[str, object] = {"role": message["role"], "content": message["content"]}
        if message["role"] == "assistant":
            body.update(id=f"msg_req34_{i:02d}", type="message", model=response["model"])
        out.append({
            "type": message["role"], "uuid": uuid, "parentUuid": parent, "sessionId": SESSION,
            "timestamp": f"2025-07-01T10:{i:02d}:00.000Z", "message": body,
        })  # fmt: skip
        parent = uuid
    usage = response.get("usage", {})
    out.append({
        "type": "system", "subtype": "compact_boundary", "uuid": f"{SESSION}-boundary",
        "parentUuid": None, "logicalParentUuid": parent, "sessionId": SESSION,
        "timestamp": "2025-07-01T10:59:00.000Z", "content": "Conversation compacted",
        "compactMetadata": {"trigger": "manual", "preTokens": sum(
            usage.get(k) or 0
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )},
    })  # fmt: skip
    text = "".join(b.get("text", "") for b in response["content"] if b.get("type") == "text")
    out.append({
        "type": "user", "uuid": f"{SESSION}-summary", "parentUuid": f"{SESSION}-boundary",
        "sessionId": SESSION, "timestamp": "2025-07-01T10:59:01.000Z", "isCompactSummary": True,
        "message": {"role": "user", "content": PREAMBLE + formatted(text) + TAIL},
    })  # fmt: skip
    return out


if __name__ == "__main__":
    OUT.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines()))
