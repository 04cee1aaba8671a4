"""A run's fate log: every change without message bodies, cached once per finished run."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ctxlab.engine.records import Fate
from replay_app.memo import cached
from replay_app.models import Run, RunEvent

FATES = tuple(f.value for f in Fate if f is not Fate.RESTORED)

_FATE_CODE = {f.value: i for i, f in enumerate(Fate)}
_FATES_BY_CODE = tuple(Fate)

# --- the fate log ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FateLog:
    """Every change of a run without message bodies, in event order: parallel tuples
    (step, event seq, message index, fate code), plus two indexes built once: each
    message's entry positions, and the non-kept fate counts after each step with changes."""

    steps: tuple[int, ...]
    seqs: tuple[int, ...]
    indexes: tuple[int, ...]
    fates: tuple[int, ...]
    positions: dict[int, tuple[int, ...]]
    count_steps: tuple[int, ...]
    counts: tuple[dict[str, int], ...]

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
            ks = sorted(
                k for i in indexes for k in self.positions.get(i, ()) if self.steps[k] <= step
            )
        out: dict[int, tuple[Fate, int]] = {}
        for k in ks:
            i = self.indexes[k]
            fate = _FATES_BY_CODE[self.fates[k]]
            if fate is Fate.RESTORED:
                out.pop(i, None)
            else:
                out[i] = (fate, self.seqs[k])
        return out

    def counts_at(self, step: int) -> dict[str, int]:
        """How many messages have each non-kept fate at ``step``."""
        pos = bisect_right(self.count_steps, step) - 1
        return dict(self.counts[pos]) if pos >= 0 else {}

    def final(self) -> dict[int, Fate]:
        return {i: fate for i, (fate, _) in self.fates_at(10**12).items()}


def _build_fate_log(
    steps: list[int], seqs: list[int], indexes: list[int], fates: list[int]
) -> FateLog:
    positions: dict[int, list[int]] = {}
    current: dict[int, str] = {}
    counter: Counter[str] = Counter()
    count_steps: list[int] = []
    counts: list[dict[str, int]] = []
    for k, (step, i, code) in enumerate(zip(steps, indexes, fates, strict=True)):
        positions.setdefault(i, []).append(k)
        old = current.pop(i, None)
        if old is not None:
            counter[old] -= 1
        fate = _FATES_BY_CODE[code]
        if fate is not Fate.RESTORED:
            current[i] = fate.value
            counter[fate.value] += 1
        if k + 1 == len(steps) or steps[k + 1] != step:
            count_steps.append(step)
            counts.append({f: n for f, n in counter.items() if n})
    return FateLog(
        tuple(steps),
        tuple(seqs),
        tuple(indexes),
        tuple(fates),
        {i: tuple(ks) for i, ks in positions.items()},
        tuple(count_steps),
        tuple(counts),
    )


def fate_log(run: Run) -> FateLog:
    return cached(run, "fatelog", lambda: _fate_log(run))


def _fate_log(run: Run) -> FateLog:
    steps: list[int] = []
    seqs: list[int] = []
    indexes: list[int] = []
    fates: list[int] = []
    rows = RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "step", "changes")
    for seq, step, changes in rows.iterator(chunk_size=500):
        for change in changes:
            steps.append(step)
            seqs.append(seq)
            indexes.append(int(change["index"]))
            fates.append(_FATE_CODE[change["fate"]])
    return _build_fate_log(steps, seqs, indexes, fates)
