"""compare.html in real headless Chromium: a roofline of both runs (log axes, each run's roofs, an
arrow per moved kernel, kernels of one run marked, hover), checked against the compare table and
each run's own launch table (``ncuroof.load``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuroof
from tests.helpers.browser import ARTIFACTS, open_page
from tests.helpers.reports import needs_ncu_report, shared

STATE_JS = """() => { const gd = document.querySelector('.plotly-graph-div');
  const roofs = gd._fullData.filter(t => t.meta && t.meta.role === 'roof');
  const dots = gd._fullData.filter(t => t.meta && t.meta.role === 'dots' && t.visible === true);
  return {x: gd._fullLayout.xaxis.type, y: gd._fullLayout.yaxis.type, xr: gd._fullLayout.xaxis.range, yr: gd._fullLayout.yaxis.range,
          roofs: roofs.map(t => ({name: t.name, run: t.meta.run, level: t.meta.level || '', x: Array.from(t.x), y: Array.from(t.y)})),
          dots: dots.map(t => ({name: t.name, n: document.querySelectorAll('.trace' + t.uid + ' .points path').length,
                                x: Array.from(t.x)})),
          arrows: gd._fullLayout.annotations.filter(a => a.showarrow && a.axref === 'x').map(a => [a.ax, a.ay, a.x, a.y])}; }"""  # noqa: E501


# The visible traces' names; hover one point of a curve and read its label; apply a level button.
NAMES_JS = """() => document.querySelector('.plotly-graph-div')._fullData.map(t => t.visible ===
  true ? t.name : '')"""
HOVER_JS = """([c]) => { const gd = document.querySelector('.plotly-graph-div');
  Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: 0}]); }"""
LEVEL_LABELS_JS = """() => document.querySelector('.plotly-graph-div').layout.updatemenus[0].buttons
  .map(b => b.label)"""
LEVEL_BUTTON_JS = """([i]) => { const gd = document.querySelector('.plotly-graph-div');
  const b = gd.layout.updatemenus[0].buttons[i]; return Plotly.update(gd, b.args[0], b.args[1]); }"""  # noqa: E501
XTITLE_JS = "() => document.querySelector('.plotly-graph-div')._fullLayout.xaxis.title.text"


def _open(browser, path: Path):  # noqa: F811 - the compare page's chart has no id
    return open_page(browser, path, "document.querySelector('.plotly-graph-div')")


def _arrow(row: pd.Series, level: str) -> list[float]:
    """The log10 (x, y) of a kernel's before dot then its after dot at ``level`` (the table's)."""
    return [
        math.log10(v)
        for v in (
            row[f"{level}_ai_flop_per_byte_before"],
            row["flop_per_s_before"],
            row[f"{level}_ai_flop_per_byte_after"],
            row["flop_per_s_after"],
        )
    ]


def _hover_label(page, curve_name: str) -> str:
    """Hover the first point of the visible curve named ``curve_name``; its label, spaces folded."""
    curve = next(i for i, d in enumerate(page.evaluate(NAMES_JS)) if d == curve_name)
    page.evaluate(HOVER_JS, [curve])
    return " ".join(
        page.evaluate("() => document.querySelector('.hoverlayer').textContent").split()
    )


def _check_roofs(s: dict, before: Path, after: Path) -> None:
    """Each run's roofs, labelled; the DRAM roof's slope is the run's median DRAM peak (its launch
    table, ``ncuroof.load``)."""
    assert {rf["run"] for rf in s["roofs"]} == {"before", "after"} and all(
        rf["name"].startswith(rf["run"] + ":") for rf in s["roofs"]
    )
    for side, path in (("before", before), ("after", after)):
        dram = next(rf for rf in s["roofs"] if rf["run"] == side and rf["level"] == "dram")
        peak = ncuroof.load(path)["peak_dram_bytes_per_s"].median()
        assert dram["y"][0] / dram["x"][0] == pytest.approx(peak, rel=1e-9)


@needs_ncu_report
def test_compare_page_is_a_roofline_of_both_runs(browser, tmp_path):  # noqa: F811
    before, after = shared("CudaCode__naive.ncu-rep"), shared("Cuda_Gemm_Practice__gemm_v9.ncu-rep")
    r = ncuroof.compare_runs(before, after, tmp_path / "c", pairs=[("naive_gemm", "gemm")])
    page, errors = _open(browser, tmp_path / "c" / "compare.html")
    s = page.evaluate(STATE_JS)
    assert s["x"] == s["y"] == "log"
    _check_roofs(s, before, after)  # two GPUs
    # One arrow: the paired kernel, from its before dot to its after dot at the
    # level the table names.
    row = r.table.set_index("kernel_name").loc["naive_gemm"]
    assert len(s["arrows"]) == 1 and s["arrows"][0] == pytest.approx(
        _arrow(row, "movement"), rel=1e-9
    )
    counts = {d["name"]: d["n"] for d in s["dots"]}
    assert counts == {"before": 1, "after": 1, "only after (new)": 1}
    # Every dot and every ridge point inside the axes.
    xs = [x for d in s["dots"] for x in d["x"]] + [
        rf["x"][0] for rf in s["roofs"] if not rf["level"]
    ]
    assert all(s["xr"][0] < math.log10(x) < s["xr"][1] for x in xs)
    label = _hover_label(page, "only after (new)")
    assert "ampere_sgemm_128x64_nn" in label and "only after (new)" in label and "77.4 us" in label
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare-CudaCode-Cuda_Gemm.png"), full_page=True)
    # The level control: L1 for every kernel moves the dots and the arrow to the L1
    # columns of the table.
    assert page.evaluate(LEVEL_LABELS_JS) == ["each kernel's level", "DRAM", "L2", "L1"]
    page.evaluate(LEVEL_BUTTON_JS, [3])
    page.wait_for_timeout(300)
    s = page.evaluate(STATE_JS)
    assert len(s["arrows"]) == 1 and s["arrows"][0] == pytest.approx(_arrow(row, "l1"), rel=1e-9)
    assert {d["name"]: d["n"] for d in s["dots"]} == {
        "before": 1,
        "after": 1,
        "only after (new)": 1,
    }
    only = r.table.set_index("kernel_name").loc[
        "ampere_sgemm_128x64_nn", "l1_ai_flop_per_byte_after"
    ]
    assert next(d for d in s["dots"] if d["name"] == "only after (new)")["x"] == pytest.approx(
        [only]
    )
    assert page.evaluate(XTITLE_JS) == "Arithmetic intensity at L1 [FLOP/byte]"
    assert errors == []


@needs_ncu_report
def test_same_roofs_are_drawn_once_as_both_runs(browser, tmp_path):  # noqa: F811
    path = shared("ESMM-Research__profile_output.ncu-rep")
    r = ncuroof.compare_runs(path, path, tmp_path / "c")
    page, errors = _open(browser, tmp_path / "c" / "compare.html")
    s = page.evaluate(STATE_JS)
    assert {rf["run"] for rf in s["roofs"]} == {"both runs"}
    assert s["arrows"] == []  # nothing moved
    assert {d["name"]: d["n"] for d in s["dots"]}["after"] == len(r.table) == 4
    assert np.all(r.table["speedup"] == 1.0) and errors == []


@needs_ncu_report
def test_trail_page_draws_each_kernels_trail(browser, tmp_path):  # noqa: F811
    runs = [shared("ESMM-Research__metrics.csv"), shared("ESMM-Research__profile_output.ncu-rep")]
    r = ncuroof.api.compare_series(runs, tmp_path / "t", gpu="a10g")
    page, errors = _open(browser, tmp_path / "t" / "trail.html")
    trails = page.evaluate(
        """() => document.querySelector('.plotly-graph-div')._fullData
      .filter(t => t.meta && t.meta.role === 'trail').map(t => ({trail: t.meta.trail, text: Array.from(t.text), x: Array.from(t.x)}))"""  # noqa: E501
    )
    t = r.table[(r.table["trail_ai_flop_per_byte"] > 0) & (r.table["flop_per_s"] > 0)]
    assert sorted(tr["trail"] for tr in trails) == sorted(t["trail"].unique())
    for tr in trails:
        rows = t[t["trail"] == tr["trail"]]
        assert tr["text"] == [str(i + 1) for i in rows["run"]] and tr["x"] == pytest.approx(
            list(rows["trail_ai_flop_per_byte"])
        )
    assert max(len(tr["text"]) for tr in trails) == 2 and page.evaluate(STATE_JS)["x"] == "log"
    page.screenshot(path=str(ARTIFACTS / "trail-ESMM.png"), full_page=True)
    assert errors == []


#: The dot labels (annotations with a line to a dot, offsets in px) as plotly holds them and as
#: Chromium drew them, and every drawn dot's box.
LABELS_JS = """() => { const gd = document.querySelector('.plotly-graph-div');
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const held = gd._fullLayout.annotations.map((a, i) => ({i, a}))
    .filter(({a}) => a.showarrow && a.axref === 'pixel');
  const drawn = Object.fromEntries([...document.querySelectorAll('.annotation')].map(g =>
    [g.getAttribute('data-index'), box(g.querySelector('.annotation-text'))]));
  return {labels: held.map(({i, a}) => ({text: a.text, x: a.x, y: a.y, box: drawn[String(i)]})),
          dots: [...document.querySelectorAll('.scatterlayer .trace')].filter(t => t.style.opacity !== '0')
            .flatMap(t => [...t.querySelectorAll('.points path')].map(box))}; }"""  # noqa: E501


def _apart(a: list[float], b: list[float]) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def test_dot_labels_name_their_dots_and_cover_nothing(browser, tmp_path):
    """Issue 54 item 2: compare.html's after dots are labelled with their kernel's names; on the
    repository's ESMM pair four dots sit within 0.21 decades of AI and labels written above each
    dot ran into each other and the neighbouring dots. Each label is joined by a line to its dot
    (at the compare table's after AI and FLOP/s, in every level view) and, as Chromium draws it at
    1,280 and 1,400 px, overlaps no other label and no dot."""
    third = Path(__file__).resolve().parents[2] / "fixtures" / "third_party"
    r = ncuroof.compare_runs(
        third / "ESMM-Research__metrics.csv",
        third / "ESMM-Research__profile_output.ncu-rep",
        tmp_path / "c",
    )
    after = r.table[(r.table["status"] == "matched")].set_index("kernel_label")
    for width in (1280, 1400):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto((tmp_path / "c" / "compare.html").resolve().as_uri())
        page.wait_for_function("document.querySelector('.plotly-graph-div')._fullLayout")
        for view, level in enumerate(("movement", "dram", "l2", "l1")):
            page.evaluate(LEVEL_BUTTON_JS, [view])
            page.wait_for_timeout(200)
            got = page.evaluate(LABELS_JS)
            assert sorted(lb["text"] for lb in got["labels"]) == sorted(after.index)
            for lb in got["labels"]:
                row = after.loc[lb["text"]]
                assert [lb["x"], lb["y"]] == pytest.approx(
                    [
                        math.log10(row[f"{level}_ai_flop_per_byte_after"]),
                        math.log10(row["flop_per_s_after"]),
                    ],
                    rel=1e-12,
                )
                assert all(_apart(lb["box"], d) for d in got["dots"]), (width, level, lb["text"])
            boxes = [lb["box"] for lb in got["labels"]]
            assert all(_apart(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
        page.close()


#: Per kernel-table row: its cells' texts and, for the time column, its sort value.
TABLE_JS = """() => { const t = document.querySelector('table.sortable');
  const head = [...t.tHead.rows[0].cells].map(c => c.textContent);
  return {head, rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)),
          page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
          table: t.getBoundingClientRect().width}; }"""


def test_kernel_table_fits_a_laptop_screen(browser, tmp_path):
    """Issue 54 item 2: compare.html's kernel table (20 columns, 1,634 px wide) scrolled sideways
    at 1,400 px. One column per quantity with ``before → after`` in a cell: the repository's ESMM
    pair (an ncu CSV export against the report) fits 1,280 px, and at 1,024 px only the table
    scrolls, inside its box, never the page. The cells carry both runs' values as ncuroof.fmt
    writes them from the compare table."""
    from ncuroof import fmt

    third = Path(__file__).resolve().parents[2] / "fixtures" / "third_party"
    r = ncuroof.compare_runs(
        third / "ESMM-Research__metrics.csv",
        third / "ESMM-Research__profile_output.ncu-rep",
        tmp_path / "c",
    )
    html = tmp_path / "c" / "compare.html"
    for width in (1024, 1280):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(html.resolve().as_uri())
        page.wait_for_function("document.querySelector('.plotly-graph-div')._fullLayout")
        got = page.evaluate(TABLE_JS)
        assert got["page"][0] == got["page"][1] == width  # the page never scrolls sideways
        if width == 1280:
            assert got["table"] <= width
    rows = {row[0].strip(): dict(zip(got["head"], row)) for row in got["rows"]}
    for t in r.table.itertuples():
        cells = rows[t.kernel_label]
        before = fmt.time(t.time_s_before) if t.launches_before else "-"
        after = fmt.time(t.time_s_after) if t.launches_after else "-"
        assert cells["time"] == f"{before} → {after}"
        assert cells["launches"] == f"{t.launches_before} → {t.launches_after}"
    matched = r.table[r.table["status"] == "matched"]
    assert len(matched) == 4 and len(r.table) == 8
    assert all(rows[k]["status"] == "matched (name)" for k in matched["kernel_label"])
