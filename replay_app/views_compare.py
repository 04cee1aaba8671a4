"""The compare page's views across runs at one moment: ``/compare/?runs=…&step=N`` (or
``&compaction=K``) and the word diff of two chosen summaries (``/compare/diff/``)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from ctxlab.ownership import owned

from . import compare_steps, inspect
from .markdown_safe import word_diff
from .models import Run, RunSummary


def _int(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() else None


def wants_step_view(request: HttpRequest) -> bool:
    return bool(request.GET.get("step", "").strip() or request.GET.get("compaction", "").strip())


def compare_step(request: HttpRequest, runs: list[Run]) -> HttpResponse:
    """Every run at step N (or at its K-th compaction), messages aligned across runs."""
    step = _int(request.GET.get("step"))
    compaction = _int(request.GET.get("compaction"))
    if compaction is not None and compaction < 1:
        compaction = None
    if step is None and compaction is None:
        return _bad(request, "step and compaction are numbers (step from 0, compaction from 1)")
    steps = compare_steps._steps_of(runs)
    if step is not None and compaction is None and not 0 <= step < max(steps, 1):
        return _bad(request, f"step {step} is out of range (0..{max(steps - 1, 0)})")
    only = request.GET.get("only") == "diff"
    page = _int(request.GET.get("page"))
    message = _int(request.GET.get("message"))
    if message is not None and page is None and not only:
        page = message // compare_steps.STEP_MESSAGES + 1
    view = compare_steps.step_across(
        runs, step=None if compaction else step, compaction=compaction, page=page,
        only_differences=only,
    )  # fmt: skip
    if request.GET.get("format") == "json":
        return JsonResponse(view.as_json(), json_dumps_params={"ensure_ascii": False})
    ids = ",".join(str(r.pk) for r in runs)
    return render(
        request,
        "replay_app/compare_step.html",
        {"view": view, "runs": runs, "ids": ids, "message": message,
         "fate_names": inspect.FATES},
    )  # fmt: skip


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
    else:
        (run_a, a), (run_b, b) = _summary(request, picks[0]), _summary(request, picks[1])
        context.update(
            a=a, b=b, run_a=run_a, run_b=run_b,
            diff=mark_safe(word_diff(a.output, b.output)),  # noqa: S308 - escaped inside
        )  # fmt: skip
    template = "replay_app/compare_diff.html"
    if getattr(request, "htmx", False):
        template += "#summary-diff"
    return render(request, template, context, status=400 if context["error"] else 200)
