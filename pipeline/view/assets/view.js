// foldsweep viewer: sort any table.sortable by a click on its header, filter a table by a
// text box, and, in an exported file, show one page at a time from the URL fragment
// (#overview, #units?verdict=invalid&reason=R, #u12). No dependencies.
(function () {
  "use strict";

  function cellValue(row, index) {
    var cell = row.children[index];
    return cell ? cell.textContent.trim() : "";
  }

  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var descending = th.getAttribute("data-order") === "asc";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      var nx = parseFloat(x), ny = parseFloat(y);
      var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    th.setAttribute("data-order", descending ? "desc" : "asc");
  }

  function makeSortable(table) {
    var head = table.tHead;
    if (!head || !head.rows.length) { return; }
    Array.prototype.forEach.call(head.rows[0].cells, function (th, index) {
      if (th.querySelector("a")) { return; }  // server-sorted column: a link does it
      th.classList.add("sortable");
      th.addEventListener("click", function () { sortBy(table, index, th); });
    });
  }

  function columnIndex(table, name) {
    var head = table.tHead;
    if (!head) { return -1; }
    var cells = head.rows[0].cells;
    for (var i = 0; i < cells.length; i++) {
      if (cells[i].getAttribute("data-column") === name) { return i; }
    }
    return -1;
  }

  // Keep the rows whose columns equal every filter and whose text contains `text`.
  function applyFilters(table, filters, text) {
    var body = table.tBodies[0];
    if (!body) { return 0; }
    var indices = Object.keys(filters).map(function (name) {
      return [columnIndex(table, name), filters[name]];
    });
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var ok = indices.every(function (pair) {  // "a|b": either value (a decision's rows)
        return pair[0] < 0 || pair[1].split("|").indexOf(cellValue(row, pair[0])) >= 0;
      });
      if (ok && text) { ok = row.textContent.toLowerCase().indexOf(text) >= 0; }
      row.classList.toggle("hidden", !ok);
      if (ok) { shown += 1; }
    });
    return shown;
  }

  function wireTextFilters() {
    Array.prototype.forEach.call(document.querySelectorAll("input[data-filter-for]"), function (input) {
      var table = document.getElementById(input.getAttribute("data-filter-for"));
      if (!table) { return; }
      input.addEventListener("input", function () {
        var shown = applyFilters(table, currentFilters(), input.value.trim().toLowerCase());
        var counter = document.getElementById(input.getAttribute("data-counter") || "");
        if (counter) { counter.textContent = String(shown); }
      });
    });
  }

  var staticFilters = {};
  function currentFilters() { return document.body.classList.contains("static") ? staticFilters : {}; }

  function decodePart(text) { return decodeURIComponent((text || "").replace(/\+/g, " ")); }

  function parseFragment() {
    var hash = window.location.hash.replace(/^#/, "") || home();
    var parts = hash.split("?");
    var filters = {};
    if (parts[1]) {
      parts[1].split("&").forEach(function (pair) {
        var kv = pair.split("=");
        if (kv[0]) { filters[decodePart(kv[0])] = decodePart(kv[1]); }
      });
    }
    return { page: decodePart(parts[0]), filters: filters };
  }

  function home() { return document.body.getAttribute("data-home") || "overview"; }

  function showFromFragment() {
    var target = parseFragment();
    var pages = document.querySelectorAll("section.page");
    var found = document.getElementById(target.page);
    Array.prototype.forEach.call(pages, function (page) {
      page.classList.toggle("shown", found ? page === found : page.id === home());
    });
    staticFilters = target.filters;
    var table = document.getElementById("units-table");
    if (table) {
      var shown = applyFilters(table, staticFilters, "");
      var counter = document.getElementById("units-shown");
      if (counter) { counter.textContent = String(shown); }
    }
    if (found) {  // a table a decision cites: its cited rows, from the fragment
      Array.prototype.forEach.call(found.querySelectorAll("table.cited-table"), function (cited) {
        applyFilters(cited, staticFilters, "");
      });
    }
    window.scrollTo(0, 0);
  }

  // A running run's overview (served only): ask the server every few seconds whether the run
  // changed on disk (/run/{i}/status) and reload the page when it has, so its counts and
  // status are the run's as of now. A finished run's page has no #live-run to poll.
  var LIVE_POLL_MS = 3000;
  function followLiveRun() {
    var live = document.getElementById("live-run");
    var url = live && live.getAttribute("data-status-url");
    if (!url) { return; }
    var shown = live.getAttribute("data-version");
    function poll() {
      fetch(url, { cache: "no-store" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (status) {
          if (status && status.version !== shown) { window.location.reload(); return; }
          window.setTimeout(poll, LIVE_POLL_MS);
        })
        .catch(function () { window.setTimeout(poll, LIVE_POLL_MS); });
    }
    window.setTimeout(poll, LIVE_POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
    wireTextFilters();
    followLiveRun();
    if (document.body.classList.contains("static")) {
      window.addEventListener("hashchange", showFromFragment);
      showFromFragment();
    }
  });
})();
