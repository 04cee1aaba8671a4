"""A model run's options (Claude or an OpenAI-compatible endpoint) and its budget check
before it starts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ctxlab.engine.cost.pricing import PRICES_SOURCE, find_model
from ctxlab.engine.summarize.adapters.openai_summarizer import OpenAISummarizer
from replay_app.costs import llm, run_costs
from sessions_app.models import Transcript


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """Per-run model options: the model (Claude's, or the name an OpenAI-compatible
    endpoint serves), the budget cap (USD; None: the CTXLAB_RUN_BUDGET_USD setting), exact
    ``count_tokens`` counts, and for ``openai`` the API (chat / responses) and streaming."""

    model: str = ""
    budget_usd: Decimal | None = None
    exact_counts: bool = False
    api: str = "chat"
    stream: bool = False
    replicates: int = 1  # runs of each configuration (replay_app/runs/replicates.py)


class BudgetError(ValueError):
    """The estimated cost of a run is above its budget: it is not started."""


def llm_estimate(
    *,
    transcript: Transcript,
    strategy: str,
    params: Mapping[str, Any],
    model: str,
    label: str = "",
    provider: str = "anthropic",
) -> run_costs.Estimate:
    return run_costs.estimate(
        transcript.to_conversation(), strategy=strategy, params=params, model=model,
        label=label, memo_key=f"transcript:{transcript.pk}", provider=provider,
    )  # fmt: skip


def llm_check(
    *,
    transcript: Transcript,
    strategy: str,
    params: Mapping[str, Any],
    label: str,
    summarizer: str,
    options: LLMOptions,
) -> dict[str, Any]:
    """The run's ``llm`` JSON; refuses (ValueError/BudgetError) a model run without a key,
    with an unknown model or with an estimate above the budget."""
    if summarizer not in llm.PROVIDERS and not options.exact_counts:
        return {}
    provider = summarizer if summarizer in llm.PROVIDERS else "anthropic"
    if options.exact_counts and not llm.key_available():
        raise ValueError(llm.NO_KEY_MESSAGE)  # count_tokens is Anthropic's
    if not llm.key_available(provider):
        raise ValueError(llm.no_key_message(provider))
    out: dict[str, Any] = {}
    if provider == "openai":
        if not options.model:
            raise ValueError("the OpenAI-compatible summariser needs a model name")
        model = options.model
        probe = llm.make_llm("openai", model, api=options.api, cached=False)
        assert isinstance(probe, OpenAISummarizer)
        if not probe.priced:
            raise ValueError(
                f"no price known for model {model!r} at {probe.endpoint} ({PRICES_SOURCE}): "
                "a remote endpoint's spend must be capped; use a model the dataset prices, "
                "or a local endpoint"
            )
        out = {"provider": "openai", "model": model, "base_url": probe.endpoint,
               "local": probe.local, "api": options.api, "stream": options.stream}  # fmt: skip
    else:
        model = options.model or llm.default_model()
        if find_model(model) is None:
            raise ValueError(f"no price known for model {model!r}: choose one of the listed models")
        out = {"model": model}
    budget = options.budget_usd if options.budget_usd is not None else llm.budget_default()
    out["budget_usd"] = float(budget)
    if summarizer in llm.PROVIDERS:
        est = llm_estimate(
            transcript=transcript, strategy=strategy, params=params, model=model, label=label,
            provider=provider,
        )  # fmt: skip
        out["estimate"] = est.as_dict()
        if est.cost_usd > budget:
            raise BudgetError(
                f"{label}: estimated ${est.cost_usd:.4f} for {est.calls} summary calls is above "
                f"the ${budget:.2f} budget per run"
            )
    return out
