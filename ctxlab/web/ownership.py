"""Per-user data scoping: every object belongs to one user; nobody sees another's.

Views use these two helpers instead of ``Model.objects.all()`` / ``get_object_or_404``::

    sessions = owned(ImportedSession.objects, request.user)
    session = get_owned_or_404(ImportedSession.objects, request.user, pk=pk)

Another user's object is a 404, not a 403: its existence is not revealed.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.db.models import Manager, QuerySet
from django.http import Http404

M = TypeVar("M", bound=models.Model)

OWNER_FIELD = "owner"


def owned(source: Manager[M] | QuerySet[M], user: Any, *, field: str = OWNER_FIELD) -> QuerySet[M]:
    """Rows of ``source`` whose ``field`` is ``user``; none at all for anonymous users."""
    queryset = source.all()
    if user is None or not getattr(user, "is_authenticated", False):
        return queryset.none()
    return queryset.filter(**{field: user})


def get_owned_or_404(
    source: Manager[M] | QuerySet[M], user: Any, *, field: str = OWNER_FIELD, **lookups: Any
) -> M:
    """One row owned by ``user`` matching ``lookups``, else Http404 (also for others' rows)."""
    try:
        return owned(source, user, field=field).get(**lookups)
    except (ObjectDoesNotExist, ValueError, TypeError):
        raise Http404("No such object.") from None
