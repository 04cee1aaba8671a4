"""The shell of every shared report file (a comparison, a suite): one self-contained HTML
page that opens from disk and makes no request anywhere.

``templates/report/shell.html`` holds the page frame and the CSS (light and dark, following
the reader's system: a file has no toggle); a report template extends it and places its
charts with ``templates/report/chart.html``. Each chart is a JSON data block drawn by
``DRAW_JS``, which runs after plotly.js, both inlined at the end of the body. The modebar
keeps plotly's PNG button and gains an SVG one; both work offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from ctxlab.web.plots import figure_json
from ctxlab.web.staticfinders import plotly_js_path


def inline_script(source: str) -> SafeString:
    """Script text that cannot close its own element early."""
    return mark_safe(source.replace("</", "<\\/"))  # noqa: S308 - only our files and plotly.js


def shell_context() -> dict[str, Any]:
    """What the shell template needs besides the report's own context."""
    return {
        "plotly_js": inline_script(plotly_js_path().read_text(encoding="utf-8")),
        "draw_js": inline_script(DRAW_JS),
    }


def chart(
    figure: Mapping[str, Any], config: Mapping[str, Any], *, div_id: str, label: str
) -> dict[str, Any]:
    """One chart for ``report/chart.html``: its element id, aria label and data block."""
    return {
        "id": div_id,
        "label": label,
        "figure": mark_safe(figure_json(figure, config)),  # noqa: S308 - figure_json escapes
    }


# Draws every chart from its data block; the SVG button beside plotly's PNG one; dark charts
# when the reader's system is dark. A drawn chart gets data-plotted (what tests wait for).
DRAW_JS = """
(function () {
  "use strict";
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  document.querySelectorAll("div.report-chart").forEach(function (div) {
    var fig = JSON.parse(document.getElementById(div.id + "-figure").textContent);
    if (dark) {
      fig.layout.paper_bgcolor = "#111827";
      fig.layout.plot_bgcolor = "#111827";
      fig.layout.font = Object.assign({}, fig.layout.font, {color: "#e5e7eb"});
    }
    var filename = (fig.config.toImageButtonOptions || {}).filename || div.id;
    fig.config.modeBarButtonsToAdd = [{
      name: "Download plot as SVG",
      icon: Plotly.Icons.disk,
      click: function (gd) {
        Plotly.downloadImage(gd, {format: "svg", filename: filename});
      }
    }];
    Plotly.newPlot(div, fig.data, fig.layout, fig.config).then(function () {
      div.dataset.plotted = "true";
    });
  });
})();
"""
