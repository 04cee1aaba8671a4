"""A suite's results as one self-contained HTML file: to attach to an issue, open from disk.

The same numbers as the results page (``results.SuiteResults``): the leaderboard with the
Pareto front of cost vs retention and its chart, the heatmap of a 2-parameter grid (chart
and table), every metric per configuration as median [quartiles], survival and probe
scores where the runs have them, each configuration's settings and outliers, and one small
table per transcript (a row per configuration's run). Links only move within the file
(``#config-N``, ``#transcript-N``): a file opened from disk has no server to reach, and
plotly.js is inlined (the shared report shell, ``ctxlab.web.report_shell``).

Every user string (suite name, configuration labels and parameters, transcript titles) is
masked again here (``secrets.mask``) and escaped by the template; the chart labels are the
masked ones too. Used by the results page's "Download report" (``?format=report``) and
``manage.py report --suite``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.template.loader import render_to_string

from ctxlab.engine.core.catalogue import METRICS, metric_best_flags
from ctxlab.engine.privacy.secrets import mask
from ctxlab.web import report_shell

from . import charts, results
from .configs import fmt
from .models import Suite
from .replay_glue import PROBE_KINDS, SURVIVAL_KEYS

# The quality figures shown apart (also rows of the full table): what survived, what probes
# about the removed parts scored.
QUALITY_KEYS = (
    "retention",
    "facts_lost",
    *SURVIVAL_KEYS,
    "probe_score",
    *(f"probe_score_{kind}" for kind in PROBE_KINDS),
    "probe_score_claude",
)
OUTLIERS_LISTED = 20  # per configuration in the file; the per-transcript tables have them all


def _masked(value: Any) -> str:
    return mask(str(value)) if value not in (None, "") else ""


def report_filename(suite: Suite) -> str:
    return f"ctxlab-suite-{suite.pk}.html"


def report_html(suite: Suite) -> str:
    """The whole file (UTF-8 text)."""
    return render_to_string("suites_app/report/suite_report.html", report_context(suite))


def report_context(suite: Suite) -> dict[str, Any]:
    page = results.build(suite)
    for config in page.configs:  # the charts read the labels too
        config.label = _masked(config.label)
    columns = page.columns
    labels = {c.index: c.label for c in page.configs}
    cost = METRICS[page.cost_key] if page.cost_key else None
    return {
        "title": _masked(suite.name),
        "suite": suite,
        "progress": page.progress,
        "replicates": page.replicates,
        "best_rule": page.best_rule,
        "columns": columns,
        "cost_label": f"{cost.label} ({cost.unit})" if cost else "",
        "leaderboard": [_leader(c, page.cost_key) for c in page.leaderboard],
        "configs": [_config(c, columns) for c in page.configs],
        "quality": results.stat_rows(page.configs, [c for c in columns if c.key in QUALITY_KEYS]),
        "metrics": results.stat_rows(page.configs, columns),
        "heatmap": _heatmap_table(page),
        "transcripts": _transcripts(
            results.all_transcript_rows(suite, columns),
            labels,
            [c.key for c in columns],
            replicates=page.replicates,
        ),  # fmt: skip
        "charts": _charts(page),
        "generated": datetime.now(UTC),
        **report_shell.shell_context(),
    }


def _leader(c: results.ConfigResult, cost_key: str | None) -> dict[str, Any]:
    return {
        "index": c.index,
        "rank": c.rank,
        "label": c.label,
        "pareto": c.pareto,
        "retention": c.median(results.RETENTION_KEY),
        "cost": c.median(cost_key) if cost_key else None,
        "done": c.counts.get("done", 0),
        "outliers": len(c.outliers),
    }


def _config(c: results.ConfigResult, columns: list[results.MetricColumn]) -> dict[str, Any]:
    params = c.config.get("params") or {}
    return {
        "index": c.index,
        "label": c.label,
        "strategy": _masked(c.config.get("strategy")),
        "window": c.config.get("window"),
        "params": [(_masked(k), _masked(fmt(v))) for k, v in sorted(params.items())],
        "counts": sorted(c.counts.items()),
        "outliers": [
            {
                "transcript_id": o.transcript_id,
                "transcript": _masked(o.transcript),
                "run": o.run_id,
                "reasons": o.reasons,
            }
            for o in c.outliers[:OUTLIERS_LISTED]
        ],  # fmt: skip
        "more_outliers": max(0, len(c.outliers) - OUTLIERS_LISTED),
    }


def _heatmap_table(page: results.SuiteResults) -> dict[str, Any] | None:
    heat = page.heatmap
    if heat is None:
        return None
    return {
        "x_key": heat.x_key,
        "y_key": heat.y_key,
        "metric": METRICS[heat.default].label if heat.default in METRICS else heat.default,
        "x_values": [fmt(x) for x in heat.x_values],
        "rows": [(fmt(y), row) for y, row in heat.default_rows],
    }


def _transcripts(
    rows_by_config: dict[int, list[results.TranscriptRow]],
    labels: dict[int, str],
    keys: list[str],
    *,
    replicates: int = 1,
) -> list[dict[str, Any]]:
    """One table per transcript: a row per configuration (per replicate), the best value
    per column marked by the catalogue's rule among that transcript's runs; with
    replicates, only where the configuration leads beyond their spread (``beyond_spread``)."""
    by_transcript: dict[int, list[tuple[int, results.TranscriptRow]]] = {}
    for index in sorted(rows_by_config):
        for row in rows_by_config[index]:
            by_transcript.setdefault(row.item.transcript_id, []).append((index, row))
    out = []
    for transcript_id, members in by_transcript.items():
        summaries = [m.item.summary or {} for _, m in members]
        flags_by_column = [
            metric_best_flags(key, [m.values[col] for _, m in members], summaries)
            for col, key in enumerate(keys)
        ]
        if replicates > 1:
            families = [index for index, _ in members]
            flags_by_column = [
                results.beyond_spread(
                    flags, [_number_or_none(m.values[col]) for _, m in members], families,
                    METRICS[key].better,
                )
                for col, (key, flags) in enumerate(zip(keys, flags_by_column, strict=True))
            ]  # fmt: skip
        out.append(
            {
                "id": transcript_id,
                "name": _masked(members[0][1].name),
                "rows": [
                    {
                        "config": index,
                        "label": labels.get(index, str(index))
                        + (f" #{m.item.replicate + 1}" if replicates > 1 else ""),
                        "run": m.item.run_id,
                        "status": m.status,
                        "reasons": m.reasons,
                        "cells": [
                            (value, flags_by_column[col][n]) for col, value in enumerate(m.values)
                        ],
                    }
                    for n, (index, m) in enumerate(members)
                ],
            }
        )
    return out


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _charts(page: results.SuiteResults) -> list[dict[str, Any]]:
    found = []
    pareto = charts.pareto_figure(page)
    if pareto is not None:
        found.append(
            report_shell.chart(
                pareto, _plot_config(page, "pareto"), div_id="suite-pareto",
                label="Cost against fact retention per configuration, the Pareto front joined",
            )
        )  # fmt: skip
    if page.heatmap is not None:
        found.append(
            report_shell.chart(
                charts.heatmap_figure(page), _plot_config(page, "heatmap"), div_id="suite-heatmap",
                label=f"Median per grid cell: {page.heatmap.x_key} × {page.heatmap.y_key}",
            )
        )  # fmt: skip
    return found


def _plot_config(page: results.SuiteResults, name: str) -> dict[str, Any]:
    return {
        **charts.PLOT_CONFIG,
        "toImageButtonOptions": {"format": "png", "filename": f"suite-{page.suite.pk}-{name}"},
    }
