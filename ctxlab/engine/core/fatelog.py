"""A replay's fate log: every change without message bodies, indexed for reading fates at
any step in O(changes up to it) and fate counts per step in O(log steps).

Built once per finished run (the pages cache it); the rule for combining changes is
``records.apply_change``, as everywhere else.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .records import Event, Fate, apply_change

FATE_CODE = {f.value: i for i, f in enumerate(Fate)}  # a fate's compact code in the log
FATES_BY_CODE = tuple(Fate)
NOT_KEPT = tuple(f.value for f in Fate if f is not Fate.RESTORED)  # fates a message can hold


@dataclass(frozen=True, slots=True)
class FateLog:
    """Every change in event order as parallel columns (step, event seq, message index,
    fate code), plus two indexes built once: each message's entry positions (``order``
    sliced by ``starts``: message ``i``'s entries are ``order[starts[i]:starts[i + 1]]``),
    and the non-kept fate counts after each step with changes.

    Columns are ``array`` s: the web app keeps a finished run's log in files shared by its
    processes, and a 20,000-message run's log unpickled in 6-8 ms as tuples and a dict of
    20,000 tuples (each page process's first step view of each run paid it), ~1 ms so."""

    steps: array[int]
    seqs: array[int]
    indexes: array[int]
    fates: array[int]
    order: array[int]
    starts: array[int]
    count_steps: array[int]
    counts: tuple[dict[str, int], ...]

    @classmethod
    def build(
        cls, steps: Sequence[int], seqs: Sequence[int], indexes: Sequence[int], fates: Sequence[int]
    ) -> FateLog:
        """From the parallel columns (fates as ``FATE_CODE`` codes), in event order."""
        current: dict[int, str] = {}
        counter: Counter[str] = Counter()
        count_steps: list[int] = []
        counts: list[dict[str, int]] = []
        for k, (step, i, code) in enumerate(zip(steps, indexes, fates, strict=True)):
            fate = FATES_BY_CODE[code]
            old = apply_change(current, i, fate, fate.value)
            if old is not None:
                counter[old] -= 1
            if i in current:
                counter[current[i]] += 1
            if k + 1 == len(steps) or steps[k + 1] != step:
                count_steps.append(step)
                counts.append({f: n for f, n in counter.items() if n})
        # each message's entries, in event order (a stable sort by message index)
        order = sorted(range(len(indexes)), key=indexes.__getitem__)
        starts = [0] * (max(indexes, default=-1) + 2)
        for i in indexes:
            starts[i + 1] += 1
        for i in range(1, len(starts)):
            starts[i] += starts[i - 1]
        return cls(
            array("i", steps),
            array("i", seqs),
            array("i", indexes),
            array("b", fates),
            array("i", order),
            array("i", starts),
            array("i", count_steps),
            tuple(counts),
        )

    def positions(self, index: int) -> array[int]:
        """Message ``index``'s entries, in event order."""
        if not 0 <= index < len(self.starts) - 1:
            return array("i")
        return self.order[self.starts[index] : self.starts[index + 1]]

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> FateLog:
        steps: list[int] = []
        seqs: list[int] = []
        indexes: list[int] = []
        fates: list[int] = []
        for event in events:
            for change in event.changes:
                steps.append(event.step)
                seqs.append(event.id)
                indexes.append(change.index)
                fates.append(FATE_CODE[change.fate.value])
        return cls.build(steps, seqs, indexes, fates)

    @classmethod
    def from_stored(cls, rows: Iterable[tuple[int, int, Iterable[Mapping[str, Any]]]]) -> FateLog:
        """From stored events as ``(seq, step, changes)`` rows, each change a mapping with
        ``index`` and ``fate`` (the JSON the web app keeps), in event order."""
        steps: list[int] = []
        seqs: list[int] = []
        indexes: list[int] = []
        fates: list[int] = []
        for seq, step, changes in rows:
            for change in changes:
                steps.append(step)
                seqs.append(seq)
                indexes.append(int(change["index"]))
                fates.append(FATE_CODE[change["fate"]])
        return cls.build(steps, seqs, indexes, fates)

    def upto(self, step: int) -> int:
        """How many entries apply at ``step`` (events are ordered by step)."""
        return bisect_right(self.steps, step)

    def fates_at(
        self, step: int, indexes: Iterable[int] | None = None
    ) -> dict[int, tuple[Fate, int]]:
        """Non-kept fates in force at ``step``: index -> (fate, event seq). With
        ``indexes``, only their own entries are read."""
        if indexes is None:
            ks: Iterable[int] = range(self.upto(step))
        else:
            ks = sorted(k for i in indexes for k in self.positions(i) if self.steps[k] <= step)
        out: dict[int, tuple[Fate, int]] = {}
        for k in ks:
            fate = FATES_BY_CODE[self.fates[k]]
            apply_change(out, self.indexes[k], fate, (fate, self.seqs[k]))
        return out

    def counts_at(self, step: int) -> dict[str, int]:
        """How many messages have each non-kept fate at ``step``."""
        pos = bisect_right(self.count_steps, step) - 1
        return dict(self.counts[pos]) if pos >= 0 else {}

    def final(self) -> dict[int, Fate]:
        return {i: fate for i, (fate, _) in self.fates_at(10**12).items()}
