"""Login attempts throttled per account and per address (counted in the database).

After ``CTXLAB_LOGIN_FAILURES_PER_ACCOUNT`` failed logins for one username, or
``CTXLAB_LOGIN_FAILURES_PER_ADDRESS`` from one client address, within
``CTXLAB_LOGIN_WINDOW_SECONDS``, further attempts are refused (HTTP 429, the form says why
and for how long) until the window has passed; a refused attempt does not even check the
password. A successful login clears its account's count. The counts are rows in the
database (``ctxlab.models.LoginFailure``), so every server process and worker sees the same
counts and a restart does not reset them; each failure is one atomic UPDATE, so parallel
attempts are all counted.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse

from .models import LoginFailure


def _limits() -> tuple[int, int, int]:
    return (
        int(getattr(settings, "CTXLAB_LOGIN_FAILURES_PER_ACCOUNT", 5)),
        int(getattr(settings, "CTXLAB_LOGIN_FAILURES_PER_ADDRESS", 20)),
        int(getattr(settings, "CTXLAB_LOGIN_WINDOW_SECONDS", 900)),
    )


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{kind}:{digest}"


def _keys(request: HttpRequest) -> tuple[str, str]:
    username = str(request.POST.get("username", "")).strip().lower()
    address = str(request.META.get("REMOTE_ADDR", ""))
    return _key("account", username), _key("address", address)


def blocked_for(request: HttpRequest) -> int:
    """Seconds until this request's account and address may try again (0: now)."""
    per_account, per_address, _ = _limits()
    account, address = _keys(request)
    limit_of = {account: per_account, address: per_address}
    now = time.time()
    rows = LoginFailure.objects.filter(key__in=limit_of, window_ends__gt=now)
    waits = [
        window_ends - now
        for key, count, window_ends in rows.values_list("key", "count", "window_ends")
        if count >= limit_of[key]
    ]
    return int(max(waits)) + 1 if waits else 0


def record_failure(request: HttpRequest) -> None:
    _, _, window = _limits()
    now = time.time()
    for key in _keys(request):
        _count_failure(key, now=now, window=window)
    # Expired rows are only noise: sweep them (indexed on window_ends, so cheap).
    LoginFailure.objects.filter(window_ends__lte=now - window).delete()


def _count_failure(key: str, *, now: float, window: int) -> None:
    """One more failure for ``key``: an atomic increment inside its window, else a new
    window. Two processes creating the same key at once: the loser increments instead."""
    for _ in range(3):
        live = LoginFailure.objects.filter(key=key, window_ends__gt=now)
        if live.update(count=F("count") + 1):
            return
        restarted = LoginFailure.objects.filter(key=key, window_ends__lte=now).update(
            count=1, window_ends=now + window
        )
        if restarted:
            return
        try:
            with transaction.atomic():
                LoginFailure.objects.create(key=key, count=1, window_ends=now + window)
            return
        except IntegrityError:
            continue  # created meanwhile by another process: increment it


def record_success(request: HttpRequest) -> None:
    LoginFailure.objects.filter(key=_keys(request)[0]).delete()


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
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(max(1, math.ceil(wait)))  # seconds, as RFC 9110
            return response
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            record_success(request)
        else:
            record_failure(request)
        return response
