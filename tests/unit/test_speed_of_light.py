"""Issue 15: the unit bound, the hot pipe, mixed-pipe time at the roof and the
instruction-bound class.

Real-report checks compare against what ncu stored, read directly through ncu_report
(conftest.ncu_metrics), never against ncuroof's own earlier output.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import ncuroof
from ncuroof import catalog
from ncuroof.model import diagnose, formulas, summary
from tests.helpers import synthetic
from tests.helpers.reports import REPORTS, kernels_of, ncu_metrics, needs_ncu_report

SOL = catalog.load().thresholds["sol"]
_PIPE = re.compile(
    r"^sm__(pipe_[a-z0-9_]+_cycles_active(_v2)?|inst_executed_pipe_[a-z0-9_]+)\.avg\.pct_of_peak_sustained_elapsed$"
)


def _unit(m: dict[str, float]) -> float:
    """time x max(SM, memory throughput) from ncu's stored values, NaN without them."""
    sm = m.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", math.nan)
    mem = m.get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", math.nan)
    t = m.get("gpu__time_duration.sum", math.nan) * 1e-9
    return t * max(sm, mem) / 100.0 if math.isfinite(sm) and math.isfinite(mem) else math.nan


@needs_ncu_report
def test_unit_bound_by_hand_on_real_launches() -> None:
    # reduceNeighbored (CUDA_Learning, RTX 30xx): ncu stored SM 76.79 %, memory 12.50 %, so the
    # launch cannot run faster than 0.7679 x its duration; the FP roofline promised 8x less.
    name = "CUDA_Learning__report.ncu-rep"
    k = kernels_of(name)
    m = ncu_metrics(name)[0]
    t = m["gpu__time_duration.sum"] * 1e-9
    sm = m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    assert sm == pytest.approx(0.7679, abs=1e-4)
    assert k.loc[0, "time_at_roof_s"] == pytest.approx(t * sm, rel=1e-12)
    assert k.loc[0, "time_at_roof_bound"] == "sm_units"
    assert k.loc[0, "saving_s"] == pytest.approx(t * (1 - sm), rel=1e-12)
    assert "busiest pipe ALU 77%" in k.loc[0, "speed_of_light_note"]
    # The kernel summary sums the same bound over launches.
    s = summary.kernel_summary(k, ncuroof.points(k)).set_index("kernel_name")
    assert s.loc["reduceNeighbored", "time_at_roof_s"] == pytest.approx(t * sm, rel=1e-12)
    assert s.loc["reduceNeighbored", "time_at_roof_bound"] == "sm_units"


