"""The page's phase and instruction-roofline views (issue 15) and a multi-rank run's spread
over ranks (issue 12) in real headless Chromium.

Drawn dots are counted against phases.csv / instruction_points.csv read back with pandas, the
ranks section's rows against ranks.csv; screenshots go to ``test-artifacts/`` (or
``$NCUROOF_ARTIFACTS``).
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

import ncuroof
from tests.helpers.browser import ARTIFACTS
from tests.helpers.browser import open_page as _open
from tests.helpers.reports import needs_ncu_report, shared
from tests.integration.test_ranks import imbalanced_run

# Drawn points of the visible traces of one role in the roofline figure.
DRAWN = """(role) => { const gd = document.getElementById('roofline'); let n = 0;
  gd._fullData.forEach(t => { if (t.visible === true && t.meta && t.meta.role === role) {
    n += document.querySelectorAll('#roofline .trace' + t.uid + ' .points path').length; } });
  return n; }"""
# Visible traces of one role (lines have no points to count).
VISIBLE = """(role) => document.getElementById('roofline')._fullData.filter(t => t.visible === true
  && t.meta && t.meta.role === role).length"""
# Whether the control holding this element shows.
SHOWN = (
    "(sel) => getComputedStyle(document.querySelector(sel).closest('.control')).display !== 'none'"
)
LAYOUT = (
    "() => { const l = document.getElementById('roofline').layout; return [l.title.text,"
    " l.xaxis.range, l.yaxis.range]; }"
)


CHART_LABELS = """() => [...document.querySelectorAll('input[name=ctl-chart]')].map(e =>
  e.parentElement.textContent)"""
# The text labels of the phase dots.
PHASE_LABELS = """() => { const gd = document.getElementById('roofline');
  const t = gd._fullData.find(t => t.meta && t.meta.role === 'phase_dots');
  return [...document.querySelectorAll('#roofline .trace' + t.uid + ' .textpoint')].map(e => e.textContent); }"""  # noqa: E501


def _check_phase_view(page, phases: pd.DataFrame) -> None:
    """The NVTX phase chart (chosen): a dot per phase with FLOPs and DRAM bytes, labelled with its
    name, the precision control shown and the levels control hidden, its own title."""
    drawn = phases[(phases["flop"] > 0) & (phases["dram_bytes"] > 0)]
    assert (
        len(drawn) == 2
        and page.evaluate(DRAWN, "phase_dots") == len(drawn)
        and page.evaluate(DRAWN, "dots") == 0
    )
    assert page.evaluate(SHOWN, "#ctl-precision") and not page.evaluate(SHOWN, ".ctl-level")
    _check_phase_precisions(page, phases)
    assert page.evaluate(LAYOUT)[0].startswith("NVTX phases")
    assert sorted(page.evaluate(PHASE_LABELS)) == ["Fused-GEMM", "Non-fused-GEMM"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "roofline-phases-cutlass.png"), full_page=True)


def _check_instruction_view(page, ipts: pd.DataFrame) -> None:
    """The instruction roofline (chosen): a dot per row of instruction_points.csv, the levels
    control shown and the precision control hidden; unticking L1 leaves the other levels' dots."""
    assert len(ipts) == 9 and page.evaluate(DRAWN, "instruction_dots") == len(
        ipts
    )  # 3 launches x L1, L2, DRAM
    assert (
        page.evaluate(DRAWN, "phase_dots") == 0
        and page.evaluate(SHOWN, ".ctl-level")
        and not page.evaluate(SHOWN, "#ctl-precision")
    )
    page.screenshot(path=str(ARTIFACTS / "roofline-instructions-cutlass.png"), full_page=True)
    page.uncheck('.ctl-level[value="l1"]')
    page.wait_for_timeout(300)
    assert page.evaluate(DRAWN, "instruction_dots") == int((ipts["level"] != "l1").sum()) == 6


