// Compare pages: a click on a point of the compare curves opens the step view at that step;
// in the step view the arrow keys follow the previous/next links (which work without JS);
// in the fate matrix they move between its cells.
(function () {
  "use strict";
  function typing(t) {
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  // The fate matrix is one tab stop (only one cell has tabindex 0, compare/overview.py's
  // matrix_strip): the arrow keys move between cells and rows, Home/End to a row's ends,
  // and the cell moved to becomes the matrix's tab stop. Enter follows the cell's link.
  function matrixKey(ev) {
    var cell = ev.target;
    if (!cell || !cell.classList || !cell.classList.contains("fate-cell")) return false;
    var strip = cell.parentElement;
    var cells = Array.prototype.slice.call(strip.querySelectorAll(".fate-cell"));
    var at = cells.indexOf(cell);
    var next = null;
    if (ev.key === "ArrowLeft") next = cells[Math.max(at - 1, 0)];
    else if (ev.key === "ArrowRight") next = cells[Math.min(at + 1, cells.length - 1)];
    else if (ev.key === "Home") next = cells[0];
    else if (ev.key === "End") next = cells[cells.length - 1];
    else if (ev.key === "ArrowUp" || ev.key === "ArrowDown") {
      var strips = Array.prototype.slice.call(
        strip.closest(".fate-matrix").querySelectorAll(".fate-strip"));
      var row = strips.indexOf(strip) + (ev.key === "ArrowUp" ? -1 : 1);
      if (row < 0 || row >= strips.length) next = cell;
      else {
        var other = strips[row].querySelectorAll(".fate-cell");
        next = other[Math.min(at, other.length - 1)] || cell;
      }
    } else return false;
    ev.preventDefault();
    if (next && next !== cell) {
      var matrix = strip.closest(".fate-matrix");
      Array.prototype.forEach.call(matrix.querySelectorAll('.fate-cell[tabindex="0"]'),
        function (c) { c.setAttribute("tabindex", "-1"); });
      next.setAttribute("tabindex", "0");
      next.focus();
    }
    return true;
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || typing(ev.target)) return;
    if (matrixKey(ev)) return;
    var rel = ev.key === "ArrowLeft" ? "prev" : ev.key === "ArrowRight" ? "next" : "";
    if (!rel) return;
    var link = document.querySelector('#step-nav a[rel="' + rel + '"]');
    if (!link) return;
    ev.preventDefault();
    window.location.assign(link.href);
  });

  function hookCurves() {
    var wrap = document.getElementById("compare-plot-wrap");
    var plot = wrap && wrap.querySelector("[data-plotly]");
    if (!plot) return;
    var tries = 0;
    var timer = setInterval(function () {
      tries += 1;
      if (plot.dataset.plotted === "true" && typeof plot.on === "function") {
        clearInterval(timer);
        plot.on("plotly_click", function (data) {
          var point = data && data.points && data.points[0];
          if (!point || typeof point.x !== "number") return;
          window.location.assign(wrap.dataset.stepUrl + Math.round(point.x));
        });
        plot.dataset.stepLinks = "true";
      } else if (tries > 300) {
        clearInterval(timer);
      }
    }, 100);
  }
  document.addEventListener("DOMContentLoaded", hookCurves);

  // Summaries by compaction: the sticky bar under the table says how many are ticked and
  // which; with two, its button is the next thing to press.
  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (!box || !box.classList || !box.classList.contains("diff-pick")) return;
    var form = box.closest("form");
    var bar = form && form.querySelector("#diff-bar");
    var said = form && form.querySelector("#diff-ticked");
    if (!bar || !said) return;
    var ticked = form.querySelectorAll("input.diff-pick:checked");
    bar.classList.toggle("ready", ticked.length === 2);
    said.textContent = ticked.length === 2
      ? "2 summaries ticked: diff them."
      : ticked.length > 2 ? ticked.length + " ticked: untick all but two."
      : ticked.length === 1 ? "1 summary ticked: tick one more." : "Tick two summaries.";
  });
})();
