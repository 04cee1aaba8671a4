"""Prompt-caching-aware cost ledger for a replay: what each request would cost on a Claude
model with automatic prefix caching, and what each compaction costs and saves.

Input: the requests in step order, each as the item keys it sends (a key identifies the exact
content of one item: a message, a summary, a truncated variant …) with token sizes. The
model of the cache, as Anthropic's prompt caching behaves for an agent that puts a cache
breakpoint at the end of every request:

* step 0 writes its whole request (cold cache);
* a later request reads the longest prefix it shares with the previous request at the cache
  read rate and writes the rest at the write rate of the chosen TTL (5m: 1.25× input,
  1h: 2× input; per-model rates from ``pricing``);
* compaction and in-place truncation change an item, so the prefix breaks there and every
  token after it is written again.

Per compaction, against the counterfactual "the removed tokens stay and the cache stays
warm" (appended content is written in both worlds):

* ``invalidated``: cached tokens of the previous request after the break (no longer readable);
* ``removed``: how much smaller the request is than without the compaction;
* ``rewrite``: tokens written again that are not new content (= invalidated − removed:
  the summary and the kept items after the break);
* one-off extra cost = rewrite × write − invalidated × read + summary call cost;
* saving per later step = removed × read (those tokens would have been cache reads);
* break-even: the first step where the savings since the compaction cover the extra cost.
  The horizon ends at the next compaction (the counterfactual changes there).

Work is O(steps + changed items) in Python: a step that only appends is checked with one
C-level slice comparison (skipped entirely when the caller passes ``unchanged_prefix``), and
prefix sums are kept incrementally.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .model import Usage
from .pricing import MTOK, ModelInfo, cost, model_info

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class LedgerStep:
    """One request. ``keys`` and ``tokens`` are parallel, in request order.

    ``unchanged_prefix``: optional hint from the replay framework that the first N items are
    known to equal the previous request's (e.g. the length of the previous context when no
    event touched it); comparison starts there. ``appended_tokens``: tokens new to the
    conversation at this step, when the caller knows them (otherwise inferred at compactions
    as the trailing items the previous request did not have)."""

    keys: Sequence[Hashable]
    tokens: Sequence[int]
    output_tokens: int = 0
    unchanged_prefix: int = 0
    appended_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class CompactionMark:
    """A context-changing event at ``step`` (the first request that shows its effect)."""

    step: int
    label: str = "compaction"
    summary_usage: Usage | None = None
    summary_model: str = ""  # defaults to the ledger's model
    removed_tokens: int | None = None  # overrides the inferred value


@dataclass(frozen=True, slots=True)
class StepCost:
    index: int
    total_tokens: int
    read_tokens: int  # shared prefix with the previous request
    write_tokens: int
    uncached_tokens: int  # below the model's minimum cacheable length: plain input
    break_at: int | None  # item position where the prefix first differs; None: pure append
    invalidated_tokens: int  # previous request's tokens after the break
    output_tokens: int
    cost: Decimal
    uncached_cost: Decimal  # the same request without prompt caching


@dataclass(frozen=True, slots=True)
class CompactionCost:
    step: int
    label: str
    invalidated_tokens: int
    removed_tokens: int
    rewrite_tokens: int
    rewrite_cost: Decimal
    lost_read_cost: Decimal  # what reading the invalidated tokens would have cost
    summary_cost: Decimal
    extra_cost: Decimal  # rewrite − lost read + summary: the one-off price of the event
    saving_per_step: Decimal
    horizon_steps: int  # later steps until the next compaction or the end
    tokens_saved_after: int  # removed × horizon_steps
    steps_to_break_even: int | None  # None: it never pays back (removed ≤ 0)
    break_even_step: int | None  # None: not reached within the run/horizon


@dataclass(frozen=True, slots=True)
class Ledger:
    model: str
    ttl: str
    steps: tuple[StepCost, ...]
    compactions: tuple[CompactionCost, ...]
    read_tokens: int
    write_tokens: int
    uncached_tokens: int
    output_tokens: int
    request_cost: Decimal
    summary_cost: Decimal
    uncached_cost: Decimal
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def total_cost(self) -> Decimal:
        return self.request_cost + self.summary_cost

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (USD as floats)."""

        def plain(obj: Any) -> dict[str, Any]:
            return {
                k: float(v) if isinstance(v, Decimal) else v
                for k, v in ((name, getattr(obj, name)) for name in obj.__slots__)
            }

        return {
            "model": self.model,
            "ttl": self.ttl,
            "totals": {
                "read_tokens": self.read_tokens,
                "write_tokens": self.write_tokens,
                "uncached_tokens": self.uncached_tokens,
                "output_tokens": self.output_tokens,
                "request_cost": float(self.request_cost),
                "summary_cost": float(self.summary_cost),
                "total_cost": float(self.total_cost),
                "uncached_cost": float(self.uncached_cost),
            },
            "steps": [plain(s) for s in self.steps],
            "compactions": [plain(c) for c in self.compactions],
        }


