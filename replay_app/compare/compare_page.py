"""The compare page (``/compare/?runs=…``): one object that its template (or the htmx
section it swaps), its JSON twin and its metrics CSV all read.

Sections are computed on first use: the CSV needs only the metrics, a matrix fragment only
the matrix. ``?spage`` pages the summaries, ``?at`` puts the fate matrix at a step (default:
the final one).
"""

from __future__ import annotations

import dataclasses
import html
from functools import cached_property
from typing import Any

from django.http import QueryDict
from django.utils.safestring import SafeString, mark_safe

from ctxlab.serving.abandon import raise_if_abandoned
from ctxlab.web.http import int_param
from replay_app import memo
from replay_app.compare import compare_steps, inputs, overview, pieces, survival_table
from replay_app.compare import originals as agreement
from replay_app.display import charts
from replay_app.display.vocabulary import event_label
from replay_app.models import Run
from replay_app.steps import fatelog, run_curve

SHOWN = survival_table.COMPARE_SHOWN  # compactions, findings, drifts listed per run


class ComparePage:
    def __init__(self, runs: list[Run], query: QueryDict) -> None:
        self.runs = runs
        self.query = query
        self.ids = ",".join(str(r.pk) for r in runs)

    @cached_property
    def stored(self) -> list[dict[str, Any]]:
        """Each run's compare inputs, stored when it finished (``inputs``)."""
        return inputs.for_runs(self.runs)

    @cached_property
    def retentions(self) -> list[dict[str, Any]]:
        """The whole analyses (the JSON twin); the page shows ``lost``."""
        raise_if_abandoned()
        return overview.retentions(self.runs)

    @cached_property
    def lost(self) -> list[dict[str, Any]]:
        return overview.lost_heads(self.runs, self.stored)

    @cached_property
    def metric_rows(self) -> list[overview.MetricRow]:
        return overview.metric_rows(self.runs, self.lost)  # the head keeps the figures

    @cached_property
    def summaries(self) -> tuple[list[overview.SummaryRow], int, int]:
        raise_if_abandoned()
        return overview.summary_rows(self.runs, page=int_param(self.query.get("spage"), 1) or 1)

    @cached_property
    def by_ordinal(self) -> tuple[list[compare_steps.OrdinalRow], int, int]:
        page = int_param(self.query.get("spage"), 1) or 1
        raise_if_abandoned()
        return compare_steps.summaries_by_compaction(self.runs, page=page, stored=self.stored)

    @cached_property
    def matrix_step(self) -> int | None:
        return int_param(self.query.get("at"))  # the fate matrix at this step (None: final)

    @cached_property
    def matrix(self) -> tuple[int, list[list[pieces.MatrixCell]]]:
        messages = self.runs[0].transcript.message_count
        raise_if_abandoned()
        stored = self.stored if self.matrix_step is None else None
        return overview.matrix(self.runs, messages, step=self.matrix_step, stored=stored)

    @cached_property
    def chart(self) -> str:
        def build() -> str:
            return compare_html(overview.stored_curves(self.runs, self.stored))

        return memo.cached_many(self.runs, "compare-html", build)

    @cached_property
    def survival(self) -> survival_table.Table:
        """Every run's whole table (the JSON twin), the original's row first if any."""
        raise_if_abandoned()
        return survival_table.table(self.runs, shown=SHOWN)

    @cached_property
    def survival_shown(self) -> survival_table.Table:
        """The page's: from the heads stored with the runs' compare inputs."""
        heads = [piece["survival"] for piece in self.stored]
        return survival_table.table_of_heads(self.runs, heads, SHOWN)

    @cached_property
    def originals(self) -> agreement.Comparison:
        """The transcript agent's own compactions as a run-like row, then each run's."""
        return agreement.comparison(self.runs)

    def csv(self) -> str:
        return overview.metrics_csv(self.runs, self.metric_rows)

    def csv_filename(self) -> str:
        return f"compare-{'-'.join(str(r.pk) for r in self.runs)}.csv"

    @cached_property
    def matrix_href(self) -> str:
        """The step view at the matrix's step: where its cells link (with their message)."""
        final = max(compare_steps._steps_of(self.runs) - 1, 0)
        at = final if self.matrix_step is None else self.matrix_step
        return compare_steps.step_view_url(self.ids, at)

    def _strips(self) -> list[tuple[Run, SafeString]]:
        href = self.matrix_href
        _, grid = self.matrix
        return [
            (
                run,
                mark_safe(  # noqa: S308 - escaped inside
                    overview.matrix_strip(
                        cells, href=href, name=f"run {run.pk} · {run.label}", first=n == 0
                    )
                ),
            )
            for n, (run, cells) in enumerate(zip(self.runs, grid, strict=True))
        ]

    def context(self, *, lazy_matrix: bool = False) -> dict[str, Any]:
        """The template's context. Sections are callables the template calls when it
        renders them: finished runs' sections come rendered from the memo (``memo_runs`` in
        ``compare.html``) without building them."""
        runs = self.runs
        return {
            "runs": runs,
            "ids": self.ids,
            "chart": lambda: self.chart,
            "rows": lambda: self.metric_rows,
            "valueless_rows": lambda: [row for row in self.metric_rows if row.empty],
            "best_note": lambda: overview.best_note(runs),
            "retentions": lambda: list(zip(runs, self.lost, strict=True)),
            "lost_events": pieces.LOST_EVENTS,
            "summary_rows": lambda: self.summaries[0],
            "ordinal_rows": lambda: self.by_ordinal[0],
            "spage": lambda: self.by_ordinal[1],
            "spages": lambda: self.by_ordinal[2],
            # the main page's matrix comes in its own request (``views.run_compare``)
            "lazy_matrix": lazy_matrix and self.matrix_step is None,
            "matrix_step": self.matrix_step,
            "final_step": max(compare_steps._steps_of(runs) - 1, 0),
            "matrix": self._strips,
            "bucket": lambda: self.matrix[0],
            "message_count": runs[0].transcript.message_count,
            "fate_names": fatelog.FATES,
            "survival": lambda: self.survival_shown,
            "originals": lambda: self.originals,
        }

    def as_json(self) -> dict[str, Any]:
        runs, retentions = self.runs, self.retentions
        summary_rows, spage, spages = self.summaries
        ordinal_rows, opage, opages = self.by_ordinal
        size, grid = self.matrix
        pairs = list(zip(runs, retentions, strict=True))
        return {
            "runs": [
                {
                    "id": r.pk,
                    "label": r.label,
                    "strategy": r.strategy,
                    "window": r.window,  # the comparison's model window (None: its own)
                    "status": r.status,
                    "transcript": r.transcript_id,
                    "retention": ret.get("retention"),
                }
                for r, ret in pairs
            ],
            "retention": {str(r.pk): ret.get("retention") for r, ret in pairs},
            "metrics": [
                {
                    "key": m.key,
                    "label": m.label,
                    "unit": m.unit,
                    "better": m.better,
                    "help": m.help,
                    "best_rule": m.best_rule,
                    "values": m.values,
                    "best": m.best,
                    "spreads": m.spreads,  # per run: its replicates' spread, else None
                }
                for m in self.metric_rows
            ],
            "best": overview.best_note(runs).as_json(),  # the rule stated by the table
            "lost": {str(r.pk): ret for r, ret in pairs},
            "curves": {str(r.pk): run_curve.curve(r).as_dict() for r in runs},
            "summaries": {
                "page": spage,
                "pages": spages,
                "rows": [
                    {
                        "step": row.step,
                        "cells": [
                            None
                            if c is None
                            else {
                                "seq": c.seq,
                                "output": c.output,
                                "error": c.error,
                                "diff": [x for _, x in c.diff],
                            }
                            for c in row.cells
                        ],
                    }
                    for row in summary_rows
                ],
            },
            "matrix": {
                "bucket": size,
                "runs": {
                    str(r.pk): [
                        {
                            "start": c.start,
                            "end": c.end,
                            "fate": c.fate,
                            "counts": c.counts,
                            "url": compare_steps.message_link(self.matrix_href, c.start),
                        }
                        for c in cells
                    ]
                    for r, cells in zip(runs, grid, strict=True)
                },
                "step": self.matrix_step,
            },
            "survival": self.survival.as_json(),  # per run per category
            "originals": self.originals.as_json(),  # None: the transcript recorded none
            "summaries_by_compaction": {
                "page": opage,
                "pages": opages,
                "rows": [
                    {
                        "ordinal": row.ordinal,
                        "cells": [c.as_dict() if c else None for c in row.cells],
                    }
                    for row in ordinal_rows
                ],
            },
        }


