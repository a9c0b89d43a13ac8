"""The formulas on small hand-made raw tables, checked against hand arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncuroof import catalog
from ncuroof.catalog import parse_term
from ncuroof.model import classify, formulas
from ncuroof.schema import cell_text

CAT = catalog.load()


def raw(**metrics: float) -> pd.DataFrame:
    row = {
        "source": "hand.csv",
        "range_id": 0,
        "launch_id": 0,
        "kernel_name": "k",
        "kernel_demangled": "k()",
        "nvtx_range": None,
        "device_name": "GPU",
        "cc": "8.6",
        "grid": "(1, 1, 1)",
        "block": "(32, 1, 1)",
        "ncu_version": None,
    }
    row.update(metrics)
    return pd.DataFrame([row])


COUNTS = {
    "gpu__time_duration.sum": 2_000.0,  # ns
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 10.0,
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 20.0,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 30.0,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 100.0,
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum": 1.0,
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": 2.0,
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 3.0,
    "sm__cycles_elapsed.avg.per_second": 1e9,
    "dram__bytes.sum": 40.0,
    "dram__bytes.sum.peak_sustained": 10.0,
    "dram__cycles_elapsed.avg.per_second": 2e9,
}


def test_counts_weights_and_roofs_by_hand() -> None:
    k = formulas.compute_launches(raw(**COUNTS), CAT).iloc[0]
    assert k["time_s"] == pytest.approx(2e-6)
    assert k["fp32_flop"] == 10 + 20 + 2 * 30
    assert k["fp16_flop"] == 2 * 1 + 2 * 2 + 4 * 3  # ncu's packed-half weighting
    assert k["fp32_flop_per_s"] == pytest.approx(90 / 2e-6)
    assert k["peak_fp32_flop_per_s"] == pytest.approx(2 * 100 * 1e9)
    assert k["peak_dram_bytes_per_s"] == pytest.approx(10 * 2e9)
    assert k["dram_bytes_per_s"] == pytest.approx(40 / 2e-6)
    assert k["flop_source"] == "count"
    assert math.isnan(k["fp64_flop"])  # no FP64 counters: missing, not 0
    assert k["status"] == "ok"


def test_point_geometry_by_hand() -> None:
    k = formulas.compute_launches(raw(**COUNTS), CAT)
    p = formulas.compute_points(k)
    fp32 = p[(p["precision"] == "fp32") & (p["level"] == "dram")].iloc[0]
    assert fp32["ai_flop_per_byte"] == pytest.approx(90 / 40)
    assert fp32["ridge_flop_per_byte"] == pytest.approx(200e9 / 20e9)
    assert fp32["roof_flop_per_s"] == pytest.approx(min(200e9, 90 / 40 * 20e9))
    assert fp32["roof_fraction"] == pytest.approx((90 / 2e-6) / (90 / 40 * 20e9))
    assert fp32["bound"] == "memory"


def test_rate_form_wins_for_flop_per_s_and_count_for_flops() -> None:
    m = dict(COUNTS)
    m.update(
        {
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed": 1.0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed": 0.0,
            "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2": 4.0,  # already x2
            "smsp__cycles_elapsed.avg.per_second": 1e9,
        }
    )
    k = formulas.compute_launches(raw(**m), CAT).iloc[0]
    assert k["fp32_flop_per_s"] == pytest.approx((1 + 0 + 4) * 1e9)
    assert k["fp32_flop"] == 90


def test_old_ncu_fp16_derived_metric_is_reweighted() -> None:
    m = {
        "gpu__time_duration.sum": 1e3,
        "smsp__cycles_elapsed.avg.per_second": 1e9,
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed": 0.0,
        "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed": 0.0,
        "derived__smsp__sass_thread_inst_executed_op_hfma_pred_on_x2": 3.0,
    }
    k = formulas.compute_launches(raw(**m), CAT).iloc[0]
    assert k["fp16_flop_per_s"] == pytest.approx(
        2 * 3.0 * 1e9
    )  # 4 x hfma, ncu 2023 stored 2 x hfma


def test_l1_definition_follows_compute_capability() -> None:
    m = {
        "gpu__time_duration.sum": 1e3,
        "l1tex__lsu_writeback_active_mem_lg.sum": 5.0,
        "l1tex__lsu_writeback_active_mem_lgds.sum": 7.0,
    }
    k86 = formulas.compute_launches(raw(**m), CAT).iloc[0]
    r90 = raw(**m)
    r90["cc"] = "9.0"
    k90 = formulas.compute_launches(r90, CAT).iloc[0]
    assert k86["l1_bytes"] == 128 * 5 and k90["l1_bytes"] == 128 * 7


def test_traffic_nersc_prefers_tag_bytes() -> None:
    m = {
        "gpu__time_duration.sum": 1e3,
        "lts__lts2xbar_cycles_active.sum": 3.0,
        "lts__t_bytes.sum": 1000.0,
    }
    assert formulas.compute_launches(raw(**m), CAT).iloc[0]["l2_bytes"] == 96
    k = formulas.compute_launches(raw(**m), CAT, traffic="nersc").iloc[0]
    assert k["l2_bytes"] == 1000 and k["l2_definition"] == "nersc"


def test_nan_counters_mark_failed_measurement() -> None:
    good = raw(**COUNTS)
    bad = raw(
        **{
            **COUNTS,
            "gpu__time_duration.sum": math.nan,
            "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": math.nan,
            "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": math.nan,
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": math.nan,
            "sm__sass_thread_inst_executed_op_hadd_pred_on.sum": math.nan,
            "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": math.nan,
            "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": math.nan,
        }
    )
    bad["launch_id"] = 1
    k = formulas.compute_launches(pd.concat([good, bad], ignore_index=True), CAT)
    assert list(k["status"]) == ["ok", "failed_measurement"]
    assert set(formulas.compute_points(k)["launch_id"]) == {0}


def test_latency_rule_uses_ncu_thresholds() -> None:
    m = {
        **COUNTS,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": 59.0,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 59.9,
        "launch__waves_per_multiprocessor": 0.5,
    }
    k = formulas.compute_launches(raw(**m), CAT)
    k = classify.classify(k, formulas.compute_points(k), CAT).iloc[0]
    assert k["bound"] == "latency" and "small grid" in cell_text("notes", k["notes"])
    m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = 60.0
    k = formulas.compute_launches(raw(**m), CAT)
    assert classify.classify(k, formulas.compute_points(k), CAT).iloc[0]["bound"] == "memory"


def test_parse_term() -> None:
    t = parse_term("2*a.sum | derived__b_x2 | 0")
    assert [(a.metric, a.weight) for a in t.alts] == [
        ("a.sum", 2.0),
        ("derived__b_x2", 1.0),
        (None, 0.0),
    ]
    with pytest.raises(ValueError):
        parse_term("x*y*z")


positive = st.floats(min_value=1e-3, max_value=1e15, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    flop=positive,
    bytes_=positive,
    t=st.floats(min_value=1e-9, max_value=10.0),
    peak=positive,
    bw=positive,
)
def test_roofline_invariants(flop: float, bytes_: float, t: float, peak: float, bw: float) -> None:
    """For any counts: AI = FLOPs/bytes, the attainable roof never exceeds either ceiling, the
    point is memory bound exactly when AI < ridge, and roof_fraction = achieved / attainable."""
    row = {c: np.nan if col.dtype == "float64" else "" for c, col in formulas.LAUNCHES.items()}
    row.update(
        source="s",
        launch_id=0,
        kernel_name="k",
        status="ok",
        fp32_flop=flop,
        fp32_flop_per_s=flop / t,
        peak_fp32_flop_per_s=peak,
        dram_bytes=bytes_,
        dram_bytes_per_s=bytes_ / t,
        peak_dram_bytes_per_s=bw,
        time_s=t,
    )
    k = pd.DataFrame([row])
    p = formulas.compute_points(k).iloc[0]
    ai = p["ai_flop_per_byte"]
    assert ai == pytest.approx(flop / bytes_, rel=1e-9)
    assert p["roof_flop_per_s"] <= peak * (1 + 1e-12) and p["roof_flop_per_s"] <= ai * bw * (
        1 + 1e-12
    )
    assert (p["bound"] == "memory") == (ai < peak / bw)
    assert p["roof_fraction"] == pytest.approx((flop / t) / min(peak, ai * bw), rel=1e-9)


#: A Blackwell GeForce launch's BF16 MMA metrics as the RTX 5090 report stores them (peaks per
#: cycle: the aggregate 174,080 and sparsity-on 174,080, sparsity-off 87,040), 53,216 ns at
#: 2.52 GHz, their counts written in by each test (issue 54 item 10: these run without ../shared).
_T = "sm__ops_path_tensor_"
_BF16 = {
    "gpu__time_duration.sum": 53_216.0,
    "sm__cycles_elapsed.avg.per_second": 2.52e9,
    f"{_T}src_bf16_dst_fp32.sum.peak_sustained": 174_080.0,
    f"{_T}op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained": 87_040.0,
    f"{_T}op_hmma_src_bf16_dst_fp32_sparsity_on.sum.peak_sustained": 174_080.0,
}


def _bf16_work(dense: float, sparse: float) -> pd.DataFrame:
    ops = {
        f"{_T}src_bf16_dst_fp32.sum": dense + sparse,
        f"{_T}op_hmma_src_bf16_dst_fp32_sparsity_off.sum": dense,
        f"{_T}op_hmma_src_bf16_dst_fp32_sparsity_on.sum": sparse,
    }
    return formulas.compute_launches(raw(cc="12.0", **_BF16, **ops), CAT)


def test_dense_tensor_work_is_judged_against_the_dense_peak_by_hand() -> None:
    """Dense BF16 MMA work (no sparse ops) against the sparsity-off peak, 87,040 ops/cycle x
    2.52 GHz, not the aggregate's 174,080 (issue 44 class 2: 20.6 % shown where ncu said 41.2 %);
    sparse work keeps the aggregate's peak."""
    cycles = 53_216e-9 * 2.52e9
    k = _bf16_work(0.412 * 87_040 * cycles, 0.0).iloc[0]
    peak = k["peak_tensor_src_bf16_dst_fp32_flop_per_s"]
    assert peak == pytest.approx(87_040 * 2.52e9)
    assert k["tensor_src_bf16_dst_fp32_flop_per_s"] / peak == pytest.approx(0.412)
    assert "dense peak" in cell_text("notes", k["notes"])
    sparse = _bf16_work(0.412 * 87_040 * cycles, 1e6).iloc[0]
    assert sparse["peak_tensor_src_bf16_dst_fp32_flop_per_s"] == pytest.approx(174_080 * 2.52e9)


