"""Cline's compaction rules as pure functions over Cline-shaped messages (see ``cline.py``).

A message is a dict ``{"role": "user"|"assistant", "content": str | [block, ...],
"id"?: str, "metadata"?: {...}}`` with Anthropic-style blocks (``text``, ``thinking``,
``tool_use``, ``tool_result``, ``image``, ``file``), as Cline's SDK keeps its transcript.
Ported from ``sdk/packages/core/src/extensions/context/compaction-shared.ts`` and
``basic-compaction.ts`` (cline/cline @ 21cb8d25).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..stages.js_text import js_json
from ._gemini_cli_rules import js_len

Msg = dict[str, Any]
Estimate = Callable[[Msg], int]

CHARS_PER_TOKEN = 3
TOOL_RESULT_CHAR_LIMIT = 2_000
FILE_CONTENT_CHAR_LIMIT = 2_000
COMMAND_SUMMARY_CHAR_LIMIT = 100
PRESERVED_ASSISTANT_TEXT_COUNT = 3
PRESERVED = "preserved"
SUMMARY_SYSTEM = (
    "Summarize the provided coding session into a concise continuation note with detailed "
    "next steps."
)
SUMMARY_PREFIX = "Context summary:\n\n"
READ_TOOL, EDIT_TOOLS, COMMAND_TOOL = "read_files", ("editor", "apply_patch"), "run_commands"


def estimate_tokens(chars: int) -> int:
    """``estimateTokens``: ceil(chars / 3), at least 1."""
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def message_tokens(message: Msg) -> int:
    """``createTokenEstimator``: the message's JSON length in tokens."""
    return estimate_tokens(js_len(js_json(message)))


def blocks(message: Msg) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def is_summary(message: Msg) -> bool:
    return (message.get("metadata") or {}).get("kind") == "compaction_summary"


def is_preserved(message: Msg) -> bool:
    return (message.get("metadata") or {}).get("compaction") == PRESERVED


def is_tool_result_only(message: Msg) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and len(content) > 0
        and all(b.get("type") == "tool_result" for b in content)
    )


def is_turn_start(message: Msg) -> bool:
    return (
        message.get("role") == "user"
        and not is_tool_result_only(message)
        and not is_summary(message)
    )


# --- serialisation (the agentic summary's input) --------------------------------------------


def truncate_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n...[truncated {len(text) - limit} chars]"


def flatten_tool_result(content: Any) -> str:
    if isinstance(content, str):
        return truncate_text(content, TOOL_RESULT_CHAR_LIMIT)
    out = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            out.append(truncate_text(block.get("text", ""), TOOL_RESULT_CHAR_LIMIT))
        elif kind == "file":
            body = truncate_text(block.get("content", ""), FILE_CONTENT_CHAR_LIMIT)
            out.append(f'<file path="{block.get("path")}">\n{body}\n</file>')
        elif kind == "image":
            out.append(f"[image:{block.get('mediaType')}]")
        else:
            out.append("")
    return "\n".join(out)


def format_tool_input(value: Any) -> str:
    if not isinstance(value, Mapping):
        return ""
    return ", ".join(f"{k}={js_json(v)}" for k, v in value.items())


def serialize_message(message: Msg) -> str:
    who = "User" if message.get("role") == "user" else "Bot"
    content = message.get("content")
    if isinstance(content, str):
        return f"[{who}]: {content}"
    lines = []
    for b in content or []:
        kind = b.get("type")
        if kind == "text":
            lines.append(f"[{who}]: {b.get('text', '')}")
        elif kind == "thinking":
            lines.append(f"[Bot thinking]: {truncate_text(b.get('thinking', ''), 2_000)}")
        elif kind == "redacted_thinking":
            lines.append("[Bot thinking]: [redacted]")
        elif kind == "tool_use":
            lines.append(f"[Bot tool calls]: {b.get('name')}({format_tool_input(b.get('input'))})")
        elif kind == "tool_result":
            lines.append(f"[Tool result]: {flatten_tool_result(b.get('content'))}")
        elif kind == "file":
            body = truncate_text(b.get("content", ""), FILE_CONTENT_CHAR_LIMIT)
            lines.append(f"[{who} file {b.get('path')}]: {body}")
        elif kind == "image":
            lines.append(f"[{who} image]: {b.get('mediaType')}")
    return "\n".join(lines)


