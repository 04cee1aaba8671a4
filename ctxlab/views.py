"""Project-wide views: home and a health probe."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ctxlab.web.storage_errors import database_writable

SECTIONS = [
    ("Transcripts", "/transcripts/", "Import agent transcripts and inspect every message."),
    ("Strategies", "/strategies/", "Configure compaction strategies and their parameters."),
    ("Runs", "/runs/", "Replay a transcript through a strategy, step by step."),
    ("Compare", "/compare/", "Put runs side by side: tokens kept, cut and summarised."),
]


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {"sections": SECTIONS})


@require_GET
@login_not_required
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness probe for scripts (make run waits on it): whether the database takes a write
    (a rolled-back one), so a full disk or a read-only database shows here (503)."""
    writable, problem = database_writable()
    if not writable:
        return JsonResponse(
            {"status": "error", "database": "not writable", "problem": problem}, status=503
        )
    return JsonResponse({"status": "ok", "database": "writable"})
