"""Inspection views: a run's context at a step, message diffs, offloads, summaries, compare.

Thin: parse input, call ``inspect``/``compare``, render. One URL serves the page, its htmx
fragment (``#partial``) and its JSON twin (``?format=json``). Every run is fetched through
``get_owned_or_404``/``owned``: another user's run is a 404.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from django_htmx.middleware import HtmxDetails

from ctxlab.ownership import get_owned_or_404, owned

from . import charts, compare, compare_steps, inspect, views_compare
from .lost_links import with_links
from .models import Run, RunOffload, RunSummary


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _wants(request: HttpRequest, fmt: str) -> bool:
    return request.GET.get("format") == fmt


def _int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def _json(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, json_dumps_params={"ensure_ascii": False})


def _run(request: HttpRequest, pk: int) -> Run:
    return get_owned_or_404(Run.objects.select_related("transcript"), request.user, pk=pk)


# --- the run page's inspection section ---------------------------------------------------


def run_inspect_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """Context of ``run_inspect.html`` (the curve, the scrubber at ``?step``, summaries)."""
    steps = inspect.step_count(run)
    step = _int(request.GET.get("step"), steps - 1 if steps else 0) or 0
    step = min(max(step, 0), max(steps - 1, 0))
    view = None
    if steps:
        view = inspect.step_view(run, step, page=_int(request.GET.get("mpage")))
    chart = inspect.cached(run, "curve-html", lambda: _curve_html(run)) if steps else ""
    return {
        "run": run,
        "chart": chart,
        "view": view,
    }


def _curve_html(run: Run) -> str:
    curve = inspect.curve(run)
    spec = charts.token_curve(
        curve.series,
        curve.events,
        window=curve.window,
        threshold=curve.threshold,
        estimator=run.strategy,
    )
    return charts.chart_html(spec, div_id="token-curve-plot", filename=f"run-{run.pk}-curve")


# --- the context at one step -------------------------------------------------------------


@require_GET
def run_step(request: HtmxHttpRequest, pk: int, step: int) -> HttpResponse:
    run = _run(request, pk)
    try:
        view = inspect.step_view(run, step, page=_int(request.GET.get("mpage")))
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if _wants(request, "json"):
        return _json({"run": run.pk, **view.as_dict()})
    template = "replay_app/run_step.html"
    if request.htmx:
        template += "#step-context"
    return render(request, template, {"run": run, "view": view})


@require_GET
def message_diff(request: HtmxHttpRequest, pk: int, index: int) -> HttpResponse:
    run = _run(request, pk)
    try:
        diff = inspect.message_diff(
            run, index, step=_int(request.GET.get("step")), event=_int(request.GET.get("event"))
        )
    except LookupError as exc:
        raise Http404(str(exc)) from None
    if _wants(request, "json"):
        return _json({"run": run.pk, **diff.as_dict()})
    template = "replay_app/message_diff.html"
    if request.htmx:
        template += "#message-diff"
    return render(request, template, {"run": run, "diff": diff})


@require_GET
def offload_text(request: HttpRequest, pk: int) -> HttpResponse:
    """The full text a strategy offloaded, as text/plain (never rendered as HTML)."""
    run = _run(request, pk)
    path = request.GET.get("path", "")
    text = RunOffload.objects.filter(run=run, path=path).values_list("text", flat=True).first()
    if text is None:
        raise Http404("no such offloaded file")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    name = path.rsplit("/", 1)[-1] or "offload.txt"
    response.headers["Content-Disposition"] = content_disposition_header(False, name)
    return response


@require_GET
def summary_detail(request: HtmxHttpRequest, pk: int, seq: int) -> HttpResponse:
    """One summary next to the exact input it was made from."""
    run = _run(request, pk)
    summary = RunSummary.objects.filter(run=run, seq=seq).first()
    if summary is None:
        raise Http404("no such summary")
    if _wants(request, "json"):
        return _json(
            {
                "run": run.pk,
                "seq": summary.seq,
                "step": summary.step,
                "input": summary.input,
                "output": summary.output,
                "input_tokens": summary.input_tokens,
                "output_tokens": summary.output_tokens,
                "usage_estimated": summary.usage_estimated,
                "error": summary.error,
                "messages": summary.messages,
            }
        )
    template = "replay_app/summary_detail.html"
    if request.htmx:
        template += "#summary-input"
    return render(request, template, {"run": run, "summary": summary})


@require_GET
def run_lost(request: HttpRequest, pk: int) -> HttpResponse:
    """What each compaction of one run lost, and its retention score."""
    run = _run(request, pk)
    data = with_links(run, inspect.retention(run))
    if _wants(request, "json"):
        return _json({"run": run.pk, **data})
    return render(request, "replay_app/run_lost.html", {"run": run, "ret": data})


# --- compare -----------------------------------------------------------------------------


def _runs_param(request: HttpRequest) -> str:
    values = request.GET.getlist("runs")
    return ",".join(v for v in values if v)


def _picker(request: HttpRequest) -> dict[str, Any]:
    ticked: list[int] = []
    group = request.GET.get("group", "")
    if group.isdigit():  # the group page's link: its first runs ticked, its transcript first
        ticked = list(
            owned(Run.objects, request.user)
            .filter(group_id=int(group))
            .order_by("pk")
            .values_list("pk", flat=True)[: compare.MAX_RUNS]
        )
    runs = (
        owned(Run.objects, request.user)
        .select_related("transcript", "group")
        .order_by("transcript_id", "group_id", "-id")
        .only(
            "id",
            "label",
            "strategy",
            "status",
            "transcript_id",
            "transcript__title",
            "transcript__conversation_id",
            "group_id",
            "group__name",
            "created_at",
        )[:500]
    )
    groups: dict[int, dict[str, Any]] = {}
    for run in runs:
        entry = groups.setdefault(
            run.transcript_id, {"transcript": run.transcript, "runs": [], "groups": {}}
        )
        entry["runs"].append(run)
        if run.group_id:
            entry["groups"].setdefault(run.group_id, []).append(run.pk)
    for entry in groups.values():
        entry["group_links"] = [
            (gid, ",".join(map(str, ids[: compare.MAX_RUNS])))
            for gid, ids in entry["groups"].items()
            if len(ids) >= compare.MIN_RUNS
        ]
    picked = list(groups.values())
    if ticked:
        first = next((t for t, e in groups.items() if any(r.pk in ticked for r in e["runs"])), None)
        picked.sort(key=lambda e: e["transcript"].pk != first)
    return {"picker": picked, "ticked": ticked}


@require_GET
def run_compare(request: HtmxHttpRequest) -> HttpResponse:
    raw = _runs_param(request)
    if not raw:
        context = _picker(request)
        if _wants(request, "json"):
            return _json(
                {
                    "transcripts": [
                        {
                            "transcript": e["transcript"].pk,
                            "title": e["transcript"].display_title,
                            "runs": [
                                {"id": r.pk, "label": r.label, "status": r.status}
                                for r in e["runs"]
                            ],
                        }
                        for e in context["picker"]
                    ]
                }
            )
        return render(request, "replay_app/compare.html", context)
    try:
        runs = compare.load_runs(request.user, raw)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    except compare.CompareError as exc:
        if _wants(request, "json"):
            return _json({"error": str(exc)}, status=400)
        return render(
            request, "replay_app/compare.html", {**_picker(request), "error": str(exc)}, status=400
        )
    if views_compare.wants_step_view(request):
        return views_compare.compare_step(request, runs)
    retentions = compare.retentions(runs)
    rows = compare.metric_rows(runs, retentions)
    if _wants(request, "csv"):
        response = HttpResponse(
            compare.metrics_csv(runs, rows), content_type="text/csv; charset=utf-8"
        )
        response.headers["Content-Disposition"] = content_disposition_header(
            True, f"compare-{'-'.join(str(r.pk) for r in runs)}.csv"
        )
        return response
    spage = _int(request.GET.get("spage"), 1) or 1
    summary_rows, spage, spages = compare.summary_rows(runs, page=spage)
    ordinal_rows, opage, opages = compare_steps.summaries_by_compaction(runs, page=spage)
    messages = runs[0].transcript.message_count
    at = _int(request.GET.get("at"))  # the fate matrix at this step (default: final)
    size, grid = compare.matrix(runs, messages, step=at)
    ids = ",".join(str(r.pk) for r in runs)
    if _wants(request, "json"):
        data = _compare_json(runs, rows, retentions, summary_rows, spage, spages, size, grid)
        data["matrix"]["step"] = at
        data["summaries_by_compaction"] = {
            "page": opage,
            "pages": opages,
            "rows": [
                {"ordinal": row.ordinal, "cells": [c.as_dict() if c else None for c in row.cells]}
                for row in ordinal_rows
            ],
        }
        return _json(data)
    chart = inspect.cached_many(runs, "compare-html", lambda: _compare_html(runs, ids))
    steps = compare_steps._steps_of(runs)
    final = max(steps - 1, 0)
    matrix_href = f"{reverse('run-compare')}?runs={ids}&step={final if at is None else at}"
    context = {
        "runs": runs,
        "ids": ids,
        "chart": chart,
        "rows": rows,
        "retentions": list(zip(runs, retentions, strict=True)),
        "lost_events": compare.LOST_EVENTS,
        "summary_rows": summary_rows,
        "ordinal_rows": ordinal_rows,
        "spage": opage,
        "spages": opages,
        "matrix_step": at,
        "final_step": final,
        "matrix": [
            (run, mark_safe(compare.matrix_strip(cells, href=matrix_href)))  # noqa: S308
            for run, cells in zip(runs, grid, strict=True)
        ],
        "bucket": size,
        "message_count": messages,
        "fate_names": inspect.FATES,
    }
    template = "replay_app/compare.html"
    if request.htmx and request.htmx.target == "compare-matrix":
        template += "#compare-matrix"
    elif request.htmx and request.htmx.target == "compare-summaries":
        template += "#compare-summaries"
    return render(request, template, context)


def _compare_html(runs: list[Run], ids: str) -> str:
    spec = charts.compare_curves(compare.curves(runs))
    return charts.chart_html(
        spec, div_id="compare-plot", filename=f"compare-{ids.replace(',', '-')}"
    )


def _compare_json(
    runs: list[Run],
    rows: list[compare.MetricRow],
    retentions: list[dict[str, Any]],
    summary_rows: list[compare.SummaryRow],
    spage: int,
    spages: int,
    size: int,
    grid: list[list[compare.MatrixCell]],
) -> dict[str, Any]:
    return {
        "runs": [
            {
                "id": r.pk,
                "label": r.label,
                "strategy": r.strategy,
                "window": r.window,  # the comparison's model window (None: its own)
                "status": r.status,
                "transcript": r.transcript_id,
                "retention": ret.get("retention"),
            }
            for r, ret in zip(runs, retentions, strict=True)
        ],
        "retention": {
            str(r.pk): ret.get("retention") for r, ret in zip(runs, retentions, strict=True)
        },
        "metrics": [
            {
                "key": m.key,
                "label": m.label,
                "unit": m.unit,
                "better": m.better,
                "help": m.help,
                "best_rule": m.best_rule,
                "values": m.values,
                "best": m.best,
            }
            for m in rows
        ],
        "lost": {str(r.pk): ret for r, ret in zip(runs, retentions, strict=True)},
        "curves": {str(r.pk): inspect.curve(r).as_dict() for r in runs},
        "summaries": {
            "page": spage,
            "pages": spages,
            "rows": [
                {
                    "step": row.step,
                    "cells": [
                        None
                        if c is None
                        else {
                            "seq": c.seq,
                            "output": c.output,
                            "error": c.error,
                            "diff": [x for _, x in c.diff],
                        }
                        for c in row.cells
                    ],
                }
                for row in summary_rows
            ],
        },
        "matrix": {
            "bucket": size,
            "runs": {
                str(r.pk): [
                    {"start": c.start, "end": c.end, "fate": c.fate, "counts": c.counts}
                    for c in cells
                ]
                for r, cells in zip(runs, grid, strict=True)
            },
        },
    }


MATRIX_DETAIL_MAX = 500


@require_GET
def compare_matrix(request: HttpRequest) -> HttpResponse:
    """One bucket of the fate matrix, message by message."""
    try:
        runs = compare.load_runs(request.user, _runs_param(request))
    except LookupError as exc:
        raise Http404(str(exc)) from None
    except compare.CompareError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    messages = runs[0].transcript.message_count
    start = max(_int(request.GET.get("start"), 0) or 0, 0)
    end = min(_int(request.GET.get("end"), start + 100) or 0, messages, start + MATRIX_DETAIL_MAX)
    rows = compare.matrix_detail(runs, start, max(end, start))
    if _wants(request, "json"):
        return _json(
            {
                "runs": [r.pk for r in runs],
                "start": start,
                "end": end,
                "messages": [{"index": i, "fates": fates} for i, fates in rows],
            }
        )
    previews = dict(
        runs[0]
        .transcript.messages.filter(index__gte=start, index__lt=end)
        .values_list("index", "preview")
    )
    ids = ",".join(str(r.pk) for r in runs)
    span = end - start
    return render(
        request,
        "replay_app/compare_matrix.html",
        {
            "runs": runs,
            "ids": ids,
            "rows": [(i, previews.get(i, ""), fates) for i, fates in rows],
            "start": start,
            "end": end,
            "prev_start": max(start - span, 0) if start > 0 else None,
            "next_start": end if end < messages else None,
            "span": span,
        },
    )
