"""SourceIndexes: source indexes held as runs read exactly as the tuple they stand for."""

from __future__ import annotations

import pickle
import random

import pytest

from ctxlab.engine.core.records import SourceIndexes, SummaryRecord


def _cases() -> list[tuple[int, ...]]:
    rng = random.Random(7)
    cases: list[tuple[int, ...]] = [(), (0,), (5,), (0, 1, 2), (3, 4, 9, 10, 11, 2, 3)]
    for _ in range(200):
        out: list[int] = []
        for _ in range(rng.randint(0, 12)):
            start = rng.randint(0, 60)
            out.extend(range(start, start + rng.randint(1, 8)))
        cases.append(tuple(out))
    return cases


@pytest.mark.parametrize("values", _cases())
def test_reads_as_the_tuple(values: tuple[int, ...]) -> None:
    runs = SourceIndexes.join(values)
    assert tuple(runs) == values and list(runs) == list(values)
    assert len(runs) == len(values) and bool(runs) == bool(values)
    assert runs == values and values == runs and not runs != values  # noqa: SIM201, SIM202
    assert hash(runs) == hash(values)
    for i in range(-len(values), len(values)):
        assert runs[i] == values[i]
    assert runs[1:-1] == values[1:-1] and runs[::2] == values[::2]
    for probe in (-1, 0, 3, 30, 61, 70):
        assert (probe in runs) == (probe in values)
    assert pickle.loads(pickle.dumps(runs)) == runs
    with pytest.raises(IndexError):
        runs[len(values)]


def test_runs_are_merged_and_chained_without_listing() -> None:
    first = SourceIndexes.join([0, 1, 2, 3, 7, 8])
    assert first.runs == ((0, 4), (7, 9))
    chained = SourceIndexes.join([first, 9, 10, SourceIndexes.join(range(11, 20_000)), 30_000])
    assert chained.runs == ((0, 4), (7, 20_000), (30_000, 30_001))
    assert len(chained) == 4 + 19_993 + 1
    assert chained == (0, 1, 2, 3, *range(7, 20_000), 30_000)
    assert chained != tuple(range(20_000)) and chained != [*chained]  # a list is no tuple
    assert SourceIndexes.join([]) == () and SourceIndexes.join([SourceIndexes.join([])]) == ()


def test_summary_records_compare_and_pickle_with_either_form() -> None:
    listed = SummaryRecord(id=1, step=2, input="in", output="out", messages=(4, 5, 6, 9))
    runs = SummaryRecord(
        id=1, step=2, input="in", output="out", messages=SourceIndexes.join([4, 5, 6, 9])
    )
    assert listed == runs and hash(listed) == hash(runs)
    back = pickle.loads(pickle.dumps(runs))
    assert back == listed and isinstance(back.messages, SourceIndexes)
    assert back.messages.runs == ((4, 7), (9, 10))
