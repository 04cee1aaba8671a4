"""Pure chart builders: stored usage rows -> plotly figure HTML (drawn by static/js/plots.js)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from ctxlab.web.plots import figure_html, whole_number_axis

# (message index, uncached input, cache read, cache write 5m, cache write 1h, output)
UsageRow = tuple[int, int, int, int, int, int]


def usage_figure(
    rows: Sequence[UsageRow], *, compactions: Sequence[dict[str, Any]] = ()
) -> go.Figure:
    """Reported prompt size per API call, split into its buckets, plus the output tokens.

    Stacked areas add up to the whole prompt the provider saw (its context size), so the
    curve's top is the reported context; original compactions are drawn as vertical lines.
    """
    x = [r[0] for r in rows]
    figure = go.Figure()
    for label, column in (
        ("cache read", 2),
        ("cache write 5m", 3),
        ("cache write 1h", 4),
        ("uncached input", 1),
    ):
        values = [r[column] for r in rows]
        if any(values):
            figure.add_trace(
                go.Scatter(x=x, y=values, name=label, stackgroup="prompt", mode="lines")
            )
    figure.add_trace(
        go.Scatter(x=x, y=[r[5] for r in rows], name="output", mode="lines", line={"dash": "dot"})
    )
    for compaction in compactions:
        figure.add_vline(
            x=compaction.get("before_index", 0),
            line={"color": "#b45309", "dash": "dash"},
            annotation_text=str(compaction.get("kind", "compaction")),
        )
    figure.update_layout(
        template="none",
        height=320,
        margin={"l": 60, "r": 20, "t": 30, "b": 40},
        xaxis={"title": {"text": "message index"}, **whole_number_axis(x)},
        yaxis_title="reported tokens",
        legend={"orientation": "h", "y": 1.12},
        hovermode="x unified",
    )
    return figure


def usage_chart_html(
    rows: Sequence[UsageRow], *, compactions: Sequence[dict[str, Any]] = ()
) -> str:
    # Trace names and annotation text come from the transcript: figure_html puts them in a
    # JSON data block escaped so that they cannot close it (no inline script at all).
    return figure_html(
        usage_figure(rows, compactions=compactions),
        div_id="usage-chart",
        config={"displaylogo": False, "responsive": True},
    )
