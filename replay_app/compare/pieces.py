"""The pieces the stored compare inputs are made of (``inputs``), read back by the compare
pages (``compare_steps``, ``overview``): a run's compaction steps and its fate-matrix cells,
each with its JSON row form, and how many the page lists."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxlab.engine.core.catalogue import Trigger, is_compaction, trigger_of
from ctxlab.engine.core.records import Fate

# A compaction, for the ordinal: a step whose events wrote a summary or took messages out
# of the context (summarised, dropped). Per-message edits (truncate, offload, prune) are
# not counted: a strategy that trims a tool result at every step would push its first
# summary to row 40 and the rows would no longer line up what users compare.
REMOVED = frozenset({Fate.SUMMARISED.value, Fate.DROPPED.value})

MATRIX_COLUMNS = 200  # buckets at most; a bucket holds ceil(messages / MATRIX_COLUMNS) messages
LOST_EVENTS = 10  # compactions listed per run on the page (all in the JSON)


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction step of a run (its events at that step taken together; see
    ``REMOVED``)."""

    ordinal: int  # 1-based
    step: int
    kinds: tuple[str, ...]
    seq: int  # the first event's seq
    messages: int  # source messages the events touched
    measured: int | None
    limit: int | None
    limit_name: str
    summary_seq: int | None
    measured_name: str = "context"

    @property
    def trigger(self) -> str:
        return Trigger(self.measured, self.limit, self.measured_name, self.limit_name).words()

    def as_row(self) -> list[Any]:
        """Its fields as a JSON list (stored with the run's compare inputs)."""
        return [self.ordinal, self.step, list(self.kinds), self.seq, self.messages,
                self.measured, self.limit, self.limit_name, self.summary_seq,
                self.measured_name]  # fmt: skip

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Compaction:
        ordinal, step, kinds, seq, messages, measured, limit, limit_name, summary = row[:9]
        name = row[9] if len(row) > 9 else "context"
        return cls(ordinal, step, tuple(kinds), seq, messages, measured, limit, limit_name,
                   summary, name)  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "ordinal": self.ordinal,
            "step": self.step,
            "kinds": list(self.kinds),
            "event": self.seq,
            "messages": self.messages,
            "measured": self.measured,
            "limit": self.limit,
            "trigger": self.trigger,
            "summary": self.summary_seq,
        }


def compactions_from_rows(rows: Iterable[Sequence[Any]]) -> list[Compaction]:
    """From the run's event rows in seq order (``inputs._EVENT_COLUMNS``)."""
    by_step: dict[int, list[Sequence[Any]]] = {}
    for row in rows:
        _, step, kind, _, _, _, _, changes, summary = row
        removes = any(c.get("fate") in REMOVED for c in changes)
        if summary is not None or (removes and is_compaction(kind)):
            by_step.setdefault(step, []).append(row)
    out: list[Compaction] = []
    for step, events in by_step.items():
        # the comparison that fired: the first event of the step that states one
        triggers = [trigger_of(kind, detail or {}) for _, _, kind, _, _, _, detail, _, _ in events]
        fired = next((t for t in triggers if t.measured is not None and t.limit is not None),
                     next((t for t in triggers if t.measured is not None), triggers[0]))  # fmt: skip
        measured, limit = fired.measured, fired.limit
        limit_name, measured_name = fired.limit_name, fired.measured_name
        if measured is None:
            measured = int(events[0][4]) or None
        touched = {int(i) for e in events for i in e[3]}
        summary = next((e[8] for e in events if e[8] is not None), None)
        out.append(
            Compaction(
                ordinal=len(out) + 1,
                step=step,
                kinds=tuple(dict.fromkeys(e[2] for e in events)),
                seq=events[0][0],
                messages=len(touched),
                measured=measured,
                limit=limit,
                limit_name=limit_name or "threshold",
                summary_seq=summary,
                measured_name=measured_name,
            )  # fmt: skip
        )
    return out


@dataclass(slots=True)
class MatrixCell:
    start: int
    end: int
    fate: str  # the dominant fate (or the only one)
    counts: dict[str, int]

    def as_row(self) -> list[Any]:
        return [self.start, self.end, self.fate, self.counts]

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> MatrixCell:
        start, end, fate, counts = row
        return cls(start, end, fate, dict(counts))

    @property
    def title(self) -> str:
        span = f"#{self.start}" if self.end - self.start == 1 else f"#{self.start}–{self.end - 1}"
        return f"{span}: " + ", ".join(f"{k} {v}" for k, v in self.counts.items())


def bucket_size(messages: int, columns: int = MATRIX_COLUMNS) -> int:
    return max(1, -(-messages // columns))


def matrix_cells(fates: dict[int, Fate], messages: int, size: int) -> list[MatrixCell]:
    """Buckets of ``size`` messages with their fate counts (absent = kept)."""
    buckets = -(-messages // size)
    counts: list[Counter[str]] = [Counter() for _ in range(buckets)]
    for i, fate in fates.items():
        if 0 <= i < messages:
            counts[i // size][fate.value] += 1
    cells = []
    for b, found in enumerate(counts):
        start, end = b * size, min(b * size + size, messages)
        kept = (end - start) - sum(found.values())
        if kept:
            found["kept"] = kept
        ordered = dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))
        cells.append(MatrixCell(start, end, next(iter(ordered), "kept"), ordered))
    return cells
