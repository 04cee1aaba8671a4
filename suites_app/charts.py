"""The suite's charts as data (``ctxlab.web.plots``: a JSON block drawn by static/js/plots.js,
no inline script): the heatmap of a 2-parameter grid (one trace per metric, a dropdown
choosing it) and cost vs retention with the Pareto front. Hover texts are escaped: labels
are user text."""

from __future__ import annotations

import html
from typing import Any

from ctxlab.engine.core.catalogue import METRICS
from ctxlab.web.plots import figure_html

from .configs import fmt
from .results import RETENTION_KEY, SuiteResults

PLOT_CONFIG: dict[str, Any] = {"displaylogo": False, "toImageButtonOptions": {"format": "png"}}
FRONT = "#2563eb"
OTHER = "#9ca3af"


def _config(filename: str) -> dict[str, Any]:
    return {**PLOT_CONFIG, "toImageButtonOptions": {"format": "png", "filename": filename}}


def heatmap_figure(page: SuiteResults) -> dict[str, Any]:
    heat = page.heatmap
    assert heat is not None
    keys = list(heat.cells)
    x = [fmt(v) for v in heat.x_values]
    y = [fmt(v) for v in heat.y_values]
    data = []
    for key in keys:
        rows = heat.cells[key]
        label = html.escape(METRICS[key].label)
        data.append(
            {
                "type": "heatmap",
                "x": x,
                "y": y,
                "z": [[v for v, _ in row] for row in rows],
                "text": [
                    [
                        f"{html.escape(heat.x_key)}={html.escape(xv)}<br>"
                        f"{html.escape(heat.y_key)}={html.escape(yv)}<br>"
                        f"{label} (median): {'—' if v is None else f'{v:,.4g}'}"
                        for (v, _), xv in zip(row, x, strict=True)
                    ]
                    for row, yv in zip(rows, y, strict=True)
                ],
                "hoverinfo": "text",
                "colorscale": "Viridis",
                "reversescale": METRICS[key].better == "lower",  # bright = better
                "visible": key == heat.default,
                "name": METRICS[key].label,
                "meta": {"metric": key},
            }
        )
    buttons = [
        {
            "label": METRICS[key].label,
            "method": "update",
            "args": [{"visible": [k == key for k in keys]}],
        }
        for key in keys
    ]
    layout = {
        "template": {},
        "height": 380,
        "margin": {"l": 90, "r": 20, "t": 60, "b": 60},
        "xaxis": {"title": {"text": heat.x_key}, "type": "category"},
        "yaxis": {"title": {"text": heat.y_key}, "type": "category"},
        "updatemenus": [
            {
                "type": "dropdown",
                "buttons": buttons,
                "active": keys.index(heat.default) if heat.default in keys else 0,
                "x": 0,
                "xanchor": "left",
                "y": 1.2,
                "yanchor": "top",
            }
        ],
    }
    return {"data": data, "layout": layout}


def heatmap_html(page: SuiteResults) -> str:
    return figure_html(
        heatmap_figure(page),
        div_id="suite-heatmap",
        config=_config(f"suite-{page.suite.pk}-heatmap"),
    )


def pareto_figure(page: SuiteResults) -> dict[str, Any] | None:
    cost = page.cost_key
    points = [
        c
        for c in page.configs
        if cost and c.median(cost) is not None and c.median(RETENTION_KEY) is not None
    ]
    if not points or cost is None:
        return None
    traces = []
    for on_front, colour, name in ((True, FRONT, "Pareto front"), (False, OTHER, "dominated")):
        chosen = sorted(
            (c for c in points if c.pareto == on_front), key=lambda c: c.median(cost) or 0
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers" if on_front else "markers",
                "name": name,
                "x": [c.median(cost) for c in chosen],
                "y": [c.median(RETENTION_KEY) for c in chosen],
                "hovertext": [html.escape(c.label) for c in chosen],
                "hoverinfo": "text+x+y",
                "marker": {"color": colour, "size": 9},
                "line": {"color": colour},
            }
        )
    layout = {
        "template": {},
        "height": 340,
        "margin": {"l": 70, "r": 20, "t": 30, "b": 60},
        "xaxis": {"title": {"text": f"{METRICS[cost].label} (median, {METRICS[cost].unit})"}},
        "yaxis": {"title": {"text": "Fact retention (median)"}, "rangemode": "tozero"},
        "hovermode": "closest",
    }
    return {"data": traces, "layout": layout}


def pareto_html(page: SuiteResults) -> str:
    figure = pareto_figure(page)
    if figure is None:
        return ""
    return figure_html(
        figure, div_id="suite-pareto", config=_config(f"suite-{page.suite.pk}-pareto")
    )
