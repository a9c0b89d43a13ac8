"""Issue 21: charts complete in every view. Every shown dot has the flat roof of its precision drawn
above or through it and lies inside the axis ranges with its marker; memory roofs run up to the
highest shown compute roof; ridge points are inside the ranges; the instruction roofline has an
issue roof wherever the report or the datasheet gives SMs and clock, and its legend lists only
drawn traces; the page header does not claim evidence the report lacks.

The checks read the figure JSON out of the written ``roofline.html`` and recompute the dots and
roofs from ``points.csv`` with pandas (sums and medians), not from ncuroof's plotting code. One
check runs in Chromium on the rendered page.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog, parser
from ncuroof.render.viewcontract import visible
from tests.helpers.figures import arr, figure_of
from tests.helpers.reports import REPORTS, ncu_metrics, needs_ncu_report, shared

CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"
GEMM = "Cuda_Gemm_Practice__gemm_v9.ncu-rep"
# What the instruction-only input keeps: identity, launch attributes, time, warp
# instructions, sectors.
_INSTRUCTIONS_ONLY = re.compile(
    r"^(source|range_id|launch_id|kernel_name|kernel_demangled|nvtx_range|device_name|cc|grid|block|"
    r"ncu_version|input_notes|device__attribute_.*|launch__.*|gpu__time_duration\.sum|smsp__inst_executed\.sum|"
    r"l1tex__t_sectors_pipe_lsu_mem_.*|lts__t_sectors\.sum|dram__sectors_(read|write)\.sum)$"
)


def _states(layout: dict) -> list[dict]:
    """Every state of the FLOP roofline's controls: precision view x levels (all, each one) x dots x
    all kernels x achievable roofs."""
    view = layout["meta"]["view"]
    base = dict(
        view["state"],
        chart=next(
            (c["options"][0][0] for c in view["controls"] if c["field"] == "chart"),
            view["state"]["chart"],
        ),
    )
    opts = {
        c["field"]: [o[0] for o in c["options"]] if c["options"] else [False, True]
        for c in view["controls"]
        if c["field"] in ("precision", "mode", "all", "achievable")
    }
    levels = next((c["options"] for c in view["controls"] if c["field"] == "levels"), [])
    if levels:
        opts["levels"] = [[lv for lv, _ in levels]] + (
            [[lv] for lv, _ in levels] if len(levels) > 1 else []
        )
    return [dict(base, **dict(zip(opts, combo))) for combo in itertools.product(*opts.values())]


def _expected_dots(points: pd.DataFrame, kernels: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Dots recomputed with pandas: per launch the points rows; per kernel (demangled name) the sums
    of FLOPs, bytes and time of its launches at each precision and level."""
    key = kernels.assign(
        key=kernels["kernel_demangled"].fillna(kernels["kernel_name"]).astype(str)
    )[["source", "launch_id", "key"]]
    p = points.merge(key, on=["source", "launch_id"])
    per = p.groupby(["key", "precision", "level"])[["flop", "bytes", "time_s"]].sum().reset_index()
    per["x"], per["y"] = per["flop"] / per["bytes"], per["flop"] / per["time_s"]
    return {"kernel": per, "launch": p.assign(x=p["ai_flop_per_byte"], y=p["flop_per_s"])}


def _radius_px(trace: dict) -> np.ndarray:
    """Marker radius of each dot [px] (plotly's area sizing: diameter = sqrt(size / sizeref),
    at least sizemin)."""
    m = trace["marker"]
    size = (
        arr(m["size"])
        if isinstance(m["size"], (list, dict))
        else np.full(len(arr(trace["x"])), float(m["size"]))
    )
    return (
        np.maximum(np.sqrt(np.nan_to_num(size) / m.get("sizeref", 1.0)), m.get("sizemin", 0.0)) / 2
        + 1
    )


