"""Disk full, read-only database: a clear error page (and a JSON error on the twin), never a
traceback; ``database_writable`` is what ``/healthz`` reports.

SQLite says "database or disk is full" / "attempt to write a readonly database"; PostgreSQL
raises "could not extend file" (disk full, SQLSTATE 53100) or "cannot execute … in a
read-only transaction" (25006); the file system says ENOSPC / EROFS.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable

from django.db import DatabaseError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

log = logging.getLogger(__name__)

_FULL = ("disk is full", "could not extend file", "no space left", "disk full")
_READ_ONLY = ("readonly database", "read-only", "read only", "readonly")


def storage_problem(exc: BaseException) -> str | None:
    """ "full" / "read-only" when ``exc`` is the storage refusing a write, else None."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "full"
    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        return "read-only"
    if isinstance(exc, DatabaseError):
        text = str(exc).lower()
        if any(s in text for s in _FULL):
            return "full"
        if any(s in text for s in _READ_ONLY):
            return "read-only"
    return None


MESSAGES = {
    "full": "The disk holding ctxlab's data is full: nothing could be saved. Free some space "
    "(or move CTXLAB_DATA_DIR) and try again.",
    "read-only": "ctxlab's database is read-only: nothing could be saved. Check the file "
    "permissions of CTXLAB_DATA_DIR (or the database user's rights) and try again.",
}


def database_writable() -> tuple[bool, str]:
    """Try a real write in a transaction that is rolled back."""
    from django.contrib.sessions.models import Session
    from django.utils import timezone

    try:
        with transaction.atomic():
            Session.objects.create(
                session_key="healthz-write-probe", session_data="", expire_date=timezone.now()
            )
            transaction.set_rollback(True)
    except (DatabaseError, OSError) as exc:
        return False, storage_problem(exc) or type(exc).__name__
    return True, ""


class StorageErrorMiddleware:
    """Turns a storage refusal anywhere in a view into a 503 page or JSON error."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        problem = storage_problem(exc)
        if problem is None:
            return None
        log.error("storage refused a write (%s): %s", problem, exc)
        message = MESSAGES[problem]
        wants_json = request.GET.get(
            "format"
        ) == "json" or "application/json" in request.headers.get("Accept", "")
        if wants_json:
            return JsonResponse({"error": message, "storage": problem}, status=503)
        html = render_to_string("storage_error.html", {"message": message, "problem": problem})
        return HttpResponse(html, status=503)
