"""``next=`` is followed only to a path on this site (never ``https://evil.example/``,
``//evil.example``, ``/\\evil.example`` or ``javascript:``)."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme


def safe_next(request: HttpRequest, fallback: str) -> str:
    """The request's ``next`` (POST, then GET) if it is a same-site path, else ``fallback``."""
    target = str(request.POST.get("next") or request.GET.get("next") or "")
    if is_same_site_path(target):
        return target
    return fallback


def is_same_site_path(target: str) -> bool:
    if not target.startswith("/") or target.startswith(("//", "/\\")):
        return False
    return url_has_allowed_host_and_scheme(target, allowed_hosts=None)
