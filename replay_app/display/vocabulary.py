"""Which metrics each page shows, in what order; labels, units, directions and meanings come
from the engine's one catalogue (``ctxlab.engine.core.catalogue``), never from a local table."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxlab.engine.core.catalogue import event_kind, metric

# Cost ledger and ground-truth keys (stored in run.metrics by replay_app.costs.finish).
COST_KEYS: tuple[str, ...] = (
    "llm_cost_usd",
    "llm_calls",
    "llm_cache_hits",
    "ledger_request_cost",
    "ledger_uncached_cost",
    "ledger_write_tokens",
    "ledger_read_tokens",
    "ledger_invalidated_tokens",
    "ledger_extra_cost",
    "ledger_total_cost",
)
# "Steps in overflow" in each count (cl100k, the strategy's own) and "Hidden overflows" sit
# side by side: different counts, each with its meaning next to it.
OVERFLOW_KEYS: tuple[str, ...] = ("overflow_steps", "overflow_steps_strategy", "overflow_flags")
# The run page and the group table: headline metrics, in display order.
# What the compactions did, shared by the run page and the compare page.
_ACTIVITY_KEYS: tuple[str, ...] = (
    "input_tokens_total",
    "compaction_count",
    "restore_count",
    "failure_count",
    "messages_removed",
    "tokens_removed",
    "messages_modified",
    "summary_input_tokens",
    "summary_output_tokens",
)
RUN_KEYS: tuple[str, ...] = (
    "steps",
    "peak_strategy",
    "peak_reference",
    *_ACTIVITY_KEYS,
    *OVERFLOW_KEYS,
    "firing_per_100_steps",
    "thrash",
    *COST_KEYS,
)
# The compare page: the run page's rows plus the gaps and what was lost.
COMPARE_KEYS: tuple[str, ...] = (
    "steps",
    "peak_reference",
    "peak_strategy",
    *_ACTIVITY_KEYS,
    "summary_failures",
    *OVERFLOW_KEYS,
    "firing_per_100_steps",
    "mean_steps_between",
    "thrash",
    "retention",
    "facts_lost",
    *COST_KEYS,
)
# The sweep table: metrics that move with a parameter.
SWEEP_KEYS: tuple[str, ...] = (
    "peak_strategy",
    "peak_reference",
    "compaction_count",
    "firing_per_100_steps",
    "thrash",
    "messages_removed",
    "input_tokens_total",
    "summary_input_tokens",
    "summary_output_tokens",
    "overflow_steps",
    "overflow_steps_strategy",
    "findings_total",
)
SWEEP_COST_KEYS: tuple[str, ...] = ("llm_cost_usd", "ledger_total_cost")


def label_rows(keys: Iterable[str]) -> list[tuple[str, str, str]]:
    """(key, label, meaning) per key, from the catalogue (KeyError for a key without a row)."""
    return [(key, metric(key).label, metric(key).meaning) for key in keys]


def metric_json(key: str) -> dict[str, Any]:
    """A metric's catalogue row for JSON twins and CSV headers."""
    row = metric(key)
    return {
        "key": key,
        "label": row.label,
        "unit": row.unit,
        "better": row.better,
        "help": row.meaning,
        "best_rule": row.best_rule,
    }


def event_label(kind: str) -> str:
    """The label of an event kind (through its old spellings); an uncatalogued kind says so
    rather than passing for a known one."""
    row = event_kind(kind)
    return row.label if row else f"{kind} (uncatalogued)"


def event_meaning(kind: str) -> str:
    row = event_kind(kind)
    return f"{row.category}: {row.meaning}" if row else "not in the event catalogue"
