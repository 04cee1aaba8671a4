"""Claude models, their context windows and prices: data, plus the arithmetic over ``Usage``.

Prices are USD per million tokens, as listed on Anthropic's pricing page on ``PRICES_AS_OF``
(model overview pages and third-party price trackers were used to cross-check the newest
rows; ``ModelInfo.note`` says where a row is less certain). They change: edit the table,
not the code. Cache multipliers are *per model* because the newest models broke the old
uniform rule (write 1.25× / 2× input, read 0.1×): Fable 5.1 reads at 0.025×, Opus 5.5 and
Sonnet 5.5 at 0.05×, and Haiku 5.5 (and Sonnet 4.5 above 200K) charge by prompt length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from .model import Usage

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


_K = 1000
_M = 1_000_000

MODELS: tuple[ModelInfo, ...] = (
    # --- current generation ---------------------------------------------------------------
    ModelInfo(
        "claude-haiku-5-5",
        "Claude Haiku 5.5",
        "haiku",
        _M,
        128 * _K,
        Rates.standard("0.10", "0.50"),
        long_prompt=LongPromptTier(100_000, Rates.standard("0.50", "2.50")),
        note="prompt ≤100K: $0.10/$0.50, above: $0.50/$2.50 on every token of the request",
        sampling=False,
    ),
    ModelInfo(
        "claude-sonnet-5-5",
        "Claude Sonnet 5.5",
        "sonnet",
        _M,
        128 * _K,
        Rates.standard("2", "10", read="0.05"),
        note="cache read cut from 0.1× to 0.05× on 2026-10-07",
        sampling=False,
    ),
    ModelInfo(
        "claude-opus-5-5",
        "Claude Opus 5.5",
        "opus",
        _M,
        128 * _K,
        Rates.standard("4", "20", read="0.05"),
        thinking="always",
        sampling=False,
    ),
    ModelInfo(
        "claude-fable-5-2",
        "Claude Fable 5.2",
        "fable",
        _M,
        128 * _K,
        Rates.standard("8", "40", read="0.025"),
        thinking="always",
        note="released 2026-11-09; rates from price trackers quoting the pricing page",
        sampling=False,
    ),
    ModelInfo(
        "claude-mythos-5-2",
        "Claude Mythos 5.2",
        "mythos",
        _M,
        128 * _K,
        Rates.standard("8", "40", read="0.025"),
        thinking="always",
        note="limited availability; assumed priced like Fable 5.2 as every earlier Mythos was",
        sampling=False,
    ),
    # --- legacy but available ---------------------------------------------------------------
    ModelInfo(
        "claude-fable-5-1",
        "Claude Fable 5.1",
        "fable",
        _M,
        128 * _K,
        Rates.standard("10", "50", read="0.025"),
        status="legacy",
        thinking="always",
        sampling=False,
    ),
    ModelInfo(
        "claude-mythos-5-1",
        "Claude Mythos 5.1",
        "mythos",
        _M,
        128 * _K,
        Rates.standard("10", "50", read="0.025"),
        status="legacy",
        thinking="always",
        sampling=False,
    ),
    ModelInfo(
        "claude-fable-5",
        "Claude Fable 5",
        "fable",
        _M,
        128 * _K,
        Rates.standard("10", "50"),
        status="legacy",
        thinking="always",
        sampling=False,
    ),
    ModelInfo(
        "claude-mythos-5",
        "Claude Mythos 5",
        "mythos",
        _M,
        128 * _K,
        Rates.standard("10", "50"),
        status="legacy",
        thinking="always",
        sampling=False,
    ),
    ModelInfo(
        "claude-opus-5",
        "Claude Opus 5",
        "opus",
        _M,
        128 * _K,
        Rates.standard("5", "25"),
        status="legacy",
        note="thinking can be disabled only at effort high or lower (the default)",
        sampling=False,
    ),
    ModelInfo(
        "claude-sonnet-5",
        "Claude Sonnet 5",
        "sonnet",
        _M,
        128 * _K,
        Rates.standard("2", "10"),
        status="legacy",
        sampling=False,
    ),
    ModelInfo(
        "claude-opus-4-8",
        "Claude Opus 4.8",
        "opus",
        _M,
        128 * _K,
        Rates.standard("5", "25"),
        status="legacy",
    ),
    ModelInfo(
        "claude-opus-4-7",
        "Claude Opus 4.7",
        "opus",
        _M,
        128 * _K,
        Rates.standard("5", "25"),
        status="legacy",
    ),
    ModelInfo(
        "claude-opus-4-6",
        "Claude Opus 4.6",
        "opus",
        _M,
        128 * _K,
        Rates.standard("5", "25"),
        status="legacy",
    ),
    ModelInfo(
        "claude-sonnet-4-6",
        "Claude Sonnet 4.6",
        "sonnet",
        _M,
        64 * _K,
        Rates.standard("3", "15"),
        status="legacy",
    ),
    ModelInfo(
        "claude-haiku-4-5",
        "Claude Haiku 4.5",
        "haiku",
        200 * _K,
        64 * _K,
        Rates.standard("1", "5"),
        status="legacy",
        aliases=("claude-haiku-4-5-20251001",),
    ),
    ModelInfo(
        "claude-opus-4-5",
        "Claude Opus 4.5",
        "opus",
        200 * _K,
        64 * _K,
        Rates.standard("5", "25"),
        status="legacy",
        aliases=("claude-opus-4-5-20251101",),
    ),
    ModelInfo(
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        "sonnet",
        200 * _K,
        64 * _K,
        Rates.standard("3", "15"),
        long_prompt=LongPromptTier(200_000, Rates.standard("6", "22.50")),
        status="deprecated",
        aliases=("claude-sonnet-4-5-20250929",),
        note="1M window in beta; prompts above 200K at $6/$22.50; end of life 2026-11-30",
    ),
    # --- retired or older: kept so transcripts that used them can be priced -------------------
    ModelInfo(
        "claude-sonnet-4",
        "Claude Sonnet 4",
        "sonnet",
        200 * _K,
        64 * _K,
        Rates.standard("3", "15"),
        long_prompt=LongPromptTier(200_000, Rates.standard("6", "22.50")),
        status="retired",
        aliases=("claude-sonnet-4-0", "claude-sonnet-4-20250514"),
    ),
    ModelInfo(
        "claude-opus-4-1",
        "Claude Opus 4.1",
        "opus",
        200 * _K,
        32 * _K,
        Rates.standard("15", "75"),
        status="retired",
        aliases=("claude-opus-4-1-20250805",),
    ),
    ModelInfo(
        "claude-opus-4",
        "Claude Opus 4",
        "opus",
        200 * _K,
        32 * _K,
        Rates.standard("15", "75"),
        status="retired",
        aliases=("claude-opus-4-0", "claude-opus-4-20250514"),
    ),
    ModelInfo(
        "claude-3-7-sonnet",
        "Claude Sonnet 3.7",
        "sonnet",
        200 * _K,
        64 * _K,
        Rates.standard("3", "15"),
        status="retired",
        aliases=("claude-3-7-sonnet-20250219",),
    ),
    ModelInfo(
        "claude-3-5-sonnet",
        "Claude Sonnet 3.5",
        "sonnet",
        200 * _K,
        8 * _K,
        Rates.standard("3", "15"),
        status="retired",
        aliases=("claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022"),
        thinking="none",
    ),
    ModelInfo(
        "claude-3-5-haiku",
        "Claude Haiku 3.5",
        "haiku",
        200 * _K,
        8 * _K,
        Rates.standard("0.80", "4"),
        status="retired",
        aliases=("claude-3-5-haiku-20241022",),
        thinking="none",
    ),
    ModelInfo(
        "claude-3-haiku",
        "Claude Haiku 3",
        "haiku",
        200 * _K,
        4 * _K,
        Rates(Decimal("0.25"), Decimal("1.25"), Decimal("0.30"), Decimal("0.50"), Decimal("0.03")),
        status="retired",
        aliases=("claude-3-haiku-20240307",),
        thinking="none",
    ),
    ModelInfo(
        "claude-3-opus",
        "Claude Opus 3",
        "opus",
        200 * _K,
        4 * _K,
        Rates.standard("15", "75"),
        status="retired",
        aliases=("claude-3-opus-20240229",),
        thinking="none",
    ),
)

DEFAULT_SUMMARY_MODEL = "claude-haiku-5-5"
CURRENT_MODELS: tuple[str, ...] = tuple(m.id for m in MODELS if m.status == "current")

_BY_NAME: dict[str, ModelInfo] = {}
for _m in MODELS:
    for _name in (_m.id, *_m.aliases):
        _BY_NAME[_name] = _m

# Provider prefixes/suffixes around the same model: "anthropic.claude-opus-4-6-v1",
# "claude-haiku-5-5[1m]", "claude-3-5-haiku-latest", "claude-opus-4-1@20250805".
_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic[./]")
_SUFFIX = re.compile(r"(?:\[1m\]|-latest|-v\d+(?::\d+)?|@\d{8}|-\d{8})+$")


class UnknownModelError(KeyError):
    """No price is known for a model id."""

    def __str__(self) -> str:
        return f"no price known for model {self.args[0]!r} (prices as of {PRICES_AS_OF})"


def find_model(model: str) -> ModelInfo | None:
    """The table row for a model id as APIs, transcripts and cloud providers spell it."""
    name = model.strip().lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    name = _SUFFIX.sub("", _PREFIX.sub("", name))
    return _BY_NAME.get(name)


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
