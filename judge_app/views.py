"""Probe pages: a run's probes (with JSON twin), Claude scoring (POST, owner only), probe
scores of several runs side by side with one chart, and a transcript's after-effects."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ctxlab.engine.core.spread import DEFAULT_JUDGE_REPLICATES, MAX_REPLICATES
from ctxlab.engine.evaluate import aftereffects
from ctxlab.engine.evaluate.probes.questions import PROBE_KINDS, PROBE_LABELS
from ctxlab.web.ownership import get_owned_or_404, owned
from replay_app.costs import llm
from replay_app.models import Run, RunStatus
from sessions_app.models import Transcript

from . import pages, services, shared_jobs

MAX_COMPARED = 6


def _json(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, json_dumps_params={"ensure_ascii": False})


def _wants_json(request: HttpRequest) -> bool:
    return request.GET.get("format") == "json"


@login_required
def run_probes(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(Run.objects.select_related("transcript"), request.user, pk=pk)
    row = services.current_set(run) if run.status == RunStatus.DONE else None
    poll = request.GET.get("fragment") == "pending"
    job = None
    if row is None and run.status == RunStatus.DONE:  # missing or outdated: a task makes it
        job = shared_jobs.own_sets_job([run.pk], poll=poll, retry_failed=not poll)
        row = services.current_set(run) if job is None else None  # an eager task made it
    data = pages.run_probes_data(run, row)
    data["pending"] = job
    if _wants_json(request):
        return _json(data)
    if poll:  # the pending note asking again: reload once the set is there
        response = render(request, "judge_app/_own_pending.html", {"run": run, "job": job})
        if job is None:
            response.headers["HX-Refresh"] = "true"
        return response
    context = {
        "run": run,
        "data": data,
        "job": job,
        "row": row,
        "kinds": [(k, PROBE_LABELS[k]) for k in PROBE_KINDS],
        "key_available": llm.key_available(),
        "openai_key_available": llm.key_available("openai"),
        "openai_endpoint": llm.endpoint_label(),
        "replicates": DEFAULT_JUDGE_REPLICATES,
        "max_replicates": MAX_REPLICATES,
        "models": llm.summary_models(),
        "default_model": llm.default_model(),
        "budget": llm.budget_default(),
    }
    return render(request, "judge_app/run_probes.html", context)


@login_required
@require_POST
def run_probes_claude(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(Run.objects.select_related("transcript"), request.user, pk=pk)
    target = reverse("run-probes", args=[run.pk])
    row = services.current_set(run) if run.status == RunStatus.DONE else None
    if row is None:
        messages.error(
            request,
            "The run's probes are being made: ask again once they are shown."
            if run.status == RunStatus.DONE
            else "The run has not finished: it has no probes yet.",
        )
        return redirect(target)
    if request.POST.get("provider") == "openai":
        name = (request.POST.get("openai_model") or "").strip()[:90]
        if not name:
            messages.error(request, "Name the model the OpenAI-compatible endpoint serves.")
            return redirect(target)
        model = f"openai:{name}"
    else:
        model = request.POST.get("model") or llm.default_model()
        if model not in llm.summary_models():
            messages.error(request, f"Unknown model {model!r}: pick one of the list.")
            return redirect(target)
    raw = request.POST.get("replicates") or str(DEFAULT_JUDGE_REPLICATES)
    replicates = int(raw) if raw.isdigit() else 0
    if not 1 <= replicates <= MAX_REPLICATES:
        messages.error(request, f"Replicates: 1 to {MAX_REPLICATES}.")
        return redirect(target)
    try:
        budget = Decimal(request.POST.get("budget_usd") or llm.budget_default())
    except InvalidOperation:
        budget = Decimal(-1)
    if not budget.is_finite() or budget <= 0:
        messages.error(request, "The budget must be a positive amount in USD.")
        return redirect(target)
    problem = shared_jobs.request_claude(row, model=model, budget_usd=budget, replicates=replicates)
    if problem:
        messages.error(request, problem)
    else:
        label = llm.summarizer_label(*llm.split_model(model))
        messages.success(request, f"Scoring queued with {label}, {replicates} replicate(s).")
    return redirect(target)


@login_required
def compare_probes(request: HttpRequest) -> HttpResponse:
    ids = [int(x) for x in request.GET.get("runs", "").split(",") if x.strip().isdigit()]
    ids = list(dict.fromkeys(ids))
    if not 1 <= len(ids) <= MAX_COMPARED:
        message = (
            f"{len(ids)} runs given: compare at most {MAX_COMPARED} at a time (?runs=1,2,3)."
            if ids
            else f"Give 1–{MAX_COMPARED} run ids: ?runs=1,2,3"
        )
        if _wants_json(request):
            return _json({"error": message}, status=400)
        return render(request, "judge_app/compare_probes.html", {"error": message}, status=400)
    found = {r.pk: r for r in owned(Run.objects.select_related("transcript"), request.user)
             .filter(pk__in=ids)}  # fmt: skip
    missing = [i for i in ids if i not in found]
    if missing:
        message = f"No such run: {', '.join(map(str, missing))}."
        if _wants_json(request):
            return _json({"error": message}, status=404)
        return render(request, "judge_app/compare_probes.html", {"error": message}, status=404)
    runs = [found[i] for i in ids]
    kinds = [(k, PROBE_LABELS[k]) for k in PROBE_KINDS]
    if request.GET.get("fragment") == "shared":  # the pending section's poll: shared set only
        shared = shared_jobs.shared_view(runs, poll=True)
        own_refresh = request.GET.get("own") == "1"  # the page's own rows were pending
        context = {"data": {"shared": shared}, "runs": runs, "own_refresh": own_refresh,
                   "shared_columns": pages.shared_columns(), "kinds": kinds}  # fmt: skip
        response = render(request, "judge_app/_shared_probes.html", context)
        if own_refresh and not (shared.get("pending") or shared.get("own_pending")
                                or shared.get("error")):  # fmt: skip
            response.headers["HX-Refresh"] = "true"  # reload: the own rows are there now
        return response
    # the primary table, same questions for all: scored by a task when not stored yet (it
    # makes missing or outdated own sets too), queued before the runs' own rows are read
    shared = shared_jobs.shared_view(runs, retry_failed=not _wants_json(request))
    data = pages.compare_data(runs)
    data["shared"] = shared
    if _wants_json(request):
        return _json(data)
    context = {
        "data": data,
        "runs": runs,
        "chart": pages.tradeoff_chart(data),
        "columns": pages.columns(),
        "shared_columns": pages.shared_columns(),
        "kinds": kinds,
    }
    return render(request, "judge_app/compare_probes.html", context)


@login_required
def transcript_aftereffects(request: HttpRequest, pk: int) -> HttpResponse:
    transcript = get_owned_or_404(Transcript.objects, request.user, pk=pk)
    report = aftereffects.report(transcript.to_conversation())
    if _wants_json(request):
        return _json({"transcript": transcript.pk, **report})
    return render(
        request,
        "judge_app/aftereffects_page.html",
        {"transcript": transcript, "report": report},
    )
