"""The sweep's chart: a metric against the swept parameter's value, one trace per metric,
a dropdown (plotly's own ``updatemenus``, no page script) choosing which one is shown.

A plain plotly dict like ``charts``' builders; hover texts are escaped (labels are user text).
"""

from __future__ import annotations

import html
from typing import Any

from replay_app.display import charts
from replay_app.sweeps.sweep import Sweep, fmt_value

COLOUR = charts.STRATEGY_COLOUR


def _trace(sweep: Sweep, index: int, *, visible: bool) -> dict[str, Any]:
    column = sweep.columns[index]
    points = [row for row in sweep.rows if row.done and row.values[index] is not None]
    key = html.escape(sweep.key)
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": column.label,
        "x": [row.value for row in points],
        "y": [row.values[index] for row in points],
        "customdata": [row.run.pk for row in points],
        "hovertext": [
            f"{key}={html.escape(fmt_value(row.value))}<br>"
            f"{html.escape(column.label)}: {row.values[index]:,}<br>run {row.run.pk}"
            for row in points
        ],
        "hoverinfo": "text",
        "line": {"color": COLOUR, "width": 2},
        "marker": {"color": COLOUR, "size": 8},
        "visible": visible,
        "meta": {"metric": column.key},
    }


def figure_spec(sweep: Sweep) -> dict[str, Any]:
    data = [_trace(sweep, i, visible=i == 0) for i in range(len(sweep.columns))]
    buttons = [
        {
            "label": column.label,
            "method": "update",
            "args": [
                {"visible": [j == i for j in range(len(sweep.columns))]},
                {"yaxis.title.text": column.label},
            ],
        }
        for i, column in enumerate(sweep.columns)
    ]
    layout: dict[str, Any] = {
        "template": {},
        "height": 360,
        "margin": {"l": 80, "r": 20, "t": 50, "b": 50},
        "xaxis": {"title": {"text": sweep.key}, "zeroline": False},
        "yaxis": {"title": {"text": sweep.columns[0].label}, "rangemode": "tozero"},
        "showlegend": False,
        "hovermode": "closest",
        "updatemenus": [
            {
                "type": "dropdown",
                "buttons": buttons,
                "active": 0,
                "x": 0,
                "xanchor": "left",
                "y": 1.18,
                "yanchor": "top",
                "showactive": True,
            }
        ],
    }
    return {"data": data, "layout": layout}


def chart_html(sweep: Sweep, *, group_id: int) -> str:
    return charts.chart_html(
        figure_spec(sweep), div_id="sweep-plot", filename=f"sweep-{group_id}-{sweep.key}"
    )
