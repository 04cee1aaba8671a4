"""Request helpers every app's views share: the htmx-typed request and the JSON twin."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware (``request.htmx``)."""

    htmx: HtmxDetails


def wants(request: HttpRequest, fmt: str) -> bool:
    """Whether the page was asked for in ``fmt`` (``?format=json``, ``?format=csv``)."""
    return request.GET.get("format") == fmt


def wants_json(request: HttpRequest) -> bool:
    return wants(request, "json")


def int_param(value: str | None, default: int | None = None) -> int | None:
    """A query parameter as an int; ``default`` when it is missing or not a number."""
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def json_response(data: Any, status: int = 200) -> JsonResponse:
    """A JSON twin: non-ASCII text (transcripts are multilingual) written as is."""
    return JsonResponse(data, status=status, json_dumps_params={"ensure_ascii": False})
