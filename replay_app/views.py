"""Strategy, run and comparison views (placeholders until the replay UI lands)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


def _placeholder(request: HttpRequest, title: str, blurb: str) -> HttpResponse:
    return render(request, "_components/placeholder.html", {"title": title, "blurb": blurb})


@require_GET
def strategy_list(request: HttpRequest) -> HttpResponse:
    return _placeholder(request, "Strategies", "Compaction strategy configurations.")


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    return _placeholder(request, "Runs", "Replays of a transcript through a strategy.")


@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    return _placeholder(request, "Compare", "Runs side by side.")
