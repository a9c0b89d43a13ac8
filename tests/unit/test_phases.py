"""NVTX phases (issue 15): phases.csv times sum to the launches inside each range, read
through ncu_report."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from click.testing import CliRunner

from ncuroof.cli import cli
from ncuroof.model import phases
from tests.helpers.reports import kernels_of, ncu_metrics, needs_ncu_report, shared

CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"
GENE = "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep"


def _ranges(name: str) -> list[list[str]]:
    """The push/pop and start/end range names of each launch, outermost first, read directly
    through ncu_report."""
    import ncu_report

    ctx = ncu_report.load_report(str(shared(name)))
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            state = rng.action_by_idx(a).nvtx_state()
            names: list[str] = []
            for d in state.domains() if state is not None else ():
                dom = state.domain_by_id(d)
                names += [str(n) for n in dom.push_pop_ranges()] + [
                    str(n) for n in dom.start_end_ranges()
                ]
            out.append(names)
    return out


def _expected_times(name: str, depth: int | None) -> dict[str, float]:
    times: dict[str, float] = defaultdict(float)
    for names, m in zip(_ranges(name), ncu_metrics(name)):
        key = " > ".join(names[:depth] if depth else names) or "no range"
        times[key] += _duration(m)
    return dict(times)


def _duration(m: dict[str, float]) -> float:
    """ncu's duration, else (NERSC-style GENE reports) elapsed SM cycles over the SM clock."""
    if "gpu__time_duration.sum" in m:
        return m["gpu__time_duration.sum"] * 1e-9
    return m["sm__cycles_elapsed.avg"] / m["sm__cycles_elapsed.avg.per_second"]


@needs_ncu_report
@pytest.mark.parametrize(
    ("name", "depth", "count"),
    [(CUTLASS, None, 2), (GENE, None, 4), (GENE, 6, 4), (GENE, 5, 1), (GENE, 1, 1)],
)
def test_phase_times_sum_the_launches_inside_each_range(
    name: str, depth: int | None, count: int
) -> None:
    table = phases.phase_table(kernels_of(name), depth).set_index("phase")
    expected = _expected_times(name, depth)
    assert len(table) == len(expected) == count
    for phase, t in expected.items():
        assert table.loc[phase, "time_s"] == pytest.approx(t, rel=1e-12)
    assert table["time_share"].sum() == pytest.approx(1.0)


@needs_ncu_report
def test_cutlass_phases_by_hand() -> None:
    k = kernels_of(CUTLASS)
    table = phases.phase_table(k).set_index("phase")
    assert set(table.index) == {"Non-fused-GEMM", "Fused-GEMM"}
    assert table.loc["Non-fused-GEMM", "launches"] == 2 and table.loc["Fused-GEMM", "launches"] == 1
    inside = k[k["nvtx_range"] == "Fused-GEMM"]
    flop = (
        inside[["fp64_flop", "fp32_flop", "fp16_flop", "tensor_flop"]]
        .sum(axis=1, min_count=1)
        .sum()
    )
    row = table.loc["Fused-GEMM"]
    assert row["flop"] == pytest.approx(flop)
    assert row["dram_ai_flop_per_byte"] == pytest.approx(flop / inside["dram_bytes"].sum())
    assert row["flop_per_s"] == pytest.approx(flop / inside["time_s"].sum())
    assert row["time_at_roof_s"] == pytest.approx(inside["time_at_roof_s"].sum())
    assert row["bound"] == inside["bound"].iat[0]


def test_a_damaged_record_adds_no_work_to_its_phase() -> None:
    """Damaged records are not plotted (compute_points keeps status ok), so their
    counters add nothing."""
    k = kernels_of(CUTLASS).copy()
    inside = k.index[k["nvtx_range"] == "Non-fused-GEMM"]
    good = k.loc[inside[1]]
    k.loc[inside[0], "status"] = "corrupt_record"
    k.loc[inside[0], "fp32_flop"] = 1e30  # the damaged counter
    row = phases.phase_table(k).set_index("phase").loc["Non-fused-GEMM"]
    assert row["launches"] == 2 and row["time_s"] == pytest.approx(k.loc[inside, "time_s"].sum())
    flop = good[["fp64_flop", "fp32_flop", "fp16_flop", "tensor_flop"]].sum(min_count=1)
    assert row["flop"] == pytest.approx(flop) and row["dram_bytes"] == pytest.approx(
        good["dram_bytes"]
    )


@needs_ncu_report
def test_a_launch_outside_every_range_is_its_own_phase() -> None:
    k = kernels_of(CUTLASS).copy()
    k.loc[2, "nvtx_range"] = None
    table = phases.phase_table(k).set_index("phase")
    assert table.loc[phases.NO_RANGE, "launches"] == 1
    assert table.loc[phases.NO_RANGE, "time_s"] == pytest.approx(
        ncu_metrics(CUTLASS)[2]["gpu__time_duration.sum"] * 1e-9
    )
    assert "Fused-GEMM" not in table.index


def test_group_by_values() -> None:
    assert phases.parse_group_by("nvtx") is None and phases.parse_group_by("nvtx:3") == 3
    for bad in ("nvtx:0", "kernel", "nvtx:", "nvtx:x"):
        with pytest.raises(ValueError, match="nvtx:DEPTH"):
            phases.parse_group_by(bad)


