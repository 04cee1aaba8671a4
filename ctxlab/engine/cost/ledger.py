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

from ..core.model import Conversation, Role, Usage
from ..core.records import REMOVED_FATES, Fate, StepRanges, StepRecord
from ..tokens.cl100k import PER_MESSAGE_OVERHEAD
from ..tokens.reference import ReferenceTokens
from .pricing import MTOK, ModelInfo, cost, model_info

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class LedgerStep:
    """One request. ``keys`` and ``tokens`` are parallel, in request order.

    ``tail_from``: when set, ``keys``/``tokens`` hold only the items from that position on,
    and the items before it are the previous request's first ``tail_from`` items (a step
    that only appends passes ``tail_from=len(previous)`` and the new items: O(new), never
    O(context)). ``unchanged_prefix``: a hint that the first N items equal the previous
    request's; comparison starts there. ``appended_tokens``: tokens new to the conversation
    at this step, when the caller knows them (otherwise inferred at compactions as the
    trailing items the previous request did not have)."""

    keys: Sequence[Hashable]
    tokens: Sequence[int]
    output_tokens: int = 0
    unchanged_prefix: int = 0
    appended_tokens: int | None = None
    tail_from: int | None = None


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

    def as_dict(self, *, steps: bool = True) -> dict[str, Any]:
        """JSON-ready (USD as floats). ``steps=False``: without the per-step dicts (a
        reader that stores the steps its own way skips one dict per step)."""

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
            "steps": [plain(s) for s in self.steps] if steps else [],
            "compactions": [plain(c) for c in self.compactions],
        }


def _first_difference(prev: list[Hashable], new: Sequence[Hashable], base: int, start: int) -> int:
    """First position p ≥ start where prev[p] differs from new[p − base] (``new`` holds the
    items from position ``base`` on), or the shorter length."""
    n = min(len(prev), base + len(new))
    if start >= n:
        return n
    if prev[start:n] == list(new[start - base : n - base]):  # one C-level pass
        return n
    for p in range(start, n):  # only reached when something did change
        if prev[p] != new[p - base]:
            return p
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
    prev_keys: list[Hashable] = []  # the previous request, updated in place
    cum: list[int] = [0]  # prefix sums of the previous request's tokens
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
        base = step.tail_from or 0
        if base > n_prev:
            raise ValueError(f"step {index}: tail_from {base} beyond the previous {n_prev} items")
        prev_total = cum[n_prev]
        start = max(base, min(step.unchanged_prefix, n_prev, base + len(keys)))
        shared = _first_difference(prev_keys, keys, base, start) if index else 0
        break_at = shared if index and shared < n_prev else None

        # Appended content, for the counterfactual at compactions: needed where the prefix broke.
        new_tokens = step.appended_tokens
        if new_tokens is None:
            new_tokens = 0
            if index and break_at is not None and (mark_steps is None or index in mark_steps):
                current = [*prev_keys[:base], *keys]
                new_tokens = _trailing_new_tokens(
                    prev_keys, current, [*_prefix_tokens(cum, base), *toks]
                )

        readable = shared if prev_cached else 0  # an uncacheable request left nothing to read
        read = cum[readable]
        del cum[shared + 1 :]
        del prev_keys[shared:]
        prev_keys.extend(keys[shared - base :])
        running = cum[-1]
        for t in toks[shared - base :]:
            running += t
            cum.append(running)
        total = running
        if step.appended_tokens is None and index and break_at is None:
            new_tokens = total - prev_total
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
                invalidated_tokens=prev_total - cum[shared],
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


def _prefix_tokens(cum: list[int], n: int) -> list[int]:
    return [cum[i + 1] - cum[i] for i in range(n)]


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


# --- from a replay ---------------------------------------------------------------------------

PRICED_SUMMARY_ERRORS = False  # a failed summary call reported no usage: it costs nothing


