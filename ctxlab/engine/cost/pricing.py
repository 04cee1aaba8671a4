"""Claude models, their context windows and prices, plus the arithmetic over ``Usage``.

Prices and context windows come from **genai-prices** (pinned in pyproject.toml), the price
dataset Pydantic maintains from the providers' pricing pages: per-model input/output, 5-minute
and 1-hour cache writes, cache reads and long-prompt tiers (Haiku 5.5 above 100K, Sonnet 4.5
above 200K). A price change is a version bump of that package, not an edit here.

Offline and reproducible by construction: we read the bundled table (``genai_prices.data``)
directly, never ``genai_prices.calc_price``'s snapshot, which ``UpdatePrices`` can swap for
one fetched over the network; and we take the rows in force on ``PRICES_AS_OF`` (the dataset
also schedules future changes), so a cost does not depend on the day it is computed.

Kept here, because the dataset lacks them:
- per-model facts for the summarizer and pages (family, max output, thinking/sampling rules,
  status, the ids the Anthropic API and transcripts used);
- Claude Mythos 5.1 and Mythos 5 (limited availability, absent from the dataset): their
  list prices with the per-model cache-read multiplier (0.025× on 5.1);
- Sonnet 4's long-context tier ($6/$22.50 above 200K in the 1M-context beta; the dataset
  prices it flat).
``ModelInfo.note`` says which rows carry our own numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version

from ..core.model import Usage

PRICES_SOURCE = f"genai-prices {version('genai-prices')}"
# The day whose prices we use: the newest model the pinned dataset prices was released
# 2026-11-09; bump it together with the pin (tests/engine/cost/test_pricing.py checks both).
PRICES_AS_OF = "2026-11-10"
MTOK = Decimal(1_000_000)
WRITE_5M = Decimal("1.25")  # the standard cache-write multipliers, used by ``Rates.standard``
WRITE_1H = Decimal(2)


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens for each disjoint ``Usage`` bucket."""

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal

    @classmethod
    def standard(cls, input: str, output: str, *, read: str = "0.1") -> Rates:
        """Rates from base input/output with the standard write multipliers (1.25×, 2×)."""
        base = Decimal(input)
        return cls(
            input=base,
            output=Decimal(output),
            cache_write_5m=base * WRITE_5M,
            cache_write_1h=base * WRITE_1H,
            cache_read=base * Decimal(read),
        )

    def write(self, ttl: str) -> Decimal:
        if ttl not in ("5m", "1h"):
            raise ValueError(f"cache TTL must be '5m' or '1h', not {ttl!r}")
        return self.cache_write_5m if ttl == "5m" else self.cache_write_1h


@dataclass(frozen=True, slots=True)
class LongPromptTier:
    """Higher rates for a whole request (output included) whose prompt
    (input + cache reads + cache writes) exceeds ``threshold_tokens``."""

    threshold_tokens: int
    rates: Rates