@needs_ncu_report
def test_phase_and_instruction_views(browser, tmp_path):  # noqa: F811 - the fixture
    """The view control switches the one roofline figure between its charts from the view contract:
    drawn dots counted against phases.csv / instruction_points.csv, controls shown with their
    charts, the levels control filtering the instruction roofline, the roofline's
    axes back on return."""
    out = tmp_path / "cutlass"
    ncuroof.analyze(shared("cutlass-panjd123__4f3955ed3c_report.ncu-rep"), out, group_by="nvtx")
    page, errors = _open(browser, out / "roofline.html")
    chart = page.locator('input[name="ctl-chart"]')
    labels = page.evaluate(CHART_LABELS)
    assert labels == [
        "Kernels (FLOP roofline)",
        "NVTX phases",
        "Instruction roofline",
        "PM sampling timeline",  # the report was PM-sampled (issue 51)
        "PM sampling phases",
    ]
    roofline = page.evaluate(LAYOUT)
    kernel_dots = page.evaluate(DRAWN, "dots")
    assert (
        kernel_dots > 0
        and page.evaluate(DRAWN, "phase_dots") == 0
        and page.evaluate(SHOWN, "#ctl-precision")
    )

    chart.nth(1).check()
    page.wait_for_timeout(400)
    _check_phase_view(page, pd.read_csv(out / "phases.csv"))

    chart.nth(2).check()
    page.wait_for_timeout(400)
    _check_instruction_view(page, pd.read_csv(out / "instruction_points.csv"))

    chart.nth(3).check()  # the PM sampling timeline: a line per sampled family, the roof at 1
    page.wait_for_timeout(400)
    assert page.evaluate(VISIBLE, "sample_line") > 0 and page.evaluate(VISIBLE, "sample_roof") == 1
    assert page.evaluate(DRAWN, "dots") == 0
    assert page.evaluate(LAYOUT)[0].startswith("Inside the kernel over time")
    chart.nth(4).check()  # the phases' trail on the roofline
    page.wait_for_timeout(400)
    phases = pd.read_csv(out / "sample_phases.csv")
    drawn = phases[(phases["flop"] > 0) & (phases["dram_bytes"] > 0)]
    assert page.evaluate(DRAWN, "sample_phase_dots") >= len(drawn) > 0
    assert page.evaluate(VISIBLE, "sample_trail") > 0
    page.screenshot(path=str(ARTIFACTS / "roofline-samples-cutlass.png"), full_page=True)

    chart.nth(0).check()
    page.wait_for_timeout(300)
    assert page.evaluate(LAYOUT) == roofline and page.evaluate(DRAWN, "instruction_dots") == 0
    assert 0 < page.evaluate(DRAWN, "dots") < kernel_dots  # L1 is still off
    assert errors == []


# Hover one phase dot of a precision view; its hover label's lines; the precisions of
# the drawn phase roofs.
PHASE_HOVER = """([prec, i]) => { const gd = document.getElementById('roofline');
  const n = gd.data.findIndex(t => t.meta && t.meta.role === 'phase_dots' && t.meta.precision === prec);
  Plotly.Fx.hover(gd, [{curveNumber: n, pointNumber: i}]); }"""  # noqa: E501
HOVER_LINES = """() => { const h = document.querySelector('#roofline .hoverlayer .hovertext');
  return h ? [...h.querySelectorAll('tspan.line')].map(e => e.textContent) : null; }"""
PHASE_ROOFS = """() => document.getElementById('roofline')._fullData.filter(t => t.visible === true && t.meta
  && t.meta.role === 'phase_roof').map(t => t.meta.precision)"""  # noqa: E501
