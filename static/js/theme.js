// Colour theme: the system's (prefers-color-scheme) unless the reader chose one with the
// header toggle, remembered in localStorage. Loaded in <head> without defer so the page
// never flashes the wrong theme; charts follow through the "ctxlab:theme" event (plots.js).
(function () {
  "use strict";
  var KEY = "ctxlab-theme";
  var root = document.documentElement;
  var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }
  function effective() {
    var choice = stored();
    if (choice === "dark" || choice === "light") return choice;
    return media && media.matches ? "dark" : "light";
  }
  function apply() {
    var theme = effective();
    root.dataset.theme = theme;
    var button = document.getElementById("theme-toggle");
    if (button) {
      button.setAttribute("aria-pressed", theme === "dark" ? "true" : "false");
      button.title = "Dark mode " + (theme === "dark" ? "on" : "off") +
        (stored() ? " (your choice)" : " (following the system)");
    }
    document.dispatchEvent(new CustomEvent("ctxlab:theme", {detail: {theme: theme}}));
  }
  window.ctxlabTheme = effective;

  apply();
  if (media && media.addEventListener) media.addEventListener("change", apply);
  document.addEventListener("DOMContentLoaded", function () {
    apply();
    var button = document.getElementById("theme-toggle");
    if (!button) return;
    button.addEventListener("click", function () {
      try { localStorage.setItem(KEY, effective() === "dark" ? "light" : "dark"); } catch (e) {}
      apply();
    });
  });
})();
