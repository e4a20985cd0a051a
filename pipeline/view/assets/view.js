// foldsweep viewer: sort any table.sortable by a click on its header, filter a table by a
// text box, and, in an exported file, show one page at a time from the URL fragment
// (#overview, #units?verdict=invalid&reason=R, #units?filter=recall+%3C+0.5&q=text&cols=a,b,
// #u12; #r1-units?... in an export of several runs); the units filter language is
// assets/filter_expr.js. In an export each section's element ids start with the section's
// prefix (pipeline/view/anchors.py), so `part` finds a section's own elements.
// No dependencies.
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

  // Fragment keys that are not a column's equality filter.
  var CONTROLS = ["filter", "q", "cols", "sort", "desc", "page", "per", "col", "val"];

  // A section's element `name` (its id in the served page), in an export: its ids start with
  // the section's `data-ids`, or else with the section's id and a dash.
  function part(section, name) {
    if (!section) { return null; }
    var ids = section.hasAttribute("data-ids") ? section.getAttribute("data-ids") : section.id + "-";
    return document.getElementById(ids + name);
  }

  function showFromFragment() {
    var target = parseFragment();
    var pages = document.querySelectorAll("section.page");
    var element = document.getElementById(target.page);
    var found = element && element.closest ? element.closest("section.page") : null;
    var shown = found || document.getElementById(home());
    Array.prototype.forEach.call(pages, function (page) {
      page.classList.toggle("shown", page === shown);
    });
    staticFilters = {};
    Object.keys(target.filters).forEach(function (name) {
      if (CONTROLS.indexOf(name) < 0) { staticFilters[name] = target.filters[name]; }
    });
    showUnits(shown, target.filters);
    if (found) {  // a table a decision cites: its cited rows, from the fragment
      Array.prototype.forEach.call(found.querySelectorAll("table.cited-table"), function (cited) {
        applyFilters(cited, target.filters, "");
      });
    }
    if (element && element !== found) { element.scrollIntoView(); } else { window.scrollTo(0, 0); }
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

  var unitsData = {};  // by section id
  function loadUnitsData(section) {
    var node = part(section, "units-data");
    if (!(section.id in unitsData) && node) { unitsData[section.id] = JSON.parse(node.textContent); }
    return unitsData[section.id] || null;
  }

  // The export's units table from the fragment: equality filters, `filter=` (an expression of
  // filter_expr.js), `q=` (text search) and `cols=` (the columns shown).
  function showUnits(section, params) {
    var table = part(section, "units-table");
    var data = table ? loadUnitsData(section) : null;
    var language = window.foldsweepFilter;
    if (!table || !data || !language) { return; }
    var expression = params.filter || "", needle = (params.q || "").trim().toLowerCase();
    var node = null, error = "";
    try {
      node = language.parse(expression, data.columns);
    } catch (exc) {
      if (!(exc instanceof language.FilterError)) { throw exc; }
      error = exc.message + " — the filter is not applied";
    }
    var errorLine = part(section, "filter-error");
    if (errorLine) { errorLine.textContent = error; errorLine.hidden = !error; }
    setValue(part(section, "filter-expr"), expression);
    setValue(part(section, "search-text"), params.q || "");
    var equal = Object.keys(staticFilters).map(function (name) {  // "a|b": either value
      return [data.columns.indexOf(name), staticFilters[name].split("|")];
    });
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var i = Number(row.getAttribute("data-i"));
      var ok = equal.every(function (pair) {
        return pair[0] < 0 || pair[1].indexOf(data.rows[i][0][pair[0]]) >= 0;
      });
      ok = ok && (node === null || language.matches(node, data, i));
      ok = ok && (!needle || language.contains(data, i, needle));
      row.classList.toggle("hidden", !ok);
      if (ok) { shown += 1; }
    });
    var counter = part(section, "units-shown");
    if (counter) { counter.textContent = String(shown); }
    showColumns(section, table, params.cols);
  }

  function setValue(input, value) {
    if (input && input !== document.activeElement) { input.value = value; }
  }

  // Hide the columns not chosen (`cols=a,b`, `cols=all`, or the table's default set) with one
  // style rule per column, not a class on every cell.
  function showColumns(section, table, cols) {
    var chosen = cols === "all" ? null
      : (cols ? cols.split(",") : table.getAttribute("data-default-columns").split(","));
    var rules = [];
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var name = th.getAttribute("data-column");
      if (chosen && name !== "row_id" && chosen.indexOf(name) < 0) {
        rules.push("#" + table.id + " tr > :nth-child(" + (index + 1) + ") { display: none; }");
      }
    });
    var style = part(section, "units-columns");
    if (style) { style.textContent = rules.join("\n"); }
    Array.prototype.forEach.call(section.querySelectorAll("input[data-column-toggle]"), function (box) {
      var name = box.getAttribute("data-column-toggle");
      box.checked = !chosen || name === "row_id" || chosen.indexOf(name) >= 0;
    });
  }

  // The export's units controls write the fragment; the hashchange shows it.
  function setFragment(section, change) {
    var target = parseFragment();
    var params = target.page === section.id ? target.filters : {};
    Object.keys(change).forEach(function (key) { params[key] = change[key]; });
    var pairs = Object.keys(params).filter(function (key) { return params[key]; }).map(function (key) {
      return encodeURIComponent(key) + "=" + encodeURIComponent(params[key]);
    });
    window.location.hash = section.id + (pairs.length ? "?" + pairs.join("&") : "");
  }

  function wireUnitsControls(section) {
    var form = part(section, "units-controls");
    if (form) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        setFragment(section, {
          filter: part(section, "filter-expr").value.trim(),
          q: part(section, "search-text").value.trim()
        });
      });
    }
    var boxes = section.querySelectorAll("input[data-column-toggle]");
    Array.prototype.forEach.call(boxes, function (box) {
      box.addEventListener("change", function () {
        var names = Array.prototype.filter.call(boxes, function (b) { return b.checked; })
          .map(function (b) { return b.getAttribute("data-column-toggle"); });
        setFragment(section, { cols: names.join(",") });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
    wireTextFilters();
    followLiveRun();
    if (document.body.classList.contains("static")) {
      Array.prototype.forEach.call(document.querySelectorAll("section.page"), wireUnitsControls);
      window.addEventListener("hashchange", showFromFragment);
      showFromFragment();
    }
  });
})();
