"""Runs and comparison groups: list, create, the run page, cancel/retry, the group page.

Thin views: parse input, call a service or query, render. Every query is scoped with
``owned``/``get_owned_or_404`` (another user's row is a 404). Every page has a JSON twin
(``?format=json``). POSTs end in a redirect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ctxlab.engine.budget import window_param_names
from ctxlab.engine.strategies import PRESETS
from ctxlab.http import wants_json as _wants_json
from ctxlab.ownership import get_owned_or_404, owned
from ctxlab.redirects import safe_next
from replay_app import memo
from replay_app.compare import survival_table
from replay_app.costs import run_budget, run_costs
from replay_app.display import vocabulary
from replay_app.models import Run, RunGroup, RunStatus
from replay_app.runs import progress, runpage, services
from replay_app.runs.forms import RunCreateForm
from replay_app.sweeps import sweep
from sessions_app.models import Transcript

RUNS_PER_PAGE = 50
LEDGER_ROWS_SHOWN = 50  # issue 7's per-compaction ledger rows on the run page

# (metrics key, label, what it means) — headline metrics in display order; labels and
# meanings from the engine's catalogue (replay_app.vocabulary).
METRICS: list[tuple[str, str, str]] = vocabulary.label_rows(vocabulary.RUN_KEYS)
LIST_METRICS = [
    "peak_reference",
    "input_tokens_total",
    "compaction_count",
    "messages_removed",
    "thrash",
]

# ---------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------


def _run_json(run: Run, *, full: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": run.pk,
        "url": run.get_absolute_url(),
        "transcript": {"id": run.transcript_id, "title": str(run.transcript)},
        "group": run.group_id,
        "label": run.label,
        "strategy": run.strategy,
        "config": run.config_id,
        "window": run.window,  # the comparison's window (None: the config's own values)
        "summarizer": run.summarizer,
        "status": run.status,
        "error": run.error,
        "attempts": run.attempts,
        "steps_done": run.steps_done,
        "steps_total": run.steps_total,
        "percent": run.percent,
        "events_count": run.events_count,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "duration_seconds": run.duration_seconds,
        "metrics": run.metrics,
    }
    if full:
        data["params"] = run.params
        data["estimator"] = run.estimator
        data["summarizer_model"] = run.summarizer_model
        data["cost"] = run_costs.run_costs_json(run)
        # The run page's metric table as the catalogue labels it (label, unit, direction).
        data["metric_rows"] = [
            {**vocabulary.metric_json(key), "value": (run.metrics or {}).get(key)}
            for key in vocabulary.RUN_KEYS
        ]
    return data


def _filtered_runs(request: HttpRequest) -> tuple[QuerySet[Run], dict[str, str]]:
    runs = owned(Run.objects, request.user).select_related("transcript", "config")
    filters = {
        "status": request.GET.get("status", ""),
        "transcript": request.GET.get("transcript", ""),
    }
    if filters["status"] in RunStatus.values:
        runs = runs.filter(status=filters["status"])
    if filters["transcript"].isdigit():
        runs = runs.filter(transcript_id=int(filters["transcript"]))
    return runs, filters


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    services.runs_reap_stale()  # a page load is also a chance to notice dead workers
    runs, filters = _filtered_runs(request)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    if _wants_json(request):
        return JsonResponse(
            {
                "runs": [_run_json(r) for r in page],
                "page": page.number,
                "pages": page.paginator.num_pages,
                "count": page.paginator.count,
                "filters": filters,
            },
            json_dumps_params={"ensure_ascii": False},
        )
    metric_cols = [m for m in METRICS if m[0] in LIST_METRICS]
    transcripts = owned(Transcript.objects, request.user).filter(runs__isnull=False).distinct()
    return render(
        request,
        "replay_app/runs/run_list.html",
        {
            "page_obj": page,
            "filters": filters,
            "statuses": RunStatus.values,
            "transcripts": transcripts,
            "metric_cols": metric_cols,
        },
    )


@require_http_methods(["GET", "POST"])
def run_create(request: HttpRequest) -> HttpResponse:
    initial: dict[str, Any] = {"presets": list(PRESETS), "summarizer": "offline"}
    if request.GET.get("transcript", "").isdigit():
        initial["transcript"] = int(request.GET["transcript"])
    form = RunCreateForm(request.POST or None, owner=request.user, initial=initial)

    def plan(data: dict[str, Any]) -> tuple[list[services.RunSpec], str]:
        window = data.get("window")
        specs = [services.RunSpec(strategy=p, window=window) for p in data["presets"]]
        specs += [services.RunSpec(config=c, window=window) for c in data["configs"]]
        return specs, data["name"]

    return start_group(request, form, plan, "replay_app/runs/run_new.html")


def start_group(
    request: HttpRequest,
    form: Any,
    plan: Callable[[dict[str, Any]], tuple[list[services.RunSpec], str]],
    template: str,
) -> HttpResponse:
    """The run and sweep forms: create the comparison a valid form plans (runs and group
    name) and go to it, or show the form again with the error beside its field."""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        specs, name = plan(data)
        try:
            group = services.group_create(
                owner=request.user,
                transcript=data["transcript"],
                specs=specs,
                summarizer=data["summarizer"],
                name=name,
                llm=form.llm_options(),
            )
        except run_budget.BudgetError as exc:  # nothing was started (atomic)
            form.add_error("budget_usd", str(exc))
        except ValueError as exc:
            form.add_error("summarizer", str(exc))
        else:
            return redirect(group)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form}, status=status)


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(
        Run.objects.select_related("transcript", "config", "group").defer("ledger"),
        request.user,
        pk=pk,
    )
    # A finished run's ledger (issue 7: up to ~1 MB of JSON, per-step arrays) is parsed once
    # and kept in the inspect memo, like the run's curve: never re-parsed per page view.
    run.ledger = memo.cached(run, "ledger", lambda: _ledger(run.pk))
    # Long lists are paged (runpage): events by ?page/?kind, summaries by ?spage, finding
    # groups by ?fkind/?fpage; htmx swaps one section, the links work without JS.
    events = runpage.events_page(
        run, page=runpage.page_number(request.GET.get("page")), kind=request.GET.get("kind", "")
    )
    if _wants_json(request):
        data = _run_json(run, full=True)
        data["events"] = runpage.event_json(run, events, url=run.get_absolute_url())
        data["summaries"] = runpage.summaries_json(run)
        data["findings"] = [
            {"step": f.step, "kind": f.kind, "messages": f.messages, "detail": f.detail}
            for f in run.findings.order_by("step", "id")
        ]
        (row,) = survival_table.table([run], original=False).rows
        data["survival"] = row.as_dict() if row.data is not None else None
        return JsonResponse(data, json_dumps_params={"ensure_ascii": False})
    target = request.htmx.target if request.htmx else None  # type: ignore[attr-defined]
    seq = request.GET.get("summary", "")
    if target and seq.isdigit() and target == f"summary-{seq}-output":
        output = runpage.summary_output(run, int(seq))
        if output is None:
            raise Http404("no such summary")
        return render(
            request,
            "replay_app/runs/_summaries.html#summary-output",
            {"run": run, "seq": int(seq), "output": output},
        )
    context: dict[str, Any] = {"run": run, "events": events}
    fragments = {
        "run-events": "replay_app/runs/_events.html#run-events",
        "run-summaries": "replay_app/runs/_summaries.html#run-summaries",
        "run-findings": "replay_app/runs/_findings.html#run-findings",
    }
    if target not in fragments or target == "run-summaries":
        spage = runpage.page_number(request.GET.get("spage"))
        if seq.isdigit() and "spage" not in request.GET:  # ?summary=N: the page showing N
            spage = runpage.summary_page_of(run, int(seq))
        context["summaries"] = runpage.summaries_page(run, page=spage)
    if target not in fragments or target == "run-findings":
        context["findings"] = runpage.findings_groups(
            run,
            kind=request.GET.get("fkind", ""),
            page=runpage.page_number(request.GET.get("fpage")),
        )
    if target in fragments:
        return render(request, fragments[str(target)], context)
    cost_context = run_costs.page_context(run)
    if cost_context.get("ledger_rows"):  # the first rows; every row is in the JSON twin
        cost_context["ledger_rows"] = cost_context["ledger_rows"][:LEDGER_ROWS_SHOWN]
    context.update(
        state=progress.run_state(run),
        metrics=[(key, label, hint, run.metrics.get(key)) for key, label, hint in METRICS],
        costs=cost_context,
        window_keys=window_param_names(run.strategy) if run.window else (),
        survival=survival_table.table([run], original=False)
        if run.status == RunStatus.DONE
        else None,
    )
    return render(request, "replay_app/runs/run_detail.html", context)


def _ledger(pk: int) -> dict[str, Any]:
    return Run.objects.filter(pk=pk).values_list("ledger", flat=True).first() or {}


@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(Run.objects, request.user, pk=pk)
    run = services.run_cancel(run=run)
    messages.info(
        request, f"Run {run.pk}: {'cancelled' if run.status == 'cancelled' else 'cancelling'}."
    )
    return redirect(safe_next(request, run.get_absolute_url()))


@require_POST
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(Run.objects, request.user, pk=pk)
    try:
        services.run_retry(run=run)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Run {run.pk} queued again (attempt {run.attempts + 1}).")
    return redirect(safe_next(request, run.get_absolute_url()))


@require_GET
def group_detail(request: HttpRequest, pk: int) -> HttpResponse:
    services.runs_reap_stale()
    group = get_owned_or_404(RunGroup.objects.select_related("transcript"), request.user, pk=pk)
    runs = list(group.runs.select_related("config").order_by("pk"))
    if _wants_json(request):
        return JsonResponse(
            {
                "id": group.pk,
                "name": group.name,
                "transcript": {"id": group.transcript_id, "title": str(group.transcript)},
                "created_at": group.created_at.isoformat(),
                "runs": [_run_json(r) for r in runs],
                "sweep": _sweep_json(runs),
            },
            json_dumps_params={"ensure_ascii": False},
        )
    finished = all(not r.is_active for r in runs)
    rows = [(key, label, hint, [r.metrics.get(key) for r in runs]) for key, label, hint in METRICS]
    # The live page asks for its results section alone once every run has finished.
    fragment = "#group-results" if request.GET.get("fragment") == "results" else ""
    return render(
        request,
        "replay_app/runs/run_group.html" + fragment,
        {
            "group": group,
            "runs": runs,
            "states": [progress.run_state(r, latest=[]) for r in runs],
            "finished": finished,
            "metric_rows": rows,
            "compare_ids": ",".join(str(r.pk) for r in runs),
            "compare_url": _compare_url(group, runs),
            "windows": sorted({r.window for r in runs if r.window}),
        },
    )


def _compare_url(group: RunGroup, runs: list[Run]) -> str:
    """Up to 6 runs compare directly; a larger group opens the picker with its first 6
    ticked (the compare page takes 2-6 runs)."""
    if len(runs) <= 6:
        return f"{reverse('run-compare')}?runs={','.join(str(r.pk) for r in runs)}"
    return f"{reverse('run-compare')}?group={group.pk}"


def _sweep_json(runs: list[Run]) -> dict[str, Any] | None:
    """The sweep table when the group's runs vary one parameter (replay_app.sweep)."""
    found = sweep.detect(runs)
    return sweep.as_json(found) if found else None
