"""Response headers Django's own middleware does not set."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers


class SecurityHeadersMiddleware:
    """Adds Content-Security-Policy, Permissions-Policy and X-Frame-Options to every response,
    static files included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.csp: str = settings.CTXLAB_CSP

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.csp:
            response.headers.setdefault("Content-Security-Policy", self.csp)
        response.headers.setdefault(
            "Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()"
        )
        # Pages get it from XFrameOptionsMiddleware; static files (answered by WhiteNoise,
        # which sits after this middleware) only from here.
        response.headers.setdefault("X-Frame-Options", settings.X_FRAME_OPTIONS)
        return response


class VaryOnHtmxMiddleware:
    """``Vary: HX-Request, HX-Target`` on every response: many views answer an htmx request
    at the page's own URL with a fragment. Without it the browser cached the fragment under
    the page's URL, and *back* to the compare page showed its fate matrix alone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        patch_vary_headers(response, ("HX-Request", "HX-Target"))
        return response
