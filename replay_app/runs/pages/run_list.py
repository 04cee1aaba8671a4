"""The run list (``/runs/``): one object that its template and its JSON twin both read.
``?status`` and ``?transcript`` filter, ``?page`` pages (``RUNS_PER_PAGE`` a page)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import QueryDict

from ctxlab.web.ownership import owned
from replay_app.models import Run, RunStatus
from replay_app.runs.pages.run_page import METRICS, run_json
from sessions_app.models import Transcript

RUNS_PER_PAGE = 50
LIST_METRICS = (
    "peak_reference",
    "input_tokens_total",
    "compaction_count",
    "messages_removed",
    "thrash",
)


class RunListPage:
    def __init__(self, user: Any, query: QueryDict) -> None:
        self.user = user
        self.filters = {
            "status": query.get("status", ""),
            "transcript": query.get("transcript", ""),
        }
        self.page_number = query.get("page")

    def runs(self) -> QuerySet[Run]:
        runs = owned(Run.objects, self.user).select_related("transcript", "config")
        if self.filters["status"] in RunStatus.values:
            runs = runs.filter(status=self.filters["status"])
        if self.filters["transcript"].isdigit():
            runs = runs.filter(transcript_id=int(self.filters["transcript"]))
        return runs

    @cached_property
    def page(self) -> Page[Run]:
        return Paginator(self.runs(), RUNS_PER_PAGE).get_page(self.page_number)

    def context(self) -> dict[str, Any]:
        transcripts = owned(Transcript.objects, self.user).filter(runs__isnull=False).distinct()
        return {
            "page_obj": self.page,
            "filters": self.filters,
            "statuses": RunStatus.values,
            "transcripts": transcripts,
            "metric_cols": [m for m in METRICS if m[0] in LIST_METRICS],
        }

    def as_json(self) -> dict[str, Any]:
        page = self.page
        return {
            "runs": [run_json(r) for r in page],
            "page": page.number,
            "pages": page.paginator.num_pages,
            "count": page.paginator.count,
            "filters": self.filters,
        }
