// Times in the reader's local time zone: every <time datetime> rendered by the `when`
// filter shows UTC text; rewrite it to local time and keep the UTC value as the hover title.
// Runs again after htmx swaps, so fragments get the same treatment.
(function () {
  "use strict";
  function pad(n) { return String(n).padStart(2, "0"); }
  function local(date) {
    var offset = -date.getTimezoneOffset();
    var sign = offset >= 0 ? "+" : "-";
    offset = Math.abs(offset);
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) +
      " " + pad(date.getHours()) + ":" + pad(date.getMinutes()) +
      " (UTC" + sign + pad(Math.floor(offset / 60)) + ":" + pad(offset % 60) + ")";
  }
  function rewrite(root) {
    var items = (root || document).querySelectorAll("time[datetime]:not([data-local])");
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) { continue; }
      if (!el.title) { el.title = el.textContent.trim(); }
      el.textContent = local(date);
      el.setAttribute("data-local", "");
    }
  }
  document.addEventListener("DOMContentLoaded", function () { rewrite(document); });
  document.addEventListener("htmx:afterSwap", function (e) { rewrite(e.target); });
})();
