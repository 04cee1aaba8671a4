// Transcript search: the words searched for are marked in the messages shown (the message
// list's data-search, the same case-insensitive text the server searched), and the opened
// hit's message (data-hit-message) has its marks' blocks unfolded and its first mark in
// view. Messages loaded later by htmx (the next page) are marked too. Text only: marks are
// made with createElement/textContent, nothing is parsed as HTML.
(function () {
  "use strict";
  function pattern(query) {
    return new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "giu");
  }

  function markIn(root, query) {
    var re = pattern(query);
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var parent = node.parentElement;
        if (!parent || parent.closest("mark.search-mark, script, style")) {
          return NodeFilter.FILTER_REJECT;
        }
        re.lastIndex = 0;
        return re.test(node.nodeValue) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
      },
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var text = node.nodeValue, at = 0, found, frag = document.createDocumentFragment();
      re.lastIndex = 0;
      while ((found = re.exec(text)) !== null) {
        if (!found[0]) { re.lastIndex += 1; continue; }
        if (found.index > at) frag.appendChild(document.createTextNode(text.slice(at, found.index)));
        var mark = document.createElement("mark");
        mark.className = "search-mark";
        mark.textContent = found[0];
        frag.appendChild(mark);
        at = found.index + found[0].length;
      }
      if (at < text.length) frag.appendChild(document.createTextNode(text.slice(at)));
      node.parentNode.replaceChild(frag, node);
    });
  }

  function showHit(list) {
    var index = list.dataset.hitMessage;
    var item = index && document.getElementById("m" + index);
    if (!item || item.dataset.hitShown) return;
    var marks = item.querySelectorAll("mark.search-mark");
    if (!marks.length) return;
    item.dataset.hitShown = "true";
    item.classList.add("search-hit-message");
    Array.prototype.forEach.call(marks, function (mark) {
      var open = mark.parentElement && mark.parentElement.closest("details");
      while (open) {
        open.open = true;
        open = open.parentElement && open.parentElement.closest("details");
      }
    });
    marks[0].classList.add("current");
    marks[0].scrollIntoView({ block: "center" });
  }

  function run(scope) {
    var list = document.querySelector("ol.message-list[data-search]");
    var query = list && list.dataset.search;
    if (!query) return;
    var items = (scope && scope !== document ? [scope] : [list]);
    items.forEach(function (root) { markIn(root, query); });
    showHit(list);
  }

  document.addEventListener("DOMContentLoaded", function () { run(document); });
  document.addEventListener("htmx:afterSettle", function (ev) {
    var list = document.querySelector("ol.message-list[data-search]");
    if (list && ev.target && list.contains(ev.target)) run(list);
  });
})();
