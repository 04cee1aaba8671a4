"""Admin change lists that stay fast on tables of 100,000+ rows.

Stock change lists count the whole table (twice when filtered), order by the model's
ordering (a join and a sort for ``transcript, index``), select every column (megabytes of
message blocks and summary text per page) and render foreign keys through ``__str__``
(a query per row). ``LargeTableAdmin`` instead: counts at most ``COUNT_CAP`` rows (the
pager then offers that many; filters and search narrow it down), orders by the primary
key, leaves the big columns out of the list query, and shows foreign keys as ids with
``raw_id_fields`` in the forms.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):  # type: ignore[type-arg]  # not generic at run time
    """``count`` is exact up to ``COUNT_CAP`` rows, and ``COUNT_CAP + 1`` beyond it: a
    ``COUNT(*)`` over a ``LIMIT`` subquery costs at most that many rows."""

    @cached_property
    def count(self) -> int:
        object_list: Any = self.object_list
        if isinstance(object_list, QuerySet):
            return int(object_list.order_by()[: COUNT_CAP + 1].count())
        return len(object_list)


class LargeTableAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 100
    ordering = ("-pk",)
    # Big columns the change list never shows (the change form still loads them).
    list_deferred: tuple[str, ...] = ()

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        match = request.resolver_match
        url_name = match.url_name if match is not None else None
        if self.list_deferred and url_name and url_name.endswith("_changelist"):
            queryset = queryset.defer(*self.list_deferred)
        return queryset