@needs_ncu_report
def test_unit_bound_by_hand_on_an_embedded_launch() -> None:
    """The same on the repository's ESMM report (issue 54 item 10: runs without ../shared):
    one_blocktiling's SM and memory throughput are both 64.8 % in ncu's values, its busiest pipe
    LSU at the same 64.8 %; the SM side wins the tie, so the launch cannot run faster than
    0.648 x its duration, 3.5x the FP32 roofline's bound: its 2·1024³ FLOPs at 2 x ncu's FFMA
    peak_sustained x SM clock."""
    name = "ESMM-Research__profile_output.ncu-rep"
    k = kernels_of(name)
    m = ncu_metrics(name)[0]
    t = m["gpu__time_duration.sum"] * 1e-9
    sm = m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    mem = m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    lsu = m["sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed"] / 100
    assert sm == mem == lsu and sm == pytest.approx(0.648, abs=1e-3)
    assert k.loc[0, "time_at_roof_s"] == pytest.approx(t * sm, rel=1e-12)
    assert k.loc[0, "time_at_roof_bound"] == "sm_units"
    assert k.loc[0, "saving_s"] == pytest.approx(t * (1 - sm), rel=1e-12)
    fp = (2 * 1024**3) / (
        2
        * m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"]
        * m["sm__cycles_elapsed.avg.per_second"]
    )
    assert k.loc[0, "speed_of_light_note"].startswith(
        "speed of light: the SM was busy 65% of the launch (busiest pipe LSU 65%), so with the"
        f" same instructions and bytes it cannot run faster than {t * sm * 1e6:.3g} us,"
        f" {t * sm / fp:.1f}x the roofline's {fp * 1e6:.3g} us"
    )
    s = summary.kernel_summary(k, ncuroof.points(k)).set_index("kernel_name")
    assert s.loc["one_blocktiling", "time_at_roof_s"] == pytest.approx(t * sm, rel=1e-12)
    assert s.loc["one_blocktiling", "time_at_roof_bound"] == "sm_units"


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_time_at_roof_never_below_the_unit_bound(name: str) -> None:
    k = kernels_of(name)
    for i, m in enumerate(ncu_metrics(name)):
        u = _unit(m)
        if math.isfinite(u):
            assert k.loc[i, "time_at_roof_s"] >= u * (1 - 1e-12), (name, i)
            assert k.loc[i, "saving_s"] <= m["gpu__time_duration.sum"] * 1e-9 - u + 1e-15


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_hot_pipe_is_the_largest_pipe_metric(name: str) -> None:
    k = kernels_of(name)
    pipes = catalog.load().pipes
    suffix = pipes.suffixes[0]
    for i, m in enumerate(ncu_metrics(name)):
        values = {n: v for n, v in m.items() if _PIPE.match(n) and math.isfinite(v)}
        if not values:
            continue
        top = max(values.values())
        assert k.loc[i, "hot_pipe_frac"] == pytest.approx(top / 100, rel=1e-12), (name, i)
        pipe = next(p for p in pipes.pipes if p.name == k.loc[i, "hot_pipe"])
        assert any(values.get(b + suffix) == top for b in pipe.metrics), (name, i, pipe.name)


def _mixed(cc: str):
    k = synthetic.kernels_table(1, 1)
    k["cc"] = cc
    k[["sm_throughput_frac", "memory_throughput_frac"]] = math.nan
    k[["fp32_flop", "peak_fp32_flop_per_s"]] = [1e9, 10e12]  # 1e-4 s
    k[["fp16_flop", "peak_fp16_flop_per_s"]] = [4e9, 20e12]  # 2e-4 s
    k[["fp64_flop", "peak_fp64_flop_per_s"]] = [5e8, 2e12]  # 2.5e-4 s
    k["tensor_src_fp16_flop"], k["peak_tensor_src_fp16_flop_per_s"] = 1e11, 1e15  # 1e-4 s
    k["tensor_op_hmma_flop"], k["peak_tensor_op_hmma_flop_per_s"] = (
        1e11,
        1e15,
    )  # same work, other family: not added
    k[["dram_bytes", "peak_dram_bytes_per_s", "l2_bytes", "l1_bytes"]] = [
        1e8,
        1e12,
        0.0,
        0.0,
    ]  # 1e-4 s
    return formulas.time_at_roof(k).loc[0, "time_at_roof_s"]


def test_mixed_pipe_time_at_roof_by_hand() -> None:
    # CC 8.6: FP32 and FP16 share the FMA pipe: 1e-4 + 2e-4; FP64 2.5e-4 and
    # tensor 1e-4 on their own.
    assert _mixed("8.6") == pytest.approx(3e-4)
    # CC 8.0: FP16 on its own pipe; FP64 and tensor share one issue port: 2.5e-4 + 1e-4.
    assert _mixed("8.0") == pytest.approx(3.5e-4)
    # CC 7.5: FP16 and tensor share: 2e-4 + 1e-4; FP64 alone 2.5e-4.
    assert _mixed("7.5") == pytest.approx(3e-4)
    # Unknown compute capability: every precision on its own pipe, the largest term binds.
    assert _mixed("") == pytest.approx(2.5e-4)