@needs_ncu_report
def test_analyze_group_by_writes_phases_csv(tmp_path) -> None:
    import pandas as pd

    out = tmp_path / "out"
    res = CliRunner().invoke(
        cli, ["analyze", str(shared(CUTLASS)), "-o", str(out), "--group-by", "nvtx:1", "-q"]
    )
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out / "phases.csv").set_index("phase")
    for phase, t in _expected_times(CUTLASS, 1).items():
        assert math.isclose(table.loc[phase, "time_s"], t, rel_tol=1e-12)
    bad = CliRunner().invoke(
        cli, ["analyze", str(shared(CUTLASS)), "-o", str(tmp_path / "x"), "--group-by", "nvtx:0"]
    )
    assert bad.exit_code == 2 and "nvtx:DEPTH" in bad.output and not (tmp_path / "x").exists()


def _cutlass_page(tmp_path):
    """The CUTLASS report analyzed by NVTX phase: phases.csv read back with pandas,
    the page's figure."""
    import pandas as pd

    import ncuroof
    from tests.helpers.figures import figure_of

    out = tmp_path / "cutlass"
    ncuroof.analyze(shared(CUTLASS), out, group_by="nvtx")
    data, layout = figure_of(out / "roofline.html")
    return pd.read_csv(out / "phases.csv"), data, layout["meta"]["view"]


def _phase_flop_column(view: str) -> str:
    """phases.csv's column of a precision view's FLOPs, spelled here from the
    points' precision names."""
    return (
        "flop"
        if view == "main"
        else (f"tensor_{view[7:]}_flop" if view.startswith("tensor:") else f"{view}_flop")
    )


def test_phase_dots_follow_the_precision_views_with_their_numbers_from_phases_csv(tmp_path) -> None:
    """One phase-dot trace per precision view of the page; its dots and the customdata its hover
    template reads are phases.csv's numbers recomputed with pandas: the view's FLOPs over the
    phase's DRAM bytes and over its time."""
    from ncuroof.views.phases import PHASE_CUSTOMDATA
    from tests.helpers.figures import arr

    table, data, view = _cutlass_page(tmp_path)
    precisions = [
        v for v, _ in next(c for c in view["controls"] if c["id"] == "precision")["options"]
    ]
    assert precisions == ["main", "tensor:sass_imma", "fp32"]
    dots = {
        t["meta"]["precision"]: t for t in data if t.get("meta", {}).get("role") == "phase_dots"
    }
    assert list(dots) == precisions
    for v, t in dots.items():
        assert t["meta"]["when"] == {"precision": v, "chart": "phases"}
        flop = table[_phase_flop_column(v)]
        drawn = table[(flop > 0) & (table["dram_bytes"] > 0)]
        assert len(drawn) == (2 if v != "fp32" else 1)
        f = drawn[_phase_flop_column(v)].to_numpy(float)
        assert arr(t["x"]) == pytest.approx(f / drawn["dram_bytes"].to_numpy(float), rel=1e-12)
        assert arr(t["y"]) == pytest.approx(f / drawn["time_s"].to_numpy(float), rel=1e-12)
        custom = arr(t["customdata"]).reshape(len(drawn), len(PHASE_CUSTOMDATA))
        custom = dict(zip(PHASE_CUSTOMDATA, custom.T))
        assert t["hovertext"] == [
            f"{p} · {b}-bound" for p, b in zip(drawn["phase"], drawn["bound"])
        ]
        for c in ("launches", "time_s", "time_share", "time_at_roof_s"):
            assert custom[c] == pytest.approx(drawn[c].to_numpy(float), rel=1e-12)
        assert custom["flop"] == pytest.approx(f, rel=1e-12)
        for i in range(len(PHASE_CUSTOMDATA)):  # the template reads every column, by its place
            assert f"%{{customdata[{i}]" in t["hovertemplate"]


def test_phase_roofs_are_the_roofline_figures_roofs(tmp_path) -> None:
    """In every precision view the phase chart draws the roofline figure's compute roofs of that
    view (the same FLOP/s) under its DRAM roof (the same B/s), and no other."""
    from ncuroof.render.viewcontract import visible
    from tests.helpers.figures import arr

    _, data, view = _cutlass_page(tmp_path)
    state = view["state"]
    for v, _ in next(c for c in view["controls"] if c["id"] == "precision")["options"]:

        def shown(role: str, chart: str, v: str = v) -> list[dict]:
            return [
                t
                for t in data
                if t.get("meta", {}).get("role") == role
                and visible(
                    t["meta"]["when"],
                    {**state, "chart": chart, "precision": v, "achievable": False},
                )
            ]

        flat = sorted(arr(t["y"])[0] for t in shown("roof_flop", "roofline"))
        dram = [t for t in shown("roof_mem", "roofline") if t["meta"]["level"] == "dram"]
        bw = {arr(t["y"])[0] / arr(t["x"])[0] for t in dram}
        phase_roofs = shown("phase_roof", "phases")
        assert flat and len(bw) == 1 and len(phase_roofs) == len(flat)
        assert sorted(arr(t["y"]).max() for t in phase_roofs) == pytest.approx(flat, rel=1e-12)
        for t in phase_roofs:  # the line starts on its slope: attainable = AI x the DRAM roof
            x, y = arr(t["x"]), arr(t["y"])
            assert y[0] < y.max() and y[0] / x[0] == pytest.approx(next(iter(bw)), rel=1e-12)
