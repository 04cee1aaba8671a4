"""Login attempts throttled per account and per address (Django's cache).

After ``CTXLAB_LOGIN_FAILURES_PER_ACCOUNT`` failed logins for one username, or
``CTXLAB_LOGIN_FAILURES_PER_ADDRESS`` from one client address, within
``CTXLAB_LOGIN_WINDOW_SECONDS``, further attempts are refused (HTTP 429, the form says why
and for how long) until the window has passed; a refused attempt does not even check the
password. A successful login clears its account's count. The counts live in the cache
(per process with the default local-memory cache; shared with a shared cache backend).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse


def _limits() -> tuple[int, int, int]:
    return (
        int(getattr(settings, "CTXLAB_LOGIN_FAILURES_PER_ACCOUNT", 5)),
        int(getattr(settings, "CTXLAB_LOGIN_FAILURES_PER_ADDRESS", 20)),
        int(getattr(settings, "CTXLAB_LOGIN_WINDOW_SECONDS", 900)),
    )


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"ctxlab:login-failures:{kind}:{digest}"


def _keys(request: HttpRequest) -> tuple[str, str]:
    username = str(request.POST.get("username", "")).strip().lower()
    address = str(request.META.get("REMOTE_ADDR", ""))
    return _key("account", username), _key("address", address)


def _failures(key: str) -> tuple[int, float]:
    """(count, when the window ends) for one key."""
    value = cache.get(key)
    return (int(value[0]), float(value[1])) if value else (0, 0.0)


def blocked_for(request: HttpRequest) -> int:
    """Seconds until this request's account and address may try again (0: now)."""
    per_account, per_address, _ = _limits()
    account, address = _keys(request)
    now = time.time()
    waits = [
        until - now
        for key, limit in ((account, per_account), (address, per_address))
        for count, until in [_failures(key)]
        if count >= limit and until > now
    ]
    return int(max(waits)) + 1 if waits else 0


def record_failure(request: HttpRequest) -> None:
    _, _, window = _limits()
    now = time.time()
    for key in _keys(request):
        count, until = _failures(key)
        if until <= now:
            count, until = 0, now + window
        cache.set(key, (count + 1, until), timeout=max(1, int(until - now)))


def record_success(request: HttpRequest) -> None:
    cache.delete(_keys(request)[0])


class ThrottledLoginView(auth_views.LoginView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = blocked_for(request)
        if wait:
            # An unbound form: a bound one would check the password.
            form = self.get_form_class()(
                request, initial={"username": request.POST.get("username", "")}
            )
            minutes = max(1, round(wait / 60))
            context = self.get_context_data(form=form, throttled_minutes=minutes)
            return self.render_to_response(context, status=429)
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            record_success(request)
        else:
            record_failure(request)
        return response
