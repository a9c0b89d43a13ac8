// ncuroof roofline page: controls over the figure's views and a details panel.
// The figure (ncuroof.plot.plot_roofline) carries every view as traces whose `meta` says which
// view they belong to; layout.meta lists the views, levels and the dot colours per colouring.
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

  function sameLevels(a, b) {
    const order = ["l1", "l2", "dram"];
    const x = order.filter((l) => a.includes(l)).join(",");
    const y = order.filter((l) => b.includes(l)).join(",");
    return x === y;
  }

  function visible(m, st, meta) {
    const precOk = (p) => p === st.precision || (st.precision === "main" && meta.main_precisions.includes(p));
    const viewOk = (m2) => m2.mode === st.mode && m2.view === st.precision && (m2.subset === "focus" || st.all);
    switch (m.role) {
      case "roof_mem": return st.levels.includes(m.level);
      case "roof_flop": case "ridge": return precOk(m.precision);
      case "dots": return viewOk(m) && st.levels.includes(m.level);
      case "trail": return viewOk(m) && st.levels.length >= 2 && sameLevels(m.levels, st.levels);
      case "key_level": return st.levels.includes(m.level);
      case "key_bound": return st.color === "bound";
      case "key_kernel": return st.color === "kernel";
      default: return true;
    }
  }

  function apply(st) {
    const meta = gd.layout.meta;
    const vis = [], idx = [], dotIdx = [];
    gd.data.forEach((tr, i) => {
      const m = tr.meta || {};
      vis.push(visible(m, st, meta));
      idx.push(i);
      if (m.role === "dots") dotIdx.push(i);
    });
    const p = Plotly.restyle(gd, { visible: vis }, idx);
    const scale = meta.colorscales[st.color];
    return dotIdx.length ? p.then(() => Plotly.restyle(gd, { "marker.colorscale": dotIdx.map(() => scale) }, dotIdx)) : p;
  }

  function build() {
    const meta = gd.layout.meta;
    if (!meta || !meta.views || !meta.views.length) { controls.textContent = ""; return; }
    const st = JSON.parse(JSON.stringify(meta.state));
    const parts = [];
    parts.push('<label>Precision <select id="ctl-precision">' + meta.views.map(([v, label]) =>
      `<option value="${esc(v)}"${v === st.precision ? " selected" : ""}>${esc(label)}</option>`).join("") + "</select></label>");
    parts.push("<span>Levels " + meta.levels.map((l) =>
      `<label><input type="checkbox" class="ctl-level" value="${l}"${st.levels.includes(l) ? " checked" : ""}>${l.toUpperCase()}</label>`).join(" ") + "</span>");
    parts.push(`<span>Dots <label><input type="radio" name="ctl-mode" value="kernel"${st.mode === "kernel" ? " checked" : ""}>per kernel</label>` +
      `<label><input type="radio" name="ctl-mode" value="launch"${st.mode === "launch" ? " checked" : ""}>per launch</label></span>`);
    parts.push(`<span>Colour <label><input type="radio" name="ctl-color" value="kernel"${st.color === "kernel" ? " checked" : ""}>kernel</label>` +
      `<label><input type="radio" name="ctl-color" value="bound"${st.color === "bound" ? " checked" : ""}>bound</label></span>`);
    const f = meta.focus;
    if (f.left_out > 0) {
      parts.push(`<label><input type="checkbox" id="ctl-all"${st.all ? " checked" : ""}>also the ${f.left_out} kernel(s) outside the top ` +
        `${Math.round(f.share * 100)}% (${(f.left_out_share * 100).toFixed(1)}% of GPU time)</label>`);
    }
    controls.innerHTML = parts.join(" ");
    const update = () => {
      st.precision = document.getElementById("ctl-precision").value;
      st.levels = Array.from(document.querySelectorAll(".ctl-level:checked")).map((e) => e.value);
      st.mode = document.querySelector('input[name="ctl-mode"]:checked').value;
      st.color = document.querySelector('input[name="ctl-color"]:checked').value;
      const all = document.getElementById("ctl-all");
      st.all = all ? all.checked : false;
      apply(st);
    };
    controls.querySelectorAll("select, input").forEach((e) => e.addEventListener("change", update));
  }

  function showDetails(ev) {
    const pt = ev.points && ev.points[0];
    if (!pt || !pt.data.meta || pt.data.meta.role !== "dots") return;
    const c = pt.customdata;
    const k = kernels[c[0]];
    const launch = c[8] >= 0 ? ` · launch ${c[8]}` : ` · ${c[1]} launch(es) aggregated`;
    details.innerHTML =
      `<div class="name">${esc(k.demangled || k.name)}</div>` +
      `<div>${esc(k.name)}${launch}${k.nvtx ? " · NVTX " + esc(k.nvtx) : ""} · ${esc(pt.data.meta.level.toUpperCase())}</div>` +
      `<div>time ${fmt(c[2], "s")} (${(c[3] * 100).toFixed(1)}% of GPU time) · AI ${fmt(pt.x, "FLOP/B")} · ` +
      `${fmt(pt.y, "FLOP/s")} of a ${fmt(c[6], "FLOP/s")} roof (${isFinite(c[7]) ? (c[7] * 100).toFixed(1) + "%" : "n/a"}) · ` +
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