def test_precision_pipes_cover_known_architectures_with_sources() -> None:
    pipes = catalog.load().pipes
    for cc in (7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0):
        assert set(pipes.pipe_of(cc)) == {"fp64", "fp32", "fp16", "tensor"}
    assert all(src for *_, src in pipes.precision_pipes)
    assert pipes.pipe_of(8.6)["fp16"] == pipes.pipe_of(8.6)["fp32"] == "fma"


def test_instruction_bound_verdict_by_hand() -> None:
    # The case: an RNG kernel, SM 66 %, memory 17 %, FP roofline memory-bound at
    # 15 % of the DRAM roof.
    f = {
        "status": "ok",
        "bound": "memory",
        "precision": "fp32",
        "level": "dram",
        "ai_flop_per_byte": 0.1,
        "ridge_flop_per_byte": 20.0,
        "roof_fraction": 0.15,
        "sm_throughput_frac": 0.66,
        "memory_throughput_frac": 0.17,
        "waves_per_sm": 10.0,
        "hot_pipe": "ALU",
        "hot_pipe_frac": 0.64,
    }
    cls, ev, advice = diagnose.verdict(f, SOL)
    assert cls == "instruction_bound" and diagnose.CLASSES[cls] == "instruction-bound (non-FP work)"
    assert "SM 66%, memory 17%" in ev and "busiest pipe ALU 64%" in ev
    assert "coalescing will not help" in advice and "at most 1.5x faster" in advice  # 1 / 0.66
    # No FP work at all: classify's SpeedOfLight-only bound, no point; the same evidence decides.
    cls, ev, _ = diagnose.verdict(
        {**f, "bound": "compute", "level": "", "roof_fraction": math.nan, "hot_pipe": "XU"}, SOL
    )
    assert cls == "instruction_bound" and "no FP work counted" in ev
    # Memory 40 %, SM 66 %: ncu's rule still names the SM (>= 60 % and 26 points busier),
    # so no memory verdict.
    assert diagnose.verdict({**f, "memory_throughput_frac": 0.4}, SOL)[0] == "instruction_bound"
    # SM 50 %, memory 58 %: memory is the busier unit, so the roofline's memory verdict stands.
    assert (
        diagnose.verdict({**f, "memory_throughput_frac": 0.58, "sm_throughput_frac": 0.5}, SOL)[0]
        == "memory_below_roof"
    )
    # Compute bound near the FP roof: FP work is the limit.
    assert (
        diagnose.verdict({**f, "bound": "compute", "roof_fraction": 0.9}, SOL)[0]
        == "compute_near_roof"
    )


@needs_ncu_report
@pytest.mark.parametrize("name", [p.name for p in REPORTS])
def test_no_memory_advice_when_memory_idle_and_sm_busy(name: str) -> None:
    k = kernels_of(name)
    busy = (k["memory_throughput_frac"] < 0.25) & (k["sm_throughput_frac"] > 0.5)
    assert not k.loc[busy, "diagnosis"].str.startswith("memory").any()
    assert not k.loc[busy, "advice"].str.contains("check coalescing").any()
    s = diagnose.diagnose_kernels(
        summary.kernel_summary(k, ncuroof.points(k)), k, catalog.load(), catalog.load_gpus()
    )
    busy = (s["memory_throughput_frac"] < 0.25) & (s["sm_throughput_frac"] > 0.5)
    assert not s.loc[busy, "diagnosis"].str.startswith("memory").any()


@needs_ncu_report
def test_integer_reduction_is_instruction_bound() -> None:
    k = kernels_of("CUDA_Learning__report.ncu-rep")
    row = k.iloc[0]
    assert row["kernel_name"] == "reduceNeighbored" and row["diagnosis"] == "instruction_bound"
    assert row["hot_pipe"] == "ALU" and "integer and address arithmetic" in row["advice"]
    assert np.isfinite(row["hot_pipe_frac"])
