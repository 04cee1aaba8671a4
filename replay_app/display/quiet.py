"""Why a finished run never compacted, in one sentence: its trigger value against the peak
of the count it compares (``peak_strategy``: the request as the strategy counts it, with
what the transcript does not show when the strategy reads reported usage)."""

from __future__ import annotations

from typing import Any

from ctxlab.web import display


def compaction_count(metrics: dict[str, Any]) -> int:
    count = metrics.get("compaction_count")
    if count is None:
        count = sum((metrics.get("compactions") or {}).values())
    return int(count or 0)


def quiet_reason(metrics: dict[str, Any] | None, estimator: str = "") -> str:
    """'' when the run compacted (or has no metrics yet), else why it did not."""
    if not metrics or compaction_count(metrics) or not metrics.get("steps"):
        return ""
    peak = metrics.get("peak_strategy")
    threshold = metrics.get("threshold")
    under = f" under {estimator}" if estimator else ""
    if threshold is None:
        return (
            "Never compacted: this configuration has no token threshold (its trigger is off "
            f"or counts something else); its count{under} peaked at {display.number(peak)}."
        )
    if peak is not None and peak < threshold:
        share = f" ({100 * peak / threshold:.0f}% of it)" if threshold else ""
        return (
            f"Never compacted: its count{under} peaked at {display.number(peak)}, below its "
            f"trigger {display.number(threshold)}{share}."
        )
    return (
        f"Never compacted although its count{under} reached {display.number(peak)} "
        f"(trigger {display.number(threshold)}): see its events and findings (skipped or "
        "failed compactions)."
    )
