// ncuroof pages: click a column header of a table.sortable to sort by it (numbers by the
// cell's data-v, text otherwise; empty values last).
(function () {
  "use strict";
  function sortable(table) {
    const ths = table.querySelectorAll("thead th");
    ths.forEach((th, col) => {
      th.addEventListener("click", () => {
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const dir = th.dataset.dir === "desc" ? "asc" : "desc";
        ths.forEach((h) => { delete h.dataset.dir; });
        th.dataset.dir = dir;
        const key = (r) => {
          const cell = r.cells[col];
          const v = cell.dataset.v;
          return v !== undefined ? (v === "" ? NaN : parseFloat(v)) : cell.textContent;
        };
        const sign = dir === "asc" ? 1 : -1;
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          if (typeof x === "number" && typeof y === "number") {
            if (isNaN(x)) return isNaN(y) ? 0 : 1;
            if (isNaN(y)) return -1;
            return sign * (x - y);
          }
          return sign * String(x).localeCompare(String(y));
        });
        rows.forEach((r) => body.appendChild(r));
      });
    });
  }

  document.querySelectorAll("table.sortable").forEach(sortable);
})();
