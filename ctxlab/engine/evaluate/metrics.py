"""Per-run metrics, computed from a ReplayResult's steps, events, summaries and findings.

Definitions (also shown in the UI):
- ``peak_strategy`` / ``peak_reference``: max request tokens over steps (estimator / cl100k).
- ``input_tokens_total``: sum of reference request tokens over all steps (what the agent
  would have been billed for as input); ``input_tokens_total_strategy`` the same under the
  estimator.
- ``compactions``: events by kind, for every event whose kind is in the catalogue's
  ``compaction`` category (``catalogue.EVENTS``); ``compaction_count`` their number, the
  last compaction ordinal (``catalogue.compaction_ordinals``).
  Restores (putting back what a request-local trim hid), repairs (removing orphan tool
  results), failures and skips are not compactions: ``restore_count`` and
  ``failure_count`` count the first and third.
- ``messages_removed`` / ``tokens_removed``: distinct messages summarised or dropped, and
  their reference tokens; ``messages_modified``: distinct truncated/offloaded/pruned.
- ``summary_input_tokens`` / ``summary_output_tokens``: summed summariser usage.
- ``overflow_steps``: steps whose reference request exceeds the window (cl100k);
  ``overflow_steps_strategy``: steps whose request as the strategy counts it does.
- ``findings``: findings by kind (one per kind per step at most).
- ``firing_per_100_steps``: steps with a compaction per 100 steps; ``mean_steps_between``.
- ``thrash``: compactions that fire within THRASH_STEPS steps of the previous one while
  the context stays near the threshold (previous ``tokens_after`` >= THRASH_NEAR x
  threshold).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..core.catalogue import (
    canonical_event,
    compaction_ordinals,
    is_failure,
    is_restore,
)
from ..core.records import REMOVED_FATES, Event, Fate, ReplayResult
from ..tokens.reference import ReferenceTokens

THRASH_STEPS = 3
THRASH_NEAR = 0.9


def event_metrics(events: Sequence[Event], *, steps: int, threshold: int | None) -> dict[str, Any]:
    """The metrics that come from events alone: counts by kind and category, firing rate,
    gaps and thrash (compactions only). Stored runs are re-counted with this too."""
    kinds = [canonical_event(e.kind) for e in events]
    ordinals = compaction_ordinals(enumerate(kinds))  # by position: the events' order
    compactions = [e for i, e in enumerate(events) if i in ordinals]
    thrash = 0
    fire_steps = sorted({e.step for e in compactions})
    last: dict[str, Any] | None = None
    for event in compactions:
        if (
            last is not None
            and threshold
            and event.step != last["step"]
            and event.step - last["step"] <= THRASH_STEPS
            and last["after"] >= THRASH_NEAR * threshold
        ):
            thrash += 1
        if last is None or event.step != last["step"]:
            last = {"step": event.step, "after": event.tokens_after}
        else:
            last["after"] = event.tokens_after
    gaps = [b - a for a, b in zip(fire_steps, fire_steps[1:], strict=False)]
    return {
        "events": dict(sorted(Counter(kinds).items())),
        "compactions": dict(sorted(Counter(canonical_event(e.kind) for e in compactions).items())),
        "compaction_count": len(compactions),
        "restore_count": sum(1 for kind in kinds if is_restore(kind)),
        "failure_count": sum(1 for kind in kinds if is_failure(kind)),
        "firing_per_100_steps": round(100 * len(fire_steps) / steps, 3) if steps else 0.0,
        "mean_steps_between": round(sum(gaps) / len(gaps), 3) if gaps else None,
        "thrash": thrash,
    }


def compute_metrics(
    result: ReplayResult, *, threshold: int | None, reference: ReferenceTokens | None = None
) -> dict[str, Any]:
    steps = result.steps
    n = len(steps)
    removed: dict[int, None] = {}
    modified: dict[int, None] = {}
    for event in result.events:
        for change in event.changes:
            if change.fate in REMOVED_FATES:
                removed[change.index] = None
            elif change.fate in (Fate.TRUNCATED, Fate.OFFLOADED, Fate.PRUNED):
                modified[change.index] = None
    by_events = event_metrics(result.events, steps=n, threshold=threshold)
    return {
        "steps": n,
        "peak_strategy": max((s.tokens.strategy for s in steps), default=0),
        "peak_reference": max((s.tokens.reference for s in steps), default=0),
        "peak_reported": max((s.tokens.reported or 0 for s in steps), default=0),
        "input_tokens_total": sum(s.tokens.reference for s in steps),
        "input_tokens_total_strategy": sum(s.tokens.strategy for s in steps),
        "events": by_events["events"],
        "compactions": by_events["compactions"],
        "compaction_count": by_events["compaction_count"],
        "restore_count": by_events["restore_count"],
        "failure_count": by_events["failure_count"],
        "messages_removed": len(removed),
        "messages_modified": len(modified),
        "tokens_removed": sum(reference.message(i) for i in removed) if reference else None,
        "summaries": len(result.summaries),
        "summary_failures": sum(1 for s in result.summaries if s.error),
        "summary_input_tokens": sum(s.input_tokens for s in result.summaries),
        "summary_output_tokens": sum(s.output_tokens for s in result.summaries),
        "overflow_steps": sum(1 for f in result.findings if f.kind == "overflow"),
        "overflow_steps_strategy": sum(
            1 for s in steps if s.zones.window and s.tokens.strategy > s.zones.window
        ),
        "findings": dict(sorted(Counter(f.kind for f in result.findings).items())),
        "firing_per_100_steps": by_events["firing_per_100_steps"],
        "mean_steps_between": by_events["mean_steps_between"],
        "thrash": by_events["thrash"],
        "threshold": threshold,
    }