def _first_difference(a: Sequence[Hashable], b: Sequence[Hashable], start: int) -> int:
    """Index of the first position ≥ start where a and b differ (or the shorter length)."""
    n = min(len(a), len(b))
    if start >= n:
        return n
    head_a, head_b = a[start:n], b[start:n]
    if type(head_a) is not type(head_b):  # list vs tuple never compare equal
        head_a, head_b = tuple(head_a), tuple(head_b)
    if head_a == head_b:  # one C-level pass (identity short-cuts each element)
        return n
    for i in range(start, n):  # only reached when something did change
        if a[i] != b[i]:
            return i
    return n


def build_ledger(
    steps: Iterable[LedgerStep],
    *,
    model: str | ModelInfo,
    ttl: str = "5m",
    marks: Sequence[CompactionMark] | None = None,
    min_cacheable_tokens: int = 0,
) -> Ledger:
    """Price every request and every compaction. ``marks=None`` treats every prefix break
    as a compaction (label ``prefix_break``)."""
    info = model if isinstance(model, ModelInfo) else model_info(model)
    info.rates.write(ttl)  # validates the TTL early

    results: list[StepCost] = []
    prev_keys: Sequence[Hashable] = ()
    cum: list[int] = [0]  # prefix sums of the previous request's tokens
    appended: list[int] = []
    removed_inferred: list[int] = []
    mark_steps = {m.step for m in marks} if marks is not None else None
    totals = [0, 0, 0, 0]
    prev_cached = False
    request_cost = uncached_cost = ZERO

    for index, step in enumerate(steps):
        keys, toks = step.keys, step.tokens
        if len(keys) != len(toks):
            raise ValueError(f"step {index}: {len(keys)} keys but {len(toks)} token sizes")
        n_prev = len(prev_keys)
        prev_total = cum[n_prev] if index else 0
        start = min(step.unchanged_prefix, n_prev, len(keys))
        shared = _first_difference(prev_keys, keys, start) if index else 0
        readable = shared if prev_cached else 0  # an uncacheable request left nothing to read
        read = cum[readable] if index else 0
        del cum[shared + 1 :]
        running = cum[-1]
        for t in toks[shared:]:
            running += t
            cum.append(running)
        total = running
        break_at = shared if index and shared < n_prev else None

        # Appended content and the counterfactual reduction, needed only where the prefix broke.
        new_tokens = step.appended_tokens
        if new_tokens is None:
            new_tokens = total - cum[n_prev] if break_at is None and index else 0
            if break_at is not None and (mark_steps is None or index in mark_steps):
                new_tokens = _trailing_new_tokens(prev_keys, keys, toks)
        appended.append(new_tokens)
        removed_inferred.append(prev_total + new_tokens - total if index else 0)

        write = total - read
        uncached = 0
        prev_cached = total >= min_cacheable_tokens
        if not prev_cached:  # too short to cache: all plain input
            read, write, uncached = 0, 0, total
        rates = info.rates_for(total)
        out = step.output_tokens
        usage = Usage(
            input_uncached=uncached,
            cache_read=read,
            cache_write_5m=write if ttl == "5m" else 0,
            cache_write_1h=write if ttl == "1h" else 0,
            output=out,
        )
        step_cost = cost(usage, info)
        plain_cost = (total * rates.input + out * rates.output) / MTOK
        results.append(
            StepCost(
                index=index,
                total_tokens=total,
                read_tokens=read,
                write_tokens=write,
                uncached_tokens=uncached,
                break_at=break_at,
                invalidated_tokens=prev_total - cum[shared] if index else 0,
                output_tokens=out,
                cost=step_cost,
                uncached_cost=plain_cost,
            )
        )
        totals[0] += read
        totals[1] += write
        totals[2] += uncached
        totals[3] += out
        request_cost += step_cost
        uncached_cost += plain_cost
        prev_keys = keys

    if marks is None:
        marks = [CompactionMark(s.index, "prefix_break") for s in results if s.break_at is not None]
    compactions = _compaction_costs(results, marks, removed_inferred, info, ttl)
    summary_cost = sum((c.summary_cost for c in compactions), ZERO)
    return Ledger(
        model=info.id,
        ttl=ttl,
        steps=tuple(results),
        compactions=compactions,
        read_tokens=totals[0],
        write_tokens=totals[1],
        uncached_tokens=totals[2],
        output_tokens=totals[3],
        request_cost=request_cost,
        summary_cost=summary_cost,
        uncached_cost=uncached_cost,
    )


