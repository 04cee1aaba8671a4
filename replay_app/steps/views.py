"""Inspection views of one run: its context at a step, message diffs, offloads, summaries,
what was lost.

Thin: parse input, call the steps read models, render. One URL serves the page, its htmx
fragment (``#partial``) and its JSON twin (``?format=json``). Every run is fetched through
``get_owned_or_404``: another user's run is a 404.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from ctxlab.web.http import HtmxHttpRequest
from ctxlab.web.http import int_param as _int
from ctxlab.web.http import json_response as _json
from ctxlab.web.http import wants as _wants
from ctxlab.web.ownership import get_owned_or_404
from replay_app import run_rows
from replay_app.models import Run
from replay_app.runs import textstore
from replay_app.steps import at_step, lost_analysis, message_diffs, summary_page
from replay_app.steps.lost_links import with_links
from sessions_app import huge


def _run(request: HttpRequest, pk: int) -> Run:
    # The ledger and ground truth (up to ~1 MB of JSON) load only if a page reads them.
    rows = Run.objects.defer("ledger", "ground_truth").select_related("transcript")
    return get_owned_or_404(rows, request.user, pk=pk)


# --- the context at one step -------------------------------------------------------------


# The ledger and ground truth (up to ~1 MB of JSON) load only if a page reads them.
_STEP_RUN = run_rows.run_fields(without=("ledger", "ground_truth"))


@require_GET
def run_step(request: HtmxHttpRequest, pk: int, step: int) -> HttpResponse:
    # No transcript row: a step view reads it only through memoised parts (~0.4 ms a view).
    run = run_rows.owned_run(request.user, pk, _STEP_RUN)
    try:
        view = at_step.step_view(run, step, page=_int(request.GET.get("mpage")))
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if _wants(request, "json"):
        return _json({"run": run.pk, **view.as_dict()})
    template = "replay_app/steps/run_step.html"
    if request.htmx:
        template += "#step-context"
    return render(request, template, {"run": run, "view": view})


@require_GET
def message_diff(request: HtmxHttpRequest, pk: int, index: int) -> HttpResponse:
    run = _run(request, pk)
    try:
        diff = message_diffs.message_diff(
            run, index, step=_int(request.GET.get("step")), event=_int(request.GET.get("event"))
        )
    except LookupError as exc:
        raise Http404(str(exc)) from None
    full = request.GET.get("full")
    if full in ("original", "modified"):  # a huge text, whole or a page at a time
        text = diff.original if full == "original" else diff.modified
        return huge.text_response(request, text, name=f"run-{run.pk}-message-{index}-{full}.txt")
    if _wants(request, "json"):
        return _json({"run": run.pk, **diff.as_dict()})
    template = "replay_app/steps/message_diff.html"
    if request.htmx:
        template += "#message-diff"
    context = {
        "run": run,
        "diff": diff,
        "diff_huge": [("original", diff.original_huge), ("version sent", diff.modified_huge)],
        "huge_head": huge.HEAD_CHARS,
        "huge_tail": huge.TAIL_CHARS,
    }
    return render(request, template, context)


@require_GET
def offload_text(request: HttpRequest, pk: int) -> HttpResponse:
    """The full text a strategy offloaded, as text/plain (never rendered as HTML)."""
    run = _run(request, pk)
    path = request.GET.get("path", "")
    text = textstore.offload_texts(run, [path]).get(path)
    if text is None:
        raise Http404("no such offloaded file")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    name = path.rsplit("/", 1)[-1] or "offload.txt"
    header = content_disposition_header(False, name)
    if header is not None:  # None only without a file name
        response.headers["Content-Disposition"] = header
    return response


@require_GET
def summary_detail(request: HtmxHttpRequest, pk: int, seq: int) -> HttpResponse:
    """One summary next to the exact input it was made from."""
    run = _run(request, pk)
    try:
        page = summary_page.summary_page(run, seq)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if _wants(request, "json"):
        return _json(page.as_json())
    template = "replay_app/steps/summary_detail.html"
    if request.htmx:
        template += "#summary-input"
    return render(request, template, page.context())


@require_GET
def run_lost(request: HttpRequest, pk: int) -> HttpResponse:
    """What each compaction of one run lost, and its retention score."""
    run = _run(request, pk)
    data = with_links(run, lost_analysis.retention(run))
    if _wants(request, "json"):
        return _json({"run": run.pk, **data})
    return render(request, "replay_app/steps/run_lost.html", {"run": run, "ret": data})
