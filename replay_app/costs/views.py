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
    """``?transcript=&presets=&configs=&summarizer=&model=&budget_usd=`` → the preview."""
    get = request.GET
    context: dict[str, Any] = {"summarizer": get.get("summarizer", "offline"), "rows": []}
    model = get.get("model") or llm.default_model()
    if model not in llm.summary_models():
        model = llm.default_model()
    budget = _budget(get.get("budget_usd", ""))
    context.update(model=model, model_label=llm.model_label(model), budget=budget,
                   key_available=llm.key_available())  # fmt: skip
    transcript = None
    if get.get("transcript", "").isdigit():
        owned_transcripts = owned(Transcript.objects, request.user)
        transcript = owned_transcripts.filter(pk=int(get["transcript"])).first()
    if context["summarizer"] == "anthropic" and transcript is not None:
        specs = [services.RunSpec(strategy=p) for p in get.getlist("presets") if p in LIBRARY]
        ids = [int(c) for c in get.getlist("configs") if c.isdigit()]
        specs += [
            services.RunSpec(config=c) for c in owned(StrategyConfig.objects, request.user)
            .filter(pk__in=ids)
        ]  # fmt: skip
        for spec in specs:
            try:
                strategy, params, label = spec.resolve()
            except ValueError as exc:
                context["rows"].append({"label": spec.label or spec.strategy, "error": str(exc)})
                continue
            est = run_budget.llm_estimate(
                transcript=transcript, strategy=strategy, params=params, model=model, label=label
            )
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