def serialize_conversation(serialized: Sequence[str]) -> str:
    """``serializeConversation`` over the messages' ``serialize_message`` texts (made once:
    the summary's material reuses them)."""
    return "\n\n".join(serialized).strip()


# --- files read / edited from tool calls ----------------------------------------------------


def collect_paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [p for item in value for p in collect_paths(item)]
    if isinstance(value, Mapping):
        paths: list[str] = []
        for key in ("path", "file_path", "target_file", "new_file_path", "old_file_path"):
            paths += collect_paths(value.get(key))
        if isinstance(value.get("files"), list):
            for item in value["files"]:
                if isinstance(item, Mapping):
                    paths += collect_paths(item.get("path"))
        if isinstance(value.get("file_paths"), list):
            paths += collect_paths(value["file_paths"])
        return paths
    return []


def merge_unique(base: list[str], more: Iterable[str]) -> list[str]:
    seen = dict.fromkeys(base)
    seen.update(dict.fromkeys(v.strip() for v in more if v.strip()))
    return sorted(seen, key=str.casefold)


def tool_name(block: Mapping[str, Any], aliases: Mapping[str, str]) -> str:
    name = str(block.get("name") or "")
    return aliases.get(name, name)


def extract_file_ops(
    messages: Sequence[Msg], aliases: Mapping[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """``extractFileOps``: (files read, files modified), each sorted."""
    aliases = aliases or {}
    read: list[str] = []
    modified: list[str] = []
    for message in messages:
        details = (message.get("metadata") or {}).get("details") if is_summary(message) else None
        if isinstance(details, Mapping):
            read = merge_unique(read, details.get("readFiles", []))
            modified = merge_unique(modified, details.get("modifiedFiles", []))
            continue
        for b in blocks(message):
            if b.get("type") == "file":
                read = merge_unique(read, [b.get("path", "")])
            elif b.get("type") == "tool_use":
                name = tool_name(b, aliases)
                if name == READ_TOOL:
                    read = merge_unique(read, collect_paths(b.get("input")))
                elif name in EDIT_TOOLS:
                    modified = merge_unique(modified, collect_paths(b.get("input")))
    return read, modified


def _push(items: list[str], value: str) -> None:
    value = value.strip()
    if value and value not in items:
        items.append(value)


_DIFF_LINE = re.compile(r"(?:^|\n|\\n)[-+](\d+): ")


def _diff_range(content: Any) -> tuple[int, int] | None:
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(
            b.get("text", "") if b.get("type") == "text" else b.get("content", "")
            if b.get("type") == "file" else ""
            for b in content or []
        )  # fmt: skip
    try:
        import json

        parsed = json.loads(text)
        if isinstance(parsed, Mapping) and isinstance(parsed.get("result"), str):
            text = parsed["result"]
    except ValueError:
        pass
    lines = [int(m.group(1)) for m in _DIFF_LINE.finditer(text)]
    return (min(lines), max(lines)) if lines else None


def summarize_tool_activity(
    messages: Sequence[Msg], aliases: Mapping[str, str] | None = None
) -> tuple[list[str], list[str], list[str]]:
    """``summarizeToolActivity``: (files read, files edited, commands) of a dropped span."""
    aliases = aliases or {}
    read: list[str] = []
    edited: list[str] = []
    commands: list[str] = []
    editor_paths: dict[str, str] = {}
    for message in messages:
        for b in blocks(message):
            if b.get("type") == "tool_use":
                name = tool_name(b, aliases)
                raw = b.get("input")
                data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
                if name == READ_TOOL:
                    if isinstance(data.get("files"), list):
                        for f in data["files"]:
                            if isinstance(f, Mapping) and str(f.get("path") or "").strip():
                                path = str(f["path"]).strip()
                                s, e = f.get("start_line"), f.get("end_line")
                                both = isinstance(s, int | float) and isinstance(e, int | float)
                                _push(read, f"{path}:{s}-{e}" if both else path)
                    else:
                        for path in collect_paths(data):
                            _push(read, path)
                elif name in EDIT_TOOLS:
                    paths = collect_paths(data)
                    if paths:
                        editor_paths[str(b.get("id"))] = paths[0]
                elif name == COMMAND_TOOL:
                    listed = data.get("commands")
                    # Reading for aliased shell tools: a single `command` string.
                    if not isinstance(listed, list):
                        listed = [data["command"]] if isinstance(data.get("command"), str) else []
                    for command in listed:
                        if isinstance(command, str) and command.strip():
                            c = command.strip()
                            if len(c) > COMMAND_SUMMARY_CHAR_LIMIT:
                                c = c[:COMMAND_SUMMARY_CHAR_LIMIT] + "..."
                            _push(commands, c)
            elif b.get("type") == "tool_result":
                path = editor_paths.pop(str(b.get("tool_use_id")), "")
                if path:
                    rng = _diff_range(b.get("content"))
                    _push(edited, f"{path}:{rng[0]}-{rng[1]}" if rng else path)
    for path in editor_paths.values():  # edits whose results fell outside the span
        _push(edited, path)
    return read, edited, commands


def notice_block(activity: tuple[list[str], list[str], list[str]], responses: list[str]) -> Msg:
    """``buildDroppedWorkSummaryBlock``: the ``<SYSTEM_NOTICE>`` text block."""
    read, edited, commands = activity
    body = "\n\n".join(
        (
            "Files read:\n" + "\n".join(read),
            "Files edited:\n" + "\n".join(edited),
            "Commands ran:\n" + "\n".join(commands),
        )
    )
    tail = "\n\nYour recent responses:\n" + "\n---\n".join(responses) if responses else ""
    return {
        "type": "text",
        "text": "<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions "
        f"after the request above:\n{body}{tail}</SYSTEM_NOTICE>",
    }


# --- the agentic summary --------------------------------------------------------------------


def build_summary_request(
    previous: str, conversation: str, read: list[str], edited: list[str]
) -> str:
    """``buildSummaryRequest``: the one user message of the summary call."""
    parts = [
        "Summarize this session for continuation. Be concise and factual.\n\n## Goal\n"
        "One sentence: what is being built or fixed.\n\n## State\n- Done: completed steps\n"
        "- In Progress: current work\n- Blocked: blockers or open questions\n\n## Highlights\n"
        "Key technical choices or notable findings (omit if none).\n\n## Next\n"
        f"Immediate next steps.\n\n## Files\nRead: {', '.join(read) or 'none'}\n"
        f"Edited: {', '.join(edited) or 'none'}"
    ]
    if previous.strip():
        parts.append(f"Previous summary:\n{previous.strip()}")
    parts.append(f"Conversation:\n{conversation or '(empty)'}")
    return "\n\n".join(parts)


def ensure_files_section(summary: str, read: list[str], modified: list[str]) -> str:
    if re.search(r"^## Files$", summary, re.IGNORECASE | re.MULTILINE):
        return summary.strip()
    r = "\n".join(f"- {p}" for p in read) if read else "- none"
    m = "\n".join(f"- {p}" for p in modified) if modified else "- none"
    return f"{summary.strip()}\n\n## Files\nRead:\n{r}\nModified:\n{m}".strip()


def find_cut_index(messages: Sequence[Msg], preserve: int, estimate: Estimate) -> int:
    """``findCutIndex``: the first preserved message (keeps the latest typed turn, never
    starts the tail at a tool-result-only message)."""
    total = 0
    candidate = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        total += estimate(messages[index])
        candidate = index
        if total >= preserve:
            break
    if candidate <= 0:
        return 0
    last_turn = next((i for i in range(len(messages) - 1, -1, -1) if is_turn_start(messages[i])), 0)
    cut = min(candidate, last_turn) if last_turn > 0 else candidate
    while cut > 0 and not (
        messages[cut].get("role") == "assistant" or is_turn_start(messages[cut])
    ):
        cut -= 1
    return cut
