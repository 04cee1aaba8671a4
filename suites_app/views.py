"""Suite pages: list, new, detail (live progress + results), one configuration's
per-transcript table; each with its JSON twin (``?format=json``) and, for the results, a
CSV twin (``?format=csv``), all read from the same page-data object (``results``), and the
results as one self-contained HTML file to share (``?format=report``, ``report.py``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from ctxlab.web.http import HtmxHttpRequest, json_response, wants, wants_json
from ctxlab.web.ownership import get_owned_or_404, owned
from replay_app.configs.views import adopt_native, adopt_saved
from replay_app.models import StrategyConfig
from replay_app.runs.transcript_picker import window_warnings

from . import charts, replay_glue, report, results, services
from .configs import SuiteInputError
from .forms import GRID_SLOTS, SuiteForm, grid_param_names
from .models import Suite
from .progress import suite_progress_data
from .replay_glue import refresh_probes


def _csv(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
def suite_list(request: HttpRequest) -> HttpResponse:
    suites = list(owned(Suite.objects, request.user))
    rows = [(s, suite_progress_data(s)) for s in suites]
    if wants_json(request):
        return json_response(
            {
                "suites": [
                    {"id": s.pk, "name": s.name, "configurations": len(s.configs), **p}
                    for s, p in rows
                ]
            }
        )
    return render(request, "suites_app/suite_list.html", {"rows": rows})


@login_required
def suite_new(request: HttpRequest) -> HttpResponse:
    form = SuiteForm(request.POST or None, request.FILES or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            suite = services.suite_create(
                owner=request.user,
                name=form.cleaned_data["name"],
                transcripts=form.chosen_transcripts,
                configs=form.configs,
                summarizer=form.cleaned_data["summarizer"],
                grid_keys=form.grid_keys,
                source=form.source,
                max_attempts=form.cleaned_data["max_attempts"],
                llm=form.llm_options(),
                replicates=form.cleaned_data.get("replicates") or 1,
            )
        except SuiteInputError as exc:
            form.add_error(None, str(exc))
        else:
            for warning in window_warnings(form.chosen_transcripts, form.cleaned_data["window"]):
                messages.warning(request, f"Started, but {warning}")
            return redirect("suite-detail", suite.pk)
    if wants_json(request) and request.method == "POST":
        return json_response({"errors": form.errors.get_json_data()}, status=400)
    slots = [(form[f"grid_key_{i}"], form[f"grid_values_{i}"]) for i in range(1, GRID_SLOTS + 1)]
    return render(
        request,
        "suites_app/suite_new.html",
        {"form": form, "slots": slots, "param_names": grid_param_names()},
    )


@login_required
def suite_detail(request: HttpRequest, suite_id: int) -> HttpResponse:
    suite = get_owned_or_404(Suite.objects, request.user, pk=suite_id)
    if wants(request, "report"):  # one self-contained HTML file (suites_app/report.py)
        response = HttpResponse(report.report_html(suite), content_type="text/html; charset=utf-8")
        response.headers["Content-Disposition"] = content_disposition_header(
            True, report.report_filename(suite)
        )
        return response
    # probe scores of runs that finished before the probes last changed: a task updates them
    run_ids = [pk for pk in suite.items.values_list("run_id", flat=True) if pk is not None]
    probes_job = refresh_probes(suite.pk, run_ids)
    page = results.build(suite)
    if wants_json(request):
        return json_response({**page.as_json(), "probes_pending": probes_job})
    if wants(request, "csv"):
        return _csv(page.as_csv(), f"suite-{suite.pk}.csv")
    context = {
        "suite": suite,
        "page": page,
        "probes_job": probes_job,
        "stat_rows": results.stat_rows(page.configs, page.columns),
        "p": page.progress,
        # "3 configurations × 7 transcripts = 21 runs": the run count alone read as per config
        "transcript_count": suite.items.values("transcript_id").distinct().count(),
        "chart": charts.heatmap_html(page) if page.heatmap else "",
        "pareto_chart": charts.pareto_html(page),
    }
    if request.GET.get("fragment") == "results":
        return render(request, "suites_app/suite_detail.html#results", context)
    return render(request, "suites_app/suite_detail.html", context)


@login_required
def suite_config(request: HttpRequest, suite_id: int, index: int) -> HttpResponse:
    suite = get_owned_or_404(Suite.objects, request.user, pk=suite_id)
    if not 0 <= index < len(suite.configs):
        raise Http404("No such configuration.")
    page = results.build(suite)
    config = next(c for c in page.configs if c.index == index)
    rows = results.transcript_rows(suite, index, page.columns)
    if wants_json(request):
        return json_response(
            {
                "suite": suite.pk,
                "configuration": {"index": index, "label": config.label, **config.config},
                "metrics": [c.key for c in page.columns],
                "transcripts": [
                    {
                        "transcript": r.item.transcript_id,
                        "name": r.name,
                        "replicate": r.item.replicate,
                        "run": r.item.run_id,
                        "status": r.status,
                        "outlier": list(r.reasons),
                        "values": dict(zip([c.key for c in page.columns], r.values, strict=True)),
                    }
                    for r in rows
                ],
            }
        )
    return render(
        request,
        "suites_app/suite_config.html",
        {"suite": suite, "config": config, "columns": page.columns, "rows": rows},
    )


@login_required
def suite_compare(request: HttpRequest, suite_id: int, transcript_id: int) -> HttpResponse:
    """One transcript across the suite's configurations: the compare page (2-6 runs)."""
    suite = get_owned_or_404(Suite.objects, request.user, pk=suite_id)
    runs = results.runs_of_transcript(suite, transcript_id)[:6]
    if len(runs) < 2:
        if runs:
            return redirect("run-detail", runs[0])
        raise Http404("No finished run of that transcript in this suite.")
    return redirect(f"/compare/?runs={','.join(map(str, runs))}")