@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    name: str
    family: str  # haiku / sonnet / opus / fable / mythos
    context_window: int
    max_output: int
    rates: Rates
    long_prompt: LongPromptTier | None = None
    status: str = "current"  # current / legacy / deprecated / retired
    # "optional": thinking can be turned off ({"type": "disabled"}); "always": adaptive
    # thinking cannot be disabled (400); "none": the model has no thinking parameter.
    thinking: str = "optional"
    sampling: bool = True  # False: non-default temperature/top_p/top_k return 400
    aliases: tuple[str, ...] = ()
    note: str = ""

    def rates_for(self, prompt_tokens: int = 0) -> Rates:
        tier = self.long_prompt
        if tier is not None and prompt_tokens > tier.threshold_tokens:
            return tier.rates
        return self.rates


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the price dataset does not say about a model."""

    id: str
    family: str
    max_output: int
    status: str = "current"
    thinking: str = "optional"
    sampling: bool = True
    aliases: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class _OwnPrices:
    """A model the dataset does not price (or prices incompletely): our numbers."""

    name: str = ""
    context_window: int = 0
    rates: Rates | None = None
    long_prompt: LongPromptTier | None = None


_K = 1000

FACTS: tuple[_Facts, ...] = (
    # --- current generation ---------------------------------------------------------------
    _Facts("claude-haiku-5-5", "haiku", 128 * _K, sampling=False),
    _Facts("claude-sonnet-5-5", "sonnet", 128 * _K, sampling=False),
    _Facts("claude-opus-5-5", "opus", 128 * _K, thinking="always", sampling=False),
    _Facts("claude-fable-5-2", "fable", 128 * _K, thinking="always", sampling=False),
    _Facts("claude-mythos-5-2", "mythos", 128 * _K, thinking="always", sampling=False),
    # --- legacy but available ---------------------------------------------------------------
    _Facts("claude-fable-5-1", "fable", 128 * _K, "legacy", "always", False),
    _Facts("claude-mythos-5-1", "mythos", 128 * _K, "legacy", "always", False),
    _Facts("claude-fable-5", "fable", 128 * _K, "legacy", "always", False),
    _Facts("claude-mythos-5", "mythos", 128 * _K, "legacy", "always", False),
    _Facts(
        "claude-opus-5",
        "opus",
        128 * _K,
        "legacy",
        sampling=False,
        note="thinking can be disabled only at effort high or lower (the default)",
    ),
    _Facts("claude-sonnet-5", "sonnet", 128 * _K, "legacy", sampling=False),
    _Facts("claude-opus-4-8", "opus", 128 * _K, "legacy"),
    _Facts("claude-opus-4-7", "opus", 128 * _K, "legacy"),
    _Facts("claude-opus-4-6", "opus", 128 * _K, "legacy"),
    _Facts("claude-sonnet-4-6", "sonnet", 64 * _K, "legacy"),
    _Facts("claude-haiku-4-5", "haiku", 64 * _K, "legacy", aliases=("claude-haiku-4-5-20251001",)),
    _Facts("claude-opus-4-5", "opus", 64 * _K, "legacy", aliases=("claude-opus-4-5-20251101",)),
    _Facts(
        "claude-sonnet-4-5",
        "sonnet",
        64 * _K,
        "deprecated",
        aliases=("claude-sonnet-4-5-20250929",),
        note="1M window in beta (prompts above 200K at the higher tier); end of life 2026-11-30",
    ),
    # --- retired or older: kept so transcripts that used them can be priced -------------------
    _Facts(
        "claude-sonnet-4",
        "sonnet",
        64 * _K,
        "retired",
        aliases=("claude-sonnet-4-0", "claude-sonnet-4-20250514"),
    ),
    _Facts("claude-opus-4-1", "opus", 32 * _K, "retired", aliases=("claude-opus-4-1-20250805",)),
    _Facts(
        "claude-opus-4",
        "opus",
        32 * _K,
        "retired",
        aliases=("claude-opus-4-0", "claude-opus-4-20250514"),
    ),
    _Facts(
        "claude-3-7-sonnet", "sonnet", 64 * _K, "retired", aliases=("claude-3-7-sonnet-20250219",)
    ),
    _Facts(
        "claude-3-5-sonnet",
        "sonnet",
        8 * _K,
        "retired",
        "none",
        aliases=("claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022"),
    ),
    _Facts(
        "claude-3-5-haiku",
        "haiku",
        8 * _K,
        "retired",
        "none",
        aliases=("claude-3-5-haiku-20241022",),
    ),
    _Facts(
        "claude-3-haiku", "haiku", 4 * _K, "retired", "none", aliases=("claude-3-haiku-20240307",)
    ),
    _Facts("claude-3-opus", "opus", 4 * _K, "retired", "none", aliases=("claude-3-opus-20240229",)),
)

_OWN: dict[str, _OwnPrices] = {
    "claude-mythos-5-1": _OwnPrices(
        "Claude Mythos 5.1", 1_000_000, Rates.standard("10", "50", read="0.025")
    ),
    "claude-mythos-5": _OwnPrices("Claude Mythos 5", 1_000_000, Rates.standard("10", "50")),
    "claude-sonnet-4": _OwnPrices(
        long_prompt=LongPromptTier(200_000, Rates.standard("6", "22.50"))
    ),
}

DEFAULT_SUMMARY_MODEL = "claude-haiku-5-5"
CURRENT_MODELS: tuple[str, ...] = tuple(f.id for f in FACTS if f.status == "current")

_PRICE_FIELDS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_write_5m": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
    "cache_read": "cache_read_mtok",
}


def _dataset_prices(model_id: str) -> tuple[str, int, Rates, LongPromptTier | None] | None:
    """Name, window, rates and long-prompt tier of a Claude model in the bundled dataset."""
    from genai_prices.data import providers  # ~0.2 s of data: loaded on first use only
    from genai_prices.types import TieredPrices

    anthropic = next(p for p in providers if p.id == "anthropic")
    row = anthropic.find_model(model_id)  # the dataset's own id matching, no other provider
    if row is None:
        return None
    as_of = datetime.fromisoformat(PRICES_AS_OF).replace(tzinfo=UTC)
    prices = row.get_prices(as_of)
    base: dict[str, Decimal] = {}
    high: dict[str, Decimal] = {}
    starts: set[int] = set()
    for ours, theirs in _PRICE_FIELDS.items():
        value = getattr(prices, theirs, None)
        if value is None:
            raise ValueError(f"{PRICES_SOURCE} has no {theirs} for {row.id}")
        if isinstance(value, TieredPrices):
            if len(value.tiers) != 1:
                raise ValueError(f"{row.id}: {len(value.tiers)} price tiers, ctxlab knows one")
            starts.add(value.tiers[0].start)
            base[ours], high[ours] = value.base, value.tiers[0].price
        else:
            base[ours] = high[ours] = value
    if len(starts) > 1:
        raise ValueError(f"{row.id}: price tiers start at different prompt sizes {starts}")
    tier = LongPromptTier(starts.pop(), Rates(**high)) if starts else None
    return row.name or model_id, row.context_window or 0, Rates(**base), tier


def _build(facts: _Facts) -> ModelInfo:
    own = _OWN.get(facts.id, _OwnPrices())
    found = _dataset_prices(facts.id) if own.rates is None else None
    if own.rates is not None:
        name, window, rates, tier = own.name, own.context_window, own.rates, own.long_prompt
        note = f"not in {PRICES_SOURCE}: ctxlab's own list prices"
    elif found is None:
        raise LookupError(f"{PRICES_SOURCE} has no price for {facts.id} and ctxlab has none")
    else:
        name, window, rates, tier = found
        note = ""
        if own.long_prompt is not None:
            tier = own.long_prompt
            note = f"long-prompt tier is ctxlab's own ({PRICES_SOURCE} has none)"
    return ModelInfo(
        facts.id,
        name,
        facts.family,
        window,
        facts.max_output,
        rates,
        long_prompt=tier,
        status=facts.status,
        thinking=facts.thinking,
        sampling=facts.sampling,
        aliases=facts.aliases,
        note="; ".join(n for n in (facts.note, note) if n),
    )


@cache
def all_models() -> tuple[ModelInfo, ...]:
    """Every known Claude model, newest first (built from the dataset on first call)."""
    return tuple(_build(f) for f in FACTS)


@cache
def _by_name() -> dict[str, ModelInfo]:
    return {name: m for m in all_models() for name in (m.id, *m.aliases)}


# Provider prefixes/suffixes around the same model: "anthropic.claude-opus-4-6-v1",
# "claude-haiku-5-5[1m]", "claude-3-5-haiku-latest", "claude-opus-4-1@20250805".
_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic[./]")
_SUFFIX = re.compile(r"(?:\[1m\]|-latest|-v\d+(?::\d+)?|@\d{8}|-\d{8})+$")


class UnknownModelError(KeyError):
    """No price is known for a model id."""

    def __str__(self) -> str:
        return f"no price known for model {self.args[0]!r} ({PRICES_SOURCE}, as of {PRICES_AS_OF})"


def find_model(model: str) -> ModelInfo | None:
    """The row for a model id as APIs, transcripts and cloud providers spell it."""
    by_name = _by_name()
    name = model.strip().lower()
    if name in by_name:
        return by_name[name]
    name = _SUFFIX.sub("", _PREFIX.sub("", name))
    return by_name.get(name)


def model_info(model: str) -> ModelInfo:
    info = find_model(model)
    if info is None:
        raise UnknownModelError(model)
    return info


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """USD per ``Usage`` bucket; ``total`` is their sum."""

    input: Decimal = Decimal(0)
    cache_write_5m: Decimal = Decimal(0)
    cache_write_1h: Decimal = Decimal(0)
    cache_read: Decimal = Decimal(0)
    output: Decimal = Decimal(0)

    @property
    def total(self) -> Decimal:
        return (
            self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read + self.output
        )

    def __add__(self, other: CostBreakdown) -> CostBreakdown:
        return CostBreakdown(
            self.input + other.input,
            self.cache_write_5m + other.cache_write_5m,
            self.cache_write_1h + other.cache_write_1h,
            self.cache_read + other.cache_read,
            self.output + other.output,
        )


def cost_breakdown(usage: Usage, model: str | ModelInfo) -> CostBreakdown:
    """Price one API call's usage. The buckets are disjoint (``Usage`` normalises the
    provider conventions), so nothing is counted twice; reasoning is part of output."""
    info = model if isinstance(model, ModelInfo) else model_info(model)
    r = info.rates_for(usage.prompt_tokens)
    return CostBreakdown(
        input=usage.input_uncached * r.input / MTOK,
        cache_write_5m=usage.cache_write_5m * r.cache_write_5m / MTOK,
        cache_write_1h=usage.cache_write_1h * r.cache_write_1h / MTOK,
        cache_read=usage.cache_read * r.cache_read / MTOK,
        output=usage.output * r.output / MTOK,
    )


def cost(usage: Usage, model: str | ModelInfo) -> Decimal:
    """USD for one call (exact ``Decimal``; ``float()`` it for display or JSON)."""
    return cost_breakdown(usage, model).total


def estimate_summary_cost(
    n_calls: int, avg_input_tokens: int, max_output_tokens: int, model: str | ModelInfo
) -> Decimal:
    """An upper-bound estimate for a planned run: every call sends ``avg_input_tokens``
    uncached and writes its whole output cap."""
    if n_calls < 0 or avg_input_tokens < 0 or max_output_tokens < 0:
        raise ValueError("calls and token counts must not be negative")
    per_call = Usage(input_uncached=avg_input_tokens, output=max_output_tokens)
    return n_calls * cost(per_call, model)


# --- models of other providers (the OpenAI-compatible summariser) ------------------------------


def _price_value(value: object, tiers: dict[int, str]) -> tuple[Decimal, Decimal]:
    """(base, above the tier) of one dataset price, flat or with one tier."""
    from genai_prices.types import TieredPrices

    if isinstance(value, TieredPrices):
        if len(value.tiers) != 1:
            raise ValueError(f"{len(value.tiers)} price tiers, ctxlab knows one")
        tiers[value.tiers[0].start] = ""
        return value.base, value.tiers[0].price
    assert isinstance(value, Decimal)
    return value, value


@cache
def find_priced_model(model: str, provider: str = "openai") -> ModelInfo | None:
    """A model of any provider the pinned genai-prices dataset prices, as a ``ModelInfo``
    (``provider`` looked at first, then the others in the dataset's order); None when no
    provider knows it. Cache writes absent from a row cost the input rate (OpenAI's
    convention: writing the prompt cache is free, the prompt is billed as input)."""
    from genai_prices.data import providers

    name = model.strip()
    ordered = sorted(providers, key=lambda p: p.id != provider)  # stable: the rest in order
    for source in ordered:
        row = source.find_model(name)
        if row is None:
            continue
        prices = row.get_prices(datetime.fromisoformat(PRICES_AS_OF).replace(tzinfo=UTC))
        if getattr(prices, "input_mtok", None) is None or prices.output_mtok is None:
            continue
        tiers: dict[int, str] = {}
        try:
            inp = _price_value(prices.input_mtok, tiers)
            out = _price_value(prices.output_mtok, tiers)
            read = _price_value(prices.cache_read_mtok or prices.input_mtok, tiers)
            write = _price_value(prices.cache_write_mtok or prices.input_mtok, tiers)
        except ValueError:
            continue
        if len(tiers) > 1:
            continue
        base = Rates(inp[0], out[0], write[0], write[0], read[0])
        high = Rates(inp[1], out[1], write[1], write[1], read[1])
        tier = LongPromptTier(next(iter(tiers)), high) if tiers else None
        return ModelInfo(
            row.id, row.name or row.id, source.id, row.context_window or 0, 0, base,
            long_prompt=tier, thinking="none", note=f"{PRICES_SOURCE}: {source.id}",
        )  # fmt: skip
    return None
