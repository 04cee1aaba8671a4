"""A URLconf for test_posture.py (beside it): the real one plus a view that fails."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from ctxlab.urls import urlpatterns as real


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret internals that must not reach the page")


urlpatterns = [path("boom/", boom), *real]
