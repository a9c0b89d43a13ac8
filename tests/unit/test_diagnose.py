"""Diagnosis verdicts on real reports whose limiter is known from their content, each asserted
together with the numbers it cites; plausibility flags; the hardware what-if by hand."""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog
from ncuroof.model import diagnose, summary
from ncuroof.model.distinct import distinct_rows
from ncuroof.schema import cell_text, flag_codes
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import datasheet, kernels_of, ncu_metrics, needs_ncu_report, shared

SOL = catalog.load().thresholds["sol"]


def _kernels(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    k = kernels_of(name)
    pts = ncuroof.points(k)
    s = diagnose.diagnose_kernels(
        summary.kernel_summary(k, pts), k, catalog.load(), catalog.load_gpus()
    )
    return k, s.set_index("kernel_label")


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


@needs_ncu_report
def test_esmm_sgemm_kernels():
    name = "ESMM-Research__profile_output.ncu-rep"
    k, s = _kernels(name)
    ncu = ncu_metrics(name)
    # The first kernel keeps both SM and memory busy at ncu's 65 %: balanced.
    r = s.loc["one_blocktiling"]
    sm = ncu[0]["sm__throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    mem = ncu[0]["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    assert (
        r["diagnosis"] == "balanced"
        and abs(sm - mem) <= SOL["balanced"]
        and min(sm, mem) >= SOL["latency_bound"]
    )
    assert f"SM {_pct(sm)}, memory {_pct(mem)}" in r["evidence"]
    # The tiled kernels run 64 blocks (grid 8 x 8) on an 80-SM A10G: under a wave, latency bound.
    for kern in ("two_blocktiling", "vectorized_blocktiling", "warptiling"):
        r = s.loc[kern]
        i = list(k["kernel_name"]).index(kern)
        waves = ncu[i]["launch__waves_per_multiprocessor"]
        assert r["diagnosis"] == "latency_bound" and waves < 1
        assert f"{waves:.3g} waves per SM (64 blocks of" in r["evidence"]
        assert "too little parallel work" in r["advice"]


@needs_ncu_report
def test_hand_sgemm_is_dram_bound_with_a_reuse_gap():
    name = "Cuda_Gemm_Practice__gemm_v9.ncu-rep"
    k, s = _kernels(name)
    r = s.loc["gemm"]
    row = k[k["kernel_name"] == "gemm"].iloc[0]
    ai = row["fp32_flop"] / row["dram_bytes"]
    ridge = row["peak_fp32_flop_per_s"] / row["peak_dram_bytes_per_s"]
    frac = (
        row["dram_bytes_per_s"] / row["peak_dram_bytes_per_s"]
    )  # at AI << ridge the roof is AI x bandwidth
    assert r["diagnosis"] == "memory_below_roof" and r["level"] == "dram"
    assert frac == pytest.approx(
        ncu_metrics(name)[0]["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] / 100,
        rel=1e-3,
    )
    assert f"AI {ai:.3g} FLOP/B < ridge {ridge:.3g}, {_pct(frac)} of roof" in r["evidence"]
    assert f"a {ridge / ai:.0f}x gap" in r["advice"] and "tile for reuse" in r["advice"]
    # cuBLAS's SGEMM in the same report: compute bound, FP32 pipe half used, no tensor cores.
    r = s.loc["ampere_sgemm_128x64_nn"]
    assert r["diagnosis"] == "compute_below_roof" and "no tensor-core work" in r["advice"]
    spec = catalog.load_gpus().by_device(row["device_name"])
    assert f"{spec.tensor['fp16_fp32acc'] / spec.flop_per_s['fp32']:.0f}x higher" in r["advice"]


@needs_ncu_report
def test_silu_is_at_the_dram_roof():
    k, s = _kernels("cs599k__2025-04-21-vector-based.ncu-rep")
    r = s.loc["silu_kernel_vector"]
    assert r["diagnosis"] == "memory_near_roof" and r["roof_fraction"] >= SOL["no_bound"]
    # the H100 PCIe's published memcpy bandwidth (1,860 GB/s, metrics/gpus.toml) is the achievable
    # roof beside the peak
    assert r["achievable_roof_fraction"] == pytest.approx(
        k["dram_bytes_per_s"].max() / 1.86e12, rel=0.01
    )
    # the kernel's verdict is its longest launch's (issue 50 class 3), said to be that launch's
    longest = k[k["kernel_name"] == "silu_kernel_vector"].sort_values("time_s").iloc[-1]
    assert longest["diagnosis"] == "memory_near_roof"
    assert r["evidence"].startswith("longest launch of 3: ")
    assert (
        f"at {_pct(longest['achievable_roof_fraction'])} of achievable DRAM bandwidth"
        f" ({_pct(longest['roof_fraction'])} of the report's)" in r["evidence"]
    ) and "only moving fewer bytes helps" in r["advice"]
    # issue 44 class 4 / issue 50 class 8: the ncu L2 definition counts reads only (269 MB, below
    # DRAM's 517 MB: the kernel writes as much as it reads); the writes the report holds are added,
    # so L2 = 32 x lts2xbar cycles + 32 x L2 sectors written from L1TEX, no longer below DRAM;
    # issue 44 class 10: its FP16 FLOPs are all HFMA2.MMA register moves
    # (L1's definition, loads written back, now sits below L2: that is flagged, not L2 < DRAM)
    assert [c for c, _ in r["flags"]] == ["levels_out_of_order", "fp16_moves"]
    ncu = ncu_metrics("cs599k__2025-04-21-vector-based.ncu-rep")
    for row, m in zip(k.itertuples(index=False), ncu):
        reads = (
            m["derived__lts__lts2xbar_bytes.sum.per_second"] * m["gpu__time_duration.sum"] * 1e-9
        )
        writes = (
            32 * m["lts__t_sectors_srcunit_tex_op_write.sum"]
            if "lts__t_sectors_srcunit_tex_op_write.sum" in m
            else m["l1tex__m_l1tex2xbar_write_bytes.sum"]
        )
        assert reads < 0.95 * row.dram_bytes
        assert row.l2_bytes == pytest.approx(reads + writes, rel=1e-6)
        assert row.l2_definition == "ncu+writes" and row.l2_bytes >= row.dram_bytes
        assert any(str(n).startswith("L2 counts writes") for n in row.notes)
        assert not any(
            "L2" in str(n) and "below DRAM" in str(n) for n in row.notes if "levels out" in str(n)
        )


@needs_ncu_report
def test_alife_tiny_launches_are_launch_bound():
    # issue 50 class 7: one block on a 40-SM GPU in a launch of a few microseconds is limited by
    # launch latency and too few blocks, said first; its idle lanes are still named
    k = kernels_of("alife_cuda__profile_output.ncu-rep")
    one_block = k[k["grid"] == "(1, 1, 1)"]
    assert len(one_block) > 0
    assert (one_block["diagnosis"] == "latency_bound").all()
    assert (one_block["limiter"] == "launch_bound").all()
    for r in one_block.itertuples(index=False):
        assert r.time_s <= 10e-6 and r.sm_count == 40
        assert r.evidence.startswith("1 block on 40 SMs in a launch under 10 us")
        assert f"{r.waves_per_sm:.3g} waves per SM (1 block of" in r.evidence
        assert r.advice.startswith("too few blocks and launch latency limit it")
        if r.block == "(1, 1, 1)":
            assert "31 of 32 lanes of every warp idle" in r.advice


@needs_ncu_report
def test_failed_measurement_is_flagged_not_classified():
    k, s = _kernels("BBAStar__profile_output.ncu-rep")
    failed = k[k["status"] == "failed_measurement"]
    assert len(failed) == 1
    assert failed["diagnosis"].iat[0] == "not_classified" and flag_codes(
        failed["flags"].iat[0]
    ) == ["failed_measurement"]
    r = s.loc[failed["kernel_name"].iat[0]]
    assert r["diagnosis"] == "not_classified" and "failed_measurement" in flag_codes(r["flags"])


def test_a_memory_bound_launch_far_below_its_ridge_is_told_to_reuse():
    """The hand SGEMM's verdict from the numbers it quotes (runs without ../shared): memory-bound
    at DRAM with the bandwidth mostly used (70 % of the roof, at least [sol].latency_bound) and AI
    1 FLOP/B against a ridge of 33: the lever is reuse, a 33x gap, not coalescing first."""
    facts = {
        "status": "ok",
        "bound": "memory",
        "precision": "fp32",
        "level": "dram",
        "roof_fraction": 0.7,
        "ai_flop_per_byte": 1.0,
        "ridge_flop_per_byte": 33.0,
        "sm_throughput_frac": 0.3,
        "memory_throughput_frac": 0.7,
        "waves_per_sm": 8.0,
        "blocks": 4096,
        "threads_per_block": 256,
    }
    cls, ev, advice = diagnose.verdict(facts, SOL)
    assert cls == "memory_below_roof"
    assert "FP32 at DRAM: AI 1 FLOP/B < ridge 33, 70% of roof" in ev
    assert advice.startswith("70% of the DRAM roof: bandwidth is mostly used, the lever is reuse")
    assert "a 33x gap" in advice and "tile for reuse" in advice
    # under the latency threshold the access pattern comes first
    _, _, low = diagnose.verdict({**facts, "roof_fraction": 0.3}, SOL)
    assert "the access pattern wastes bandwidth" in low and "33x gap" in low


def test_a_failed_launch_of_the_embedded_export_is_flagged_not_classified(tmp_path):
    """A launch ncu could not measure (its duration and FLOP counters n/a) in a copy of the
    repository's ESMM export (runs without ../shared): the launch is failed_measurement, not
    classified and flagged, and so is its kernel (basic, its only launch); the others keep their
    verdicts."""
    import csv

    rows = list(csv.reader(shared("ESMM-Research__metrics.csv").open(encoding="utf-8-sig")))
    failed = [
        [*r[:14], "n/a"]
        if r[0] == "0" and r[12].startswith(("gpu__time_duration", "sm__sass_thread"))
        else r
        for r in rows
    ]
    path = tmp_path / "failed.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(failed)
    a = ncuroof.analyze(path, gpu="a10g")
    k, s = a.launches.set_index("launch_id"), a.summary.set_index("kernel_label")
    assert k.at[0, "status"] == "failed_measurement" and k.at[0, "diagnosis"] == "not_classified"
    assert flag_codes(k.at[0, "flags"])[0] == "failed_measurement"  # then na_metrics: the n/a cells
    assert s.at["basic", "diagnosis"] == "not_classified"
    assert "failed_measurement" in flag_codes(s.at["basic", "flags"])
    assert (k.loc[1:, "status"] == "ok").all() and (
        k.loc[1:, "diagnosis"] != "not_classified"
    ).all()


def test_point_pushed_above_its_roof_is_flagged_with_the_cause():
    csv = shared("RooflineAnalysis_On_NVIDIA_GPU__output0.csv")
    k = ncuroof.load(
        csv, peak_flops={"fp32": 1e15, "fp64": 1e15, "fp16": 1e15}, peak_bandwidth={"dram": 1e9}
    )
    pts = ncuroof.points(k)
    dram = pts[pts["level"] == "dram"]
    assert (dram["roof_fraction"] > 1).all()
    flags = cell_text("flags", k["flags"].iat[0])
    for r in dram.itertuples(index=False):
        assert (
            f"above_roof: {r.precision.upper()} at DRAM {_pct(r.roof_fraction)} of roof, likely the"
            " user roof" in flags
        )


def _csv_metric(name: str, metric: str) -> list[float]:
    """One metric of each launch of an ncu long CSV export (a row per launch and metric), read
    with the csv module alone, in launch ID order."""
    with open(shared(name), newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Metric Name"] == metric]
    rows.sort(key=lambda r: int(r["ID"]))
    return [float(r["Metric Value"].replace(",", "")) for r in rows]


def test_a_user_dram_roof_below_the_embedded_csvs_traffic_is_named_as_the_cause():
    """The above_roof flag on the repository's ESMM CSV (issue 54 item 10: runs without
    ../shared). A user DRAM roof of 1 GB/s under FP roofs of 1 PFLOP/s: every launch is left of
    the ridge, so its roof fraction is its DRAM bytes / duration / 1 GB/s, read from the CSV by
    hand. Eight launches moved more and are flagged with the user roof as the likely cause;
    smem_blocking moved 0.51 GB/s and is not."""
    name = "ESMM-Research__metrics.csv"
    dram, ns = _csv_metric(name, "dram__bytes.sum"), _csv_metric(name, "gpu__time_duration.sum")
    op = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
    fma, add, mul = (_csv_metric(name, op.format(x)) for x in ("ffma", "fadd", "fmul"))
    k = ncuroof.load(
        shared(name),
        peak_flops={"fp32": 1e15, "fp64": 1e15, "fp16": 1e15},
        peak_bandwidth={"dram": 1e9},
    )
    above = catalog.load().thresholds["diagnosis"]["above_roof"]
    fracs = [d / (t * 1e-9) / 1e9 for d, t in zip(dram, ns)]
    assert len(k) == len(fracs) == 9
    for i, (frac, flags) in enumerate(zip(fracs, k["flags"])):
        assert (2 * fma[i] + add[i] + mul[i]) / dram[i] * 1e9 < 1e15
        said = (
            f"above_roof: FP32 at DRAM {_pct(frac)} of roof, likely the user roof is below what"
            " this GPU reached (check --gpu / --peak-*)"
        )
        assert (said in cell_text("flags", flags)) == (frac > above)
    assert [n for n, f in zip(k["kernel_name"], fracs) if f <= above] == ["smem_blocking"]


def test_verdicts_by_hand():
    base = {
        "status": "ok",
        "precision": "fp32",
        "level": "l2",
        "ai_flop_per_byte": 50.0,
        "ridge_flop_per_byte": 10.0,
        "sm_throughput_frac": 0.9,
        "memory_throughput_frac": 0.5,
        "waves_per_sm": 8.0,
        "blocks": 1024,
        "threads_per_block": 256,
        "tensor_flop": 0.0,
        "device_name": "NVIDIA H100 80GB HBM3",
    }
    cls, ev, advice = diagnose.verdict(
        {**base, "bound": "compute", "roof_fraction": 0.9}, SOL, catalog.load_gpus()
    )
    spec = catalog.load_gpus().by_device("NVIDIA H100 80GB HBM3")
    assert cls == "compute_near_roof" and "FP32 at L2: AI 50 FLOP/B >= ridge 10, 90% of roof" in ev
    assert f"is {spec.tensor['bf16'] / spec.flop_per_s['fp32']:.0f}x the FP32 roof" in advice
    cls, _, advice = diagnose.verdict(
        {**base, "bound": "compute", "roof_fraction": 0.3, "tensor_flop": 1e9}, SOL
    )
    assert cls == "compute_below_roof" and "tensor" not in advice
    cls, _, advice = diagnose.verdict(
        {
            **base,
            "bound": "memory",
            "roof_fraction": 0.3,
            "ai_flop_per_byte": 1.0,
            "sm_throughput_frac": 0.4,
            "memory_throughput_frac": 0.85,
        },
        SOL,
    )
    assert cls == "memory_below_roof" and advice.startswith(
        "30% of the L2 roof: the access pattern wastes bandwidth; check coalescing"
    )
    # SM 90 % vs memory 50 %: ncu's rule points at the SM (>= 60 % and 10 points
    # busier), so no memory advice
    cls, ev, advice = diagnose.verdict(
        {**base, "bound": "memory", "roof_fraction": 0.3, "ai_flop_per_byte": 1.0}, SOL
    )
    assert cls == "instruction_bound" and "check coalescing" not in advice and "by 40 points" in ev
    cls, ev, _ = diagnose.verdict(
        {
            **base,
            "bound": "memory",
            "roof_fraction": 0.95,
            "sm_throughput_frac": 0.7,
            "memory_throughput_frac": 0.75,
        },
        SOL,
    )
    assert cls == "balanced" and "SM 70%, memory 75%" in ev
    cls, _, _ = diagnose.verdict({**base, "bound": "unknown", "roof_fraction": math.nan}, SOL)
    assert cls == "not_classified"


def test_achievable_roof_in_the_verdict_by_hand():
    base = {
        "status": "ok",
        "precision": "fp32",
        "level": "dram",
        "ai_flop_per_byte": 0.5,
        "ridge_flop_per_byte": 10.0,
        "sm_throughput_frac": 0.2,
        "memory_throughput_frac": 0.7,
        "waves_per_sm": 8.0,
        "tensor_flop": 0.0,
        "bound": "memory",
        "roof_fraction": 0.76,
        "peak_bytes_source": "datasheet",
    }
    # 76% of the datasheet's DRAM bandwidth but 93% of what the GPU sustains: the class stays the
    # peak's, the evidence gives both, and the advice says the bandwidth is used up.
    cls, ev, advice = diagnose.verdict(
        {**base, "achievable_roof_fraction": 0.93, "achievable_bytes_per_s": 1.8e12}, SOL
    )
    assert cls == "memory_below_roof"
    assert (
        "FP32 at DRAM: AI 0.5 FLOP/B < ridge 10, at 93% of achievable DRAM bandwidth (76% of the"
        " datasheet's)" in ev
    )
    assert advice.startswith(
        "93% of the achievable DRAM bandwidth: near what this GPU sustains, so only moving fewer"
        " bytes helps"
    )
    cls, ev, advice = diagnose.verdict({**base, "achievable_roof_fraction": math.nan}, SOL)
    assert "76% of roof" in ev and "achievable" not in ev + advice
    # Placed at another precision: said in the evidence.
    _, ev, _ = diagnose.verdict({**base, "main_precision": "tensor:sass_hmma"}, SOL)
    assert "placed at FP32: no roof for its main precision FP16/BF16 tensor (HMMA), estimated" in ev


@needs_ncu_report
def test_what_if_by_hand():
    k = kernels_of("Cuda_Gemm_Practice__gemm_v9.ncu-rep")
    s = summary.kernel_summary(k, ncuroof.points(k))
    h100 = catalog.load_gpus().by_name("h100-sxm")
    w = diagnose.what_if(s, k, h100).set_index("kernel_label")
    row = k[k["kernel_name"] == "gemm"].iloc[0]
    ai = row["fp32_flop"] / row["dram_bytes"]
    r = w.loc["gemm"]
    assert r["dram_ai_flop_per_byte"] == pytest.approx(ai)
    assert r["ridge_there"] == pytest.approx(h100.flop_per_s["fp32"] / h100.dram_bytes_per_s)
    assert r["time_at_roof_there_s"] == pytest.approx(
        max(row["fp32_flop"] / h100.flop_per_s["fp32"], row["dram_bytes"] / h100.dram_bytes_per_s)
    )
    assert r["bound_here"] == r["bound_there"] == "memory"
    assert re.search(
        r"memory-bound here, still memory-bound on H100 SXM5 \(ridge 33\.\d -> 20 FLOP/B",
        r["change"],
    )


@needs_ncu_report
def test_what_if_by_hand_on_the_embedded_reference_gemm():
    """--what-if on the repository's CUTLASS report (issue 54 item 10: runs without ../shared):
    its ReferenceGemm is the FP32 check of a 384³ GEMM, 2·384³ FLOPs, over the DRAM bytes ncu
    stored; projected onto the H100 SXM datasheet (67 TFLOP/s, 3,350 GB/s, read from gpus.toml
    here): AI and ridges, the time at that roof, the compute side on both GPUs."""
    name = "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"
    k, s = _kernels(name)
    w = diagnose.what_if(s.reset_index(), k, catalog.load_gpus().by_name("h100-sxm"))
    r = w.set_index("kernel_label").loc["ReferenceGemm_kernel"]
    i = list(k["kernel_name"]).index("ReferenceGemm_kernel")
    m = ncu_metrics(name)[i]
    flop, dram = 2 * 384**3, m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
    assert k["fp32_flop"].iat[i] == flop and k["dram_bytes"].iat[i] == dram
    sheet = datasheet("h100-sxm")
    peak, bw = sheet["fp32_tflops"] * 1e12, sheet["dram_gbps"] * 1e9
    here = (
        (2 * m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"])
        * m["sm__cycles_elapsed.avg.per_second"]
        / (m["dram__bytes.sum.peak_sustained"] * m["dram__cycles_elapsed.avg.per_second"])
    )
    assert r["precision"] == "fp32" and r["dram_ai_flop_per_byte"] == pytest.approx(flop / dram)
    assert r["ridge_here"] == pytest.approx(here, rel=1e-9)
    assert r["ridge_there"] == pytest.approx(peak / bw)
    assert r["time_at_roof_there_s"] == pytest.approx(max(flop / peak, dram / bw))
    assert flop / dram > max(here, peak / bw) and r["bound_here"] == r["bound_there"] == "compute"
    assert r["change"].endswith(
        f"the compute side on {sheet['name']} (ridge {here:.3g} -> {peak / bw:.3g} FLOP/B,"
        f" AI {flop / dram:.3g})"
    )


@needs_ncu_report
def test_what_if_keeps_the_kernels_own_verdict():
    # issue 50 class 10: "compute-bound here" for a kernel the diagnosis calls latency-bound; the
    # projection now says the verdict first and the side of the ridge as a side
    k, s = _kernels("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep")
    h100 = catalog.load_gpus().by_name("h100-sxm")
    w = diagnose.what_if(s.reset_index(), k, h100).set_index("kernel_label")
    assert s.loc["Kernel", "limiter"] == "launch_bound"
    side = w.loc["Kernel", "bound_here"]
    assert w.loc["Kernel", "change"].startswith(
        f"launch-bound: too few blocks for launch latency here (the {side} side of the DRAM ridge)"
    )


# --- --expect ------------------------------------------------------------------------------

GEMM_EXPECT = """
[sizes]
M = 1312
N = 110
K = 3122

[[kernel]]
match = "^gemm$"
flop = "2*M*N*K"
bytes = "4*(M*K + K*N + M*N)"

[[kernel]]
match = "sgemm"
flop = 5e8
"""


def test_formulas():
    from ncuroof.model.expect import evaluate

    assert evaluate("2*M*N*K", {"M": 2, "N": 3, "K": 4}) == 48
    assert evaluate("(M + 1) ** 2 // 3 - -1", {"M": 5}) == 13
    assert evaluate(7, {}) == 7.0
    for bad in ("__import__('os')", "M.real", "open", "2 if M else 3"):
        with pytest.raises(ValueError):
            evaluate(bad, {"M": 1})


@needs_ncu_report
def test_expect_gives_useful_ai_and_flags_excess_traffic(tmp_path):
    path = tmp_path / "expect.toml"
    path.write_text(GEMM_EXPECT)
    k = ncuroof.load(shared("Cuda_Gemm_Practice__gemm_v9.ncu-rep"), expect=path)
    gemm = k[k["kernel_name"] == "gemm"].iloc[0]
    flop, byts = 2 * 1312 * 110 * 3122, 4 * (1312 * 3122 + 3122 * 110 + 1312 * 110)
    assert gemm["expected_flop"] == flop and gemm["expected_dram_bytes"] == byts
    # ncu counted exactly the algorithmic FLOPs: no FLOP flag; DRAM traffic is
    # far above the minimum.
    assert gemm["fp32_flop"] == pytest.approx(flop, rel=1e-9) and "counted FLOPs" not in cell_text(
        "flags", gemm["flags"]
    )
    assert (
        f"is {gemm['dram_bytes'] / byts:.3g}x the {byts / 1e6:.3g} MB the kernel must move"
        in cell_text("flags", gemm["flags"])
    )
    sg = k[k["kernel_name"] == "ampere_sgemm_128x64_nn"].iloc[0]
    assert sg["expected_flop"] == 5e8 and math.isnan(sg["expected_dram_bytes"])
    assert (
        f"counted FLOPs {sg['fp32_flop'] / 1e6:.3g} MFLOP are {sg['fp32_flop'] / 5e8:.3g}x the"
        " expected 500 MFLOP: masked, padded or redundant work" in cell_text("flags", sg["flags"])
    )
    s = diagnose.diagnose_kernels(
        summary.kernel_summary(k, ncuroof.points(k)), k, catalog.load()
    ).set_index("kernel_label")
    assert f"useful AI {flop / byts:.3g} FLOP/B" in s.loc["gemm", "evidence"]


def test_expect_on_the_embedded_sgemms(tmp_path):
    """``--expect`` on the repository's own report (issue 54 item 10: the other expect tests read
    ../shared): ESMM's four SGEMMs multiply 1024 x 1024 matrices, so ncu must count 2·1024³ FP32
    FLOPs on each (no FLOP flag) and each moves more than the 3 x 4 MiB the three matrices hold,
    by the measured DRAM bytes over that minimum."""
    path = tmp_path / "expect.toml"
    path.write_text(
        '[sizes]\nM = 1024\nN = 1024\nK = 1024\n\n[[kernel]]\nmatch = "tiling"\n'
        'flop = "2*M*N*K"\nbytes = "4*(M*K + K*N + M*N)"\n'
    )
    k = ncuroof.load(shared("ESMM-Research__profile_output.ncu-rep"), expect=path)
    flop, byts = 2 * 1024**3, 4 * 3 * 1024**2
    assert len(k) == 4
    for r in k.itertuples():
        assert r.expected_flop == flop and r.expected_dram_bytes == byts
        assert r.fp32_flop == pytest.approx(flop, rel=1e-9)
        flags = cell_text("flags", r.flags)
        excess = f"is {r.dram_bytes / byts:.3g}x the {byts / 1e6:.3g} MB the kernel must move"
        assert "counted FLOPs" not in flags and r.dram_bytes >= byts
        assert (
            (excess in flags) == (r.kernel_name == "one_blocktiling") == (r.dram_bytes > 1.5 * byts)
        )


def test_expect_flags_padded_work_and_quotes_useful_ai_on_the_embedded_sgemms(tmp_path):
    """The rest of ``--expect`` on the repository's ESMM report (issue 54 item 10: runs without
    ../shared): warptiling expected at M·N·K FLOPs (an FMA counted once) while ncu counts
    2·1024³ gets the above-expected flag at 2x, and its missing bytes stay NaN;
    one_blocktiling, given FLOPs and bytes, quotes its useful AI 2·1024³ / (3 · 4 MiB) beside
    the AI of what ncu counted; a kernel no entry matches expects nothing."""
    path = tmp_path / "expect.toml"
    path.write_text(
        '[sizes]\nM = 1024\nN = 1024\nK = 1024\n\n[[kernel]]\nmatch = "^one_blocktiling$"\n'
        'flop = "2*M*N*K"\nbytes = "4*(M*K + K*N + M*N)"\n\n'
        '[[kernel]]\nmatch = "warptiling"\nflop = "M*N*K"\n'
    )
    k = ncuroof.load(shared("ESMM-Research__profile_output.ncu-rep"), expect=path)
    by = k.set_index("kernel_name")
    flop, byts = 2 * 1024**3, 4 * 3 * 1024**2
    warp, one = by.loc["warptiling"], by.loc["one_blocktiling"]
    assert warp["expected_flop"] == flop / 2 and math.isnan(warp["expected_dram_bytes"])
    assert warp["fp32_flop"] == pytest.approx(flop, rel=1e-9)
    assert (
        f"counted FLOPs {flop / 1e9:.3g} GFLOP are 2x the expected {flop / 2e9:.3g} GFLOP: masked,"
        " padded or redundant work" in cell_text("flags", warp["flags"])
    )
    assert "counted FLOPs" not in cell_text("flags", one["flags"])
    other = by.loc["two_blocktiling"]
    assert math.isnan(other["expected_flop"]) and math.isnan(other["expected_dram_bytes"])
    s = diagnose.diagnose_kernels(
        summary.kernel_summary(k, ncuroof.points(k)), k, catalog.load()
    ).set_index("kernel_label")
    useful = (
        f"useful AI {flop / byts:.3g} FLOP/B (expected FLOPs / expected DRAM bytes) vs"
        f" {one['fp32_flop'] / one['dram_bytes']:.3g} measured at DRAM"
    )
    assert s.loc["one_blocktiling", "evidence"].endswith(useful)
    assert all("useful AI" not in s.loc[n, "evidence"] for n in ("warptiling", "two_blocktiling"))


# the second runs without ../shared (issue 54 item 10)
@pytest.mark.parametrize(
    "name", ["RooflineAnalysis_On_NVIDIA_GPU__output0.csv", "ESMM-Research__metrics.csv"]
)
def test_bad_expect_file_is_one_line_exit_2(tmp_path, capsys, name):
    from ncuroof import cli

    path = shared(name)
    bad = tmp_path / "bad.toml"
    bad.write_text('[sizes]\nM = 4\n[[kernel]]\nmatch = "k"\nflop = "2*M*Q"\n')
    with pytest.raises(SystemExit) as exc:
        cli.main(["analyze", str(path), "-o", str(tmp_path / "out"), "--expect", str(bad), "-q"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, bad, "'Q'", "2*M*Q")
    assert not (tmp_path / "out").exists()


def test_low_occupancy_is_named_with_its_cause():
    base = {
        "status": "ok",
        "bound": "latency",
        "sm_throughput_frac": 0.3,
        "memory_throughput_frac": 0.2,
        "waves_per_sm": 12.0,
        "blocks": 4096,
        "threads_per_block": 256,
        "occupancy_frac": 0.22,
        "theoretical_occupancy_frac": 0.25,
    }
    cls, ev, advice = diagnose.verdict(base, SOL, low_occupancy=0.5)
    assert cls == "latency_bound" and "achieved occupancy 22% (theoretical 25%)" in ev
    assert (
        "only 22% of the SM's warps are active" in advice
        and "fewer registers or less shared memory" in advice
    )
    _, _, advice = diagnose.verdict(
        {**base, "theoretical_occupancy_frac": 1.0}, SOL, low_occupancy=0.5
    )
    assert "load imbalance" in advice
    _, _, advice = diagnose.verdict({**base, "occupancy_frac": 0.9}, SOL, low_occupancy=0.5)
    assert "warp-stall reasons" in advice and "occupancy" not in advice


@pytest.mark.parametrize(
    "occ, waves, well_below, tail",
    [
        (0.445, 1.0, False, False),  # issue 44: 44.5 % of 50 % (89 %) at one wave
        (0.30, 1.0, True, False),  # 60 % of the theoretical: well below, but no tail at 1 wave
        (0.30, 2.5, True, True),  # a partial third wave: the tail is named
    ],
)
def test_well_below_needs_the_threshold_and_a_tail_needs_waves(
    occ: float, waves: float, well_below: bool, tail: bool
) -> None:
    th = catalog.load().thresholds["diagnosis"]
    assert th["occupancy_well_below"] == 0.8 and 0.445 / 0.5 >= 0.8
    f = {
        "status": "ok",
        "bound": "latency",
        "sm_throughput_frac": 0.3,
        "memory_throughput_frac": 0.2,
        "waves_per_sm": waves,
        "blocks": 1024,
        "threads_per_block": 256,
        "occupancy_frac": occ,
        "theoretical_occupancy_frac": 0.5,
    }
    _, _, advice = diagnose.verdict(f, SOL, low_occupancy=0.5, occupancy_gap=0.9)
    assert ("well below the theoretical" in advice) == well_below
    assert ("tail of partial waves" in advice) == tail
    if not well_below:
        assert "close to the theoretical 50%" in advice and "(89% of it)" in advice


@pytest.mark.parametrize(
    "prec, pipe, named",
    [
        ("tensor:sass_imma", "ALU", True),  # issue 44: A40 INT8 IMMA, ALU 69 %
        ("tensor:sass_imma", "Tensor", False),
        ("fp32", "LSU", True),
        ("fp32", "FMA", False),
    ],
)
def test_below_a_compute_roof_the_hot_pipe_is_named(prec: str, pipe: str, named: bool) -> None:
    f = {
        "status": "ok",
        "bound": "compute",
        "precision": prec,
        "level": "dram",
        "roof_fraction": 0.54,
        "ai_flop_per_byte": 500.0,
        "ridge_flop_per_byte": 100.0,
        "sm_throughput_frac": 0.55,
        "memory_throughput_frac": 0.40,
        "hot_pipe": pipe,
        "hot_pipe_frac": 0.69,
        "tensor_flop": 4.33e12 if prec.startswith("tensor") else 0.0,
    }
    cls, _, advice = diagnose.verdict(f, SOL)
    assert cls == "compute_below_roof"
    assert (f"busiest pipe is {pipe} at 69%" in advice) == named
    assert ("raise FMA share" in advice) == (prec == "fp32" and not named)
    if named:
        spec = next(p for p in catalog.load().pipes.pipes if p.name == pipe)
        assert spec.advice in advice


@pytest.mark.parametrize("warp_inst, idle", [(4226 * 8.0, True), (4226 * 400.0, False)])
def test_an_oversized_grid_gets_a_smaller_grid_not_more_blocks(warp_inst: float, idle: bool):
    # Issue 44 class 5: H100, 4,226 warps launched (4,226 blocks of 32 threads, 0.25 waves), most
    # exiting after the prologue: 8 warp instructions each is under [diagnosis].prologue_warp_inst.
    f = {
        "status": "ok",
        "bound": "latency",
        "sm_throughput_frac": 0.02,
        "memory_throughput_frac": 0.01,
        "waves_per_sm": 0.25,
        "blocks": 4226,
        "threads_per_block": 32,
        "warp_inst": warp_inst,
        "occupancy_frac": 0.1,
        "theoretical_occupancy_frac": 0.5,
    }
    _, _, advice = diagnose.verdict(f, SOL)
    assert catalog.load().thresholds["diagnosis"]["prologue_warp_inst"] == 32
    assert ("smaller grid" in advice) == idle
    assert ("launch more blocks" in advice) == (not idle)
    if idle:
        assert "4,226 warps launched execute 33,808 warp instructions (8 each" in advice


def test_little_work_per_warp_is_a_band_not_a_cliff():
    # Issue 50 class 3: a 528-block launch (256 threads) over ~100K elements at 37.8 warp
    # instructions per warp, above the prologue's 32 but under [diagnosis].little_work_warp_inst
    warps = 528 * 256 / 32
    f = {
        "status": "ok",
        "bound": "latency",
        "sm_throughput_frac": 0.05,
        "memory_throughput_frac": 0.1,
        "waves_per_sm": 0.5,
        "blocks": 528,
        "threads_per_block": 256,
        "warp_inst": 37.8 * warps,
        "occupancy_frac": 0.3,
        "theoretical_occupancy_frac": 1.0,
    }
    _, _, advice = diagnose.verdict(f, SOL)
    assert catalog.load().thresholds["diagnosis"]["little_work_warp_inst"] == 64 > 37.8
    assert advice.startswith("the grid may be larger than the work: 4,224 warps launched")
    assert "(37.8 each, under 64)" in advice and "launch more blocks" not in advice
    _, _, advice = diagnose.verdict({**f, "warp_inst": 70 * warps}, SOL)
    assert "launch more blocks" in advice


# all but the first run without ../shared (issue 54 item 10)
@needs_ncu_report
@pytest.mark.parametrize(
    "name",
    [
        "alife_cuda__profile_output.ncu-rep",
        "cutlass-panjd123__4f3955ed3c_report.ncu-rep",
        "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep",
        "self-join-MiSTIC__ilpProf.ncu-rep",
    ],
)
def test_occupancy_is_ncus(name):
    k = kernels_of(name)
    ncu = ncu_metrics(name)
    assert len(k) == len(ncu) > 0
    for i in range(len(k)):
        assert k["occupancy_frac"].iat[i] == pytest.approx(
            ncu[i]["sm__warps_active.avg.pct_of_peak_sustained_active"] / 100
        )
        assert k["theoretical_occupancy_frac"].iat[i] == pytest.approx(
            ncu[i]["sm__maximum_warps_per_active_cycle_pct"] / 100
        )


def test_distinct_rows_tells_apart_what_text_could_tell_apart() -> None:
    """NaN, None, 0.0 and -0.0 are four keys; equal rows share one; order of first appearance."""

    frame = pd.DataFrame(
        {
            "x": [0.0, -0.0, np.nan, 0.0, np.nan, 1.0],
            "o": pd.Series([None, None, None, None, np.nan, "a"], dtype=object),
            "s": pd.Series(["p", "p", "p", "p", "p", None], dtype="str"),
        }
    )
    first, inverse = distinct_rows(frame, ["x", "o", "s"])
    assert first.tolist() == [0, 1, 2, 4, 5]
    assert inverse.tolist() == [0, 1, 2, 0, 3, 4]
    first, inverse = distinct_rows(frame, ["s"])
    assert first.tolist() == [0, 5] and inverse.tolist() == [0, 0, 0, 0, 0, 1]


def test_missing_metrics_text_by_hand() -> None:
    """Each ``no_roofline_metrics`` launch says what it lacks and holds, its own words even where
    the text is made once per distinct combination (rows repeat, interleaved with ``ok`` rows)."""
    nan = math.nan
    k = pd.DataFrame(
        {
            "status": ["no_roofline_metrics", "ok", "no_roofline_metrics"] * 2
            + ["no_roofline_metrics"],
            "time_s": [1e-3, 1e-3, nan, 1e-3, 1e-3, nan, 2e-3],
            "fp32_flop": [nan, 5.0, 7.0, nan, 5.0, 7.0, nan],
            "dram_bytes": [64.0, 8.0, nan, 64.0, 8.0, nan, nan],
            "sm_throughput_frac": [0.5, 0.5, nan, 0.5, 0.5, nan, nan],
            "memory_throughput_frac": [nan, 0.5, nan, nan, 0.5, nan, 0.2],
        }
    )
    out: list[list[tuple[str, str]]] = [[] for _ in range(len(k))]
    diagnose._missing_flags(out, k)
    a = "no FLOP counters (holds bytes, duration, SM throughput)"
    b = "no memory traffic (holds FLOPs)"
    c = "no FLOP counters and memory traffic (holds duration, memory throughput)"
    want = [[("missing_metrics", t)] if t else [] for t in (a, "", b, a, "", b, c)]
    assert out == want


@pytest.mark.parametrize("missing", [math.nan, None, pd.NA])
def test_a_verdict_from_speed_of_light_alone_names_no_nan_roof(missing):
    """Issue 50 class 9: a launch judged from SpeedOfLight alone (no roofline point: level and
    precision missing, NaN in the table) said "at the NAN roof"; now "the memory roof"."""
    f = {
        "status": "ok",
        "bound": "memory",
        "precision": missing,
        "level": missing,
        "roof_fraction": 0.9,
        "sm_throughput_frac": 0.02,
        "memory_throughput_frac": 0.89,
        "waves_per_sm": 8.0,
        "blocks": 1024,
        "threads_per_block": 256,
    }
    cls, ev, advice = diagnose.verdict(f, SOL)
    assert "nan" not in (ev + advice).lower().replace("nanosecond", "")
    assert "memory roof" in advice, advice


@pytest.mark.parametrize(
    "waves,text",
    [
        (1.0, "1 wave per SM"),
        (1.0004, "1 wave per SM"),
        (0.925, "0.925 waves per SM"),
        (2.0, "2 waves per SM"),
    ],
)
def test_the_noun_agrees_with_the_waves_printed(waves, text):
    """Issue 50 class 9: "1 waves"."""
    assert diagnose._grid_text(waves, 64.0, 256.0).startswith(text)


@pytest.mark.parametrize(
    "prec,lever", [("fp64", "fp32 where the accuracy allows"), ("fp32", "bf16/fp8")]
)
def test_an_fp64_code_at_the_memory_roof_is_not_told_to_use_fp8(prec, lever):
    """Issue 50 class 9: "use bf16/fp8" was advised for an FP64 science code."""
    f = {
        "status": "ok",
        "bound": "memory",
        "precision": prec,
        "level": "dram",
        "roof_fraction": 0.9,
        "ai_flop_per_byte": 0.1,
        "ridge_flop_per_byte": 5.0,
        "sm_throughput_frac": 0.1,
        "memory_throughput_frac": 0.9,
        "waves_per_sm": 8.0,
        "blocks": 1024,
        "threads_per_block": 256,
    }
    cls, _, advice = diagnose.verdict(f, SOL)
    assert cls == "memory_near_roof" and lever in advice
    assert ("bf16" in advice) == (prec != "fp64")


def test_the_tensor_core_lever_names_the_gpu_given_by_gpu() -> None:
    """An ncu CSV export without a device name (the repository's ESMM metrics) analyzed with
    ``--gpu a10g``: its FP32 SGEMMs are compute-bound below the roof, and the tensor-core lever
    quotes the A10G's datasheet, dense BF16 tensor over FP32 (70 / 35 = 2x, read from
    metrics/gpus.toml here). It once looked the GPU up by the missing device name and said
    nothing."""
    a10g = datasheet("a10g")
    ratio = a10g["tensor_tflops"]["bf16"] / a10g["fp32_tflops"]
    a = ncuroof.analyze(shared("ESMM-Research__metrics.csv"), gpu="a10g")
    s = a.summary
    assert a.launches["device_name"].isna().all() and (s["diagnosis"] == "compute_below_roof").all()
    want = f"no tensor-core work: the A10G dense BF16/FP16 tensor roof is {ratio:.0f}x higher"
    assert ratio == 2 and s["advice"].str.contains(want, regex=False).all()