def test_l1_zero_contradicted_by_sectors_falls_back_to_the_sectors_by_hand() -> None:
    """A launch whose L1 writeback counter says 0 B while l1tex__t_sectors counts 4,984,832
    sectors (the RTX 5090 flash-attention case, issue 44 class 3): L1 is 4,984,832 x 32 B under
    the nersc definition, with a note; a writeback count keeps the ncu definition, 128 B each."""
    wb = "l1tex__lsu_writeback_active_mem_lgds.sum"
    base = {"gpu__time_duration.sum": 53_216.0, "l1tex__t_sectors.sum": 4_984_832.0}
    k = formulas.compute_launches(raw(cc="12.0", **base, **{wb: 0.0}), CAT).iloc[0]
    assert k["l1_bytes"] == 4_984_832 * 32 and k["l1_definition"] == "nersc"
    assert k["l1_bytes_per_s"] == pytest.approx(4_984_832 * 32 / 53_216e-9)
    notes = cell_text("notes", k["notes"])
    assert "L1 bytes are 0 under the ncu definition" in notes and "160 MB" in notes
    kept = formulas.compute_launches(raw(cc="12.0", **base, **{wb: 8_417_909.0}), CAT).iloc[0]
    assert kept["l1_definition"] == "ncu" and kept["l1_bytes"] == 128 * 8_417_909


