// ncuroof roofline page: controls over the figure's views and a details panel.
// The view contract (ncuroof/render/viewcontract.py) is in the figure's layout.meta.view: the initial state, the
// controls (one per state field), the restyles and relayouts per state, and `shows`: the visibility rule
// (ncuroof.render.viewcontract.visible) already evaluated by Python for each trace and control, as
// {field: [keys of the values it shows in]} (ncuroof.render.viewcontract.shows). This script has no rule of its
// own: it looks the state's values up in those lists, and knows nothing of which trace belongs to which view.
(function () {
  "use strict";
  const gd = document.getElementById("roofline");
  const kernels = JSON.parse(document.getElementById("ncuroof-kernels").textContent);
  const controls = document.getElementById("controls");
  const details = document.getElementById("details");

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }

  function fmt(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return "n/a";
    const prefixes = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""], [1e-3, "m"], [1e-6, "µ"], [1e-9, "n"]];
    for (const [f, p] of prefixes) if (Math.abs(v) >= f) return (v / f).toPrecision(3) + " " + p + unit;
    return v.toPrecision(3) + " " + unit;
  }

  // A ratio such as arithmetic intensity: three significant digits, never an SI prefix (no "653 mFLOP/B").
  function plain(v) {
    if (v === null || v === undefined || !isFinite(v)) return "n/a";
    return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : String(Number(v.toPrecision(3)));
  }

  // A state value's key, as ncuroof.render.viewcontract.state_key writes it: its JSON, a list sorted.
  function key(v) {
    return JSON.stringify(Array.isArray(v) ? [...v].sort() : v);
  }

  // Whether a trace or control shows in `state`: for every field of its `shows` entry, the state's key is listed.
  function shown(entry, state) {
    return Object.entries(entry || {}).every(([field, keys]) => keys.includes(key(state[field])));
  }

  // Visibility and restyles for state `st`; the relayouts of the fields that differ from `before` (all when
  // there is none or the chart changed), so a control that does not change the axes keeps the user's zoom.
  function apply(view, st, before) {
    const idx = gd.data.map((_, i) => i);
    const rules = (view.shows || {}).traces || [];
    const p = Plotly.restyle(gd, { visible: gd.data.map((_, i) => shown(rules[i], st)) }, idx);
    let chain = p;
    for (const [field, perValue] of Object.entries(view.styles || {})) {
      for (const [role, patch] of Object.entries(perValue[String(st[field])] || {})) {
        const which = idx.filter((i) => (gd.data[i].meta || {}).role === role);
        if (!which.length) continue;
        const update = {};
        for (const [attr, value] of Object.entries(patch)) update[attr] = which.map(() => value);
        chain = chain.then(() => Plotly.restyle(gd, update, which));
      }
    }
    // another chart: every field's relayouts again, in order (the chart's last), so the chart shown
    // gets back what another field set (a precision view's axis units)
    const all = !before || String(before.chart) !== String(st.chart);
    for (const [field, perValue] of Object.entries(view.layouts || {})) {
      const patch = perValue[String(st[field])];
      if (patch && (all || String(before[field]) !== String(st[field]))) chain = chain.then(() => Plotly.relayout(gd, patch));
    }
    return chain;
  }

  // One control of the contract as HTML: select, radio buttons, checkboxes (list field) or one checkbox (bool).
  function controlHtml(c, st) {
    const id = "ctl-" + c.id;
    const value = st[c.field];
    if (c.kind === "select") {
      return `<label>${esc(c.label)} <select id="${id}">` + c.options.map(([v, t]) =>
        `<option value="${esc(v)}"${v === value ? " selected" : ""}>${esc(t)}</option>`).join("") + "</select></label>";
    }
    if (c.kind === "radio" || c.kind === "checkboxes") {
      const on = (v) => (c.kind === "radio" ? v === value : value.includes(v));
      const attr = c.kind === "radio" ? `type="radio" name="${id}"` : `type="checkbox" class="${id}"`;
      return `<span>${esc(c.label)} ` + c.options.map(([v, t]) =>
        `<label><input ${attr} value="${esc(v)}"${on(v) ? " checked" : ""}>${esc(t)}</label>`).join(" ") + "</span>";
    }
    return `<label><input type="checkbox" id="${id}"${value ? " checked" : ""}>${esc(c.label)}</label>`;
  }

  function readControl(c) {
    const id = "ctl-" + c.id;
    if (c.kind === "select") return document.getElementById(id).value;
    if (c.kind === "radio") return document.querySelector(`input[name="${id}"]:checked`).value;
    if (c.kind === "checkboxes") return Array.from(document.querySelectorAll(`input.${id}:checked`)).map((e) => e.value);
    return document.getElementById(id).checked;
  }

  // Each control shows in the states its `when` allows (evaluated like the traces').
  function showControls(view, st) {
    const rules = (view.shows || {}).controls || [];
    view.controls.forEach((c, i) => { controls.children[i].style.display = shown(rules[i], st) ? "" : "none"; });
  }

  function build() {
    const view = (gd.layout.meta || {}).view;
    if (!view || !view.controls || !view.controls.length) { controls.textContent = ""; return; }
    const st = JSON.parse(JSON.stringify(view.state));
    controls.innerHTML = view.controls.map((c) => `<span class="control">${controlHtml(c, st)}</span>`).join("");
    showControls(view, st);
    const update = () => {
      const before = JSON.parse(JSON.stringify(st));
      view.controls.forEach((c) => { st[c.field] = readControl(c); });
      showControls(view, st);
      apply(view, st, before);
    };
    controls.querySelectorAll("select, input").forEach((e) => e.addEventListener("change", update));
  }

  // A dot's customdata as {column: value}: the columns are named in the contract (ncuroof.render.figure.CUSTOMDATA).
  function columns(pt) {
    const names = ((gd.layout.meta || {}).view || {}).customdata || [];
    return Object.fromEntries(names.map((name, i) => [name, pt.customdata[i]]));
  }

  function showDetails(ev) {
    const pt = ev.points && ev.points[0];
    if (!pt || !pt.data.meta || pt.data.meta.role !== "dots") return;
    const c = columns(pt);
    const k = kernels[c.kid];
    const unit = pt.data.meta.unit || "FLOP";
    const timeKnown = isFinite(c.time_s) && c.time_s > 0 && isFinite(c.share);
    const launch = c.launch_id >= 0 ? ` · launch ${c.launch_id}` : ` · ${c.launches} launch${c.launches === 1 ? "" : "es"} aggregated`;
    details.innerHTML =
      `<div class="name">${esc(k.demangled || k.name)}</div>` +
      `<div>${esc(k.name)}${launch}${k.nvtx ? " · NVTX " + esc(k.nvtx) : ""} · ${esc(pt.data.meta.level.toUpperCase())}</div>` +
      `<div>${timeKnown ? "time " + fmt(c.time_s, "s") + " (" + (c.share * 100).toFixed(1) + "% of GPU time)" : "time unknown (the input has no duration)"} · ` +
      `AI ${plain(pt.x)} ${unit}/B · ` +
      `${fmt(pt.y, unit + "/s")} of a ${fmt(c.roof_flop_per_s, unit + "/s")} roof (${isFinite(c.roof_fraction) ? (c.roof_fraction * 100).toFixed(1) + "%" : "n/a"}` +
      `${isFinite(c.achievable_roof_fraction) ? "; " + (c.achievable_roof_fraction * 100).toFixed(1) + "% of the achievable " + fmt(c.achievable_roof_flop_per_s, unit + "/s") : ""}) · ` +
      `kernel bound: ${esc(k.bound)}${k.saving_s !== null && isFinite(k.saving_s) ? " · saves " + fmt(k.saving_s, "s") + " at its roof" : ""}</div>` +
      (k.diagnosis ? `<div><b>${esc(k.diagnosis)}</b>: ${esc(k.advice)}</div>` : "") +
      (k.flags ? `<div class="note">Check: ${esc(k.flags)}</div>` : "");
  }

  if (gd && gd.layout) {
    build();
    gd.on("plotly_hover", showDetails);
    gd.on("plotly_click", showDetails);
  }
})();
