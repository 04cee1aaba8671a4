"""Strategy configurations, runs and comparison groups.

Thin views: parse input, call a service or query, render. Every query is scoped with
``owned``/``get_owned_or_404`` (another user's row is a 404). Every page has a JSON twin
(``?format=json``). POSTs end in a redirect.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from ctxlab.engine.budget import window_param_names
from ctxlab.engine.native_config import NATIVE_SHAPES, native_config
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.ownership import get_owned_or_404, owned
from ctxlab.redirects import safe_next
from sessions_app.models import Transcript

from . import costs, inspect, runpage, services, stage_builder, sweep, vocabulary
from .forms import ImportConfigForm, RunCreateForm, StrategyConfigForm
from .models import Run, RunGroup, RunStatus, StrategyConfig

CUSTOM = "custom"  # the strategy composed from stages (stage builder on its form)
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


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _wants_json(request: HttpRequest) -> bool:
    return request.GET.get("format") == "json"


# ---------------------------------------------------------------------------------------
# Strategy configurations
# ---------------------------------------------------------------------------------------


def _preset_rows() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "label": STRATEGIES[name].label,
            "description": STRATEGIES[name].description,
            "params": [p.as_dict() for p in STRATEGIES[name].PARAMS],
        }
        for name in LIBRARY
        if name in STRATEGIES
    ]


def _config_json(config: StrategyConfig) -> dict[str, Any]:
    return {
        "id": config.pk,
        "url": config.get_absolute_url(),
        **services.config_export(config),
        "changed": dict(config.params),
        "updated_at": config.updated_at.isoformat(),
    }


@require_GET
def strategy_list(request: HttpRequest) -> HttpResponse:
    configs = owned(StrategyConfig.objects, request.user)
    presets = _preset_rows()
    if _wants_json(request):
        return JsonResponse(
            {"presets": presets, "configs": [_config_json(c) for c in configs]},
            json_dumps_params={"ensure_ascii": False},
        )
    return render(
        request,
        "replay_app/strategy_list.html",
        {
            "configs": configs,
            "presets": presets,
            "import_form": ImportConfigForm(),
            "native_strategies": set(NATIVE_SHAPES),
        },
    )


def _posted(request: HttpRequest, strategy: str) -> tuple[QueryDict | None, bool]:
    """The form data (None for a GET) and whether a stage-builder button sent it (a
    no-JavaScript builder step: re-render, do not save). For ``custom`` the stages field
    is rebuilt from the builder's inputs first (``stage_builder.from_post``)."""
    if request.method != "POST":
        return None, False
    data = request.POST.copy()
    if strategy != CUSTOM or stage_builder.FIELD not in data:
        return data, False
    built = stage_builder.from_post(data)
    data[stage_builder.FIELD] = built.text
    return data, bool(data.get(stage_builder.ACTION))


def _unsaved(data: QueryDict) -> dict[str, Any]:
    """A builder step's values as the initial values of an unbound form."""
    return {key: data.get(key) for key in data if key != "csrfmiddlewaretoken"}


def _form_context(
    form: StrategyConfigForm, strategy: str, config: StrategyConfig | None
) -> dict[str, Any]:
    context: dict[str, Any] = {"form": form, "strategy": STRATEGIES[strategy], "config": config}
    if strategy == CUSTOM:
        context["builder"] = stage_builder.from_text(str(form[stage_builder.FIELD].value()))
        context["builder_url"] = (
            reverse("strategy-stages-for", args=[config.pk])
            if config
            else reverse("strategy-stages")
        )
    return context


@require_http_methods(["GET", "POST"])
def strategy_create(request: HttpRequest) -> HttpResponse:
    # "preset" names the strategy: a parameter may be called "strategy" (langchain_trim).
    strategy = request.POST.get("preset") or request.GET.get("preset") or ""
    if strategy not in STRATEGIES:
        strategy = request.POST.get("strategy") or ""  # older forms and scripts
    if strategy not in STRATEGIES:
        raise Http404("No such strategy preset.")
    data, building = _posted(request, strategy)
    initial = {"name": f"my {strategy}"}
    if building and data is not None:
        initial, data = _unsaved(data), None
    form = StrategyConfigForm(data, strategy=strategy, owner=request.user, initial=initial)
    if data is not None and form.is_valid():
        config = services.config_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            strategy=strategy,
            params=form.cleaned_data["params"],
            description=form.cleaned_data["description"],
        )
        messages.success(request, f"Saved configuration {config.name!r}.")
        return redirect(config)
    status = 400 if data is not None else 200
    return render(
        request, "replay_app/strategy_form.html", _form_context(form, strategy, None), status=status
    )


