"""ncuroof's numbers against the values Nsight Compute itself stored in real reports.

Reference values are read straight from each report through ncu_report (tests/conftest.py:
ncu_metrics), never through ncuroof: ncu's section-derived metrics (derived__…_x2/_x4, already
weighted by ncu), its .per_second rates, peak_sustained values and pct_of_peak percentages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from tests.helpers.reports import (
    REPORTS,
    close,
    kernels_of,
    ncu_metrics,
    needs_ncu_report,
)

pytestmark = [needs_ncu_report]

NAMES = [p.name for p in REPORTS]
SMSP = "smsp__cycles_elapsed.avg.per_second"
SM = "sm__cycles_elapsed.avg.per_second"


def P(m: dict, op: str) -> float:
    return m[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"]


def ncu_flop_per_s(m: dict, precision: str) -> float | None:
    """Achieved FLOP/s exactly as ncu's roofline charts compute it, from ncu's stored metrics."""
    d = "derived__smsp__sass_thread_inst_executed_op_"
    try:
        if precision == "fp64":
            return (P(m, "dadd") + P(m, "dmul") + m[d + "dfma_pred_on_x2"]) * m[SMSP]
        if precision == "fp32":
            return (P(m, "fadd") + P(m, "fmul") + m[d + "ffma_pred_on_x2"]) * m[SMSP]
        if precision == "fp16":
            if d + "hfma_pred_on_x4" in m:  # ncu 2024+: stored x2/x2/x4
                return (
                    m[d + "hadd_pred_on_x2"] + m[d + "hmul_pred_on_x2"] + m[d + "hfma_pred_on_x4"]
                ) * m[SMSP]
            # ncu 2023 stored hadd + hmul + hfma_x2: half of today's weighting (metrics/README.md)
            return 2 * (P(m, "hadd") + P(m, "hmul") + m[d + "hfma_pred_on_x2"]) * m[SMSP]
    except KeyError:
        return None
    return None


def ncu_peak(m: dict, precision: str) -> float | None:
    d = "derived__sm__sass_thread_inst_executed_op_"
    key = {
        "fp64": d + "dfma_pred_on_x2",
        "fp32": d + "ffma_pred_on_x2",
        "fp16": d + "hfma_pred_on_x4",
    }[precision]
    if key in m and SM in m:
        return m[key] * m[SM]
    if precision == "fp16" and d + "hfma_pred_on_x2" in m and SM in m:
        return 2 * m[d + "hfma_pred_on_x2"] * m[SM]
    return None


def _pairs(name: str):
    k = kernels_of(name)
    ms = ncu_metrics(name)
    assert len(k) == len(ms), "one kernels row per launch, in report order"
    return [(row, ms[i]) for i, row in enumerate(k.to_dict("records")) if row["status"] == "ok"]


def _compare_column(name: str, column: str, reference, missing: str) -> None:
    """Assert ``column`` equals ``reference(metrics)`` on every ok launch that has a reference."""
    checked = 0
    for row, m in _pairs(name):
        ref = reference(m)
        if ref is None:
            continue
        assert close(row[column], ref), (row["launch_id"], column, row[column], ref)
        checked += 1
    if not checked:
        pytest.skip(f"{name} stores no {missing}")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("precision", ["fp64", "fp32", "fp16"])
def test_achieved_flop_per_s_equals_ncu(name: str, precision: str) -> None:
    _compare_column(
        name,
        f"{precision}_flop_per_s",
        lambda m: ncu_flop_per_s(m, precision),
        f"ncu-derived {precision} work metrics",
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("precision", ["fp64", "fp32", "fp16"])
def test_compute_roof_equals_ncu_derived_peak(name: str, precision: str) -> None:
    _compare_column(
        name,
        f"peak_{precision}_flop_per_s",
        lambda m: ncu_peak(m, precision),
        f"derived__sm__ {precision} peak",
    )


@pytest.mark.parametrize("name", NAMES)
def test_dram_bandwidth_equals_ncu_per_second(name: str) -> None:
    _compare_column(
        name,
        "dram_bytes_per_s",
        lambda m: m.get("dram__bytes.sum.per_second"),
        "dram__bytes.sum.per_second",
    )


@pytest.mark.parametrize("name", NAMES)
def test_dram_fraction_of_roof_equals_ncu_dram_throughput(name: str) -> None:
    """Our DRAM bytes/s over our DRAM roof = ncu's own 'DRAM Throughput' percentage."""
    checked = 0
    for row, m in _pairs(name):
        pct = m.get("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
        if pct is None or math.isnan(row["peak_dram_bytes_per_s"]):
            continue
        assert close(row["dram_bytes_per_s"] / row["peak_dram_bytes_per_s"], pct / 100, rel=1e-3)
        checked += 1
    if not checked:
        pytest.skip(f"{name} has no DRAM roof or DRAM throughput percentage")


def _l2_with_writes(row: Any, m: Mapping[str, float]) -> int:
    """Issue 50 class 8: where ncu's read-only L2 fell below DRAM, L2 = ncu's lts2xbar bytes + the
    L2 writes the report holds, over the duration, against the tag stage's roof (lts__t_sectors:
    reads and writes)."""
    time = m["gpu__time_duration.sum"] * 1e-9
    reads = m.get("derived__lts__lts2xbar_bytes.sum.per_second")
    if reads is None:
        reads = m["l1tex__m_xbar2l1tex_read_bytes.sum.per_second"]
    writes = (
        32 * m["lts__t_sectors_srcunit_tex_op_write.sum"]
        if "lts__t_sectors_srcunit_tex_op_write.sum" in m
        else m["l1tex__m_l1tex2xbar_write_bytes.sum"]
    )
    assert row["l2_bytes_per_s"] == pytest.approx(reads + writes / time, rel=1e-6)
    assert reads * time < row["dram_bytes"] <= row["l2_bytes"] * 1.05
    if "lts__t_sectors.sum.pct_of_peak_sustained_elapsed" in m:
        pct = m["lts__t_sectors.sum.pct_of_peak_sustained_elapsed"]
        tag = 3200 * m["lts__t_sectors.sum.per_second"] / pct
    elif "lts__t_sectors.sum.peak_sustained" in m and "lts__cycles_elapsed.avg.per_second" in m:
        tag = 32 * m["lts__t_sectors.sum.peak_sustained"] * m["lts__cycles_elapsed.avg.per_second"]
    else:  # no tag-stage roof in the report: the definition's own roof stays
        return 1
    assert row["peak_l2_bytes_per_s"] == pytest.approx(tag, rel=1e-9)
    return 1


@pytest.mark.parametrize("name", NAMES)
def test_l2_l1_bandwidth_equal_ncu_derived_bytes(name: str) -> None:
    checked = 0
    for row, m in _pairs(name):
        if str(row["l2_definition"]).endswith("+writes"):
            checked += _l2_with_writes(row, m)
            continue
        for level, key in (
            ("l2", "derived__lts__lts2xbar_bytes.sum.per_second"),
            ("l1", "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second"),
            ("l1", "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second"),
        ):
            if key in m:
                assert close(row[f"{level}_bytes_per_s"], m[key]), (
                    level,
                    row[f"{level}_bytes_per_s"],
                    m[key],
                )
                checked += 1
        for level, key in (
            ("l2", "derived__lts__lts2xbar_bytes.sum.peak_sustained"),
            ("l1", "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained"),
            ("l1", "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained"),
        ):
            clock = {
                "l2": "lts__cycles_elapsed.avg.per_second",
                "l1": "l1tex__cycles_elapsed.avg.per_second",
            }[level]
            if key in m and clock in m:
                assert close(row[f"peak_{level}_bytes_per_s"], m[key] * m[clock])
                checked += 1
    if not checked:
        pytest.skip(f"{name} stores no derived L1/L2 byte metrics")


@pytest.mark.parametrize("name", NAMES)
def test_l2_fraction_equals_ncu_pct_of_peak(name: str) -> None:
    """Where ncu stored the L2 level's percentage of peak, our bytes/s over our roof (peak_sustained
    x measured L2 clock) match it. Full-set reports whose L2 roof is itself derived from that
    percentage are left out: comparing them would prove nothing."""
    checked = 0
    for row, m in _pairs(name):
        for definition, key in (
            ("ncu", "lts__lts2xbar_cycles_active.sum.pct_of_peak_sustained_elapsed"),
        ):
            if (
                row["l2_definition"] == definition
                and key in m
                and m[key] > 0
                and not math.isnan(row["peak_l2_bytes_per_s"])
            ):
                assert close(
                    row["l2_bytes_per_s"] / row["peak_l2_bytes_per_s"], m[key] / 100, rel=1e-6
                )
                checked += 1
    if not checked:
        pytest.skip(f"{name}: no L2 percentage of peak to compare with")


def test_l1_roof_from_percentage_is_close_to_exact_roof() -> None:
    """Full-set reports give the L1 roof only as 128 x count / pct / duration. On the H100 report,
    which stores the exact ingredients too, that approximation is within 1 % of the exact roof."""
    name = "cs599k__2025-04-21-vector-based.ncu-rep"
    for m in ncu_metrics(name):
        exact = (
            128
            * m["l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained"]
            * m["l1tex__cycles_elapsed.avg.per_second"]
            if "l1tex__cycles_elapsed.avg.per_second" in m
            else None
        )
        pct = m["l1tex__lsu_writeback_active_mem_lgds.sum.pct_of_peak_sustained_elapsed"] / 100
        approx = (
            128
            * m["l1tex__lsu_writeback_active_mem_lgds.sum"]
            / pct
            / (m["gpu__time_duration.sum"] * 1e-9)
        )
        if exact is None:
            pytest.skip("report stores no L1 clock")
        assert abs(approx / exact - 1) < 0.01


@pytest.mark.parametrize("name", NAMES)
def test_arithmetic_intensity_is_ncu_chart_x(name: str) -> None:
    """x of ncu's chart = achieved work / achieved traffic; for FP32 at DRAM from ncu's metrics."""
    import ncuroof

    pts = ncuroof.points(kernels_of(name))
    ms = ncu_metrics(name)
    sel = pts[(pts["precision"] == "fp32") & (pts["level"] == "dram")]
    checked = 0
    for r in sel.itertuples(index=False):
        m = ms[r.launch_id]
        ref = ncu_flop_per_s(m, "fp32")
        if ref is None or "dram__bytes.sum.per_second" not in m:
            continue
        assert close(r.ai_flop_per_byte, ref / m["dram__bytes.sum.per_second"])
        checked += 1
    if not checked:
        pytest.skip(f"{name}: no FP32 DRAM points with ncu-derived work")
