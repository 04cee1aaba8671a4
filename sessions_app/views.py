"""Transcript views (placeholder index until the importers' UI lands)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def transcript_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "_components/placeholder.html",
        {"title": "Transcripts", "blurb": "Imported agent transcripts will be listed here."},
    )
