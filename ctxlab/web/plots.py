"""Charts as data, not code: a plotly figure -> ``<div data-plotly>`` + a JSON data block.

plotly's ``to_html`` emits an inline ``<script>Plotly.newPlot(...)</script>``, which needs
``script-src 'unsafe-inline'``. Here the page carries only the figure as
``<script type="application/json">`` (a data block: never executed, allowed by CSP) and
``static/js/plots.js`` draws every such chart, on load and after htmx swaps.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.io.json import to_json_plotly

# Escapes that keep a JSON text inert inside <script>: no "</script>" or "<!--" can form, so
# a transcript string cannot end the data block. plotly already escapes < > /; these hold even
# if it stopped (Django's json_script escapes the same three characters).
_SCRIPT_SAFE = (("<", "\\u003C"), (">", "\\u003E"), ("&", "\\u0026"))

# Counts (steps, message indexes) are whole numbers, but plotly ticks a short axis at
# halves (2, 2.5, 3 ...): up to this span every whole number gets a tick; beyond it
# plotly's own spacing is whole already.
WHOLE_TICKS_SPAN = 10


def whole_number_axis(values: Sequence[float]) -> dict[str, Any]:
    """Axis settings that tick a count axis on whole numbers only."""
    if values and max(values) - min(values) <= WHOLE_TICKS_SPAN:
        return {"tick0": 0, "dtick": 1}
    return {}


def figure_json(figure: go.Figure | Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """``{"data", "layout", "config"}`` as JSON safe to place inside a ``<script>``."""
    spec = figure.to_plotly_json() if isinstance(figure, go.Figure) else figure
    text: str = to_json_plotly(
        {
            "data": spec.get("data", []),
            "layout": spec.get("layout", {}),
            "config": {"responsive": True, **config},  # to_html's default too
        }
    )
    for char, escape in _SCRIPT_SAFE:
        text = text.replace(char, escape)
    return text


def figure_html(
    figure: go.Figure | Mapping[str, Any], *, div_id: str, config: Mapping[str, Any]
) -> str:
    """The chart's element and its data block (trusted markup: everything in it is escaped)."""
    div_id = html.escape(div_id)
    return (
        f'<div id="{div_id}" class="plotly-graph-div" data-plotly="{div_id}-figure"></div>'
        f'<script type="application/json" id="{div_id}-figure">'
        f"{figure_json(figure, config)}</script>"
    )
