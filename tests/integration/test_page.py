"""The roofline page in real headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it).

Counts of drawn dots are checked against the rows of ``points.csv``/``launches.csv`` grouped here
with pandas, not against numbers the page reports about itself. A screenshot of a real report's
page is saved under ``test-artifacts/`` (or ``$NCUROOF_ARTIFACTS``).
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof.model import summary
from ncuroof.render import figure as plot
from ncuroof.render import page as report
from ncuroof.render.figure import BOUND_COLORS, KERNEL_COLORS
from tests.helpers import synthetic
from tests.helpers.browser import ARTIFACTS, CHROMIUM
from tests.helpers.browser import open_page as _open
from tests.helpers.reports import needs_ncu_report, shared

# Drawn dots of the visible dot traces: SVG point paths, or the WebGL trace's length.
COUNT_JS = """() => { const gd = document.getElementById('roofline'); let n = 0;
  gd._fullData.forEach(t => { if (t.visible === true && t.meta && t.meta.role === 'dots') {
    n += t.type === 'scattergl' ? t._length : document.querySelectorAll('.trace' + t.uid + ' .points path').length; } });
  return n; }"""  # noqa: E501


def _focus_keys(kernels: pd.DataFrame, share: float = 0.95) -> set[str]:
    """The fewest kernels (by demangled name) making up ``share`` of the time, largest first."""
    key = kernels["kernel_demangled"].fillna(kernels["kernel_name"]).astype(str)
    t = kernels["time_s"].groupby(key).sum().sort_values(ascending=False)
    before = t.cumsum() - t
    return set(t.index[(before < share * t.sum()) & (t > 0)])


def _expected_kernel_dots(kernels: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """(key, precision, level) of every focus kernel's dots at the precision of
    most of its FLOPs."""
    key = kernels.assign(
        key=kernels["kernel_demangled"].fillna(kernels["kernel_name"]).astype(str)
    )[["source", "launch_id", "key"]]
    p = points.merge(key, on=["source", "launch_id"])
    per = p.groupby(["key", "precision"])["flop"].sum().reset_index()
    main = per.loc[per.groupby("key")["flop"].idxmax(), ["key", "precision"]]
    dots = p.merge(main, on=["key", "precision"])[["key", "precision", "level"]].drop_duplicates()
    return dots[dots["key"].isin(_focus_keys(kernels))]


@needs_ncu_report
def test_real_report_page(browser, tmp_path):
    path = shared("ESMM-Research__profile_output.ncu-rep")
    out = tmp_path / "esmm"
    ncuroof.analyze(path, out)
    kernels = pd.read_csv(out / "launches.csv")
    points = pd.read_csv(out / "points.csv")
    expected = _expected_kernel_dots(kernels, points)
    assert len(expected) == 12  # 4 SGEMM kernels x (L1, L2, DRAM), all FP32
    page, errors = _open(browser, out / "roofline.html")
    assert page.query_selector("#roofline .main-svg .scatterlayer") is not None
    bottom = page.evaluate(
        "() => document.querySelector('#roofline .main-svg').getBoundingClientRect().bottom"
    )
    assert 0 < bottom <= 1000  # the whole chart on the first 1400x1000 screen
    assert page.evaluate(COUNT_JS) == len(expected)

    # Hover the first drawn dot: the label names the kernel whose point sits at that x.
    page.locator("#roofline").scroll_into_view_if_needed()
    centre = page.evaluate("""() => { const gd = document.getElementById('roofline');
      const t = gd._fullData.find(t => t.visible === true && t.meta && t.meta.role === 'dots');
      const r = document.querySelector('.trace' + t.uid + ' .points path').getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2]; }""")
    page.mouse.move(*centre)
    page.wait_for_timeout(400)
    hovered = page.evaluate(
        "() => { const h = document.getElementById('roofline')._hoverdata[0]; "
        "return [h.x, h.data.meta.level]; }"
    )
    label = page.evaluate("() => document.querySelector('#roofline .hoverlayer').textContent")
    at = points[
        (points["level"] == hovered[1])
        & np.isclose(points["ai_flop_per_byte"], hovered[0], rtol=1e-5)
    ]
    assert len(at) == 1
    assert at["kernel_name"].iat[0] in label
    assert at["kernel_name"].iat[0] in page.evaluate(
        "() => document.getElementById('details').textContent"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "roofline-ESMM-Research.png"), full_page=True)
    assert errors == []


# The index, in the first visible dot trace, of the dot of kernel id 0 (the largest kernel).
FIRST_KERNEL_JS = """() => { const gd = document.getElementById('roofline');
  const t = gd._fullData.find(t => t.visible === true && t.meta && t.meta.role === 'dots');
  const kid = gd.layout.meta.view.customdata.indexOf('kid');
  const i = Array.from(t.customdata).findIndex(c => c[kid] === 0);
  return i; }"""
# The fill colour of dot ``i`` of the first visible dot trace.
DOT_FILL_JS = """(i) => { const gd = document.getElementById('roofline');
  const t = gd._fullData.find(t => t.visible === true && t.meta && t.meta.role === 'dots');
  return document.querySelectorAll('.trace' + t.uid + ' .points path')[i].style.fill; }"""


def _settled(page, action, *args) -> int:
    """Run a control ``action`` (``page.check``, ``page.select_option``, ...), wait for the redraw,
    and count the drawn dots."""
    action(*args)
    page.wait_for_timeout(300)
    return page.evaluate(COUNT_JS)


def _sorted_column(page, header: str) -> list[float]:
    """Click the first sortable table's column ``header``; that column's raw values in row order."""
    col = page.evaluate(
        "() => Array.from(document.querySelectorAll('table.sortable')[0].tHead.rows[0].cells)"
        f".findIndex(c => c.textContent === '{header}')"
    )
    page.locator("table.sortable").first.locator("th").nth(col).click()
    return page.evaluate(
        "() => Array.from(document.querySelectorAll('table.sortable')[0].tBodies[0].rows)"
        f".map(r => parseFloat(r.cells[{col}].dataset.v))"
    )


def test_controls_switch_views(browser, tmp_path):
    k = synthetic.kernels_table(400, 40, seed=3)
    pts = ncuroof.points(k)
    summ = summary.kernel_summary(k, pts)
    fig = ncuroof.plot_roofline(pts, k, title="synthetic")
    page_path = tmp_path / "roofline.html"
    page_path.write_text(
        report.render_html(fig, k, {"inputs": "synthetic"}, summary=summ), encoding="utf-8"
    )
    focus = _focus_keys(k)
    in_focus = k["kernel_demangled"].isin(focus)
    assert 1 < len(focus) < 40
    page, errors = _open(browser, page_path)
    assert page.evaluate(COUNT_JS) == 3 * len(focus)  # each kernel at its main precision, 3 levels

    # Colour: the largest kernel's dot has the first palette colour, then its bound's colour.
    first = page.evaluate(FIRST_KERNEL_JS)
    assert first >= 0
    top = k.groupby("kernel_demangled")["time_s"].sum().idxmax()
    top_bound = k.loc[k["kernel_demangled"] == top, "bound"].mode().iat[0]
    assert page.evaluate(DOT_FILL_JS, first) == _rgb(KERNEL_COLORS[0])
    page.check('input[name="ctl-color"][value="bound"]')
    page.wait_for_timeout(300)
    assert page.evaluate(DOT_FILL_JS, first) == _rgb(BOUND_COLORS[top_bound])

    launches = int(in_focus.sum())
    assert _settled(page, page.check, 'input[name="ctl-mode"][value="launch"]') == 3 * launches
    assert _settled(page, page.uncheck, '.ctl-level[value="l1"]') == 2 * launches
    assert _settled(page, page.check, "#ctl-all") == 2 * len(k)
    fp64 = int(k["fp64_flop"].gt(0).sum())
    assert _settled(page, page.select_option, "#ctl-precision", "fp64") == 2 * fp64

    # The kernels table sorts by a column's raw values.
    values = _sorted_column(page, "launches")
    assert (
        values == sorted(values, reverse=True)
        and values[0] == k["kernel_demangled"].value_counts().max()
    )
    assert errors == []


def _rgb(hex_color: str) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def test_ten_thousand_launches(browser, tmp_path):
    k = synthetic.kernels_table(10_000, 300, seed=1)
    pts = ncuroof.points(k)
    summ = summary.kernel_summary(k, pts)
    fig = ncuroof.plot_roofline(pts, k, title="10k launches")
    html = report.render_html(fig, k, {"inputs": "synthetic"}, summary=summ)
    assert len(html.encode()) < 20e6
    page_path = tmp_path / "roofline.html"
    page_path.write_text(html, encoding="utf-8")
    page, errors = _open(browser, page_path)
    in_focus = k["kernel_demangled"].isin(_focus_keys(k))
    page.check('input[name="ctl-mode"][value="launch"]')
    page.wait_for_timeout(500)
    assert page.evaluate(COUNT_JS) == 3 * int(in_focus.sum())
    types = page.evaluate(
        "() => Array.from(new Set(document.getElementById('roofline')._fullData"
        ".filter(t => t.visible === true && t.meta && t.meta.role === 'dots').map(t => t.type)))"
    )
    assert types == ["scattergl"]
    assert errors == []


def test_per_launch_dots_are_the_longest_launches_when_there_are_many(monkeypatch):
    """Past MAX_LAUNCH_DOTS launches the per-launch dots are those of the longest launches, and the
    control says so; the per-kernel dots still count every launch."""
    k = synthetic.kernels_table(600, 20, seed=3)
    pts = ncuroof.points(k)
    monkeypatch.setattr(plot, "MAX_LAUNCH_DOTS", 50)
    fig = ncuroof.plot_roofline(pts, k, title="capped", show_all=True)
    longest = set(k.nlargest(50, "time_s")["launch_id"])
    at = plot.CUSTOMDATA.index("launch_id")
    drawn = {
        int(c[at])
        for t in fig.data
        if t.meta and t.meta.get("role") == "dots" and t.meta["mode"] == "launch"
        for c in np.asarray(t.customdata)
    }
    assert drawn == longest
    modes = next(c for c in fig.layout.meta["view"]["controls"] if c["field"] == "mode")["options"]
    assert ["launch", "per launch (the 50 longest of 600)"] in modes
    per_kernel = sum(
        float(np.asarray(t.customdata)[:, plot.CUSTOMDATA.index("launches")].sum())
        for t in fig.data
        if t.meta
        and t.meta.get("role") == "dots"
        and t.meta["mode"] == "kernel"
        and t.meta["when"]["precision"] == "main"
        and t.meta["when"]["levels"] == "dram"
    )
    assert per_kernel == len(k[k["launch_id"].isin(pts.loc[pts["level"] == "dram", "launch_id"])])


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_static_image(tmp_path):
    pytest.importorskip("kaleido", reason="kaleido is not installed (pip install -e '.[image]')")
    if CHROMIUM is None:
        pytest.skip("Chromium not found: kaleido renders with Chrome/Chromium")
    k = synthetic.kernels_table(50, 8)
    fig = ncuroof.plot_roofline(ncuroof.points(k), k)
    png = report.render_image(fig, "png", width=1000, height=600)
    assert _png_size(png) == (2000, 1200)
    svg = report.render_image(fig, "svg", width=1000, height=600).decode()
    assert svg.lstrip().startswith("<svg") and "FP32 67 TFLOP/s" in svg


def _page(
    tmp_path: Path, k: pd.DataFrame, focus: float = summary.FOCUS_SHARE, name: str = "roofline.html"
):
    """Write the roofline page of kernels table ``k``; return (path, figure, points)."""
    pts = ncuroof.points(k)
    summ = summary.kernel_summary(k, pts, focus=focus)
    fig = plot.plot_roofline(pts, k, title="synthetic", focus=focus, summary=summ)
    path = tmp_path / name
    path.write_text(
        report.render_html(fig, k, {"inputs": "synthetic"}, summary=summ, focus=focus),
        encoding="utf-8",
    )
    return path, fig, pts


def test_chart_leads_the_page(browser, tmp_path):
    k = synthetic.kernels_table(400, 40, seed=3)
    path, _, _ = _page(tmp_path, k)
    page, errors = _open(browser, path)
    box = page.evaluate(
        "() => { const r = document.querySelector('#roofline .main-svg').getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom, window.scrollY]; }"
    )
    assert box[4] == 0 and box[0] >= 0 and box[1] >= 0
    assert box[2] <= 1400 and box[3] <= 1000, f"chart not fully on the first screen: {box}"
    # The header beside/above it: GPU, total time and the top kernels, largest first,
    # as pandas sums them.
    total = k["time_s"].sum()
    header = page.evaluate("() => document.querySelector('header').textContent")
    assert k["device_name"].iat[0] in header and f"{total * 1e3:.3g} ms" in header
    assert f"{len(k)} launches of {k['kernel_demangled'].nunique()} kernels" in " ".join(
        header.split()
    )
    top = k.groupby("kernel_demangled")["time_s"].sum().sort_values(ascending=False).head(5)
    side = page.evaluate(
        "() => Array.from(document.querySelectorAll('ol.top .k')).map(e => e.textContent)"
    )
    names = k.drop_duplicates("kernel_demangled").set_index("kernel_demangled")["kernel_name"]
    assert side == list(names[top.index])
    shares = page.evaluate(
        "() => Array.from(document.querySelectorAll('ol.top .n')).map(e => e.textContent)"
    )
    assert all(s.startswith(f"{100 * t / total:.1f}%") for s, t in zip(shares, top))
    # Each listed kernel's swatch has the colour of its dots.
    swatches = page.evaluate(
        "() => Array.from(document.querySelectorAll('ol.top .swatch')).map(e => e.style.background)"
    )
    assert swatches == [_rgb(c) for c in KERNEL_COLORS[:5]]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "roofline-first-screen.png"))
    assert errors == []


def test_python_and_script_apply_one_view_rule(browser, tmp_path):
    """The script's visibility after a control change equals ncuroof.render.viewcontract.visible of
    each trace's `when` in that state, and the dot colour scale is the contract's
    for the colouring."""
    from ncuroof.render.viewcontract import visible

    k = synthetic.kernels_table(300, 30, seed=5)
    path, fig, _ = _page(tmp_path, k)
    page, errors = _open(browser, path)
    initial = page.evaluate(
        "() => document.getElementById('roofline').data.map(t => t.visible !== false)"
    )
    assert initial == [t.visible is not False for t in fig.data]
    page.check('input[name="ctl-mode"][value="launch"]')
    page.uncheck('.ctl-level[value="l1"]')
    page.check("#ctl-all")
    page.select_option("#ctl-precision", "fp64")
    page.check('input[name="ctl-color"][value="bound"]')
    page.wait_for_timeout(400)
    state = {
        "precision": "fp64",
        "levels": ["l2", "dram"],
        "mode": "launch",
        "color": "bound",
        "all": True,
    }
    shown = page.evaluate(
        "() => document.getElementById('roofline').data.map(t => t.visible !== false)"
    )
    assert shown == [visible(t.meta["when"], state) for t in fig.data]
    assert sum(shown) > 0 and not all(shown)
    scale = page.evaluate("""() => document.getElementById('roofline').data
      .filter(t => t.meta.role === 'dots').map(t => JSON.stringify(t.marker.colorscale))""")
    bound = fig.layout.meta["view"]["styles"]["color"]["bound"]["dots"]["marker.colorscale"]
    assert all(json.loads(s) == bound for s in scale) and len(scale) > 0
    assert errors == []


@pytest.mark.parametrize("left_out", [1, 2])
def test_focus_sentence_counts_kernels_in_words(tmp_path, left_out):
    k = synthetic.kernels_table(200, 12, seed=2)
    t = k.groupby("kernel_demangled")["time_s"].sum().sort_values(ascending=False)
    # A focus share that leaves out exactly the `left_out` smallest kernels
    # (summary.focus_set's rule).
    share = (t.sum() - t.iloc[-left_out:].sum() - 0.5 * t.iloc[-left_out - 1]) / t.sum()
    path, fig, _ = _page(tmp_path, k, focus=share)
    text = " ".join(path.read_text(encoding="utf-8").split())
    kept = len(t) - left_out
    gone = t.iloc[-left_out:].sum() / t.sum()
    if left_out == 1:
        assert (
            f"1 kernel ({100 * gone:.1f}% of the time) is left out (tick the box above the chart to"
            " show it)" in text
        )
    else:
        assert (
            f"{left_out} kernels ({100 * gone:.1f}% of the time) are left out (tick the box above"
            " the chart to show them)" in text
        )
    # the share the kept kernels make up, not the --focus target (issue 50 class 10)
    made = 100 * (1 - gone)
    assert f"The chart shows the {kept} kernels that make up {made:.0f}% of GPU time" in text
    control = fig.layout.meta["view"]["controls"][-1]
    assert control["label"].startswith(
        f"also the {left_out} kernel{'s' if left_out > 1 else ''} outside"
    )


def test_page_text_does_not_come_from_the_figure_meta(tmp_path):
    """report takes its numbers from the summary it is given, not from fig.layout.meta."""
    k = synthetic.kernels_table(200, 12, seed=2)
    pts = ncuroof.points(k)
    summ = summary.kernel_summary(k, pts)
    fig = plot.plot_roofline(pts, k, summary=summ)
    fig.layout.meta = None
    html = report.render_html(fig, k, {}, summary=summ)
    kept = int(summ["in_focus"].sum())
    made = 100 * summ.loc[summ["in_focus"].astype(bool), "time_share"].sum()
    assert (
        kept < len(summ)
        and f"The chart shows the {kept} kernels that make up {made:.0f}% of GPU time" in html
    )


def test_tables_escape_and_sort_keys(tmp_path):
    df = pd.DataFrame(
        {
            "kernel_name": ["<script>x</script>", "b"],
            "kernel_demangled": ["a<b>", "b"],
            "time_s": [1.5e-3, np.nan],
            "share": [0.25, 0.5],
        }
    )
    html = report.html_table(
        df,
        [("kernel_name", "kernel"), ("time_s", "time"), ("share", "share")],
        title_col="kernel_demangled",
        kinds={"time_s": "time", "share": "pct"},
        swatches=["#123456", "#abcdef"],
    )
    assert (
        "<script>x" not in html
        and "&lt;script&gt;x&lt;/script&gt;" in html
        and 'title="a&lt;b&gt;"' in html
    )
    assert (
        'data-v="0.0015">1.5 ms</td>' in html
        and 'data-v=""></td>' in html
        and 'data-v="0.25">25.0%</td>' in html
    )
    assert html.count('class="swatch"') == 2 and "background:#abcdef" in html


def test_compare_page_from_template():
    fig = plot.plot_roofline(pd.DataFrame(columns=["level"]))
    html = report.render_page(
        "a <b> title",
        fig,
        {"before": "x.ncu-rep", "left-out-fact": ""},
        "Kernels",
        "<table id='t'></table>",
    )
    assert html.startswith("<!DOCTYPE html>") and "<h1>a &lt;b&gt; title</h1>" in html
    assert "<li><b>before</b>: x.ncu-rep</li>" in html and "left-out-fact" not in html
    assert html.index("Plotly.newPlot") < html.index("<table id='t'>")


def test_a_new_view_is_a_dot_group_and_a_frame(browser, tmp_path, monkeypatch):
    """A new kind of dot (here: per NVTX phase) needs one DotGroup and its dots; the script shows
    it from the contract alone. A relayout per state (the contract's ``layouts``) applies too."""
    k = synthetic.kernels_table(300, 12, seed=4)
    k["nvtx_range"] = np.where(k["launch_id"] % 3 == 0, "fwd", "bwd")
    pts = ncuroof.points(k)
    summ = summary.kernel_summary(k, pts)
    per = summary.with_keys(pts, k).merge(
        k[["source", "launch_id", "nvtx_range"]], on=["source", "launch_id"]
    )
    phases = summary.aggregate_points(per, by="nvtx_range")
    work = phases.groupby(["nvtx_range", "precision"])["flop"].sum().reset_index()
    main = work.loc[work.groupby("nvtx_range")["flop"].idxmax()].set_index("nvtx_range")[
        "precision"
    ]
    phases = phases.assign(
        kid=0,
        in_focus=True,
        main=phases["nvtx_range"].map(main),
        label=phases["nvtx_range"],
        demangled="",
        kbound="unknown",
    )
    group = plot.DotGroup(
        "phase", "per NVTX phase", ("nvtx_range",), plot._launch_names, "<b>%{text}</b><br>"
    )
    monkeypatch.setattr(plot, "DOT_GROUPS", (*plot.DOT_GROUPS, group))
    fig = plot.plot_roofline(pts, k, summary=summ, dots={"phase": phases})
    fig.layout.meta["view"]["layouts"] = {"color": {"bound": {"title.text": "coloured by bound"}}}
    path = tmp_path / "roofline.html"
    path.write_text(report.render_html(fig, k, {}, summary=summ), encoding="utf-8")
    page, errors = _open(browser, path)
    page.check('input[name="ctl-mode"][value="phase"]')
    page.wait_for_timeout(300)
    expected = phases[phases["precision"] == phases["main"]]
    assert (
        page.evaluate(COUNT_JS) == len(expected) == 2 * 3
    )  # fwd and bwd at their main precision, 3 levels
    page.check('input[name="ctl-color"][value="bound"]')
    page.wait_for_timeout(300)
    assert (
        page.evaluate("() => document.getElementById('roofline').layout.title.text")
        == "coloured by bound"
    )
    assert errors == []


def test_view_rule_by_hand():
    import plotly.graph_objects as go

    from ncuroof.render.viewcontract import Control, ViewContract, ViewState, apply_view, visible

    st = {
        "precision": "main",
        "levels": ["l1", "l2"],
        "mode": "kernel",
        "color": "kernel",
        "all": False,
    }
    assert visible({"levels": "l1"}, st) and not visible({"levels": "dram"}, st)
    assert visible({"levels": ["l2", "l1"]}, st) and not visible(
        {"levels": ["l1", "l2", "dram"]}, st
    )
    assert visible({"precision": ["fp32", "main"]}, st) and not visible({"precision": ["fp32"]}, st)
    assert not visible({"mode": "kernel", "all": True}, st) and visible({}, st)
    fig = go.Figure(
        [
            go.Scatter(x=[1], y=[1], meta={"role": "dots", "when": {"color": "bound"}}),
            go.Scatter(x=[1], y=[1], meta={"role": "dots", "when": {"levels": "l2"}}),
        ]
    )
    contract = ViewContract(
        ViewState(levels=["l2"], color="bound"),
        [Control("color", "color", "radio", "Colour", [["kernel", "k"]])],
        styles={"color": {"bound": {"dots": {"marker.color": "red"}}}},
        layouts={
            "color": {"bound": {"title.text": "by bound"}, "kernel": {"title.text": "by kernel"}}
        },
    )
    apply_view(fig, contract)
    assert [t.visible for t in fig.data] == [True, True] and [t.marker.color for t in fig.data] == [
        "red",
        "red",
    ]
    assert (
        fig.layout.title.text == "by bound" and fig.layout.meta["view"]["state"]["color"] == "bound"
    )
    contract.state.color = "kernel"
    apply_view(fig, contract)
    assert [t.visible for t in fig.data] == [False, True] and fig.layout.title.text == "by kernel"


_SI = {
    "P": 1e15,
    "T": 1e12,
    "G": 1e9,
    "M": 1e6,
    "k": 1e3,
    "": 1.0,
    "m": 1e-3,
    "µ": 1e-6,
    "u": 1e-6,
    "n": 1e-9,
}


def _si_number(text: str, pattern: str) -> float:
    """The number ``pattern``'s groups (value, SI prefix) find in ``text``, in base units."""
    import re

    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in {text!r}"
    return float(m.group(1)) * _SI[m.group(2)]


def test_customdata_columns_are_named_once(browser, tmp_path, monkeypatch):
    """The customdata columns are declared once (plot.CUSTOMDATA): in another order, the hover label
    (Python's template) and the details panel (the script) still give the largest kernel's time,
    share and launches, as pandas sums them from the kernels and points tables."""
    declared = plot.CUSTOMDATA
    monkeypatch.setattr(plot, "CUSTOMDATA", tuple(reversed(declared)))
    k = synthetic.kernels_table(300, 12, seed=4)
    path, fig, pts = _page(tmp_path, k)
    assert fig.layout.meta["view"]["customdata"] == list(reversed(declared))
    top = k.groupby("kernel_demangled")["time_s"].sum().sort_values(ascending=False)
    mine = k[k["kernel_demangled"] == top.index[0]]
    dram = pts[(pts["level"] == "dram") & pts["launch_id"].isin(mine["launch_id"])]
    curve = next(
        i
        for i, t in enumerate(fig.data)
        if t.visible is True and t.meta.get("role") == "dots" and t.meta["level"] == "dram"
    )
    point = int(
        np.flatnonzero(
            np.asarray(fig.data[curve].customdata)[:, plot.CUSTOMDATA.index("kid")] == 0
        )[0]
    )
    page, errors = _open(browser, path)
    # Hover that very dot (a mouse at its centre may pick a smaller dot inside it); plotly emits no
    # event for a hover called from code, so the page's handler gets plotly's hover data
    # as a mouse gives it.
    page.evaluate(
        """([c, p]) => { const gd = document.getElementById('roofline');
      Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: p}]); gd.emit('plotly_hover', {points: gd._hoverdata}); }""",  # noqa: E501
        [curve, point],
    )
    page.wait_for_timeout(300)
    label = " ".join(
        page.evaluate("() => document.querySelector('#roofline .hoverlayer').textContent").split()
    )
    details = " ".join(
        page.evaluate("() => document.getElementById('details').textContent").split()
    )
    assert errors == []
    assert (
        top.index[0] in details and f"{dram['launch_id'].nunique()} launches aggregated" in details
    )
    for text in (label, details):
        assert np.isclose(_si_number(text, r"time ([\d.]+) ?([a-zµ]?)s"), top.iat[0], rtol=5e-3)
        assert np.isclose(
            float(text.split("% of GPU time")[0].split()[-1].strip("(")),
            100 * top.iat[0] / k["time_s"].sum(),
            atol=0.05,
        )


def test_page_words_are_plain(browser, tmp_path):
    """Issue 42: what a reader sees on the page (its text and the hover of every dot of the INT8
    IMMA GEMM) names precisions as ncu's users do, never by an internal source word."""
    import re

    import ncuroof

    ncuroof.analyze(shared("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"), tmp_path / "o")
    page, errors = _open(browser, tmp_path / "o" / "roofline.html")
    seen = page.inner_text("body")
    seen += "\n".join(
        page.evaluate(
            "() => document.getElementById('roofline').data"
            ".map(t => [t.name || '', t.hovertemplate || '', (t.text || []).join(' ')].join(' '))"
        )
    )
    assert "INT8 tensor (IMMA), estimated" in seen
    assert not re.search(r"sass_|legacy_|op_hmma", seen), re.search(
        r".{40}(sass_|legacy_|op_hmma).{20}", seen
    )
    assert not errors


#: Each axis' tick labels as drawn (SVG text).
TICKS_JS = """ax => [...document.querySelectorAll('#roofline .' + ax + 'tick text')]
  .map(t => t.textContent)"""
YTITLE_JS = "() => document.getElementById('roofline')._fullLayout.yaxis.title.text"
#: plotly's SI prefixes (of its "SI extended" set, those a roofline meets).
_PREFIX = dict(zip("afpnμmkMGTPE", (10.0**e for e in range(-18, 19, 3) if e != 0)))


def _tick_value(label: str) -> float:
    """A tick label's number: digits and at most one SI prefix (anything else, such as plotly's
    power notation "10\u200b15\u200b", raises ValueError)."""
    scale = _PREFIX.get(label[-1:])
    return float(label[:-1]) * scale if scale else float(label)


def test_int8_axes_read_at_a_glance(browser, tmp_path):
    """Issue 54 item 2: the INT8 IMMA GEMM's y axis says OP/s where its view has integer work
    (also after another chart was shown) and its ticks are decades in SI prefixes up to the
    INT8 tensor roof, 1P after 100T (plotly's "SI" wrote 10^15 as a power of ten)."""
    r = ncuroof.analyze(shared("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"), tmp_path / "o")
    page, errors = _open(browser, tmp_path / "o" / "roofline.html")
    ticks = page.evaluate(TICKS_JS, "y")
    values = [_tick_value(t) for t in ticks]
    first = round(np.log10(values[0]))
    assert values == pytest.approx([10.0**k for k in range(first, first + len(values))]), ticks
    imma = r.analysis.points.loc[
        r.analysis.points["precision"] == "tensor:sass_imma", "peak_flop_per_s"
    ].max()
    assert imma > 1e14 and values[-1] >= imma / 10  # the decade of the roof is labelled
    assert page.evaluate(YTITLE_JS) == "Performance [FLOP or OP/s]"  # FP32 epilogue and INT8 MMA
    page.select_option("#ctl-precision", "tensor:sass_imma")
    page.wait_for_timeout(300)
    assert page.evaluate(YTITLE_JS) == "Performance [OP/s]"
    charts = page.locator('input[name="ctl-chart"]')
    assert charts.count() > 1
    charts.nth(1).check()
    page.wait_for_timeout(300)
    assert page.evaluate(YTITLE_JS) != "Performance [OP/s]"  # the other chart's own axis
    charts.nth(0).check()
    page.wait_for_timeout(300)
    assert page.evaluate(YTITLE_JS) == "Performance [OP/s]"
    assert not errors


def test_notebook_figures_show_offline(browser, tmp_path, monkeypatch):
    """Issue 54 item 8: a notebook's figures loaded plotly.js from a CDN, blank in nbconvert's HTML
    offline. The first figure of a Python session embeds plotly.js, the next ones use it: two
    analyses' outputs in one document (as a notebook's outputs are) both draw their dots with no
    network, one copy of plotly.js between them."""
    from ncuroof.render import notebook

    monkeypatch.setattr(notebook._Session, "plotlyjs_shown", False)
    third = Path(__file__).resolve().parents[2] / "fixtures" / "third_party"
    first = ncuroof.analyze(third / "ESMM-Research__profile_output.ncu-rep")._repr_html_()
    second = ncuroof.analyze(third / "cutlass-panjd123__4f3955ed3c_report.ncu-rep")._repr_html_()
    bundle = "plotly.js v"  # the banner at the top of plotly.min.js
    assert bundle in first and bundle not in second
    assert not re.search(r"<script[^>]* src=", first + second)  # nothing loaded from a CDN
    doc = tmp_path / "notebook.html"
    doc.write_text(f"<!doctype html><html><body>{first}{second}</body></html>", encoding="utf-8")
    page = browser.new_page()
    page.route(
        "**/*",
        lambda route: route.abort() if route.request.url.startswith("http") else route.continue_(),
    )  # noqa: E501
    page.goto(doc.resolve().as_uri())
    page.wait_for_function(
        "document.querySelectorAll('.plotly-graph-div').length == 2 && "
        "[...document.querySelectorAll('.plotly-graph-div')].every(d => d._fullLayout)"
    )
    drawn = page.evaluate(
        "() => [...document.querySelectorAll('.plotly-graph-div')].map(d => "
        "d.querySelectorAll('.scatterlayer .points path').length)"
    )
    assert len(drawn) == 2 and min(drawn) > 0
