// Sortable tables, no library and no network: every table inside <div class="sortable"> (the claims
// gallery) sorts by a column when its header is clicked (or focused and Enter/Space pressed); a second
// click reverses. Numbers sort as numbers ("2.68× tpot", "1,024"), words as words, and an empty or "—"
// cell sorts last either way. Rows that tie keep their previous order (the sort is stable).
(function () {
  "use strict";

  function key(cell) {
    var text = (cell.textContent || "").trim();
    if (text === "" || text.charAt(0) === "—") return { blank: true, num: null, text: "" };
    var m = text.replace(/,/g, "").match(/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i);
    return { blank: false, num: m ? parseFloat(m[0]) : null, text: text.toLowerCase() };
  }

  function compare(a, b) {  // two non-blank keys: numbers before words, each in their own order
    if (a.num !== null && b.num !== null) return a.num - b.num;
    if (a.num !== null) return -1;
    if (b.num !== null) return 1;
    return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
  }

  function sortBy(table, th, index) {
    var body = table.tBodies[0];
    if (!body) return;
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, key: key(row.cells[index] || row), i: i };
    });
    rows.sort(function (a, b) {
      if (a.key.blank || b.key.blank) {           // blanks stay last whatever the direction
        return (a.key.blank - b.key.blank) || a.i - b.i;
      }
      var c = compare(a.key, b.key);
      return (ascending ? c : -c) || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function init() {
    document.querySelectorAll("div.sortable table").forEach(function (table) {
      if (!table.tHead || table.dataset.sortable === "on") return;
      table.dataset.sortable = "on";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
        th.tabIndex = 0;
        th.title = "Sort by this column";
        th.addEventListener("click", function () { sortBy(table, th, index); });
        th.addEventListener("keydown", function (e) {
          if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, index); }
        });
      });
    });
  }

  // Material's instant navigation (if switched on) swaps pages without a load event: it announces each
  // page on document$; without it, the page's own DOMContentLoaded is the one to wait for.
  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(init);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
