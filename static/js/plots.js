// Draws the plotly charts the server renders as data (ctxlab/web/plots.py): an element
// <div data-plotly="ID"> and <script type="application/json" id="ID">{data, layout, config}.
// No inline script, so the CSP's script-src stays 'self'. plotly.min.js (several MB) loads
// only when a page has a chart; charts swapped in by htmx (sweep polling) draw on htmx:load.
(function () {
  "use strict";
  var plotlySrc = document.currentScript.dataset.plotlySrc;
  var loading = null;

  function plotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = plotlySrc;
        script.addEventListener("load", function () { resolve(window.Plotly); });
        script.addEventListener("error", reject);
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  function draw(root) {
    var found = Array.prototype.slice.call(root.querySelectorAll("[data-plotly]"));
    if (root.matches && root.matches("[data-plotly]")) found.push(root);
    var todo = found.filter(function (div) { return !div.dataset.plotted; });
    if (!todo.length) return;
    todo.forEach(function (div) { div.dataset.plotted = "pending"; });
    plotly().then(function (Plotly) {
      todo.forEach(function (div) {
        var block = document.getElementById(div.dataset.plotly);
        if (!block || !div.isConnected) return;
        var fig = JSON.parse(block.textContent);
        fig.layout = fitNarrow(fig.layout || {}, div.clientWidth);
        div._ctxlabLayout = JSON.parse(JSON.stringify(fig.layout));
        fig.config = withSvgButton(Plotly, fig.config || {});
        Object.assign(fig.layout, themePatch(div._ctxlabLayout, currentTheme()));
        Plotly.newPlot(div, fig.data, fig.layout, fig.config);
        div.dataset.plotted = "true";
      });
    });
  }

  // On a phone (390 px) a one-line legend above the plot wraps to several lines over the
  // plot's top and under the mode bar, and a dropdown above the plot sits under the mode
  // bar: the legend goes below the plot, and a dropdown gets a strip of margin of its own.
  var NARROW = 600;
  function fitNarrow(layout, width) {
    if (!width || width >= NARROW) return layout;
    var legend = layout.legend;
    if (legend && legend.orientation === "h" && (legend.y === undefined || legend.y > 1)) {
      layout.legend = Object.assign({}, legend, {x: 0, xanchor: "left", y: -0.22, yanchor: "top"});
    }
    var above = (layout.updatemenus || []).some(function (menu) { return menu.y > 1; });
    if (above) {
      layout.margin = Object.assign({}, layout.margin || {});
      layout.margin.t = (layout.margin.t === undefined ? 80 : layout.margin.t) + 30;
    }
    return layout;
  }

  // PNG comes from plotly's own toImage button (ctxlab/web/plots.py config); SVG beside it.
  function withSvgButton(Plotly, config) {
    var name = (config.toImageButtonOptions || {}).filename || "ctxlab-chart";
    config.modeBarButtonsToAdd = (config.modeBarButtonsToAdd || []).concat([{
      name: "Download plot as SVG",
      icon: Plotly.Icons.disk,
      click: function (gd) { Plotly.downloadImage(gd, {format: "svg", filename: name}); }
    }]);
    return config;
  }

  // Charts follow the page theme (static/js/theme.js): dark backgrounds, light text and
  // grid; the light theme restores what the server's figure said.
  var DARK = {bg: "#171e28", fg: "#e4e7ec", grid: "#334155"};
  function currentTheme() {
    return window.ctxlabTheme ? window.ctxlabTheme() : "light";
  }
  function isDarkInk(colour) {
    return /^(#000|#000000|black|#111827|#1d2330|#1f2937|#444)$/i.test(String(colour || ""));
  }
  function themePatch(original, theme) {
    var dark = theme === "dark";
    var patch = {
      paper_bgcolor: dark ? DARK.bg : (original.paper_bgcolor || "#fff"),
      plot_bgcolor: dark ? DARK.bg : (original.plot_bgcolor || "#fff"),
      font: Object.assign({}, original.font || {}, dark ? {color: DARK.fg} : {})
    };
    Object.keys(original).forEach(function (key) {
      if (!/^[xy]axis\d*$/.test(key)) return;
      patch[key] = Object.assign({}, original[key], dark ? {gridcolor: DARK.grid, zerolinecolor: DARK.grid} : {});
    });
    ["annotations", "shapes"].forEach(function (key) {
      if (!original[key]) return;
      patch[key] = original[key].map(function (item) {
        var copy = JSON.parse(JSON.stringify(item));
        if (dark && copy.font && (isDarkInk(copy.font.color) || !copy.font.color)) copy.font.color = DARK.fg;
        if (dark && copy.line && isDarkInk(copy.line.color)) copy.line.color = DARK.fg;
        return copy;
      });
    });
    if (original.legend) patch.legend = Object.assign({}, original.legend, dark ? {font: {color: DARK.fg}} : {});
    return patch;
  }
  document.addEventListener("ctxlab:theme", function (ev) {
    if (!window.Plotly) return;
    document.querySelectorAll("[data-plotted=true]").forEach(function (div) {
      if (div._ctxlabLayout) window.Plotly.relayout(div, themePatch(div._ctxlabLayout, ev.detail.theme));
    });
  });

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:load", function (ev) { draw(ev.target); });
  // A chart swapped out (each sweep poll) drops plotly's window resize listener with it.
  document.addEventListener("htmx:beforeCleanupElement", function (ev) {
    if (window.Plotly && ev.target.classList && ev.target.classList.contains("js-plotly-plot")) {
      window.Plotly.purge(ev.target);
    }
  });
})();