def check_complete(out: Path, width_px: float = 600.0) -> int:
    """Every check of the module docstring on the FLOP roofline of the page in ``out``, in every
    state; dots checked."""
    data, layout = figure_of(out / "roofline.html")
    points, kernels = pd.read_csv(out / "points.csv"), pd.read_csv(out / "launches.csv")
    expected = _expected_dots(points, kernels)
    peaks = points.groupby("precision")["peak_flop_per_s"].median().dropna()
    (x0, x1), (y0, y1) = layout["xaxis"]["range"], layout["yaxis"]["range"]
    h_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    checked = 0
    for st in _states(layout):
        shown = [t for t in data if visible(t.get("meta", {}).get("when", {}), st)]
        flat = {
            t["meta"]["precision"]: arr(t["y"])[0]
            for t in shown
            if t["meta"].get("role") == "roof_flop"
        }
        for prec, y in flat.items():
            assert y == pytest.approx(peaks[prec], rel=1e-9), (
                f"{prec} roof is not the median of points.csv's"
            )
        for t in (t for t in shown if t["meta"].get("role") == "roof_mem"):
            assert arr(t["y"]).max() >= max(flat.values(), default=0) * (1 - 1e-9), (
                f"{t['name']} stops below a shown compute roof in {st}"
            )
        for t in (t for t in shown if t["meta"].get("role") == "ridge"):
            assert all(
                x0 <= math.log10(x) <= x1 and y0 <= math.log10(y) <= y1
                for x, y in zip(arr(t["x"]), arr(t["y"]))
            ), f"ridge outside in {st}"
        for t in (t for t in shown if t["meta"].get("role") == "dots"):
            want = expected[t["meta"]["mode"]]
            want = want[want["level"] == t["meta"]["level"]]
            r = _radius_px(t)
            for x, y, rad in zip(arr(t["x"]), arr(t["y"]), r):
                rows = want[
                    np.isclose(want["x"], x, rtol=2e-6) & np.isclose(want["y"], y, rtol=2e-6)
                ]
                assert len(rows), f"dot ({x}, {y}) matches no row of points.csv"
                roofs = [flat[p] for p in set(rows["precision"]) if p in flat]
                assert roofs, f"{st}: dot at {set(rows['precision'])} has no roof drawn"
                assert max(roofs) * 10 ** (rad / h_px * (y1 - y0)) >= y, (
                    f"{st}: the roof is below the dot"
                )
                dx, dy = rad / width_px * (x1 - x0), rad / h_px * (y1 - y0)
                assert (
                    x0 + dx <= math.log10(x) <= x1 - dx and y0 + dy <= math.log10(y) <= y1 - dy
                ), f"{st}: dot ({x}, {y}) outside the axes"
                checked += 1
    return checked


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory):
    """Shared report name -> (output directory, analysis), each analyzed once for this module."""
    done: dict[str, tuple[Path, ncuroof.AnalysisResult]] = {}

    def get(name: str) -> tuple[Path, ncuroof.AnalysisResult]:
        if name not in done:
            out = tmp_path_factory.mktemp("page")
            done[name] = (out, ncuroof.analyze(shared(name), out))
        return done[name]

    return get


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_every_dot_has_its_roof_in_every_view(name: str, analyzed) -> None:
    out, res = analyzed(name)
    if res.points.empty:  # no FLOP roofline: the page opens on another chart or says why
        data, layout = figure_of(out / "roofline.html")
        assert (
            layout["meta"]["view"]["state"]["chart"] != "roofline"
            or "No roofline points" in layout["annotations"][0]["text"]
        )
        return
    assert check_complete(out) > 0


def _relabelled(name: str, old: str, new: str) -> pd.DataFrame:
    """A shared report's raw table with its MMA opcode counters renamed
    (``old`` -> ``new`` in the opcode)."""
    cat = catalog.load()
    raw = parser.read(shared(name), cat)
    return raw.rename(
        columns={
            c: c.replace(old, new)
            for c in raw.columns
            if c.startswith(cat.tensor.opcode_metric + "[")
        }
    )


