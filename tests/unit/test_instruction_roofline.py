"""Instruction roofline [DING] (issue 15): points recomputed independently from the raw
counters ncu stored."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ncuroof.catalog import load_gpus
from ncuroof.model.instruction_roofline import instruction_points, issue_roofs
from tests.helpers.reports import REPORTS, kernels_of, ncu_metrics, needs_ncu_report

_L1 = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
)


def _raw_transactions(m: dict[str, float]) -> dict[str, float]:
    out = {}
    if all(n in m for n in _L1):
        out["l1"] = sum(m[n] for n in _L1)
    if "lts__t_sectors.sum" in m:
        out["l2"] = m["lts__t_sectors.sum"]
    if "dram__sectors_read.sum" in m and "dram__sectors_write.sum" in m:
        out["dram"] = m["dram__sectors_read.sum"] + m["dram__sectors_write.sum"]
    return out


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_points_recomputed_from_raw_counters(name: str) -> None:
    pts = instruction_points(kernels_of(name)).set_index(["launch_id", "level"])
    gpus = load_gpus()
    seen = 0
    for i, m in enumerate(ncu_metrics(name)):
        inst, ns = (
            m.get("smsp__inst_executed.sum", math.nan),
            m.get("gpu__time_duration.sum", math.nan),
        )
        if not (inst > 0 and ns > 0):  # NaN where ncu failed to measure
            continue
        peak = (
            m["device__attribute_multiprocessor_count"]
            * 4
            * m.get("sm__cycles_elapsed.avg.per_second", math.nan)
        )
        for level, txn in _raw_transactions(m).items():
            if txn <= 0:
                continue
            row = pts.loc[(i, level)]
            assert row["inst_per_transaction"] == pytest.approx(inst / txn, rel=1e-12)
            assert row["warp_inst_per_s"] == pytest.approx(inst / (ns * 1e-9), rel=1e-12)
            if math.isnan(
                peak
            ):  # no SM clock in this report: the datasheet's roof, labelled, or none
                gpu = gpus.by_device(kernels_of(name)["device_name"].iat[i])
                want = gpu.sms * 4 * gpu.boost_hz if gpu is not None else math.nan
                assert row["peak_warp_inst_source"] == ("datasheet" if gpu is not None else "")
                assert (
                    math.isnan(row["peak_warp_inst_per_s"])
                    if gpu is None
                    else row["peak_warp_inst_per_s"] == pytest.approx(want, rel=1e-12)
                )
            else:
                assert (
                    row["peak_warp_inst_per_s"] == pytest.approx(peak, rel=1e-12)
                    and row["peak_warp_inst_source"] == "report"
                )
            seen += 1
    assert seen == len(pts)


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_issue_roof_agrees_with_ncus_own_peak(name: str) -> None:
    # ncu's peak warp instructions per cycle over all
    # SMs = per_cycle_elapsed / pct_of_peak; times the SM clock.
    pts = instruction_points(kernels_of(name))
    checked = 0
    for r in pts.drop_duplicates("launch_id").itertuples(index=False):
        m = ncu_metrics(name)[r.launch_id]
        rate = m.get("sm__inst_executed.sum.per_cycle_elapsed")
        pct = m.get("sm__inst_executed.sum.pct_of_peak_sustained_elapsed")
        if rate is None or not pct:
            continue
        assert r.peak_warp_inst_per_s == pytest.approx(
            rate / (pct / 100) * m["sm__cycles_elapsed.avg.per_second"], rel=1e-9
        )
        # y over the issue roof is ncu's issue utilisation (duration vs elapsed cycles: within 3 %).
        assert r.warp_inst_per_s / r.peak_warp_inst_per_s == pytest.approx(pct / 100, rel=0.03)
        checked += 1
    if not checked:
        pytest.skip(f"{name} has no sm__inst_executed rate and percentage")


def test_geometry_by_hand() -> None:
    k = pd.DataFrame(
        {
            "source": ["a", "a"],
            "launch_id": [0, 1],
            "kernel_name": ["k", "k"],
            "status": ["ok", "failed_measurement"],
            "time_s": [1e-3, 1e-3],
            "warp_inst": [1e8, 1e8],
            "peak_warp_inst_per_s": [4e11, 4e11],
            "l1_transactions": [1e7, 1e7],
            "l2_transactions": [np.nan, 1.0],
            "dram_transactions": [1e8, 1e8],
            "peak_l1_bytes_per_s": [3.2e13, 3.2e13],
            "peak_l2_bytes_per_s": [1e12, 1e12],
            "peak_dram_bytes_per_s": [3.2e12, 3.2e12],
        }
    )
    pts = instruction_points(k).set_index("level")
    assert list(pts.index) == ["l1", "dram"]  # no L2 counters; the failed launch has no point
    # L1: x = 10 inst/sector, wall 1e12 sectors/s -> 1e13 > roof 4e11: instruction side;
    # y = 1e11 = 25 % of the roof.
    assert (
        pts.loc["l1", "roof_warp_inst_per_s"] == pytest.approx(4e11)
        and pts.loc["l1", "bound"] == "instruction"
    )
    assert pts.loc["l1", "roof_fraction"] == pytest.approx(0.25)
    # DRAM: x = 1, wall 1e11 sectors/s -> attainable 1e11, below the elbow 4:
    # memory side, at its roof.
    assert (
        pts.loc["dram", "roof_warp_inst_per_s"] == pytest.approx(1e11)
        and pts.loc["dram", "bound"] == "memory"
    )
    assert math.isclose(pts.loc["dram", "roof_fraction"], 1.0)


def test_issue_roofs_from_the_datasheet_by_hand() -> None:
    """Launches without the report's issue roof get their datasheet entry's SMs x 4 x boost clock:
    the entry the roofs used where named, else the one matching the device, else none (NaN, no
    source); rows repeat and interleave, each gets its own."""
    gpus = load_gpus()
    a10g, a40 = gpus.by_name("a10g"), gpus.by_name("a40")
    k = pd.DataFrame(
        {
            "peak_warp_inst_per_s": [1e12, np.nan, np.nan, np.nan, np.nan, np.nan],
            "datasheet_gpu": [None, "a10g", None, "a10g", None, None],
            "device_name": ["NVIDIA A40", "NVIDIA A40", "NVIDIA A40", None, "no such GPU", None],
        }
    )
    peak, source = issue_roofs(k, gpus, schedulers_per_sm=4)
    ds = [g.sms * 4 * g.boost_hz for g in (a10g, a40, a10g)]
    np.testing.assert_array_equal(peak, [1e12, ds[0], ds[1], ds[2], np.nan, np.nan])
    assert list(source) == ["report", "datasheet", "datasheet", "datasheet", "", ""]
