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