def _trailing_new_tokens(
    prev_keys: Sequence[Hashable], keys: Sequence[Hashable], toks: Sequence[int]
) -> int:
    """Tokens of the trailing items the previous request did not contain: the content that
    arrived since. (A summary placed right before them is counted as replacement only if some
    earlier item survived after it; otherwise it is indistinguishable from new content —
    pass ``appended_tokens`` when the framework knows better.)"""
    seen = set(prev_keys)
    total = 0
    for i in range(len(keys) - 1, -1, -1):
        if keys[i] in seen:
            break
        total += toks[i]
    return total


def _compaction_costs(
    steps: Sequence[StepCost],
    marks: Sequence[CompactionMark],
    removed_inferred: Sequence[int],
    info: ModelInfo,
    ttl: str,
) -> tuple[CompactionCost, ...]:
    by_step: dict[int, list[CompactionMark]] = {}
    for m in marks:
        if not 0 <= m.step < len(steps):
            raise ValueError(f"compaction mark at step {m.step}: the run has {len(steps)} steps")
        by_step.setdefault(m.step, []).append(m)
    order = sorted(by_step)
    out: list[CompactionCost] = []
    for pos, s in enumerate(order):
        group = by_step[s]
        step = steps[s]
        horizon_end = order[pos + 1] if pos + 1 < len(order) else len(steps)
        horizon = horizon_end - s - 1
        given = [m.removed_tokens for m in group if m.removed_tokens is not None]
        removed = sum(given) if given else removed_inferred[s]
        rates = info.rates_for(step.total_tokens)
        write_rate, read_rate = rates.write(ttl), rates.cache_read
        invalidated = step.invalidated_tokens
        rewrite = max(0, invalidated - removed) if step.break_at is not None else 0
        rewrite_cost = rewrite * write_rate / MTOK
        lost_read = invalidated * read_rate / MTOK
        summary = ZERO
        for m in group:
            if m.summary_usage is not None:
                summary += cost(m.summary_usage, m.summary_model or info)
        extra = rewrite_cost - lost_read + summary
        per_step = removed * read_rate / MTOK
        if extra <= 0:
            to_even: int | None = 0
        elif per_step > 0:
            to_even = math.ceil(extra / per_step)
        else:
            to_even = None
        out.append(
            CompactionCost(
                step=s,
                label="+".join(m.label for m in group),
                invalidated_tokens=invalidated,
                removed_tokens=removed,
                rewrite_tokens=rewrite,
                rewrite_cost=rewrite_cost,
                lost_read_cost=lost_read,
                summary_cost=summary,
                extra_cost=extra,
                saving_per_step=per_step,
                horizon_steps=horizon,
                tokens_saved_after=max(0, removed) * horizon,
                steps_to_break_even=to_even,
                break_even_step=s + to_even if to_even is not None and to_even <= horizon else None,
            )
        )
    return tuple(out)
