// Drag-and-drop for the upload form: each dropped (or chosen) file is posted on its own so
// every file reports its own result as soon as it is imported. Without this script the form
// is a plain multi-file POST (htmx or not), so nothing depends on it.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  const zone = document.getElementById("drop-zone");
  if (!form || !zone || !window.fetch || !window.FormData) return;
  const input = form.querySelector('input[type="file"]');
  const results = document.getElementById("upload-results");
  const busy = document.getElementById("upload-busy");

  async function postOne(file) {
    const data = new FormData();
    data.append("files", file, file.name);
    data.append("format", form.querySelector('[name="format"]').value);
    data.append("csrfmiddlewaretoken", form.querySelector('[name="csrfmiddlewaretoken"]').value);
    const response = await fetch(form.action, {
      method: "POST",
      body: data,
      headers: { "HX-Request": "true" },
      credentials: "same-origin",
    });
    // The server escapes every transcript-derived string in this fragment.
    results.insertAdjacentHTML("beforeend", await response.text());
  }

  async function postAll(files) {
    if (!files.length) return;
    busy && busy.classList.add("htmx-request");
    try {
      for (const file of files) {
        await postOne(file);
      }
    } finally {
      busy && busy.classList.remove("htmx-request");
      input.value = "";
      if (window.htmx) {
        htmx.ajax("GET", form.dataset.listUrl + window.location.search, {
          target: "#upload-table",
          swap: "outerHTML",
        });
      }
    }
  }

  form.addEventListener("submit", function (event) {
    if (!input.files.length) return;
    event.preventDefault();
    event.stopPropagation();
    postAll(Array.from(input.files));
  }, true);  // capture: runs before htmx's own submit handler

  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) {
      event.preventDefault();
      zone.classList.add("is-over");
    });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function () { zone.classList.remove("is-over"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    postAll(Array.from(event.dataTransfer.files));
  });
})();
