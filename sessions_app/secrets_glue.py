"""Adapter between the engine's secret detector and what the transcript rows store.

Stored blocks are masked; the owner sees *where* each secret was as
``{"message": i, "block": j, "kind": k, "context": "…masked text around it…"}``, never
the value itself.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ctxlab.engine.core.model import Block, Conversation
from ctxlab.engine.privacy import secrets

CONTEXT_BEFORE = 40
CONTEXT_AFTER = 30


def mask_conversation(conversation: Conversation) -> tuple[Conversation, list[dict[str, Any]]]:
    """The conversation with secrets masked, and where they were.

    Scans once; only the messages that hold a secret are masked again, so a clean 4 MB
    file costs one scan.
    """
    found = secrets.scan_conversation(conversation)
    extras = secrets.scan_extras(conversation)
    if extras or secrets.find_secrets(conversation.title):
        conversation = secrets.mask_extras(conversation)
    if not found:
        return conversation, _extra_locations(conversation, extras)
    flagged = sorted({message for message, _, _ in found})
    subset = replace(conversation, messages=tuple(conversation.messages[i] for i in flagged))
    masked_subset = secrets.mask_conversation(subset).messages
    messages = list(conversation.messages)
    for index, masked in zip(flagged, masked_subset, strict=True):
        messages[index] = masked
    result = replace(conversation, messages=tuple(messages))
    return result, _locations(result, found) + _extra_locations(result, extras)


def _extra_locations(
    masked: Conversation, extras: list[tuple[str, int, str]]
) -> list[dict[str, Any]]:
    """Secrets outside the messages: ``message`` is None, ``where`` names the place."""
    out = []
    for where, index, kind in extras:
        if where == "tools":
            tool = masked.tools[index]
            text = (
                f"{tool.name}: {tool.description} {json.dumps(tool.parameters, ensure_ascii=False)}"
            )
            label = f"tool definition {tool.name}"
        elif where == "metadata":
            key, value = masked.metadata[index]
            text, label = f"{key}={value}", f"metadata {key}"
        else:
            text, label = masked.title, "title"
        out.append(
            {
                "message": None,
                "block": None,
                "where": label,
                "kind": kind,
                "context": _context(text, f"[masked {kind}]", 0),
            }
        )
    return out


def _locations(masked: Conversation, found: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
    seen: dict[tuple[int, int, str], int] = {}
    out = []
    for message, block, kind in found:
        nth = seen.get((message, block, kind), 0)
        seen[(message, block, kind)] = nth + 1
        text = _block_text(masked.messages[message].blocks[block])
        out.append(
            {
                "message": message,
                "block": block,
                "kind": kind,
                "context": _context(text, f"[masked {kind}]", nth),
            }
        )
    return out


def _block_text(block: Block) -> str:
    parts = [block.text, block.tool_name]
    if block.tool_input is not None:
        parts.append(
            block.tool_input
            if isinstance(block.tool_input, str)
            else json.dumps(block.tool_input, ensure_ascii=False)
        )
    parts.extend(_block_text(part) for part in block.parts)
    return "\n".join(p for p in parts if p)


def _context(text: str, marker: str, nth: int) -> str:
    """The masked text around the nth marker (its surroundings tell the owner where)."""
    at = -1
    for _ in range(nth + 1):
        at = text.find(marker, at + 1)
        if at < 0:
            return ""
    start = max(0, at - CONTEXT_BEFORE)
    end = min(len(text), at + len(marker) + CONTEXT_AFTER)
    snippet = " ".join(text[start:end].split())
    return ("…" if start else "") + snippet + ("…" if end < len(text) else "")


def mask_strings(value: Any) -> Any:
    """``value`` (JSON-like) with every string masked: import warnings quote the file."""
    if isinstance(value, str):
        return secrets.mask(value)
    if isinstance(value, dict):
        return {k: mask_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_strings(v) for v in value]
    return value
