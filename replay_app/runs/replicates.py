"""Replicates of a run: the same configuration replayed N times with a model summariser
(each replicate its own calls: ``ProviderSummarizer.replicate`` keys the cache), made
together by ``services.group_create`` and told apart by ``Run.llm``: ``replicate`` (0-based),
``replicates`` (N) and ``family`` (shared by the N). The pages group them with ``families``
and ``family_spreads``; "best" compares families by ``spread.clear_lead``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from ctxlab.engine.core.spread import Spread, spread


def family(run: Any) -> Hashable:
    """The run's family: its replicates' shared id, or the run alone."""
    llm = getattr(run, "llm", None) or {}  # rows read without it: no replicates
    if int(llm.get("replicates") or 1) > 1 and llm.get("family"):
        return ("replicates", str(llm["family"]))
    return ("run", id(run))  # a run alone is its own family


def families(runs: Sequence[Any]) -> list[Hashable] | None:
    """Each run's family, or None when no two runs are replicates of one configuration
    (the plain best rule then applies)."""
    found = [family(r) for r in runs]
    return found if len(set(found)) < len(found) else None


def family_spreads(values: Sequence[Any], runs: Sequence[Any]) -> list[Spread | None]:
    """Per run, the spread of its family's values (None for a run without replicates)."""
    keys = [family(r) for r in runs]
    members: dict[Hashable, list[Any]] = {}
    for key, value in zip(keys, values, strict=True):
        members.setdefault(key, []).append(value)
    out: list[Spread | None] = []
    for key in keys:
        numbers = [v for v in members[key] if isinstance(v, int | float)]
        out.append(spread(numbers) if len(members[key]) > 1 else None)
    return out
