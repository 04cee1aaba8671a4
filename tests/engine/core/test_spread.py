"""Replicates' spread and the one rule that lets "best" mark only a lead larger than it."""

from __future__ import annotations

import pytest

from ctxlab.engine.core.catalogue import BEST_RULE, best_flags, metric_best_flags
from ctxlab.engine.core.spread import SPREAD_RULE, clear_lead, spread


def test_spread_of_replicates() -> None:
    found = spread([0.5, None, 0.7, 0.6])
    assert found is not None
    assert (found.n, found.low, found.high) == (3, 0.5, 0.7)
    assert found.mean == pytest.approx(0.6) and found.stdev == pytest.approx(0.1)
    assert found.width == pytest.approx(0.2)
    assert found.text() == "0.60 (0.50–0.70, sd 0.10, 3 replicates)"
    assert spread([None]) is None and spread([4]).text() == "4.00"  # type: ignore[union-attr]


def test_a_lead_inside_the_spread_is_not_best() -> None:
    # A: 0.50-0.70 (mean 0.6), B: 0.55-0.65 (mean 0.6-): the means differ by less than 0.2
    values = [0.5, 0.7, 0.6, 0.55, 0.65, 0.58]
    families = ["a", "a", "a", "b", "b", "b"]
    assert clear_lead(values, families, "higher") == [False] * 6
    # the plain rule (no families) would have crowned the single highest value
    assert best_flags(values, "higher") == [False, True, False, False, False, False]


def test_a_lead_beyond_the_spread_marks_the_whole_family() -> None:
    values = [0.9, 0.92, 0.91, 0.5, 0.55, 0.52]
    families = ["a", "a", "a", "b", "b", "b"]
    assert best_flags(values, "higher", families=families) == [True] * 3 + [False] * 3
    assert best_flags(values, "lower", families=families) == [False] * 3 + [True] * 3
    # a lead of 0.05 with a spread of 0.1 on one side is not enough
    assert clear_lead([1.0, 1.1, 1.15], ["a", "a", "b"], "higher") == [False] * 3


def test_without_replicates_the_rule_is_unchanged() -> None:
    values = [3, 1, 1]
    assert best_flags(values, "lower", families=["x", "y", "z"]) == [False, True, True]
    assert metric_best_flags("compaction_count", values, [{}, {}, {}]) == [False, True, True]


def test_the_rule_is_stated_with_the_best_rule() -> None:
    assert SPREAD_RULE in BEST_RULE
