from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

import pytest
from genai_prices import Usage as GpUsage
from genai_prices import calc_price, data_snapshot

from ctxlab.engine.core.model import Usage
from ctxlab.engine.cost.pricing import (
    CURRENT_MODELS,
    DEFAULT_SUMMARY_MODEL,
    PRICES_AS_OF,
    PRICES_SOURCE,
    UnknownModelError,
    _by_name,
    all_models,
    cost,
    cost_breakdown,
    estimate_summary_cost,
    find_model,
    model_info,
)

D = Decimal
gp_version = version("genai-prices")


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
    ids = [m.id for m in all_models()]
    assert len(ids) == len(set(ids))
    assert DEFAULT_SUMMARY_MODEL in CURRENT_MODELS
    assert model_info(DEFAULT_SUMMARY_MODEL).family == "haiku"
    for m in all_models():
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


# --- the price dataset (genai-prices) ------------------------------------------------------


def test_prices_come_from_the_pinned_dataset() -> None:
    """Bumping the genai-prices pin must come with a look at ``PRICES_AS_OF`` (the day whose
    rows we price at): this fails until both are updated together."""
    pyproject = (Path(__file__).parents[3] / "pyproject.toml").read_text()
    pinned = re.search(r'"genai-prices==([\d.]+)"', pyproject)
    assert pinned is not None
    assert PRICES_SOURCE == f"genai-prices {pinned.group(1)}" == f"genai-prices {gp_version}"
    assert (pinned.group(1), PRICES_AS_OF) == ("0.2.3", "2026-11-10")


USAGES = [
    Usage(1000, 10_000, 2000, 500, 300),
    Usage(input_uncached=150_000, output=2000),  # above Haiku 5.5's 100K tier
    Usage(input_uncached=10, cache_read=250_000, cache_write_5m=1000, output=10),  # > 200K
    Usage(cache_write_1h=1_000_000),
]


@pytest.mark.parametrize("model", [m.id for m in all_models() if not m.note.startswith("not in")])
def test_cost_agrees_with_the_dataset_calculator(model: str) -> None:
    """Our arithmetic over the dataset's rates gives what genai-prices itself computes for
    the same request on ``PRICES_AS_OF`` (its ``Usage`` counts cache tokens inside input).
    Sonnet 4's own long-prompt tier is the one known difference, so its probe stays ≤ 200K."""
    as_of = datetime.fromisoformat(PRICES_AS_OF).replace(tzinfo=UTC)
    for usage in USAGES:
        if model == "claude-sonnet-4" and usage.prompt_tokens > 200_000:
            continue
        theirs = calc_price(
            GpUsage(
                input_tokens=usage.prompt_tokens,
                cache_read_tokens=usage.cache_read,
                cache_write_tokens=usage.cache_write_5m + usage.cache_write_1h,
                cache_write_1h_tokens=usage.cache_write_1h,
                output_tokens=usage.output,
            ),
            model,
            provider_id="anthropic",
            genai_request_timestamp=as_of,
        )
        assert cost(usage, model) == theirs.total_price, usage


def test_models_missing_from_the_dataset_say_so() -> None:
    own = {m.id for m in all_models() if m.note.startswith("not in genai-prices")}
    assert own == {"claude-mythos-5-1", "claude-mythos-5"}
    assert model_info("claude-mythos-5-1").rates.cache_read == D("0.25")  # 0.025× of $10
    assert "long-prompt tier is ctxlab's own" in model_info("claude-sonnet-4").note


def test_prices_ignore_an_auto_updated_snapshot() -> None:
    """``genai_prices.UpdatePrices`` (a network fetch) replaces the snapshot ``calc_price``
    reads; ctxlab reads the bundled table, so a swapped snapshot changes nothing."""
    before = model_info("claude-haiku-4-5").rates
    all_models.cache_clear()
    _by_name.cache_clear()
    data_snapshot.set_custom_snapshot(data_snapshot.DataSnapshot([], from_auto_update=True))
    try:
        assert model_info("claude-haiku-4-5").rates == before
        with pytest.raises(LookupError):
            calc_price(GpUsage(input_tokens=1), "claude-haiku-4-5", provider_id="anthropic")
    finally:
        data_snapshot.set_custom_snapshot(None)
        all_models.cache_clear()
        _by_name.cache_clear()


def test_prices_load_with_the_network_refused() -> None:
    """A fresh interpreter whose sockets refuse to connect still prices every model: the
    dataset is read from the installed package, nothing is fetched."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from ctxlab.engine.cost.pricing import all_models, cost\n"
        "from ctxlab.engine.core.model import Usage\n"
        "print(len(all_models()), float(cost(Usage(output=1_000_000), 'claude-haiku-5-5')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=Path(__file__).parents[3],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(all_models())), "0.5"]
