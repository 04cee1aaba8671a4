// Compare pages: a click on a point of the compare curves opens the step view at that step;
// in the step view the arrow keys follow the previous/next links (which work without JS).
(function () {
  "use strict";
  function typing(t) {
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || typing(ev.target)) return;
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
})();
