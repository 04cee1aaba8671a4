"""The pieces the stored compare inputs are made of (``inputs``), read back by the compare
pages (``compare_steps``, ``overview``): a run's compaction steps and its fate-matrix cells,
each with its JSON row form, and how many the page lists."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxlab.engine.core.catalogue import Trigger, compaction_ordinals, trigger_of
from ctxlab.engine.core.records import Fate

MATRIX_COLUMNS = 200  # buckets at most; a bucket holds ceil(messages / MATRIX_COLUMNS) messages
LOST_EVENTS = 10  # compactions listed per run on the page (all in the JSON)


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction of a run: its K-th compaction event (``catalogue.compaction_ordinals``,
    the one numbering every page reads)."""

    ordinal: int  # K, 1-based
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
    """From the run's event rows in seq order (``inputs._EVENT_COLUMNS``): one per
    compaction event, numbered by ``catalogue.compaction_ordinals``."""
    rows = list(rows)
    ordinals = compaction_ordinals((row[0], row[2]) for row in rows)
    out: list[Compaction] = []
    for seq, step, kind, messages, before, _, detail, _, summary in rows:
        if seq not in ordinals:
            continue
        fired = trigger_of(kind, detail or {})
        out.append(
            Compaction(
                ordinal=ordinals[seq],
                step=step,
                kinds=(kind,),
                seq=seq,
                messages=len({int(i) for i in messages}),
                measured=fired.measured if fired.measured is not None else (int(before) or None),
                limit=fired.limit,
                limit_name=fired.limit_name or "threshold",
                summary_seq=summary,
                measured_name=fired.measured_name,
            )
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
