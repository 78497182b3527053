// Sorting, search, filters and pages of the leaderboard tables (a page holds the table's data-page-size
// rows, or ?rows=N from the address). Reads only data-* attributes the server wrote
// (escaped) and moves existing rows; it never builds HTML from strings.
"use strict";
(function () {
  const search = document.getElementById("search");
  const filters = {
    family: document.getElementById("filter-family"),
    size: document.getElementById("filter-size"),
    access: document.getElementById("filter-access"),
  };

  const requested = Number(new URLSearchParams(window.location.search).get("rows"));
  const pages = {};  // protocol -> current page (0-based)

  function pageSize(table) {
    if (Number.isInteger(requested) && requested > 0) return requested;
    return Number(table.dataset.pageSize) || 25;
  }

  function paginate(table) {
    if (!table.dataset.pageSize) return;  // a model page's tables are not paged
    const pager = document.querySelector('.pager[data-protocol="' + table.dataset.protocol + '"]');
    const matching = Array.prototype.filter.call(table.tBodies[0].rows, function (row) {
      return row.dataset.match !== "no";
    });
    const size = pageSize(table);
    const count = Math.max(1, Math.ceil(matching.length / size));
    const page = Math.min(pages[table.dataset.protocol] || 0, count - 1);
    pages[table.dataset.protocol] = page;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) { row.hidden = true; });
    matching.slice(page * size, (page + 1) * size).forEach(function (row) { row.hidden = false; });
    if (!pager) return;
    pager.hidden = count === 1 && !requested;
    pager.querySelector(".page").textContent = "page " + (page + 1) + " of " + count;
    pager.querySelector(".prev").disabled = page === 0;
    pager.querySelector(".next").disabled = page === count - 1;
  }

  function applyFilters() {
    const needle = search ? search.value.trim().toLowerCase() : "";
    document.querySelectorAll("table.board").forEach(function (table) {
      let shown = 0;
      pages[table.dataset.protocol] = 0;  // a new filter starts at the first page of what it keeps
      table.querySelectorAll("tbody tr").forEach(function (row) {
        let visible = !needle || (row.dataset.model || "").includes(needle);
        Object.keys(filters).forEach(function (key) {
          const select = filters[key];
          if (visible && select && select.value && row.dataset[key] !== undefined) {
            visible = row.dataset[key] === select.value;
          }
        });
        row.dataset.match = visible ? "yes" : "no";
        if (visible) shown += 1;
      });
      const counter = document.querySelector('.shown[data-protocol="' + table.dataset.protocol + '"]');
      if (counter) counter.textContent = String(shown);
      paginate(table);
    });
  }

  function sortBy(table, header) {
    const index = Array.prototype.indexOf.call(header.parentNode.children, header);
    const numeric = header.dataset.sort === "num";
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (th) { th.setAttribute("aria-sort", "none"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const body = table.tBodies[0];
    const rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      const x = a.cells[index].dataset.value || "";
      const y = b.cells[index].dataset.value || "";
      if (x === "" || y === "") return x === y ? 0 : x === "" ? 1 : -1;  // empty cells last
      const bothNumbers = numeric && !isNaN(Number(x)) && !isNaN(Number(y));
      const order = bothNumbers ? Number(x) - Number(y) : x.localeCompare(y);  // words (a level) sort as text
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    paginate(table);
  }

  document.querySelectorAll("table.board thead th[data-sort]").forEach(function (header) {
    header.addEventListener("click", function () { sortBy(header.closest("table"), header); });
  });
  document.querySelectorAll(".pager").forEach(function (pager) {
    const table = document.querySelector('table.board[data-protocol="' + pager.dataset.protocol + '"]');
    if (!table) return;
    pager.querySelector(".prev").addEventListener("click", function () {
      pages[table.dataset.protocol] = (pages[table.dataset.protocol] || 0) - 1;
      paginate(table);
    });
    pager.querySelector(".next").addEventListener("click", function () {
      pages[table.dataset.protocol] = (pages[table.dataset.protocol] || 0) + 1;
      paginate(table);
    });
  });
  document.querySelectorAll("table.board[data-page-size]").forEach(paginate);
  if (search) search.addEventListener("input", applyFilters);
  Object.keys(filters).forEach(function (key) {
    if (filters[key]) filters[key].addEventListener("change", applyFilters);
  });
})();
