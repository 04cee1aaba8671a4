"""Event and finding kinds in words, from the engine's catalogue: ``{{ e.kind|event_label }}``
with ``title="{{ e.kind|event_meaning }}"``, ``{{ g.kind|finding_label }}`` and its
``finding_meaning``, ``{{ run.metrics.events|event_counts }}``."""

from __future__ import annotations

from typing import Any

from django import template

from ctxlab.engine.core.catalogue import COMPACTION_ORDINAL, FINDINGS, ledger_mark_label
from replay_app.display.vocabulary import event_label as _event_label
from replay_app.display.vocabulary import event_meaning as _event_meaning

register = template.Library()


@register.filter
def event_label(kind: str) -> str:
    return _event_label(str(kind))


@register.filter
def event_meaning(kind: str) -> str:
    return _event_meaning(str(kind))


@register.filter
def finding_label(kind: str) -> str:
    row = FINDINGS.get(str(kind))
    return row.label if row else f"{kind} (uncatalogued)"


@register.filter
def finding_meaning(kind: str) -> str:
    row = FINDINGS.get(str(kind))
    return row.meaning if row else "not in the finding catalogue"


@register.filter
def event_labels(kinds: Any) -> str:
    """A list of event kinds as their labels, comma-separated."""
    return ", ".join(event_label(k) for k in kinds or ())


@register.filter
def ledger_label(label: str) -> str:
    return ledger_mark_label(str(label))


def _counts(counts: Any, label: Any) -> str:
    if not isinstance(counts, dict) or not counts:
        return "none"
    return ", ".join(f"{label(k)} {v:,}" if isinstance(v, int) else f"{label(k)} {v}"
                     for k, v in counts.items())  # fmt: skip


@register.filter
def event_counts(counts: Any) -> str:
    """``{"drop": 3}`` -> ``Dropped 3`` (stored runs keep their kinds as counted)."""
    return _counts(counts, event_label)


@register.filter
def finding_counts(counts: Any) -> str:
    return _counts(counts, finding_label)


@register.simple_tag
def compaction_ordinal_meaning() -> str:
    """What "compaction #K" means (``catalogue.COMPACTION_ORDINAL``), for a heading's hover."""
    return COMPACTION_ORDINAL
