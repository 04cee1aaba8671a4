"""Compare views: 2-6 runs side by side, the step view across runs, the fate matrix, summary
diffs.

Thin: parse input, call the compare read models, render. One URL serves the page, its htmx
fragment and its JSON twin (``?format=json``). Runs are fetched through ``owned``: another
user's run is not found.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from ctxlab.web.http import HtmxHttpRequest
from ctxlab.web.http import int_param as _int
from ctxlab.web.http import json_response as _json
from ctxlab.web.http import wants as _wants
from ctxlab.web.ownership import owned
from replay_app.compare import compare_steps, overview, report, step_rows
from replay_app.compare.compare_page import ComparePage
from replay_app.compare.matrix_page import matrix_page
from replay_app.compare.picker_page import PickerPage, picker_page
from replay_app.compare.summary_diff import SummaryDiffPage
from replay_app.models import Run, RunSummary
from replay_app.runs.pages import whole_page


def _digits(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() else None


def wants_step_view(request: HttpRequest) -> bool:
    return bool(request.GET.get("step", "").strip() or request.GET.get("compaction", "").strip())


def compare_step(request: HttpRequest, runs: list[Run]) -> HttpResponse:
    """Every run at step N (or at its K-th compaction), messages aligned across runs."""
    step = _digits(request.GET.get("step"))
    compaction = _digits(request.GET.get("compaction"))
    if compaction is not None and compaction < 1:
        compaction = None
    if step is None and compaction is None:
        return _bad(request, "step and compaction are numbers (step from 0, compaction from 1)")
    steps = compare_steps._steps_of(runs)
    if step is not None and compaction is None and not 0 <= step < max(steps, 1):
        return _bad(request, f"step {step} is out of range (0..{max(steps - 1, 0)})")
    only = request.GET.get("only") == "diff"
    page = _digits(request.GET.get("page"))
    message = _digits(request.GET.get("message"))
    if message is not None and page is None and not only:
        page = message // compare_steps.STEP_MESSAGES + 1

    def build(extra: dict[str, Any]) -> HttpResponse:
        view = compare_steps.step_across(
            runs, step=None if compaction else step, compaction=compaction, page=page,
            only_differences=only,
        )  # fmt: skip
        if request.GET.get("format") == "json":
            return JsonResponse(view.as_json(), json_dumps_params={"ensure_ascii": False})
        ids = ",".join(str(r.pk) for r in runs)
        # the frame around the step (base.html, the head) is rendered once for the runs
        return whole_page.framed(
            request, runs, "compare-step", "replay_app/compare/compare_step.html",
            {"runs": runs, "ids": ids},
            {"moment": step_rows.moment(view), "main_html": step_rows.main_html(view, ids, message)},
            extra,
        )  # fmt: skip

    # finished runs' step view (page and JSON twin) comes whole from the memo (whole_page)
    return whole_page.page(request, runs, "compare-step", build)


def _bad(request: HttpRequest, message: str) -> HttpResponse:
    if request.GET.get("format") == "json":
        return JsonResponse({"error": message}, status=400)
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _summary(request: HttpRequest, ref: str) -> tuple[Run, RunSummary]:
    run_id, _, seq = ref.partition(":")
    if not (run_id.isdigit() and seq.isdigit()):
        raise Http404("choose summaries as run:seq")
    run = owned(Run.objects, request.user).filter(pk=int(run_id)).first()
    summary = RunSummary.objects.filter(run=run, seq=int(seq)).first() if run else None
    if run is None or summary is None:
        raise Http404(f"no summary {ref}")
    return run, summary


@require_GET
def summary_diff(request: HttpRequest) -> HttpResponse:
    """``?pick=RUN:SEQ&pick=RUN:SEQ``: two chosen summaries, word by word."""
    picks = [p for p in request.GET.getlist("pick") if p][:3]
    context: dict[str, Any] = {"error": ""}
    if len(picks) != 2:
        context["error"] = f"Tick two summaries to compare them (ticked {len(picks)})."
        if request.GET.get("format") == "json":
            return JsonResponse({"error": context["error"]}, status=400)
    else:
        (run_a, a), (run_b, b) = _summary(request, picks[0]), _summary(request, picks[1])
        page = SummaryDiffPage(run_a, a, run_b, b)
        if request.GET.get("format") == "json":
            return JsonResponse(page.as_json(), json_dumps_params={"ensure_ascii": False})
        context.update(page.context())
    template = "replay_app/compare/compare_diff.html"
    if getattr(request, "htmx", False):
        template += "#summary-diff"
    return render(request, template, context, status=400 if context["error"] else 200)


# --- compare -----------------------------------------------------------------------------


def _runs_param(request: HttpRequest) -> str:
    values = request.GET.getlist("runs")
    return ",".join(v for v in values if v)


def _picker(request: HttpRequest) -> PickerPage:
    return picker_page(request.user, request.GET.get("group", ""))


@require_GET
def run_compare(request: HtmxHttpRequest) -> HttpResponse:
    raw = _runs_param(request)
    if not raw:
        picker = _picker(request)
        if _wants(request, "json"):
            return _json(picker.as_json())
        return render(request, "replay_app/compare/compare.html", picker.context())
    step_view = wants_step_view(request)
    fields = overview.STEP_VIEW_FIELDS if step_view else overview.COMPARED_FIELDS
    try:
        runs = overview.load_runs(request.user, raw, fields)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    except overview.CompareError as exc:
        if _wants(request, "json"):
            return _json({"error": str(exc)}, status=400)
        return render(
            request,
            "replay_app/compare/compare.html",
            {**_picker(request).context(), "error": str(exc)},
            status=400,
        )
    if step_view:
        return compare_step(request, runs)
    if _wants(request, "report"):  # one self-contained HTML file (compare/report.py)
        response = HttpResponse(report.report_html(runs), content_type="text/html; charset=utf-8")
        response.headers["Content-Disposition"] = content_disposition_header(
            True, report.report_filename(runs)
        )
        return response
    page = ComparePage(runs, request.GET)
    if _wants(request, "csv"):
        response = HttpResponse(page.csv(), content_type="text/csv; charset=utf-8")
        response.headers["Content-Disposition"] = content_disposition_header(
            True, page.csv_filename()
        )
        return response
    if _wants(request, "json"):
        return _json(page.as_json())
    template = "replay_app/compare/compare.html"
    if request.htmx and request.htmx.target == "compare-matrix":
        template += "#compare-matrix"
        return render(request, template, page.context())
    if request.htmx and request.htmx.target == "compare-summaries":
        template += "#compare-summaries"
        return render(request, template, page.context())
    # the full page: its fate matrix (the largest section) is fetched by the page itself;
    # finished runs' page comes whole from the memo (whole_page)
    return whole_page.page(
        request,
        runs,
        "compare",
        lambda extra: render(request, template, {**page.context(lazy_matrix=True), **extra}),
    )


@require_GET
def compare_matrix(request: HttpRequest) -> HttpResponse:
    """One bucket of the fate matrix, message by message."""
    try:
        runs = overview.load_runs(request.user, _runs_param(request))
    except LookupError as exc:
        raise Http404(str(exc)) from None
    except overview.CompareError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    page = matrix_page(runs, _int(request.GET.get("start")), _int(request.GET.get("end")))
    if _wants(request, "json"):
        return _json(page.as_json())
    return render(request, "replay_app/compare/compare_matrix.html", page.context())