@require_http_methods(["GET", "POST"])
def strategy_edit(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    if _wants_json(request):
        return JsonResponse(_config_json(config), json_dumps_params={"ensure_ascii": False})
    data, building = _posted(request, config.strategy)
    initial = None
    if building and data is not None:
        initial, data = _unsaved(data), None
    form = StrategyConfigForm(
        data, strategy=config.strategy, owner=request.user, instance=config, initial=initial
    )
    if data is not None and form.is_valid():
        services.config_update(
            config=config,
            name=form.cleaned_data["name"],
            params=form.cleaned_data["params"],
            description=form.cleaned_data["description"],
        )
        messages.success(request, f"Saved configuration {config.name!r}.")
        return redirect(config)
    status = 400 if data is not None else 200
    context = _form_context(form, config.strategy, config)
    # A composed (custom) configuration has no original system, so no native file.
    context["native"] = services.config_native(config) if config.strategy in NATIVE_SHAPES else None
    return render(request, "replay_app/strategy_form.html", context, status=status)


@require_POST
def strategy_stages(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """The stage builder re-rendered from the posted form (htmx swaps it in place). With a
    ``pk`` the builder belongs to that (own, custom) configuration."""
    if pk is not None:
        config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
        if config.strategy != CUSTOM:
            raise Http404("Not a custom configuration.")
    context = {"builder": stage_builder.from_post(request.POST), "builder_url": request.path}
    return render(request, "replay_app/_stage_builder.html", context)


@require_POST
def strategy_delete(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    name = config.name
    config.delete()
    messages.success(request, f"Deleted configuration {name!r}.")
    return redirect("strategy-list")


def _download(content: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@require_GET
def strategy_export(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    text = json.dumps(services.config_export(config), ensure_ascii=False, indent=2) + "\n"
    return _download(text, f"{config.name}.ctxlab.json", "application/json")


@require_GET
def strategy_native(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    if config.strategy not in NATIVE_SHAPES:
        raise Http404("This strategy has no native configuration file.")
    native = services.config_native(config)
    if _wants_json(request):
        return JsonResponse(native.as_dict(), json_dumps_params={"ensure_ascii": False})
    return _download(native.text, native.filename, f"{native.media_type}; charset=utf-8")


@require_GET
def preset_native(request: HttpRequest, name: str) -> HttpResponse:
    if name not in STRATEGIES or name not in NATIVE_SHAPES:
        raise Http404("No such strategy preset.")
    return JsonResponse(native_config(name).as_dict(), json_dumps_params={"ensure_ascii": False})


@require_POST
def strategy_import(request: HttpRequest) -> HttpResponse:
    form = ImportConfigForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            config = services.config_import(owner=request.user, data=form.cleaned_data["data"])
        except ValueError as exc:
            form.add_error(None, f"Import failed: {exc}")
        else:
            messages.success(request, f"Imported configuration {config.name!r}.")
            return redirect(config)
    configs = owned(StrategyConfig.objects, request.user)
    return render(
        request,
        "replay_app/strategy_list.html",
        {
            "configs": configs,
            "presets": _preset_rows(),
            "import_form": form,
            "native_strategies": set(NATIVE_SHAPES),
        },
        status=400,
    )


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
        data["cost"] = costs.run_costs_json(run)
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
        "replay_app/run_list.html",
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

    return start_group(request, form, plan, "replay_app/run_new.html")


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
        except services.BudgetError as exc:  # nothing was started (atomic)
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
    run.ledger = inspect.cached(run, "ledger", lambda: _ledger(run.pk))
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
        return JsonResponse(data, json_dumps_params={"ensure_ascii": False})
    target = request.htmx.target if request.htmx else None  # type: ignore[attr-defined]
    seq = request.GET.get("summary", "")
    if target and seq.isdigit() and target == f"summary-{seq}-output":
        output = runpage.summary_output(run, int(seq))
        if output is None:
            raise Http404("no such summary")
        return render(
            request,
            "replay_app/run/_summaries.html#summary-output",
            {"run": run, "seq": int(seq), "output": output},
        )
    context: dict[str, Any] = {"run": run, "events": events}
    fragments = {
        "run-events": "replay_app/run/_events.html#run-events",
        "run-summaries": "replay_app/run/_summaries.html#run-summaries",
        "run-findings": "replay_app/run/_findings.html#run-findings",
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
    cost_context = costs.page_context(run)
    if cost_context.get("ledger_rows"):  # the first rows; every row is in the JSON twin
        cost_context["ledger_rows"] = cost_context["ledger_rows"][:LEDGER_ROWS_SHOWN]
    context.update(
        state=services.run_state(run),
        metrics=[(key, label, hint, run.metrics.get(key)) for key, label, hint in METRICS],
        costs=cost_context,
        window_keys=window_param_names(run.strategy) if run.window else (),
    )
    return render(request, "replay_app/run_detail.html", context)


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
        "replay_app/run_group.html" + fragment,
        {
            "group": group,
            "runs": runs,
            "states": [services.run_state(r, latest=[]) for r in runs],
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


@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    # The inspection/compare pages come with the next issue.
    return render(
        request,
        "_components/placeholder.html",
        {"title": "Compare", "blurb": "Runs side by side."},
    )
