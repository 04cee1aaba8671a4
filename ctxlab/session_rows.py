"""The session and user rows every view reads, through prepared queries (``ctxlab.serving.prepared``).

``SESSION_ENGINE`` and ``AUTHENTICATION_BACKENDS`` name this module: Django's database
session store and model backend, each with its one lookup compiled once per process
(together ~0.8 ms of CPU per view, as much as the rest of a finished run's page view).
Same rows, same checks: an expired or unknown session is empty, an inactive user is
nobody, and the session's auth hash is still verified by ``django.contrib.auth``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends import db
from django.core.exceptions import ValidationError
from django.db import router
from django.utils import timezone

from ctxlab.serving.prepared import Prepared, instance

_EARLY, _LATE = datetime(2001, 1, 1, tzinfo=UTC), datetime(2002, 2, 2, tzinfo=UTC)


@cache
def _session_query() -> Prepared:
    from django.contrib.sessions.models import Session

    def make(key: str, now: datetime) -> Any:
        rows = Session.objects.filter(session_key=key, expire_date__gt=now)
        return rows.values_list("session_data")

    return Prepared(make, {"key": "k" * 32, "now": _EARLY}, {"key": "q" * 32, "now": _LATE})


class SessionStore(db.SessionStore):
    def load(self) -> dict[str, Any]:
        if self.session_key is None:
            return {}
        using = router.db_for_read(self.model)
        rows = _session_query().rows(using, key=self.session_key, now=timezone.now())
        if not rows:
            self._session_key = None  # as Django's store: a new key when saved
            return {}
        data: dict[str, Any] = self.decode(rows[0][0])
        return data


@cache
def _user_query() -> tuple[Prepared, tuple[str, ...]]:
    model = get_user_model()
    fields = tuple(f.attname for f in model._meta.concrete_fields)

    def make(pk: int) -> Any:
        return model._default_manager.filter(pk=pk).values_list(*fields)

    return Prepared(make, {"pk": 1}, {"pk": 2}), fields


class RowBackend(ModelBackend):
    """``ModelBackend`` whose ``get_user`` (every authenticated view) reads one prepared
    query; logging in, permissions and everything else are ``ModelBackend``'s."""

    def get_user(self, user_id: Any) -> Any:
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)
        except ValidationError:
            return None
        query, fields = _user_query()
        using = router.db_for_read(model)
        rows = query.rows(using, pk=pk)
        if not rows:
            return None
        user = instance(model, fields, rows[0], using)
        return user if self.user_can_authenticate(user) else None


def warm() -> None:
    """Compile both lookups now (a served process's warm-up), not in its first view."""
    from django.contrib.sessions.models import Session

    _session_query().compiled(router.db_for_read(Session))
    _user_query()[0].compiled(router.db_for_read(get_user_model()))