@needs_ncu_report
def test_hmma_work_from_opcodes_has_a_roof(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The A40 case: tensor work estimated from HMMA opcodes is each kernel's main precision; the
    default view draws a flat roof over every dot (IMMA.16832 relabelled HMMA.16816: same count)."""
    raw = _relabelled(CUTLASS, "IMMA.16832.S8.S8.SAT", "HMMA.16816.F32")
    assert any("HMMA.16816.F32" in c for c in raw.columns)
    monkeypatch.setattr(parser, "read_many", lambda *a, **k: raw)
    out = tmp_path / "hmma"
    res = ncuroof.analyze(shared(CUTLASS), out)
    assert set(res.summary["precision"]) != {""}
    assert check_complete(out) > 0


@needs_ncu_report
@pytest.mark.parametrize("gone", ["fp32", "tensor:sass_imma"])
def test_a_view_without_a_roof_says_why(gone: str) -> None:
    """A precision whose roof is gone from every launch: no flat roof is drawn for it, and the
    chart's note, set per view, names it in its own view; a kernel whose main precision lost its
    roof is drawn at its other roofed precision with work, and the 'main' view's note says so."""
    from ncuroof.model import summary
    from ncuroof.render import figure as plot

    res = ncuroof.analyze(shared("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"), write=False)
    pts = res.points.assign(
        peak_flop_per_s=res.points["peak_flop_per_s"].where(res.points["precision"] != gone)
    )
    summ = summary.kernel_summary(res.launches, pts)
    fig = plot.plot_roofline(pts, res.launches, summary=summ)
    view = fig.layout.meta["view"]
    assert not [
        t for t in fig.data if t.meta["role"] == "roof_flop" and t.meta["precision"] == gone
    ]
    notes = {v: next(iter(patch.values())) for v, patch in view["layouts"]["precision"].items()}
    title = {"fp32": "FP32", "tensor:sass_imma": "INT8 tensor (IMMA), estimated"}
    assert f"no {title[gone]} roof" in notes[gone] and "--peak-flops" in notes[gone]
    other = next(p for p in title if p != gone)
    assert title[gone] not in notes[other]
    imma = title["tensor:sass_imma"]
    moved = f"1 kernel drawn at another precision with work: {imma} has no roof, so at FP32"
    assert (moved in notes["main"]) == (
        gone == "tensor:sass_imma"
    )  # the IMMA GEMM has FP32 work too; the FP32 GEMM nothing else


def _instructions_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The page of the RTX 3080 report cut to instruction counters (no FLOPs,
    SpeedOfLight or SM clock)."""
    raw = parser.read(shared(GEMM), catalog.load())
    raw = raw[[c for c in raw.columns if _INSTRUCTIONS_ONLY.match(c)]]
    monkeypatch.setattr(parser, "read_many", lambda *a, **k: raw)
    out = tmp_path / "inst"
    ncuroof.analyze(shared(GEMM), out)
    return out


@needs_ncu_report
def test_instruction_only_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The RTX 4090 case: instruction counters, but neither FLOP counters nor SpeedOfLight nor the
    SM clock. The instruction roofline gets the datasheet's issue roof (RTX 3080: 68 SMs x 4 x 1.71
    GHz), labelled; walls only where a bandwidth roof exists (DRAM from the datasheet; not L1, L2);
    the legend lists only drawn traces; the header does not say the verdicts come
    from SpeedOfLight."""
    out = _instructions_only(tmp_path, monkeypatch)
    data, layout = figure_of(out / "roofline.html")
    inst = [t for t in data if t.get("meta", {}).get("when", {}).get("chart") == "instructions"]
    issue = [t for t in inst if t["meta"].get("level") == "issue"]
    assert (
        len(issue) == 1
        and arr(issue[0]["y"])[0] == pytest.approx(68 * 4 * 1.71e9, rel=1e-12)
        and "datasheet" in issue[0]["name"]
    )
    walls = {t["meta"]["level"] for t in inst if t["meta"]["role"] == "instruction_roof"} - {
        "issue"
    }
    assert walls == {"dram"}
    for t in inst:  # a legend entry has something drawn
        if t.get("showlegend", True):
            assert np.isfinite(arr(t["y"])).any(), f"{t['name']} is in the legend but draws nothing"
    html = (out / "roofline.html").read_text(encoding="utf-8")
    assert (
        "SpeedOfLight throughputs alone" not in html
        and "SpeedOfLight only" not in html
        and "no kernel can be classified" in html
    )
    title = layout["meta"]["view"]["layouts"]["chart"]["instructions"]["title.text"]
    assert "no L1/L2 wall" in title
    flags = pd.read_csv(out / "launches.csv")[
        "flags"
    ]  # launches.csv says what the report holds too
    k = pd.read_csv(out / "launches.csv")
    assert (k["dram_bytes"] > 0).all() and k[
        "sm_throughput_frac"
    ].isna().all()  # it holds bytes, no SpeedOfLight
    assert flags.str.contains(
        "missing_metrics: no FLOP counters (holds bytes, duration)", regex=False
    ).all()


def _issue_roofs_from_ncu(name: str) -> list[float]:
    """Each launch's issue roof from what ncu stored (SMs x 4 x SM clock) or, lacking those, the
    datasheet entry matching its device (SMs x 4 x boost clock); NaN when neither."""
    gpus = catalog.load_gpus()
    out = []
    for m, dev in zip(ncu_metrics(name), ncuroof.load(shared(name))["device_name"]):
        peak = (
            m.get("device__attribute_multiprocessor_count", math.nan)
            * 4
            * m.get("sm__cycles_elapsed.avg.per_second", math.nan)
        )
        gpu = gpus.by_device(str(dev)) if not math.isfinite(peak) else None
        out.append(gpu.sms * 4 * gpu.boost_hz if gpu is not None else peak)
    return out


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_instruction_chart_has_an_issue_roof(name: str, analyzed) -> None:
    out, res = analyzed(name)
    ipts = res.instruction_points
    if ipts is None or ipts.empty:
        pytest.skip(f"{name} has no warp-instruction and transaction counters")
    data, _ = figure_of(out / "roofline.html")
    inst = [t for t in data if t.get("meta", {}).get("when", {}).get("chart") == "instructions"]
    issue = [t for t in inst if t["meta"].get("level") == "issue"]
    roofs = [
        r
        for i, r in enumerate(_issue_roofs_from_ncu(name))
        if i in set(ipts["launch_id"]) and math.isfinite(r)
    ]
    if not roofs:
        assert not issue
        return
    assert len(issue) == 1 and min(roofs) * (1 - 1e-9) <= arr(issue[0]["y"])[0] <= max(roofs) * (
        1 + 1e-9
    )
    for t in inst:
        if t.get("showlegend", True):
            assert np.isfinite(arr(t["y"])).any(), f"{t['name']} is in the legend but draws nothing"


# In the rendered page: the plot area, every drawn dot's box, the axis ranges plotly settled on and
# the data of the visible dots, and which precisions have a drawn flat roof (a
# line path with points).
_RENDERED = """() => { const gd = document.getElementById('roofline'); const fl = gd._fullLayout;
  const area = document.querySelector('#roofline .nsewdrag').getBoundingClientRect();
  const boxes = [], xs = [], ys = [], roofs = [];
  gd._fullData.forEach(t => { if (t.visible !== true || !t.meta) return;
    if (t.meta.role === 'dots') {
      document.querySelectorAll('#roofline .trace' + t.uid + ' .points path').forEach(p => {
        const r = p.getBoundingClientRect(); boxes.push([r.left, r.top, r.right, r.bottom]); });
      xs.push(...Array.from(t.x)); ys.push(...Array.from(t.y)); }
    if (t.meta.role === 'roof_flop') {
      const line = document.querySelector('#roofline .trace' + t.uid + ' .js-line');
      if (line && (line.getAttribute('d') || '').length > 2) roofs.push([t.meta.precision, t.y[0]]); } });
  return {area: [area.left, area.top, area.right, area.bottom], boxes, xs, ys, roofs,
          xrange: fl.xaxis.range, yrange: fl.yaxis.range}; }"""  # noqa: E501


def _rendered_complete(page, points: pd.DataFrame) -> int:
    """The rendered state's dots inside the plot area and the axis ranges, each under a drawn flat
    roof of a precision it has in points.csv; the number of dots."""
    got = page.evaluate(_RENDERED)
    left, top, right, bottom = got["area"]
    for x0, y0, x1, y1 in got["boxes"]:
        assert left - 1 <= x0 and x1 <= right + 1 and top - 1 <= y0 and y1 <= bottom + 1, (
            "a dot is cut by the plot area"
        )
    roofs = dict(got["roofs"])
    for x, y in zip(got["xs"], got["ys"]):
        assert (
            got["xrange"][0] < math.log10(x) < got["xrange"][1]
            and got["yrange"][0] < math.log10(y) < got["yrange"][1]
        )
        precs = set(
            points.loc[
                np.isclose(points["flop_per_s"], y, rtol=1e-3)
                & np.isclose(points["ai_flop_per_byte"], x, rtol=1e-3),
                "precision",
            ]
        )
        assert any(roofs.get(p, 0) >= y * 0.98 for p in precs), (
            f"dot at {y:.3g} FLOP/s has no drawn roof of {precs}"
        )
    return len(got["boxes"])


@needs_ncu_report
@pytest.mark.parametrize("relabel", [False, True], ids=["imma", "hmma"])
def test_rendered_page_holds_every_dot_under_its_roof(
    browser,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    relabel: bool,  # noqa: F811
) -> None:
    """In Chromium, every precision view and both dot groups, all kernels shown, of the CUTLASS INT8
    report (and of it with its IMMA opcodes relabelled HMMA, the A40 case): each drawn dot inside
    the plot area and the rendered axis ranges, under a drawn flat roof of its precision
    (single-launch kernels: a kernel's dot is its launch's point)."""
    from tests.helpers.browser import open_page as _open

    name = "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"
    if relabel:
        raw = _relabelled(name, "IMMA.16832.S8.S8.SAT", "HMMA.16816.F32")
        monkeypatch.setattr(parser, "read_many", lambda *a, **k: raw)
    out = tmp_path / "page"
    ncuroof.analyze(shared(name), out)
    points = pd.read_csv(out / "points.csv")
    page, errors = _open(browser, out / "roofline.html")
    options = page.evaluate(
        "() => [...document.querySelectorAll('#ctl-precision option')].map(o => o.value)"
    )
    # main, the tensor path, FP32, FP16 (the reference GEMM's 147,456 HFMA2 thread instructions of
    # the opcode table, issue 33)
    assert len(options) == 4
    page.check("#ctl-all")  # the tensor GEMM is outside the top 95 % of GPU time
    drawn = 0
    for view, mode in itertools.product(options, ("kernel", "launch")):
        page.select_option("#ctl-precision", view)
        page.check(f'input[name="ctl-mode"][value="{mode}"]')
        page.wait_for_timeout(300)
        drawn += _rendered_complete(page, points)
    assert drawn >= 12 and errors == []


def _check_achievable_roofs(data: list[dict], layout: dict, points: pd.DataFrame) -> None:
    """The figure's achievable roofs (FP32 1.2e13 FLOP/s, L1 1e13 and DRAM 1.5e12 B/s) are dashed
    and labelled, the peak DRAM roof stays at points.csv's median peak, and the achievable-roofs
    checkbox (view state ``achievable``) hides only them."""
    ach = {
        t["meta"].get("level") or t["meta"].get("precision"): t
        for t in data
        if t.get("meta", {}).get("role") in ("roof_mem_achievable", "roof_flop_achievable")
    }
    assert set(ach) == {"l1", "dram", "fp32"}
    for key, value in (("l1", 1.0e13), ("dram", 1.5e12)):
        x, y = arr(ach[key]["x"]), arr(ach[key]["y"])
        assert (
            y[-1] / x[-1] == pytest.approx(value, rel=1e-9)
            and ach[key]["line"]["dash"] == "dash"
            and "(user)" in ach[key]["name"]
        )
    assert (
        arr(ach["fp32"]["y"])[0] == pytest.approx(1.2e13)
        and "achievable FP32" in ach["fp32"]["name"]
    )
    peaks = {
        t["meta"]["level"]: arr(t["y"])[-1] / arr(t["x"])[-1]
        for t in data
        if t.get("meta", {}).get("role") == "roof_mem"
    }
    assert peaks["dram"] == pytest.approx(
        points.loc[points["level"] == "dram", "peak_bytes_per_s"].median(), rel=1e-9
    )
    state = dict(layout["meta"]["view"]["state"], chart=layout["meta"]["view"]["state"]["chart"])
    assert all(
        visible(t["meta"]["when"], state) == t.get("visible", True) for t in ach.values()
    )  # shown at first
    assert not any(visible(t["meta"]["when"], dict(state, achievable=False)) for t in ach.values())


@needs_ncu_report
def test_achievable_roofs_beside_the_peaks(tmp_path: Path) -> None:
    """User achievable roofs (as --achievable-flops/--achievable-bandwidth give them) are drawn
    dashed and labelled beside the peak roofs, which stay; the checkbox hides only them; the page
    and the terminal give the fraction of the achievable roof beside the fraction of the roof,
    recomputed here from points.csv at the kernel's binding level."""
    from ncuroof.render import text

    name = "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"
    out = tmp_path / "ach"
    res = ncuroof.analyze(
        shared(name),
        out,
        achievable_flops={"fp32": 1.2e13},
        achievable_bandwidth={"l1": 1.0e13, "dram": 1.5e12},
    )
    data, layout = figure_of(out / "roofline.html")
    points = pd.read_csv(out / "points.csv")
    _check_achievable_roofs(data, layout, points)
    # The longest kernel (one launch, FP32) at its binding level: achieved / min(achievable FP32, AI
    # x achievable bandwidth).
    top = res.summary.iloc[0]
    row = points[
        (points["launch_id"] == 1)
        & (points["precision"] == "fp32")
        & (points["level"] == top["level"])
    ].iloc[0]
    want = row["flop_per_s"] / min(
        1.2e13, row["ai_flop_per_byte"] * {"l1": 1.0e13, "dram": 1.5e12}.get(top["level"], math.inf)
    )
    html = (out / "roofline.html").read_text(encoding="utf-8")
    assert f"({100 * want:.0f}% of achievable)" in html and "% of achievable roof" in html
    terminal = text.analysis_text(res)
    assert "achievable" in terminal and f"{100 * want:.1f}%" in terminal


def test_focus_sentence_counts_kernels_without_a_dot(tmp_path: Path) -> None:
    """The page's 'the chart shows the N kernels' sentence says how many of them have no dot: the
    largest synthetic kernel with its FLOP counters removed is in the focus set
    but not on the chart.
    """
    from tests.helpers import synthetic
    from tests.integration.test_page import _page

    k = synthetic.kernels_table(200, 12, seed=2)
    top = k.groupby("kernel_demangled")["time_s"].sum().idxmax()
    for p in ("fp64", "fp32", "fp16"):
        k.loc[k["kernel_demangled"] == top, [f"{p}_flop", f"{p}_flop_per_s"]] = np.nan
    path, fig, pts = _page(tmp_path, k)
    assert not pts["kernel_name"].eq(top.split("<")[0].removeprefix("void ")).any()
    text = " ".join(path.read_text(encoding="utf-8").split())
    assert "(1 of them has no roofline point (no FLOP work or traffic))" in text


@needs_ncu_report
def test_phase_chart_says_when_it_has_no_roof() -> None:
    """The NVTX phase chart of the CUTLASS report draws a roof per precision with work at DRAM; with
    the DRAM roof gone it draws none and its title says why."""
    from ncuroof.views import phases as views

    res = ncuroof.analyze(shared(CUTLASS), write=False, group_by="nvtx")
    chart = views.phase_chart(res.phases, res.points, res.summary)
    assert [t.meta["role"] for t in chart.traces].count(
        "phase_roof"
    ) >= 1 and "no roof" not in chart.layout["title.text"]
    no_dram = res.points.assign(
        peak_bytes_per_s=res.points["peak_bytes_per_s"].where(res.points["level"] != "dram")
    )
    chart = views.phase_chart(res.phases, no_dram, res.summary)
    assert {t.meta["role"] for t in chart.traces} == {
        "phase_dots"
    } and "no roof: no DRAM bandwidth roof" in chart.layout["title.text"]


@needs_ncu_report
def test_rendered_instruction_legend_lists_what_is_drawn(
    browser,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    """In Chromium, the instruction-only page opens on the instruction roofline: its legend names
    exactly the traces with a drawn line or drawn points (the issue roof, the DRAM wall, the dots of
    each level), and every drawn dot lies inside the plot area."""
    from tests.helpers.browser import open_page as _open

    page, errors = _open(browser, _instructions_only(tmp_path, monkeypatch) / "roofline.html")
    got = page.evaluate("""() => { const gd = document.getElementById('roofline');
      const legend = [...document.querySelectorAll('#roofline .legend .traces .legendtext')].map(e => e.textContent);
      const drawn = gd._fullData.filter(t => t.visible === true && t.showlegend !== false).filter(t => {
        const g = document.querySelector('#roofline .trace' + t.uid);
        const line = g && g.querySelector('.js-line'); const pts = g ? g.querySelectorAll('.points path').length : 0;
        return pts > 0 || (line && (line.getAttribute('d') || '').length > 2); }).map(t => t.name);
      const area = document.querySelector('#roofline .nsewdrag').getBoundingClientRect();
      const out = [...document.querySelectorAll('#roofline .scatterlayer .points path')].filter(p => {
        const r = p.getBoundingClientRect();
        return r.left < area.left - 1 || r.right > area.right + 1 || r.top < area.top - 1 || r.bottom > area.bottom + 1; });
      return {legend, drawn, out: out.length}; }""")  # noqa: E501
    assert (
        sorted(got["legend"]) == sorted(got["drawn"]) and len(got["drawn"]) == 5
    )  # issue roof, DRAM wall, L1/L2/DRAM points
    assert any(n.startswith("issue roof") for n in got["legend"]) and not any(
        "L1 wall" in n for n in got["legend"]
    )
    assert got["out"] == 0 and errors == []
