"""A Claude run's options and its budget check before it starts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ctxlab.engine.cost.pricing import find_model
from replay_app.costs import llm, run_costs
from sessions_app.models import Transcript


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """Per-run Claude options: the Claude model, the budget cap (USD; None: the
    CTXLAB_RUN_BUDGET_USD setting) and exact ``count_tokens`` counts."""

    model: str = ""
    budget_usd: Decimal | None = None
    exact_counts: bool = False


class BudgetError(ValueError):
    """The estimated cost of a run is above its budget: it is not started."""


def llm_estimate(
    *, transcript: Transcript, strategy: str, params: Mapping[str, Any], model: str, label: str = ""
) -> run_costs.Estimate:
    return run_costs.estimate(
        transcript.to_conversation(), strategy=strategy, params=params, model=model,
        label=label, memo_key=f"transcript:{transcript.pk}",
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
    """The run's ``llm`` JSON; refuses (ValueError/BudgetError) a Claude run without a key,
    with an unknown model or with an estimate above the budget."""
    if summarizer != "anthropic" and not options.exact_counts:
        return {}
    if not llm.key_available():
        raise ValueError(llm.NO_KEY_MESSAGE)
    model = options.model or llm.default_model()
    if find_model(model) is None:
        raise ValueError(f"no price known for model {model!r}: choose one of the listed models")
    budget = options.budget_usd if options.budget_usd is not None else llm.budget_default()
    out: dict[str, Any] = {"model": model, "budget_usd": float(budget)}
    if summarizer == "anthropic":
        est = llm_estimate(
            transcript=transcript, strategy=strategy, params=params, model=model, label=label
        )
        out["estimate"] = est.as_dict()
        if est.cost_usd > budget:
            raise BudgetError(
                f"{label}: estimated ${est.cost_usd:.4f} for {est.calls} summary calls is above "
                f"the ${budget:.2f} budget per run"
            )
    return out