@login_required
@require_POST
def suite_cancel(request: HtmxHttpRequest, suite_id: int) -> HttpResponse:
    suite = get_owned_or_404(Suite.objects, request.user, pk=suite_id)
    count = services.suite_cancel(suite=suite)
    messages.info(request, f"Suite cancelled: {count} queued run(s) will not start.")
    return _back_to_suite(request, suite)


@login_required
@require_POST
def suite_resume(request: HtmxHttpRequest, suite_id: int) -> HttpResponse:
    suite = get_owned_or_404(Suite.objects, request.user, pk=suite_id)
    count = services.suite_resume(suite=suite)
    messages.info(request, f"Resumed: {count} run(s) queued; finished runs are kept.")
    return _back_to_suite(request, suite)


def _back_to_suite(request: HtmxHttpRequest, suite: Suite) -> HttpResponse:
    # From the live fragment's hx-post: the whole page loads again (with the message).
    if request.htmx:
        return HttpResponseClientRedirect(reverse("suite-detail", args=[suite.pk]))
    return redirect("suite-detail", suite.pk)


# --- from a leaderboard row: save as configuration, export the agent's config ---------------


def _winner(request: HttpRequest, suite_id: int, index: int) -> tuple[Suite, str, dict[str, Any]]:
    """The suite's configuration ``index`` as its runs ran it: strategy, complete params."""
    suite = get_owned_or_404(Suite.objects, request.user, pk=suite_id)
    if not 0 <= index < len(suite.configs):
        raise Http404("No such configuration.")
    try:
        spec = replay_glue.spec_of(owner=request.user, config=suite.configs[index])
        strategy, params, _ = spec.resolve()
    except (StrategyConfig.DoesNotExist, ValueError):
        raise Http404("This configuration's saved base is gone.") from None
    return suite, strategy, params


@login_required
@require_POST
def suite_config_save(request: HttpRequest, suite_id: int, index: int) -> HttpResponse:
    suite, strategy, params = _winner(request, suite_id, index)
    label = str(suite.configs[index]["label"])
    return adopt_saved(
        request,
        strategy=strategy,
        params=params,
        name=f"{label} (suite {suite.pk})",
        description=f"Saved from suite “{suite.name}”, configuration {index + 1}: {label}.",
    )


@login_required
@require_POST
def suite_config_native(request: HttpRequest, suite_id: int, index: int) -> HttpResponse:
    _, strategy, params = _winner(request, suite_id, index)
    return adopt_native(strategy, params)
