"""Runs and comparison groups: list, create, the run page, cancel/retry, the group page.

Thin views: parse input, call a service or query, render. Every query is scoped with
``owned``/``get_owned_or_404`` (another user's row is a 404). Every page has a JSON twin
(``?format=json``). POSTs end in a redirect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ctxlab.engine.strategies import PRESETS
from ctxlab.web.http import HtmxHttpRequest, json_response
from ctxlab.web.http import wants_json as _wants_json
from ctxlab.web.ownership import get_owned_or_404
from ctxlab.web.redirects import safe_next
from replay_app import run_rows
from replay_app.costs import run_budget
from replay_app.models import Run, RunGroup
from replay_app.runs import reaping, services
from replay_app.runs.forms import RunCreateForm
from replay_app.runs.pages import whole_page
from replay_app.runs.pages.group_page import GroupPage
from replay_app.runs.pages.run_list import RunListPage
from replay_app.runs.pages.run_page import FRAGMENTS, RunPage, load_ledger
from replay_app.runs.transcript_picker import window_warnings

# ---------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    reaping.runs_reap_stale()  # a page load is also a chance to notice dead workers
    page = RunListPage(request.user, request.GET)
    if _wants_json(request):
        return json_response(page.as_json())
    return render(request, "replay_app/runs/run_list.html", page.context())


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
            for warning in window_warnings([data["transcript"]], data.get("window")):
                messages.warning(request, f"Started, but {warning}")
            return redirect(group)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form}, status=status)


_KEYED = run_rows.run_fields(only=whole_page.KEY_FIELDS)  # what whole_page's key reads


@require_GET
def run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    if not request.htmx and not _wants_json(request):
        # A finished run's page comes whole from the memo: only the row's key fields are
        # read (its joins cost more than the rest of the view, see whole_page).
        keyed = run_rows.owned_run(request.user, pk, _KEYED)
        return whole_page.page(request, keyed, "run", lambda extra: _run_page(request, pk, extra))
    return _run_page(request, pk, {})


def _run_page(request: HtmxHttpRequest, pk: int, extra: dict[str, Any]) -> HttpResponse:
    run = get_owned_or_404(
        Run.objects.select_related("transcript", "config", "group").defer("ledger"),
        request.user,
        pk=pk,
    )
    page = RunPage(run, request.GET)
    if _wants_json(request):
        load_ledger(run)
        return json_response(page.as_json())
    target = request.htmx.target if request.htmx else None
    seq = request.GET.get("summary", "")
    if target and seq.isdigit() and target == f"summary-{seq}-output":
        output = page.summary_output(int(seq))
        if output is None:
            raise Http404("no such summary")
        return render(
            request,
            "replay_app/runs/_summaries.html#summary-output",
            {"run": run, "seq": int(seq), "output": output},
        )
    if target in FRAGMENTS:
        return render(request, FRAGMENTS[target], page.context(target))
    return render(request, "replay_app/runs/run_detail.html", {**page.context(), **extra})


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
    reaping.runs_reap_stale()
    group = get_owned_or_404(RunGroup.objects.select_related("transcript"), request.user, pk=pk)
    page = GroupPage(group)
    if _wants_json(request):
        return json_response(page.as_json())
    if request.GET.get("format") == "csv":
        if not page.finished or page.analysing:  # half a table would read as final figures
            return HttpResponse(
                "the results table exists once every run has finished (and been analysed)\n",
                status=409,
                content_type="text/plain; charset=utf-8",
            )
        response = HttpResponse(page.csv(), content_type="text/csv; charset=utf-8")
        response.headers["Content-Disposition"] = content_disposition_header(
            True, page.csv_filename()
        )
        return response
    # The live page asks for its results section alone once every run has finished.
    fragment = "#group-results" if request.GET.get("fragment") == "results" else ""
    return render(request, "replay_app/runs/run_group.html" + fragment, page.context())
