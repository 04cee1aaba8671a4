"""Adapter between the engine's secret detector and what the transcript rows store.

Stored blocks are masked; the owner sees *where* each secret was as
``{"message": i, "block": j, "kind": k, "masked": "<masked value>"}`` — never the value.
"""

from __future__ import annotations

from typing import Any

from ctxlab.engine.model import Conversation

try:
    from ctxlab.engine import secrets as _engine_secrets
except ImportError:  # pragma: no cover - the detector lands separately
    _engine_secrets = None  # type: ignore[assignment]


def mask_conversation(conversation: Conversation) -> tuple[Conversation, list[dict[str, Any]]]:
    if _engine_secrets is None:
        return conversation, []
    findings = _engine_secrets.scan_conversation(conversation)
    if not findings:
        return conversation, []
    masked = _engine_secrets.mask_conversation(conversation)
    return masked, [_finding_dict(f) for f in findings]


def _finding_dict(finding: Any) -> dict[str, Any]:
    return {
        "message": finding.message_index,
        "block": finding.block_index,
        "kind": finding.kind,
        "masked": finding.masked,
    }
