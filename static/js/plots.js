// Draws the plotly charts the server renders as data (ctxlab/plots.py): an element
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
        Plotly.newPlot(div, fig.data, fig.layout, fig.config);
        div.dataset.plotted = "true";
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:load", function (ev) { draw(ev.target); });
  // A chart swapped out (each sweep poll) drops plotly's window resize listener with it.
  document.addEventListener("htmx:beforeCleanupElement", function (ev) {
    if (window.Plotly && ev.target.classList && ev.target.classList.contains("js-plotly-plot")) {
      window.Plotly.purge(ev.target);
    }
  });
})();