def test_volta_nersc_counters_by_hand() -> None:
    """A V100 launch exported with NERSC's roofline counters (the cuda-roofline CSV's metric set;
    runs without ../shared): the tensor work is 512 FLOP per tensor-pipe instruction (HMMA.884,
    the legacy x512 rule), the time cycles / clock with no gpu__time_duration, L2 from
    lts__t_bytes (nersc); 2 x 20480^3 FLOP for 20480^3 / 256 instructions."""
    n = 20480**3 // 256
    m = {
        "sm__inst_executed_pipe_tensor.sum": float(n),
        "sm__cycles_elapsed.avg": 2.2e9,
        "sm__cycles_elapsed.avg.per_second": 1.38e9,
        "dram__bytes.sum": 5e9,
        "lts__t_bytes.sum": 2e10,
        "l1tex__t_bytes.sum": 8e10,
    }
    k = formulas.compute_launches(raw(cc="7.0", **m), CAT).iloc[0]
    assert k["tensor_flop"] == 512 * n == 2 * 20480**3
    assert k["time_s"] == pytest.approx(2.2e9 / 1.38e9, rel=1e-12)
    assert k["l2_definition"] == "nersc" and k["l2_bytes"] == 2e10
    pts = formulas.compute_points(formulas.compute_launches(raw(cc="7.0", **m), CAT))
    tensor = pts[pts["precision"] == "tensor:legacy_x512"].set_index("level")
    assert tensor.loc["l2", "ai_flop_per_byte"] == pytest.approx(2 * 20480**3 / 2e10, rel=1e-12)
    assert tensor.loc["dram", "ai_flop_per_byte"] == pytest.approx(2 * 20480**3 / 5e9, rel=1e-12)
