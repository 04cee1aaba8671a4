"""The zone bar: a request's parts as proportional segments of the window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_app.memo import cached
from replay_app.models import Run
from sessions_app.models import Message

ZONE_ORDER = (
    ("system", "System prompt"),
    ("tools", "Tool definitions"),
    ("unseen", "Strategy overhead"),
    ("not_in_file", "Not in this file"),
    ("summary", "Summary"),
    ("compactable", "Compactable history"),
    ("reserved_recent", "Reserved recent"),
    ("output_reserve", "Output reserve"),
    ("free", "Free"),
)

# The zones that make up the request itself (the rest of the window is reserve and free).
REQUEST_ZONES = (
    "system",
    "tools",
    "unseen",
    "not_in_file",
    "summary",
    "compactable",
    "reserved_recent",
)


def request_total(zones: dict[str, Any]) -> int:
    """What the bar's request zones add up to (the strategy's estimator, per message)."""
    return sum(max(int(zones.get(key) or 0), 0) for key in REQUEST_ZONES)


# --- the context at a step --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZoneSegment:
    key: str
    label: str
    tokens: int
    percent: float
    note: str = ""  # shown instead of the number: why a part has no tokens

    @property
    def hint(self) -> str:
        return ZONE_HINTS.get(self.key, "")


ZONE_HINTS = {
    "unseen": (
        "what the strategy counts beyond the transcript's messages: the provider's reported "
        "usage includes the system prompt, tool definitions and attachments the log omits"
    ),
    "not_in_file": (
        "context the agent sent that this file does not hold: the file starts after a "
        "compaction (its summary and what came before) or is cut from a longer session"
    ),
}
NOT_IN_TRANSCRIPT = "not in transcript"
NOT_COUNTED = "not counted by this strategy"


@dataclass(frozen=True, slots=True)
class TranscriptParts:
    """Which fixed parts of a request the transcript itself carries (Claude Code and Codex
    logs usually have neither a system prompt nor tool definitions)."""

    system: bool
    tools: bool


def transcript_parts(run: Run) -> TranscriptParts:
    def build() -> TranscriptParts:
        system = Message.objects.filter(
            transcript_id=run.transcript_id, index=0, role="system"
        ).exists()
        tools = bool(run.transcript.tools)
        return TranscriptParts(system, tools)

    return cached(run, "parts", build)


def zone_segments(zones: dict[str, Any], parts: TranscriptParts | None = None) -> list[ZoneSegment]:
    """Proportional widths over the window (or over the total when the request overflows).
    A system prompt or tool zone of 0 says why instead of showing 0 (``parts``: what the
    transcript carries); the strategy overhead is listed only when there is one."""
    values = [(key, label, max(int(zones.get(key) or 0), 0)) for key, label in ZONE_ORDER]
    total = max(int(zones.get("window") or 0), sum(v for _, _, v in values), 1)
    out = []
    for key, label, tokens in values:
        note = ""
        if key in ("unseen", "not_in_file") and not tokens:
            continue
        if key in ("system", "tools") and not tokens and parts is not None:
            note = NOT_COUNTED if getattr(parts, key) else NOT_IN_TRANSCRIPT
        out.append(ZoneSegment(key, label, tokens, round(100 * tokens / total, 3), note))
    return out
