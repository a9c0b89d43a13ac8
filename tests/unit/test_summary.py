"""Aggregation per kernel, the focus set and time at the roof, against hand arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ncuroof
from ncuroof.model import formulas, summary
from tests.helpers import synthetic
from tests.helpers.reports import kernels_of, needs_ncu_report


def _points(rows):
    cols = [
        "source",
        "launch_id",
        "kernel_name",
        "precision",
        "level",
        "time_s",
        "flop",
        "bytes",
        "peak_flop_per_s",
        "peak_bytes_per_s",
        "estimated",
        "definition",
        "peak_flop_source",
        "peak_bytes_source",
    ]
    return pd.DataFrame(rows, columns=cols)


def test_aggregate_points_time_weighted():
    # Two launches of k at DRAM: 1 ms doing 2 GFLOP over 1 GB, 3 ms doing 2 GFLOP over 3 GB;
    # roofs at two clocks.
    p = _points(
        [
            (
                "r",
                0,
                "k",
                "fp32",
                "dram",
                1e-3,
                2e9,
                1e9,
                20e12,
                2e12,
                False,
                "ncu",
                "report",
                "report",
            ),
            (
                "r",
                1,
                "k",
                "fp32",
                "dram",
                3e-3,
                2e9,
                3e9,
                10e12,
                1e12,
                False,
                "ncu",
                "report",
                "datasheet",
            ),
        ]
    )
    a = summary.aggregate_points(p)
    assert len(a) == 1
    r = a.iloc[0]
    assert r["launches"] == 2 and r["time_s"] == pytest.approx(4e-3)
    assert r["ai_flop_per_byte"] == pytest.approx(4e9 / 4e9)
    assert r["flop_per_s"] == pytest.approx(4e9 / 4e-3)
    assert r["bytes_per_s"] == pytest.approx(4e9 / 4e-3)
    # Roofs weighted by time: (20e12*1 + 10e12*3)/4 and (2e12*1 + 1e12*3)/4.
    assert r["peak_flop_per_s"] == pytest.approx(12.5e12)
    assert r["peak_bytes_per_s"] == pytest.approx(1.25e12)
    assert r["ridge_flop_per_byte"] == pytest.approx(10.0)
    assert r["roof_flop_per_s"] == pytest.approx(1.0 * 1.25e12)
    assert r["roof_fraction"] == pytest.approx(1e12 / 1.25e12)
    assert r["bound"] == "memory"
    assert r["peak_bytes_source"] == "report / datasheet"


def test_aggregate_roof_missing_in_one_launch_is_missing():
    p = _points(
        [
            (
                "r",
                0,
                "k",
                "fp32",
                "dram",
                1e-3,
                1e9,
                1e9,
                20e12,
                2e12,
                False,
                "ncu",
                "report",
                "report",
            ),
            ("r", 1, "k", "fp32", "dram", 1e-3, 1e9, 1e9, np.nan, 2e12, False, "ncu", "", "report"),
        ]
    )
    r = summary.aggregate_points(p).iloc[0]
    assert math.isnan(r["peak_flop_per_s"]) and math.isnan(r["roof_fraction"]) and r["bound"] == ""


def test_aggregate_achievable_roofs_time_weighted_beside_the_peaks():
    # Same two launches; achievable DRAM roofs 1.6e12 (1 ms) and 0.8e12 (3 ms), no compute one.
    p = _points(
        [
            (
                "r",
                0,
                "k",
                "fp32",
                "dram",
                1e-3,
                2e9,
                1e9,
                20e12,
                2e12,
                False,
                "ncu",
                "report",
                "report",
            ),
            (
                "r",
                1,
                "k",
                "fp32",
                "dram",
                3e-3,
                2e9,
                3e9,
                10e12,
                1e12,
                False,
                "ncu",
                "report",
                "report",
            ),
        ]
    ).assign(
        achievable_bytes_per_s=[1.6e12, 0.8e12],
        achievable_flop_per_s=np.nan,
        achievable_bytes_source="measured",
        achievable_flop_source="",
    )
    r = summary.aggregate_points(p).iloc[0]
    assert r["achievable_bytes_per_s"] == pytest.approx((1.6e12 * 1 + 0.8e12 * 3) / 4)
    # min(peak 12.5e12 (no achievable compute roof), AI 1 x 1e12) and 1e12 FLOP/s achieved.
    assert r["achievable_roof_flop_per_s"] == pytest.approx(1e12) and r[
        "achievable_roof_fraction"
    ] == pytest.approx(1.0)
    assert r["roof_fraction"] == pytest.approx(0.8) and r["achievable_bytes_source"] == "measured"
    # A launch without the achievable roof makes the aggregate's missing; without any, there is
    # no achievable point.
    r = summary.aggregate_points(p.assign(achievable_bytes_per_s=[1.6e12, np.nan])).iloc[0]
    assert math.isnan(r["achievable_bytes_per_s"]) and math.isnan(r["achievable_roof_fraction"])
    # A table from before issue 21 (no achievable columns) aggregates with NaN achievable roofs.
    assert math.isnan(
        summary.aggregate_points(_points(p.iloc[:, :14].to_numpy().tolist())).iloc[0][
            "achievable_roof_fraction"
        ]
    )


def test_focus_set_hand_cases():
    t = pd.Series([50.0, 30.0, 10.0, 6.0, 4.0], index=list("abcde"))
    assert list(summary.focus_set(t, 0.95)[lambda s: s].index) == [
        "a",
        "b",
        "c",
        "d",
    ]  # 96 % with d, 90 % without
    assert list(summary.focus_set(t, 0.5)[lambda s: s].index) == ["a"]  # a alone reaches 50 %
    assert summary.focus_set(t, 1.0).all()
    assert list(summary.focus_set(t.iloc[::-1], 0.8)[lambda s: s].index) == [
        "b",
        "a",
    ]  # order of the input kept


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=1e-9, max_value=1.0), min_size=1, max_size=40),
    st.floats(min_value=0.05, max_value=0.999),
)
def test_focus_set_is_the_fewest_largest(times, share):
    t = pd.Series(times)
    keep = summary.focus_set(t, share)
    kept = t[keep]
    # Reaches the share, and is minimal: without its smallest member it would not.
    assert kept.sum() >= share * t.sum() * (1 - 1e-12)
    assert kept.sum() - kept.min() < share * t.sum()
    # No left-out kernel is longer than a kept one.
    assert t[~keep].max() <= kept.min() if (~keep).any() else True


def test_time_at_roof_hand_arithmetic():
    k = synthetic.kernels_table(3, 3)
    k.loc[0, ["fp32_flop", "peak_fp32_flop_per_s", "fp64_flop", "peak_fp64_flop_per_s"]] = [
        6e9,
        60e12,
        1e9,
        1e12,
    ]
    k.loc[0, ["dram_bytes", "l2_bytes", "l1_bytes"]] = [2e8, 1e8, 1e8]
    k.loc[0, ["peak_dram_bytes_per_s", "peak_l2_bytes_per_s", "peak_l1_bytes_per_s"]] = [
        2e12,
        10e12,
        30e12,
    ]
    k.loc[0, "time_s"] = 5e-3
    k.loc[0, ["sm_throughput_frac", "memory_throughput_frac"]] = [
        0.1,
        0.15,
    ]  # unit bound 7.5e-4 s, below the roofline's
    out = formulas.time_at_roof(k)
    # max(6e9/60e12 = 1e-4, 1e9/1e12 = 1e-3, 2e8/2e12 = 1e-4, ...) = 1e-3 (FP64 binds).
    assert out.loc[0, "time_at_roof_s"] == pytest.approx(1e-3)
    assert out.loc[0, "saving_s"] == pytest.approx(4e-3)
    assert out.loc[0, "time_at_roof_bound"] == "roofline"
    k.loc[1, "status"] = "failed_measurement"
    k.loc[1, ["sm_throughput_frac", "memory_throughput_frac"]] = (
        math.nan
    )  # ncu stored NaN: no bound at all
    k.loc[2, "time_s"] = 1e-9  # faster than its roof: saving is 0, not negative
    out = formulas.time_at_roof(k)
    assert math.isnan(out.loc[1, "time_at_roof_s"]) and math.isnan(out.loc[1, "saving_s"])
    assert out.loc[2, "saving_s"] == 0.0


def test_instantiations_of_one_function_stay_apart():
    k = synthetic.kernels_table(6, 2)
    k["kernel_name"] = "Kernel"
    summ = summary.kernel_summary(k, ncuroof.points(k))
    assert list(summ["kernel_label"]) == ["Kernel (1)", "Kernel (2)"]
    assert summ["launches"].sum() == 6
    assert summ["time_s"].sum() == pytest.approx(k["time_s"].sum())


@needs_ncu_report
def test_summary_of_silu_report():
    # cs599k: three launches of one memory-bound SiLU kernel on an H100 (issue 2 ground truth).
    k = kernels_of("cs599k__2025-04-21-vector-based.ncu-rep")
    pts = ncuroof.points(k)
    summ = summary.kernel_summary(k, pts)
    assert len(summ) == 1
    r = summ.iloc[0]
    assert r["launches"] == 3 and r["time_share"] == pytest.approx(1.0)
    assert r["bound"] == "memory" and r["level"] == "dram" and r["precision"] == "fp32"
    dram = pts[(pts["level"] == "dram") & (pts["precision"] == "fp32")]
    # The aggregate dot from the three launches' own numbers.
    assert r["ai_flop_per_byte"] == pytest.approx(dram["flop"].sum() / dram["bytes"].sum())
    assert r["flop_per_s"] == pytest.approx(dram["flop"].sum() / dram["time_s"].sum())
    assert r["time_at_roof_s"] == pytest.approx(
        (dram["bytes"] / dram["peak_bytes_per_s"]).sum(), rel=1e-9
    )
    assert r["saving_s"] == pytest.approx(k["time_s"].sum() - r["time_at_roof_s"])


def test_focus_share_of_a_larger_total() -> None:
    """With a production timeline the share is of its whole kernel time, unprofiled
    kernels included."""
    t = pd.Series([6.0, 3.0, 1.0], index=["a", "b", "c"])
    assert list(summary.focus_set(t, 0.5)) == [True, False, False]  # 6 s reach half of 10 s
    assert list(summary.focus_set(t, 0.5, total_s=20.0)) == [
        True,
        True,
        True,
    ]  # half of 20 s needs all 10 s
    assert list(summary.focus_set(t, 0.5, total_s=14.0)) == [True, True, False]  # 6 < 7 <= 9
