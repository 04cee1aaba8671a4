"""The per-message counts an import stores so that no replay tokenizes an unmodified
original again: the reference counts (and the long texts' running counts) every strategy
reads, and the strategies' own estimates, each under the ``ReferenceTokens`` rule its
strategy reads it back by. One list (``ESTIMATES``; ``MEASURES`` for other per-message
values, e.g. QwenPaw's formatted sizes) for the import, the worker and the benchmarks: a
strategy whose estimate is worth storing is added here once, with its ``Message`` column.
(CoPaw's Qwen2.5 entries are apart, ``_copaw_stored``: they depend on the calls of earlier
import batches and are seeded into the Qwen counter, not a rule.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxlab.engine.core.model import Conversation, Message
from ctxlab.engine.tokens import reference_stored
from ctxlab.engine.tokens.reference import ReferenceTokens, seed_reference_tokens

from . import _cowagent_rules, aider, qwenpaw


@dataclass(frozen=True, slots=True)
class Estimate:
    """A strategy's own count of each original message, stored at import."""

    column: str  # the ``Message`` row's field holding it
    rule: str  # the ``ReferenceTokens.seed_rule`` key its strategy reads
    counts: Callable[[Sequence[Message]], list[int]]


ESTIMATES: tuple[Estimate, ...] = (
    Estimate("aider_tokens", aider.STORED_RULE, aider.stored_counts),
    Estimate("cowagent_tokens", _cowagent_rules.STORED_RULE, _cowagent_rules.stored_counts),
    Estimate("qwenpaw_tokens", qwenpaw.STORED_RULE, qwenpaw.stored_counts),
)

# Other per-message values a strategy reads besides its count, stored and seeded the same
# way: QwenPaw's size of each message formatted for its summariser (its input cap).
MEASURES: tuple[Estimate, ...] = (
    Estimate("qwenpaw_formatted", qwenpaw.FORMATTED_RULE, qwenpaw.stored_formatted),
)

# Every column ``seeded`` reads, in the order a row query should name them.
COLUMNS: tuple[str, ...] = (
    "reference_tokens",
    "reference_tables",
    *(e.column for e in ESTIMATES + MEASURES),
)


def counted(messages: Sequence[Message]) -> dict[str, list[Any]]:
    """Each of ``COLUMNS`` for ``messages`` (a list per column, one value per message)."""
    tokens, tables = reference_stored.stored_counts(messages)
    columns: dict[str, list[Any]] = {"reference_tokens": list(tokens), "reference_tables": tables}
    columns.update((e.column, e.counts(messages)) for e in ESTIMATES + MEASURES)
    return columns


def seeded(conversation: Conversation, columns: Mapping[str, Sequence[Any]]) -> ReferenceTokens:
    """The reference counts of ``conversation`` from what its import stored (``counted``'s
    columns, read back from the rows), each strategy's estimate seeded under its rule; a
    column of a transcript imported before it existed (None values) is counted in the
    replay, as before."""
    reference = seed_reference_tokens(
        conversation, list(columns["reference_tokens"]), columns["reference_tables"]
    )
    for estimate in ESTIMATES + MEASURES:
        values = columns.get(estimate.column)  # (absent: columns read before it was stored)
        if values is not None:
            reference.seed_rule(estimate.rule, values)
    return reference


def from_rows(rows: Sequence[Sequence[Any]]) -> dict[str, Sequence[Any]]:
    """``COLUMNS`` from rows selected in that order (``values_list(*COLUMNS)``)."""
    by_column = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    return dict(zip(COLUMNS, by_column, strict=True))
