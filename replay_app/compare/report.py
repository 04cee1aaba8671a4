"""A comparison as one self-contained HTML file: to attach to an issue, open from disk.

Everything is inside the file: the curves (plotly.js inlined, drawn from a JSON data block
by a few lines of inline script), the metrics with the best per row, the summaries side by
side by compaction ordinal, and what each compaction lost. It makes no request anywhere:
no src/href to another origin, no links back to the server (a file opened from disk has
nothing to reach). Texts come from the stored, masked-at-import data, and every string
shown is masked again here (``secrets.mask``), so a secret cannot reach the file
even through a summariser that echoed one. The page frame, CSS and chart drawing are the
shared report shell (``ctxlab.web.report_shell``; the suite report uses it too).

Used by the compare page's "Download report" (``?format=report``) and ``manage.py report``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from ctxlab.engine.privacy.secrets import mask
from ctxlab.serving.abandon import raise_if_abandoned
from ctxlab.web import report_shell
from replay_app.compare import compare_steps, overview
from replay_app.display import charts
from replay_app.display.markdown_safe import render as render_markdown
from replay_app.models import Run

REPORT_COMPACTIONS = 200  # summary rows in the file (a page shows 10 at a time)
LOST_FACTS_PER_EVENT = 40
CHART_ID = "report-curves"


def _masked(value: Any) -> str:
    return mask(str(value)) if value not in (None, "") else ""


def _lost(ret: dict[str, Any]) -> dict[str, Any]:
    events = []
    for e in ret.get("events") or []:
        if not e.get("lost_count"):
            continue
        facts = [
            {
                "kind": f.get("kind", ""),
                "value": _masked(f.get("value")),
                "message": f.get("message"),
            }
            for f in (e.get("lost") or [])[:LOST_FACTS_PER_EVENT]
        ]
        events.append({**{k: e.get(k) for k in ("event", "compaction", "kind", "step", "at_risk",
                                                 "lost_count", "messages")},
                       "facts": facts})  # fmt: skip
    return {
        **{k: ret.get(k) for k in ("retention", "retained", "at_risk", "lost")},
        "events": events,
    }


def report_context(runs: Sequence[Run]) -> dict[str, Any]:
    runs = list(runs)
    retentions = overview.retentions(runs)
    raise_if_abandoned()  # the downloader went away: stop between the costly steps
    rows = overview.metric_rows(runs, retentions)
    spec = charts.compare_curves(overview.curves(runs))
    raise_if_abandoned()
    config = {**charts.CONFIG, "toImageButtonOptions": {**charts.CONFIG["toImageButtonOptions"]}}
    config["toImageButtonOptions"]["filename"] = "ctxlab-compare-" + "-".join(
        str(r.pk) for r in runs
    )
    ordinal_rows, _, _ = compare_steps.summaries_by_compaction(runs, per_page=REPORT_COMPACTIONS)
    raise_if_abandoned()
    summaries = [
        {
            "ordinal": row.ordinal,
            "cells": [
                None
                if cell is None
                else {
                    "step": cell.compaction.step,
                    "messages": cell.compaction.messages,
                    "measured": cell.compaction.measured,
                    "html": mark_safe(render_markdown(_masked(cell.output))),  # noqa: S308
                    "error": _masked(cell.error),
                    "has_summary": cell.compaction.summary_seq is not None,
                }
                for cell in row.cells
            ],
        }
        for row in ordinal_rows
    ]
    transcript = runs[0].transcript
    return {
        "title": _masked(transcript.display_title),
        "transcript": transcript,
        "runs": [
            {
                "id": r.pk,
                "label": _masked(r.label),
                "strategy": r.strategy,
                "window": r.window,
                "status": r.status,
            }
            for r in runs
        ],  # fmt: skip
        "rows": rows,
        "best_note": overview.best_note(runs),  # the rule, stated under the table
        "summaries": summaries,
        "lost": [(r, _lost(ret)) for r, ret in zip(runs, retentions, strict=True)],
        "generated": datetime.now(UTC),
        "chart": report_shell.chart(
            spec, config, div_id=CHART_ID, label="Context tokens per step for each run"
        ),
        **report_shell.shell_context(),
    }


def report_html(runs: Sequence[Run]) -> str:
    """The whole file (UTF-8 text)."""
    return render_to_string("replay_app/report/compare_report.html", report_context(runs))


def report_filename(runs: Sequence[Run]) -> str:
    return "ctxlab-compare-" + "-".join(str(r.pk) for r in runs) + ".html"