_SI = {"": 1.0, "n": 1e-9, "µ": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUM = r"([0-9.]+(?:e[+-]?[0-9]+)?)([nµmkMGTP]?)"


def _hover_numbers(lines: list[str]) -> dict[str, float | str]:
    """The numbers of a phase dot's hover label, one line each (plotly's SI-prefixed text)."""
    m = re.fullmatch(
        rf"(.+) · (\w+)-bound\n([0-9]+) launches, {_NUM}s \(([0-9]+)%\)\n.*FLOPs {_NUM}FLOP: AI"
        rf" {_NUM} FLOP/B at DRAM, "
        rf"{_NUM}FLOP/s\nat its speed of light {_NUM}s",
        "\n".join(lines),
    )
    assert m, lines
    g = m.groups()
    si = [float(g[i]) * _SI[g[i + 1]] for i in (3, 6, 8, 10, 12)]
    return {
        "phase": g[0],
        "bound": g[1],
        "launches": float(g[2]),
        "time_s": si[0],
        "time_share": float(g[5]) / 100,
        "flop": si[1],
        "ai": si[2],
        "flop_per_s": si[3],
        "time_at_roof_s": si[4],
    }


def _check_phase_precisions(page, phases: pd.DataFrame) -> None:
    """On the phase chart, the precision control changes the phase dots and roofs: all counted FLOPs
    under the roof of the kernels' main precision (tensor), FP32 FLOPs under the FP32 roof; each
    view's hover label holds phases.csv's numbers recomputed with pandas (3 significant
    digits, the label's)."""
    views = {
        "main": ("flop", ["tensor:sass_imma"]),
        "fp32": ("fp32_flop", ["fp32"]),
        "tensor:sass_imma": ("tensor_sass_imma_flop", ["tensor:sass_imma"]),
    }
    for view, (col, roofs) in [*views.items(), ("main", views["main"])]:
        page.select_option("#ctl-precision", view)
        page.wait_for_timeout(300)
        drawn = phases[(phases[col] > 0) & (phases["dram_bytes"] > 0)].reset_index(drop=True)
        assert page.evaluate(DRAWN, "phase_dots") == len(drawn) == (1 if view == "fp32" else 2)
        assert page.evaluate(PHASE_ROOFS) == roofs
        for i, row in drawn.iterrows():
            page.wait_for_timeout(100)  # plotly throttles hover events
            page.evaluate(PHASE_HOVER, [view, i])
            got = _hover_numbers(page.evaluate(HOVER_LINES))
            assert (got["phase"], got["bound"], got["launches"]) == (
                row["phase"],
                row["bound"],
                row["launches"],
            )
            assert got["time_share"] == pytest.approx(row["time_share"], abs=0.005)
            want = {
                "time_s": row["time_s"],
                "flop": row[col],
                "ai": row[col] / row["dram_bytes"],
                "flop_per_s": row[col] / row["time_s"],
                "time_at_roof_s": row["time_at_roof_s"],
            }
            for k, v in want.items():
                assert got[k] == pytest.approx(v, rel=5e-3), (view, k)


def _own_and_other_chart():
    """A figure with one dot trace shown at level L2, a contract with a levels and a colour control,
    and another chart with a trace at L1 and one at L3 (a level no control offers)."""
    import plotly.graph_objects as go

    from ncuroof.render.viewcontract import Chart, Control, ViewContract, ViewState

    fig = go.Figure([go.Scatter(x=[1], y=[1], meta={"role": "dots", "when": {"levels": "l2"}})])
    fig.update_layout(title="own", xaxis_range=[0, 3])
    fig.add_annotation(text="note")
    contract = ViewContract(
        ViewState(levels=["l1", "l2"]),
        [
            Control("level", "levels", "checkboxes", "Levels", [["l1", "L1"], ["l2", "L2"]]),
            Control("color", "color", "radio", "Colour", [["kernel", "k"]]),
        ],
    )
    other = Chart(
        "other",
        "Other",
        [
            go.Scatter(x=[1], y=[2], meta={"role": "o", "when": {"levels": "l1"}}),
            go.Scatter(x=[1], y=[3], meta={"role": "o", "when": {"levels": "l3"}}),
        ],
        layout={"title.text": "other"},
        fields=("levels",),
    )
    return fig, contract, other


def test_charts_join_the_view_contract_by_hand():
    """add_charts: the figure's own traces show with its chart, a chart's traces with theirs and the
    levels they name; a condition no control can meet is dropped; the axes and
    notes follow the chart.
    """
    from ncuroof.render.viewcontract import add_charts, apply_view

    fig, contract, other = _own_and_other_chart()
    add_charts(fig, contract, [other], "Own")
    assert [t.meta["when"] for t in fig.data] == [
        {"levels": "l2", "chart": "roofline"},
        {"levels": "l1", "chart": "other"},
        {"chart": "other"},
    ]
    assert contract.controls[0].options == [["roofline", "Own"], ["other", "Other"]]
    assert contract.controls[1].when == {"chart": ["roofline", "other"]} and contract.controls[
        2
    ].when == {"chart": ["roofline"]}
    apply_view(fig, contract)
    assert [t.visible for t in fig.data] == [True, False, False] and fig.layout.annotations[
        0
    ].visible
    contract.state.chart = "other"
    contract.state.levels = ["l1"]
    apply_view(fig, contract)
    assert [t.visible for t in fig.data] == [False, True, True] and fig.layout.title.text == "other"
    assert fig.layout.annotations[0].visible is False and fig.layout.xaxis.autorange is True
    contract.state.chart = "roofline"
    apply_view(fig, contract)
    assert (
        fig.layout.title.text == "own"
        and tuple(fig.layout.xaxis.range) == (0, 3)
        and fig.layout.annotations[0].visible
    )


@needs_ncu_report
def test_rank_section_in_the_browser(browser, tmp_path, monkeypatch):  # noqa: F811 - the fixture
    out = imbalanced_run(tmp_path, monkeypatch)
    table = pd.read_csv(out / "ranks.csv")
    page, errors = _open(browser, out / "roofline.html")
    section = page.locator("#ranks")
    assert section.is_visible() and section.locator("h2").inner_text() == "Spread over 3 MPI ranks"
    rows = section.locator("tbody tr")
    assert rows.count() == len(table)
    marked = section.locator("tbody tr.imbalanced")
    assert marked.count() == int(table["load_imbalance"].sum()) == 1
    colour = "(el) => getComputedStyle(el.querySelector('td')).backgroundColor"
    assert (
        marked.first.evaluate(colour) == "rgb(255, 241, 224)"
        and rows.nth(0).evaluate(colour) != "rgb(255, 241, 224)"
    )
    section.locator("th", has_text="slowest over median").click()  # sorts, largest first
    first = table.sort_values("imbalance", ascending=False).iloc[0]
    assert rows.nth(0).locator("td").nth(0).inner_text() == first["kernel_name"] and bool(
        first["load_imbalance"]
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(ARTIFACTS / "roofline-ranks-esmm.png"))
    assert errors == []


def test_figure_without_points_opens_on_its_first_chart():
    """No roofline points (no FLOP counters) but another chart: the page opens on that chart, whose
    level condition no control can meet (there is no levels control) and is dropped."""
    import plotly.graph_objects as go

    from ncuroof.render import figure as plot
    from ncuroof.render.viewcontract import Chart

    other = Chart(
        "other",
        "Other",
        [go.Scatter(x=[1], y=[2], meta={"role": "o", "when": {"levels": "l1"}})],
        fields=("levels",),
    )
    fig = plot.plot_roofline(pd.DataFrame(columns=["level"]), charts=[other])
    view = fig.layout.meta["view"]
    assert view["state"]["chart"] == "other" and [c["id"] for c in view["controls"]] == ["chart"]
    assert fig.data[0].visible is True and fig.data[0].meta["when"] == {"chart": "other"}
    assert (
        fig.layout.annotations[0].visible is False
    )  # the "no roofline points" note belongs to the roofline