def ledger_from_records(
    records: Iterable[StepRecord],
    *,
    conversation: Conversation,
    reference: ReferenceTokens,
    model: str | ModelInfo,
    ttl: str = "5m",
    summary_model: str | None = None,
    min_cacheable_tokens: int = 0,
) -> Ledger:
    """The ledger of a replay, item sizes under the reference tokenizer.

    Request layout, as a Claude request caches it: tool definitions, then the context in
    order with the summary right after the system prompt (strategies that splice the summary
    into the system prompt or the first kept message break the prefix at about the same
    place). An item's key is its source index and version: truncation, offload and
    request-view prunes make a new version, ``restored`` returns to the original.
    Steps whose events changed nothing are appended in O(new messages); a step with
    changes is rebuilt from its ranges. Every step with context-changing events is a mark;
    summary calls (priced with ``summary_model``; ``None``: not priced) are charged to the
    next mark at or after their step (asynchronous summaries land a step later).
    """
    system_index = (
        0 if conversation.messages and conversation.messages[0].role is Role.SYSTEM else None
    )
    lead: list[tuple[Hashable, int]] = [(("tools",), reference.tools)] if reference.tools else []
    versions: dict[int, tuple[int, int]] = {}  # source index -> (event id, tokens)
    summary_tokens: dict[int, int] = {}
    steps: list[LedgerStep] = []
    marks: list[CompactionMark] = []
    pending = Usage()
    pending_step = -1
    prev_len = prev_items = prev_source = 0
    prev_summary: int | None = None

    per_message = [reference.message(i) for i in range(len(conversation.messages))]

    def item(i: int) -> tuple[Hashable, int]:
        v = versions.get(i)
        return ((i, v[0]), v[1]) if v else ((i, 0), reference.message(i))

    for rec in records:
        for summ in rec.summaries:
            summary_tokens[summ.id] = reference.text(summ.output) + PER_MESSAGE_OVERHEAD
            if summ.error and not PRICED_SUMMARY_ERRORS:
                continue
            pending = _add_usage(pending, summ.input_tokens, summ.output_tokens)
            pending_step = rec.index
        changed = rec.summary_id != prev_summary
        kinds: list[str] = []
        for ev in rec.events:
            if ev.changes:
                kinds.append(ev.kind)
            for ch in ev.changes:
                changed = True
                if ch.fate is Fate.RESTORED:
                    versions.pop(ch.index, None)
                elif ch.message is not None and ch.fate not in REMOVED_FATES:
                    versions[ch.index] = (ev.id, reference.message_of(ch.message))
        n_ctx = rec.context_len
        msg = conversation.messages[rec.source_index]
        out = msg.usage.output if msg.usage else reference.message(rec.source_index)
        if rec.index == 0 or changed or n_ctx < prev_len:
            # the whole request as keys and sizes side by side: tools, the system prompt,
            # the summary, the rest (a run that changes many steps rebuilds it each time:
            # comprehensions, not an append per item, halved qwenpaw's ledger at 20,000)
            indexes = rec.context_indexes
            at = 1 if indexes and indexes[0] == system_index else 0
            keys: list[Hashable] = [k for k, _ in lead]
            sizes = [t for _, t in lead]
            if versions:
                found = list(map(versions.get, indexes))
                keys += [
                    (i, 0) if v is None else (i, v[0]) for i, v in zip(indexes, found, strict=True)
                ]
                sizes += [
                    per_message[i] if v is None else v[1]
                    for i, v in zip(indexes, found, strict=True)
                ]
            else:
                keys += [(i, 0) for i in indexes]
                sizes += map(per_message.__getitem__, indexes)
            if rec.summary_id is not None:  # right after the system prompt
                keys.insert(len(lead) + at, ("summary", rec.summary_id))
                sizes.insert(len(lead) + at, summary_tokens.get(rec.summary_id, 0))
            appended = sum(per_message[i] for i in indexes if i >= prev_source)
            steps.append(
                LedgerStep(
                    tuple(keys), tuple(sizes), out,
                    appended_tokens=appended if rec.index else None,
                )
            )  # fmt: skip
            prev_items = len(keys)
        else:
            tail = [item(i) for i in _last_indexes(rec.context, n_ctx - prev_len)]
            steps.append(
                LedgerStep(
                    tuple(k for k, _ in tail), tuple(t for _, t in tail), out,
                    tail_from=prev_items,
                )
            )  # fmt: skip
            prev_items += len(tail)
        if rec.index and changed:
            usage_here = pending if pending_step >= 0 else None
            marks.append(
                CompactionMark(
                    rec.index, "+".join(dict.fromkeys(kinds)) or "summary_swap",
                    summary_usage=usage_here if summary_model else None,
                    summary_model=summary_model or "",
                )
            )  # fmt: skip
            pending, pending_step = Usage(), -1
        prev_len, prev_source, prev_summary = n_ctx, rec.source_index, rec.summary_id
    if pending_step >= 0 and summary_model and steps:
        # summaries whose result never reached a request (the run ended first)
        marks.append(
            CompactionMark(
                min(pending_step, len(steps) - 1), "summary_unapplied",
                summary_usage=pending, summary_model=summary_model, removed_tokens=0,
            )
        )  # fmt: skip
    return build_ledger(
        steps, model=model, ttl=ttl, marks=marks, min_cacheable_tokens=min_cacheable_tokens
    )


def _add_usage(usage: Usage, input_tokens: int, output_tokens: int) -> Usage:
    return Usage(
        input_uncached=usage.input_uncached + input_tokens, output=usage.output + output_tokens
    )


def _last_indexes(ranges: StepRanges, count: int) -> list[int]:
    """The last ``count`` source indexes of a context, walking ranges from the end."""
    out: list[int] = []
    for start, end in reversed(ranges):
        if len(out) >= count:
            break
        take = min(count - len(out), end - start)
        out[:0] = range(end - take, end)
    return out
