// Sorting, search and filters of the leaderboard tables. Reads only data-* attributes the server wrote
// (escaped) and moves existing rows; it never builds HTML from strings.
"use strict";
(function () {
  const search = document.getElementById("search");
  const filters = {
    family: document.getElementById("filter-family"),
    size: document.getElementById("filter-size"),
    access: document.getElementById("filter-access"),
  };

  function applyFilters() {
    const needle = search ? search.value.trim().toLowerCase() : "";
    document.querySelectorAll("table.board").forEach(function (table) {
      let shown = 0;
      table.querySelectorAll("tbody tr").forEach(function (row) {
        let visible = !needle || (row.dataset.model || "").includes(needle);
        Object.keys(filters).forEach(function (key) {
          const select = filters[key];
          if (visible && select && select.value && row.dataset[key] !== undefined) {
            visible = row.dataset[key] === select.value;
          }
        });
        row.hidden = !visible;
        if (visible) shown += 1;
      });
      const counter = document.querySelector('.shown[data-protocol="' + table.dataset.protocol + '"]');
      if (counter) counter.textContent = String(shown);
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
      const order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.querySelectorAll("table.board thead th[data-sort]").forEach(function (header) {
    header.addEventListener("click", function () { sortBy(header.closest("table"), header); });
  });
  if (search) search.addEventListener("input", applyFilters);
  Object.keys(filters).forEach(function (key) {
    if (filters[key]) filters[key].addEventListener("change", applyFilters);
  });
})();
