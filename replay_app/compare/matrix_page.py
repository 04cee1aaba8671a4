"""The fate matrix detail (``/compare/matrix/``): one bucket of messages, each with its
preview and its final fate per run. One ``MatrixPage`` feeds both the template and the
``?format=json`` twin, so they cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_app.compare import compare_steps, overview
from replay_app.models import Run

MATRIX_DETAIL_MAX = 500


@dataclass
class MatrixRow:
    index: int
    preview: str
    fates: list[Any]
    url: str  # the step view at the last step, on this message (``compare_steps.message_link``)


@dataclass
class MatrixPage:
    runs: list[Run]
    start: int
    end: int
    messages: int  # the transcript's message count (for the "later" link)
    rows: list[MatrixRow]

    def as_json(self) -> dict[str, Any]:
        return {
            "runs": [r.pk for r in self.runs],
            "start": self.start,
            "end": self.end,
            "messages": [
                {"index": row.index, "preview": row.preview, "fates": row.fates, "url": row.url}
                for row in self.rows
            ],
        }

    def context(self) -> dict[str, Any]:
        span = self.end - self.start
        return {
            "runs": self.runs,
            "ids": ",".join(str(r.pk) for r in self.runs),
            "rows": self.rows,
            "start": self.start,
            "end": self.end,
            "prev_start": max(self.start - span, 0) if self.start > 0 else None,
            "next_start": self.end if self.end < self.messages else None,
            "span": span,
        }


def matrix_page(runs: list[Run], start: int | None, end: int | None) -> MatrixPage:
    """Messages ``start``..``end`` (defaults: 0 and 100 after start; at most
    ``MATRIX_DETAIL_MAX``, clipped to the transcript)."""
    messages = runs[0].transcript.message_count
    first = max(start or 0, 0)
    last = min(first + 100 if end is None else end, messages, first + MATRIX_DETAIL_MAX)
    last = max(last, first)
    previews = dict(
        runs[0]
        .transcript.messages.filter(index__gte=first, index__lt=last)
        .values_list("index", "preview")
    )
    ids = ",".join(str(r.pk) for r in runs)
    href = compare_steps.step_view_url(ids, max(compare_steps._steps_of(runs) - 1, 0))
    rows = [
        MatrixRow(i, previews.get(i, ""), fates, compare_steps.message_link(href, i))
        for i, fates in overview.matrix_detail(runs, first, last)
    ]
    return MatrixPage(runs=runs, start=first, end=last, messages=messages, rows=rows)
