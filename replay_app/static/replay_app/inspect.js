// Step scrubber: the slider and the arrow keys load the context at a step via htmx.
// Without JS the slider's form submits ?step=N and the prev/next links work as links.
(function () {
  "use strict";
  function slider() { return document.getElementById("step-slider"); }
  function output() { return document.getElementById("step-output"); }
  var timer = null;

  function load(step) {
    var s = slider();
    if (!s || !window.htmx) return;
    var max = parseInt(s.max, 10), n = Math.max(0, Math.min(max, step));
    s.value = String(n);
    if (output()) output().textContent = String(n);
    var url = s.dataset.url.replace(/\/0\/$/, "/" + n + "/");
    clearTimeout(timer);
    timer = setTimeout(function () {
      window.htmx.ajax("GET", url, { target: "#step-context", swap: "outerHTML" });
    }, 60);
  }

  document.addEventListener("input", function (ev) {
    if (ev.target === slider()) load(parseInt(ev.target.value, 10));
  });
  document.addEventListener("change", function (ev) {
    if (ev.target === slider()) load(parseInt(ev.target.value, 10));
  });

  document.addEventListener("keydown", function (ev) {
    var s = slider();
    if (!s || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var t = ev.target;
    if (t === s) return; // the focused slider moves itself and fires "input"
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var step = parseInt(s.value, 10), max = parseInt(s.max, 10);
    if (ev.key === "ArrowLeft") step -= 1;
    else if (ev.key === "ArrowRight") step += 1;
    else if (ev.key === "Home") step = 0;
    else if (ev.key === "End") step = max;
    else return;
    ev.preventDefault();
    load(step);
  });

  // Keep the slider in step with swaps made by the prev/next links.
  document.addEventListener("htmx:afterSwap", function () {
    var ctx = document.getElementById("step-context"), s = slider();
    if (ctx && s && ctx.dataset.step !== undefined) {
      s.value = ctx.dataset.step;
      if (output()) output().textContent = ctx.dataset.step;
    }
  });

  // The submit button is for browsers without JS.
  document.addEventListener("DOMContentLoaded", function () {
    var b = document.querySelector(".scrubber-go");
    if (b) b.hidden = true;
  });
})();
