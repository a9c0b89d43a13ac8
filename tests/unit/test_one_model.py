"""One analysis, computed once, the same everywhere: one kernel identity, one aggregation and one
binding-point rule shared by the page's kernel table and ``compare``."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import api
from ncuroof.model import analysis, classify, diagnose, formulas, summary
from tests.helpers import synthetic
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import needs_ncu_report, shared

CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"


@needs_ncu_report
def test_report_compared_with_itself_has_the_pages_kernels() -> None:
    # Two instantiations of CUTLASS's Kernel<...>: two rows on the page, two in compare.
    path = shared(CUTLASS)
    page = api.analyze(path, write=False, top=1000).analysis.summary
    raw = ncuroof.load(path)
    assert raw["kernel_name"].nunique() == 1 and raw["kernel_demangled"].nunique() == len(page) == 2
    t = api.compare_runs(path, path, write=False).table
    assert len(t) == len(page) and (t["status"] == "matched").all() and (t["speedup"] == 1.0).all()
    rows = t.set_index("kernel_key").loc[page["kernel_key"]]
    for col in ("ai_flop_per_byte", "roof_fraction", "flop_per_s"):
        # Equal to the last digit: the same function computed both.
        assert (rows[f"{col}_before"].to_numpy() == page[col].to_numpy()).all()
        assert (rows[f"{col}_after"].to_numpy() == page[col].to_numpy()).all()
    # told apart by their threadblock tile (the first GemmShape<M, N, K> of each demangled
    # name), not by a number
    tiles = [
        "x".join(re.search(r"GemmShape<\(int\)(\d+), \(int\)(\d+), \(int\)(\d+)>", d).groups())
        for d in page["kernel_demangled"]
    ]
    assert (
        list(rows["kernel_label"]) == list(page["kernel_label"]) == [f"Kernel<{t}>" for t in tiles]
    )
    assert len(set(tiles)) == 2


def _pytorch_like(scale: dict[int, float]) -> pd.DataFrame:
    """Six launches of three PyTorch-style template kernels sharing function names; the launch
    times of kernel i are multiplied by ``scale[i]`` (rates follow from the new times)."""
    k = synthetic.kernels_table(6, 3)
    names = ["elementwise_kernel", "elementwise_kernel", "reduce_kernel"]
    demangled = [
        "void at::native::elementwise_kernel<128, 4, AddFunctor<float>>(int, AddFunctor<float>)",
        (
            "void at::native::elementwise_kernel<128, 4, MulFunctor<c10::Half>>(int,"
            " MulFunctor<c10::Half>)"
        ),
        (
            "void at::native::reduce_kernel<512, 1, ReduceOp<float, SumOps<float>>>(ReduceOp<float,"
            " SumOps<float>>)"
        ),
    ]
    kid = k["kernel_name"].str.removeprefix("kern_").astype(int).to_numpy()
    k["kernel_name"] = [names[i] for i in kid]
    k["kernel_demangled"] = [demangled[i] for i in kid]
    f = np.array([scale.get(i, 1.0) for i in kid])
    rates = [c for c in k.columns if c.endswith("_flop_per_s") and not c.startswith("peak_")] + [
        c for c in k.columns if c.endswith("_bytes_per_s") and not c.startswith("peak_")
    ]
    k["time_s"] = k["time_s"] * f
    for c in rates:
        k[c] = k[c] / f
    return formulas.time_at_roof(k)


def test_template_instantiations_moving_opposite_ways_stay_two_rows() -> None:
    from ncuroof.runs.compare import compare

    before = _pytorch_like({})
    after = _pytorch_like({0: 0.5, 1: 2.0})  # Add twice as fast, Mul twice as slow
    t = compare(before, after).set_index("kernel_key")
    assert len(t) == 3 and (t["status"] == "matched").all()
    add = t.index[t.index.str.contains("AddFunctor")][0]
    mul = t.index[t.index.str.contains("MulFunctor")][0]
    red = t.index[t.index.str.contains("reduce_kernel")][0]
    tb = before.assign(key=summary.kernel_keys(before)).groupby("key")["time_s"].sum()
    assert t.loc[add, "speedup"] == pytest.approx(2.0) and t.loc[mul, "speedup"] == pytest.approx(
        0.5
    )
    assert t.loc[red, "speedup"] == 1.0
    assert t.loc[add, "time_s_before"] == pytest.approx(tb[add])
    # Function names are shared, so labels are numbered in time order; both sides say which.
    assert set(t.loc[[add, mul], "kernel_name"]) == {"elementwise_kernel"}


def test_finer_kernel_keys() -> None:
    k = synthetic.kernels_table(8, 1)
    k["grid"] = ["(64, 1, 1)"] * 5 + ["(128, 1, 1)"] * 3
    k["nvtx_range"] = ["fwd"] * 4 + ["bwd"] * 4
    assert summary.kernel_keys(k).nunique() == 1
    by_config = summary.kernel_keys(k, "config")
    assert by_config.nunique() == 2 and by_config.str.contains(r"\[grid \(128, 1, 1\)").sum() == 3
    by_nvtx = summary.kernel_keys(k, "nvtx")
    assert sorted(by_nvtx.value_counts()) == [4, 4] and by_nvtx.str.endswith("@ fwd").sum() == 4
    by_launch = summary.kernel_keys(k, "launch")
    assert list(by_launch.str.rsplit("#", n=1).str[1]) == [str(i) for i in range(8)]
    s = summary.kernel_summary(k, ncuroof.points(k), by="config")
    assert sorted(s["launches"]) == [3, 5] and s["time_s"].sum() == pytest.approx(k["time_s"].sum())
    with pytest.raises(ValueError) as err:
        summary.kernel_keys(k, "grid")
    assert_one_line_error(err, None, "'grid'")


def _pt(
    launch: int, precision: str, level: str, flop: float, ai: float, peak_f: float, peak_b: float
) -> dict:
    roof = min(peak_f, ai * peak_b)
    return {
        "source": "s",
        "launch_id": launch,
        "precision": precision,
        "level": level,
        "flop": flop,
        "ai_flop_per_byte": ai,
        "flop_per_s": roof / 2,
        "ridge_flop_per_byte": peak_f / peak_b,
        "roof_flop_per_s": roof,
        "roof_fraction": 0.5,
        "peak_flop_per_s": peak_f,
        "peak_bytes_per_s": peak_b,
        "bound": "memory" if ai < peak_f / peak_b else "compute",
    }


def test_binding_point_rule_by_hand() -> None:
    pts = pd.DataFrame(
        [
            # launch 0: FP32 has most work; its lowest attainable roof is DRAM (10 *
            # 1e12 = 1e13 < L2's 4e13).
            _pt(0, "fp32", "l2", 1e9, 10, 6e13, 4e12),
            _pt(0, "fp32", "dram", 1e9, 10, 6e13, 1e12),
            _pt(0, "fp64", "dram", 1e6, 0.01, 3e13, 1e12),
            # launch 1: compute bound at L1 (AI 1000 > ridge 60 at every level; min
            # roof = peak, first in order).
            _pt(1, "fp32", "l1", 1e9, 1000, 6e13, 1e12),
            _pt(1, "fp32", "dram", 1e9, 2000, 6e13, 1e12),
            # launch 2: the main precision (tensor) has no roof: placed at FP32, the roofed
            # precision with the most work (more than FP64's), not nowhere.
            {**_pt(2, "tensor:fp16", "dram", 1e12, 100, np.nan, 1e12), "roof_flop_per_s": np.nan},
            _pt(2, "fp32", "dram", 1e6, 1, 6e13, 1e12),
            _pt(2, "fp64", "dram", 1e3, 0.1, 3e13, 1e12),
            # launch 3: no roofed point at all: no binding point.
            {**_pt(3, "fp32", "dram", 1e6, 1, np.nan, 1e12), "roof_flop_per_s": np.nan},
        ]
    )
    b = classify.binding_points(pts).set_index("launch_id")
    assert list(b.index) == [0, 1, 2]
    assert (b.loc[0, "precision"], b.loc[0, "level"], b.loc[0, "bound"]) == (
        "fp32",
        "dram",
        "memory",
    )
    assert (b.loc[1, "level"], b.loc[1, "bound"]) == ("l1", "compute")
    assert b.loc[0, "main_precision"] == "fp32"
    assert (b.loc[2, "precision"], b.loc[2, "main_precision"], b.loc[2, "roof_flop_per_s"]) == (
        "fp32",
        "tensor:fp16",
        1e12,
    )
    # The same rule for a kernel: group by kernel_key.
    per_kernel = classify.binding_points(
        pts.assign(kernel_key="k").query("launch_id == 0"), ["kernel_key"]
    )
    assert per_kernel.loc[0, "level"] == "dram"


def test_one_analyze_computes_each_table_once(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    calls: dict[str, int] = {}

    def counted(module, name):  # noqa: ANN001, ANN202
        real = getattr(module, name)

        def wrapper(*a, **kw):  # noqa: ANN002, ANN003, ANN202
            calls[name] = calls.get(name, 0) + 1
            return real(*a, **kw)

        monkeypatch.setattr(module, name, wrapper)

    k = synthetic.kernels_table(40, 5)
    for module, name in (
        (formulas, "compute_points"),
        (summary, "kernel_dots"),
        (summary, "kernel_summary"),
        (diagnose, "diagnose_kernels"),
        (classify, "classify"),
    ):
        counted(module, name)
    a = analysis.from_launches(
        k,
        analysis.AnalysisOptions(),
        analysis.catalog.load(),
        analysis.catalog.load_gpus(),
        inputs=[tmp_path / "synthetic.ncu-rep"],
    )
    assert calls == {
        "compute_points": 1,
        "classify": 1,
        "kernel_dots": 1,
        "kernel_summary": 1,
        "diagnose_kernels": 1,
    }
    api._page_files(
        a, plotlyjs="cdn", image=None
    )  # the page reads the analysis, recomputes nothing
    assert calls == {
        "compute_points": 1,
        "classify": 1,
        "kernel_dots": 1,
        "kernel_summary": 1,
        "diagnose_kernels": 1,
    }