def compare_html(curves: list[charts.RunCurve]) -> str:
    """The runs' overlaid token curves as an embeddable plotly chart."""
    ids = "-".join(c.label.split(" ", 1)[0] for c in curves)
    bare = [dataclasses.replace(c, events=()) for c in curves]
    spec = charts.compare_curves(bare)
    # each run's event markers after its two lines (as compare_curves places them)
    data: list[dict[str, Any]] = []
    for trace in spec["data"]:
        data.append(trace)
        group = trace.get("legendgroup")
        if trace.get("showlegend") is False and group and group.startswith("run"):
            i = int(group[3:])
            data.extend(_event_traces(curves[i], i))
    spec["data"] = data
    return charts.chart_html(spec, div_id="compare-plot", filename=f"compare-{ids}")


# An event marker's hover (``charts.event_hover``'s lines) drawn by plotly from its numbers,
# one trace per kind (its label in the template): thousands of markers on five runs,
# ~30 bytes each instead of ~170.
EVENT_HOVER = (
    "<b>{label}%{{customdata[3]}}</b> · step %{{x}}<br>%{{y:,}} → %{{customdata[0]:,}} tokens "
    "(%{{customdata[1]:+,}} saved)<br>%{{customdata[2]}} message(s) touched<extra></extra>"
)


def _event_traces(curve: charts.RunCurve, i: int) -> list[dict[str, Any]]:
    """``charts._event_trace`` of one run, one trace per event kind, its hover drawn from
    ``customdata`` (tokens after, saved, messages touched, " · compaction #K" or "")."""
    by_kind: dict[str, list[charts.EventPoint]] = {}
    for e in curve.events:
        by_kind.setdefault(e.kind, []).append(e)
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"{curve.label} events",
            "x": [e.step for e in events],
            "y": [e.tokens_before for e in events],
            "customdata": [
                [
                    e.tokens_after,
                    e.tokens_before - e.tokens_after,
                    e.messages,
                    "" if e.compaction is None else f" · compaction #{e.compaction}",
                ]
                for e in events
            ],  # fmt: skip
            "hovertemplate": EVENT_HOVER.format(label=html.escape(event_label(kind))),
            "marker": {
                "color": charts.RUN_COLOURS[i % len(charts.RUN_COLOURS)],
                "size": 9,
                "symbol": "diamond",
                "line": {"width": 1},
            },
            "meta": {"role": "events"},
            "legendgroup": f"run{i}",
            "showlegend": False,
        }
        for kind, events in by_kind.items()
    ]
