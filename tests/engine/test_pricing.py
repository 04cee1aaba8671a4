from __future__ import annotations

from decimal import Decimal

import pytest

from ctxlab.engine.model import Usage
from ctxlab.engine.pricing import (
    CURRENT_MODELS,
    DEFAULT_SUMMARY_MODEL,
    MODELS,
    UnknownModelError,
    cost,
    cost_breakdown,
    estimate_summary_cost,
    find_model,
    model_info,
)

D = Decimal


@pytest.mark.parametrize(
    ("model", "usage", "expected"),
    [
        # $1 in / $5 out: 1000×1 + 10000×0.1 + 2000×1.25 + 500×2 + 300×5 = 7000 µ$
        ("claude-haiku-4-5", Usage(1000, 10_000, 2000, 500, 300), D("0.007")),
        ("claude-opus-4-1", Usage(input_uncached=1_000_000), D("15")),
        ("claude-opus-4-1", Usage(output=1_000_000), D("75")),
        # Sonnet 5.5 reads cache at 0.05× of $2
        ("claude-sonnet-5-5", Usage(cache_read=1_000_000), D("0.10")),
        # Fable 5.1 reads at 0.025× of $10, writes 1h at 2×
        ("claude-fable-5-1", Usage(cache_read=1_000_000, cache_write_1h=1_000_000), D("20.25")),
        # Haiku 5.5: a prompt of exactly 100K stays in the low tier ...
        ("claude-haiku-5-5", Usage(input_uncached=100_000, output=1000), D("0.0105")),
        # ... one token more prices the whole request, output included, at the high tier
        ("claude-haiku-5-5", Usage(input_uncached=100_001, output=1000), D("0.0525005")),
        # the tier looks at the whole prompt, cache buckets included
        ("claude-haiku-5-5", Usage(input_uncached=1, cache_read=100_000), D("0.0050005")),
        # reasoning is inside output: not charged twice
        ("claude-haiku-4-5", Usage(output=1000, reasoning=800), D("0.005")),
        ("claude-3-haiku", Usage(cache_write_5m=1_000_000), D("0.30")),
    ],
    ids=[
        "haiku45-all-buckets",
        "opus41-input",
        "opus41-output",
        "sonnet55-read-005x",
        "fable51-read-and-1h",
        "haiku55-at-threshold",
        "haiku55-over-threshold",
        "haiku55-tier-counts-cache",
        "reasoning-not-double",
        "haiku3-explicit-write",
    ],
)
def test_cost_hand_computed(model: str, usage: Usage, expected: Decimal) -> None:
    assert cost(usage, model) == expected


def test_cost_breakdown_sums_to_total() -> None:
    b = cost_breakdown(Usage(1000, 10_000, 2000, 500, 300), "claude-haiku-4-5")
    assert (b.input, b.cache_read, b.cache_write_5m, b.cache_write_1h, b.output) == (
        D("0.001"),
        D("0.001"),
        D("0.0025"),
        D("0.001"),
        D("0.0015"),
    )
    assert b.total == D("0.007")
    assert (b + b).total == D("0.014")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("claude-haiku-5-5[1m]", "claude-haiku-5-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-opus-4-1@20250805", "claude-opus-4-1"),
        ("  Claude-Sonnet-5-5 ", "claude-sonnet-5-5"),
    ],
    ids=["dated", "bedrock", "bedrock-region", "1m-suffix", "latest", "vertex", "case-space"],
)
def test_find_model_resolves_provider_spellings(name: str, expected: str) -> None:
    info = find_model(name)
    assert info is not None and info.id == expected


def test_model_info_unknown_raises_readable() -> None:
    with pytest.raises(UnknownModelError, match="gpt-4o"):
        model_info("gpt-4o")
    assert find_model("gpt-4o") is None


def test_models_table_is_consistent() -> None:
    ids = [m.id for m in MODELS]
    assert len(ids) == len(set(ids))
    assert DEFAULT_SUMMARY_MODEL in CURRENT_MODELS
    assert model_info(DEFAULT_SUMMARY_MODEL).family == "haiku"
    for m in MODELS:
        assert m.context_window >= 200_000 and 0 < m.max_output <= m.context_window, m.id
        r = m.rates
        assert r.output > r.input > r.cache_read > 0, m.id
        if m.id != "claude-3-haiku":  # the one row whose cache rates are not the standard ×
            assert r.cache_write_5m == r.input * D("1.25"), m.id
            assert r.cache_write_1h == r.input * 2, m.id


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((10, 20_000, 500, "claude-haiku-4-5"), D("0.225")),
        ((0, 20_000, 500, "claude-haiku-4-5"), D("0")),
        ((2, 150_000, 4096, "claude-haiku-5-5"), D("0.17048")),  # high tier: 2×(0.075+0.01024)
    ],
    ids=["haiku45", "no-calls", "haiku55-long-tier"],
)
def test_estimate_summary_cost(args: tuple[int, int, int, str], expected: Decimal) -> None:
    assert estimate_summary_cost(*args) == expected


def test_estimate_summary_cost_rejects_negative() -> None:
    with pytest.raises(ValueError, match="negative"):
        estimate_summary_cost(-1, 10, 10, "claude-haiku-4-5")
