"""The run form's cost preview (htmx): summary calls and their estimated cost per run."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ctxlab.engine.strategies import LIBRARY
from ctxlab.web.ownership import owned
from replay_app.costs import llm, run_budget
from replay_app.models import StrategyConfig
from replay_app.runs import services
from sessions_app.models import Transcript


def _budget(raw: str) -> Decimal:
    try:
        value = Decimal(raw)
    except (InvalidOperation, ValueError):
        return llm.budget_default()
    return value if value.is_finite() and value >= 0 else llm.budget_default()


@require_GET
def run_estimate(request: HttpRequest) -> HttpResponse:
    """``?transcript=&presets=&configs=&summarizer=&model=&openai_model=&budget_usd=`` →
    the preview (``model`` is Claude's, ``openai_model`` an OpenAI-compatible endpoint's)."""
    get = request.GET
    summarizer = get.get("summarizer", "offline")
    context: dict[str, Any] = {"summarizer": summarizer, "rows": []}
    budget = _budget(get.get("budget_usd", ""))
    if summarizer == "openai":
        model = get.get("openai_model", "").strip()[:100]
        context.update(model=model, model_label=llm.summarizer_label("openai", model),
                       endpoint=llm.endpoint_label())  # fmt: skip
    else:
        model = get.get("model") or llm.default_model()
        if model not in llm.summary_models():
            model = llm.default_model()
        context.update(model=model, model_label=llm.model_label(model))
    context.update(budget=budget, key_available=llm.key_available(
        summarizer if summarizer in llm.PROVIDERS else "anthropic"))  # fmt: skip
    transcript = None
    if get.get("transcript", "").isdigit():
        owned_transcripts = owned(Transcript.objects, request.user)
        transcript = owned_transcripts.filter(pk=int(get["transcript"])).first()
    if summarizer in llm.PROVIDERS and transcript is not None and model:
        # The form's one window, as the runs it starts will have it (``RunSpec.resolve``).
        window = int(get["window"]) if get.get("window", "").isdigit() else None
        presets = [p for p in get.getlist("presets") if p in LIBRARY]
        specs = [services.RunSpec(strategy=p, window=window) for p in presets]
        ids = [int(c) for c in get.getlist("configs") if c.isdigit()]
        specs += [
            services.RunSpec(config=c, window=window) for c in owned(StrategyConfig.objects,
                                                                     request.user)
            .filter(pk__in=ids)
        ]  # fmt: skip
        for spec in specs:
            try:
                strategy, params, label = spec.resolve()
            except ValueError as exc:
                context["rows"].append({"label": spec.label or spec.strategy, "error": str(exc)})
                continue
            est = run_budget.llm_estimate(
                transcript=transcript, strategy=strategy, params=params, model=model,
                label=label, provider=summarizer,
            )  # fmt: skip
            row = est.as_dict()
            row["over"] = est.cost_usd > budget
            context["rows"].append(row)
    context["total"] = sum(r.get("cost_usd", 0) for r in context["rows"])
    context["calls"] = sum(r.get("calls", 0) for r in context["rows"])
    context["any_over"] = any(r.get("over") for r in context["rows"])
    context["transcript"] = transcript
    if get.get("format") == "json":
        return JsonResponse(
            {
                k: (float(v) if isinstance(v, Decimal) else v)
                for k, v in context.items()
                if k != "transcript"
            }  # fmt: skip
        )
    return render(request, "replay_app/costs/_cost_estimate.html", context)
