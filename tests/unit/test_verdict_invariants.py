"""Verdict invariants (ncuroof.model.invariants) on every shared report, each rule shown able to
fail on a hand-made row, the launch floor recomputed from the reports, and the issue's cases checked
against the report's own metrics (key words and codes, never whole sentences)."""

from __future__ import annotations

import copy
import functools
import math
import re

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog, fmt
from ncuroof.errors import InputError
from ncuroof.model import analysis, diagnose
from ncuroof.model.invariants import INVARIANTS, kernel_violations, violations
from ncuroof.model.speed_of_light import launch_floor
from tests.helpers.reports import (
    SHARED,
    inputs,
    ncu_metrics,
    needs_ncu_report,
    needs_shared,
    shared,
)

INPUTS = inputs("*.ncu-rep", "*.csv")
TH = catalog.load().thresholds
SOL = TH["sol"]


@functools.cache
def _built(name: str) -> analysis.Analysis | None:
    try:
        return analysis.build([shared(name)])
    except InputError:
        # an input that does not analyze alone (a session page): its refusal is tested elsewhere
        return None


def _analysis(name: str) -> analysis.Analysis | None:
    """The analysis of a shared input, built once; each caller gets its own deep copy."""
    return copy.deepcopy(_built(name))


@pytest.mark.parametrize("name", [p.name for p in INPUTS])
def test_words_never_contradict_numbers(name: str) -> None:
    a = _analysis(name)
    if a is None:
        pytest.skip(f"{name} does not analyze alone")
    for table in (a.launches, a.summary):
        v = violations(table)
        assert v.empty, v.to_string()
    v = kernel_violations(a.summary, a.launches)
    assert v.empty, v.to_string()


def _row(**kw: object) -> pd.DataFrame:
    base = {
        "diagnosis": "memory_below_roof",
        "evidence": "",
        "advice": "",
        "time_s": 1e-3,
        "sm_throughput_frac": 0.3,
        "memory_throughput_frac": 0.5,
        "roof_fraction": 0.5,
        "achievable_roof_fraction": math.nan,
        "cc": "8.0",
        "time_at_roof_s": 5e-4,
        "saving_s": 5e-4,
        "fp32_flop": 1e6,
        "dram_bytes": 1e6,
        "peak_fp32_flop_per_s": 1e13,
    }
    return pd.DataFrame([{**base, **kw}])


@pytest.mark.parametrize(
    ("row", "code"),
    [
        ({"evidence": "no roofline point and no SpeedOfLight values"}, "claims_absent"),
        ({"evidence": "missing: FLOP counters, memory traffic"}, "claims_absent"),
        (
            {"notes": ["bound unknown: no roofline point and no SpeedOfLight throughputs"]},
            "claims_absent",
        ),
        (
            {
                "sm_throughput_frac": 0.68,
                "memory_throughput_frac": 0.42,
                "advice": "check coalescing",
            },
            "memory_advice_sm_busier",
        ),
        ({"diagnosis": "memory_near_roof", "roof_fraction": 0.79}, "near_roof_below_threshold"),
        (
            {
                "diagnosis": "compute_near_roof",
                "roof_fraction": math.nan,
                "sm_throughput_frac": 0.5,
            },
            "near_roof_below_threshold",
        ),
        (
            {"time_s": 1.5e-6, "time_at_roof_s": 1.8e-8, "saving_s": 1.5e-6 - 1.8e-8},
            "saving_under_floor",
        ),
        (
            {
                "diagnosis": "not_classified",
                "evidence": "no roofline point",
                "advice": "re-profile this kernel",
            },
            "unclassified_without_fix",
        ),
        (
            {
                "diagnosis": "not_classified",
                "evidence": "missing: roofs",
                "advice": "re-profile: ncuroof profile -- ./app",
                "peak_fp32_flop_per_s": math.nan,
            },
            "unclassified_without_fix",
        ),
        (
            {
                "occupancy_frac": 0.48,
                "theoretical_occupancy_frac": 0.5,
                "advice": "achieved is well below the theoretical 50%",
            },
            "occupancy_contradicted",
        ),
        ({"threads_per_block": 1.0, "advice": "raise occupancy"}, "idle_lanes_unnamed"),
        (  # issue 44 class 8: balanced "near the best" with memory SOL from LSU-in requests
            {
                "diagnosis": "balanced",
                "hot_memory_unit": "L1 load/store instruction issue (l1tex__lsuin_requests)",
                "advice": "compute and memory are both busy; near the best this algorithm allows",
            },
            "memory_unit_unnamed",
        ),
        (  # issue 50 class 1: a transpose storing 32 sectors per request "at the roof"
            {
                "top_stall": "",
                "global_store_sectors_per_request": 16.78e6 / 524e3,
                "advice": "at the DRAM roof: only moving fewer bytes helps",
            },
            "uncoalesced_at_roof",
        ),
        (  # issue 50 class 6: mio_throttle reported, the reader sent to ncu
            {
                "top_stall": "mio_throttle",
                "top_stall_cycles_per_issue": 12.0,
                "warp_cycles_per_issue": 20.0,
                "advice": "latency bound; raise ILP and read ncu's warp-stall reasons",
            },
            "stalls_unnamed",
        ),
        (  # issue 50 class 7: 4 CTAs, 3.7 us on 80 SMs, "check coalescing"
            {
                "top_stall": "",
                "grid": "(4, 1, 1)",
                "sm_count": 80.0,
                "time_s": 3.7e-6,
                "advice": "the access pattern wastes bandwidth; check coalescing",
            },
            "launch_bound_unsaid",
        ),
        (  # issue 50 class 2: membar 160.6 cycles per issue, the next 7.6, "launch more blocks"
            {
                "top_stall": "membar",
                "top_stall_cycles_per_issue": 160.6,
                "second_stall_cycles_per_issue": 7.6,
                "warp_cycles_per_issue": 175.0,
                "issue_active_frac": 0.02,
                "advice": "too little parallel work: launch more blocks",
            },
            "fence_unnamed",
        ),
        (  # issue 50 class 8: L2 1.58 GB under DRAM 2.13 GB with 705 MB of writes held
            {
                "l2_definition": "ncu",
                "l2_bytes": 1.58e9,
                "dram_bytes": 2.13e9,
                "notes": ["levels out of order: L2 1.58 GB below DRAM; L2 writes held: 705 MB"],
            },
            "l2_writes_left_out",
        ),
        (  # issue 44 class 5: 4,226 warps launched doing 8 warp instructions each
            {
                "blocks": 4226.0,
                "threads_per_block": 32.0,
                "warp_inst": 4226 * 8.0,
                "advice": "too little parallel work: launch more blocks",
            },
            "more_blocks_for_idle_grid",
        ),
        (  # issue 44 class 11: an L2 row with bytes and no peak, nothing said
            {"status": "ok", "l2_bytes": 1e6, "peak_l2_bytes_per_s": math.nan, "notes": []},
            "level_roof_unexplained",
        ),
        (  # issue 44 class 7: A40 INT8 IMMA kernel, ALU at 69 %, told to raise the FMA share
            {
                "hot_pipe": "ALU",
                "hot_pipe_frac": 0.69,
                "advice": "54% of the INT8 tensor roof; raise FMA share and ILP",
            },
            "advice_wrong_pipe",
        ),
        (
            {"hot_pipe": "ALU", "hot_pipe_frac": 0.69, "advice": "busiest pipe is FMA at 40%"},
            "advice_wrong_pipe",
        ),
        (
            {"waves_per_sm": 1.0, "advice": "load imbalance or a tail of partial waves"},
            "occupancy_contradicted",
        ),
        (
            {  # issue 44 class 2: RTX 5090 BF16 aggregate at its sparsity-on peak, no sparse ops
                "tensor_src_bf16_dst_fp32_flop": 1e9,
                "peak_tensor_src_bf16_dst_fp32_flop_per_s": 174_080 * 2e9,
                "tensor_op_hmma_src_bf16_dst_fp32_sparsity_off_flop": 1e9,
                "peak_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off_flop_per_s": 87_040 * 2e9,
                "tensor_op_hmma_src_bf16_dst_fp32_sparsity_on_flop": 0.0,
            },
            "sparse_peak_for_dense_work",
        ),
        # issue 44 classes 3-4: an H100 launch with L2 224 B (read-only definition) under DRAM
        # 5,632 B, and an L1 zero under L2 bytes, with nothing said
        ({"l2_bytes": 224.0, "dram_bytes": 5632.0, "notes": []}, "level_order_unflagged"),
        (
            {  # issue 44 class 6: an H100 row citing another report's kernel as its floor
                "source": "/data/h100_sr.ncu-rep",
                "speed_of_light_note": "no launch finishes faster than about 1.5 us (launch and"
                " drain; alife_cuda__profile_output.ncu-rep _kernel_agent on a GeForce RTX 2070",
            },
            "foreign_file_cited",
        ),
        (
            {"l1_bytes": 0.0, "l2_bytes": 1e6, "dram_bytes": 1e6, "notes": []},
            "level_order_unflagged",
        ),
    ],
)
def test_each_invariant_can_fail(row: dict, code: str) -> None:
    assert set(INVARIANTS) >= {code}
    assert code in violations(_row(**row))["code"].tolist()
    assert violations(_row()).empty  # the same row without the contradiction passes


@needs_shared
def test_launch_floor_is_the_shortest_launch_held() -> None:
    """metrics/thresholds.toml [launch_floor]: per compute capability, the shortest
    gpu__time_duration of the shared reports."""
    spec = TH["launch_floor"]
    shortest: dict[str, tuple[float, str]] = {}
    for path in SHARED.glob("*.ncu-rep"):
        k = analysis.launch_table([path])
        k = k[np.isfinite(k["time_s"].to_numpy(float))]
        for cc, g in k.groupby("cc"):
            t = float(g["time_s"].min())
            if cc not in shortest or t < shortest[cc][0]:
                shortest[cc] = (t, path.name)
    assert set(shortest) == set(spec["shortest"])
    for cc, (t, report) in shortest.items():
        assert (
            spec["shortest"][cc]["s"] == pytest.approx(t, rel=1e-9)
            and spec["shortest"][cc]["report"] == report
        )
    assert spec["default_s"] == pytest.approx(min(t for t, _ in shortest.values()), rel=1e-9)
    floor, source = launch_floor(np.array([7.5, 9.0, np.nan]), spec)
    assert floor.tolist() == pytest.approx(
        [spec["default_s"]] * 3
    )  # no architecture's shortest launch is below the default
    # issue 44 class 6: the floor is named with how it was measured, never by another file's name
    assert all("launch floor" in s and "gpu__time_duration" in s for s in source)
    assert not any(re.search(r"\.ncu-rep|alife|RTX 2070", s) for s in source)
    # the input's own shortest launch on the GPU lowers it
    floor, source = launch_floor(np.array([9.0, 9.0]), spec, np.array([1.2e-6, np.nan]))
    assert floor.tolist() == pytest.approx([1.2e-6, spec["default_s"]])
    assert "this input's shortest launch" in source[0]


@needs_shared
@needs_ncu_report
def test_memory_sol_from_load_instruction_issue_is_named() -> None:
    """Issue 44 class 8 on the RTX 5090 naive SGEMM: ncu stored memory SOL = l1tex__lsuin_requests
    (73.8 %) with L1 bank reads at 5.2 %: the verdict names the unit, not 'near the best'."""
    name = "ai-infra-notes__leetgpu_matmul_full.ncu-rep"
    m = ncu_metrics(name)[0]
    sol = m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
    lsuin = m["l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed"]
    assert (
        lsuin == pytest.approx(sol)
        and m["l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed"] < 0.1 * lsuin
    )
    r = _analysis(name).launches.iloc[0]
    assert r["hot_memory_unit"].endswith("(l1tex__lsuin_requests)")
    assert r["hot_memory_unit_frac"] == pytest.approx(lsuin / 100)
    assert "too many load instructions" in r["advice"] and "LDS.128" in r["advice"]
    assert "near the best" not in r["advice"]


@needs_ncu_report
def test_memory_sol_from_load_instruction_issue_on_the_embedded_sgemm() -> None:
    """The same rule on the repository's ESMM report (runs without ../shared): one_blocktiling's
    memory SOL is l1tex__lsuin_requests (64.8 % as ncu stored both), so the verdict names load
    instruction issue, not bytes."""
    name = "ESMM-Research__profile_output.ncu-rep"
    m = ncu_metrics(name)[0]
    lsuin = m["l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed"]
    assert lsuin == pytest.approx(
        m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
    )
    r = _analysis(name).launches.iloc[0]
    assert r["kernel_name"] == "one_blocktiling"
    assert r["hot_memory_unit"].endswith("(l1tex__lsuin_requests)")
    assert r["hot_memory_unit_frac"] == pytest.approx(lsuin / 100)
    assert "too many load instructions" in r["advice"] and "LDS.128" in r["advice"]
    assert "near the best" not in r["advice"]


@needs_ncu_report
@pytest.mark.parametrize(
    "name",
    [
        "alife_cuda__profile_output.ncu-rep",
        # embedded: CUTLASS's INT8 GEMM, 36 blocks in 8.5 us (runs without ../shared)
        "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep",
    ],
)
def test_single_block_launch_is_held_at_the_floor(name: str) -> None:
    """The issue's case: 1.5-4 us one-block launches whose roofline bound is tens of ns."""
    k = _analysis(name).launches
    floor = TH["launch_floor"]["default_s"]
    metrics = ncu_metrics(name)
    held = k[k["time_at_roof_bound"] == "launch_floor"]
    assert len(held) > 0
    for r in held.itertuples(index=False):
        t = metrics[int(r.launch_id)]["gpu__time_duration.sum"] * 1e-9
        assert r.time_s == pytest.approx(t, rel=1e-12)
        assert r.time_at_roof_s == pytest.approx(min(floor, t), rel=1e-12)
        assert r.saving_s == pytest.approx(t - min(floor, t), abs=1e-15)
        assert r.saving_s / r.time_s < 1 - floor / t + 1e-9  # never "98.7 %" of a 1.5 us launch
        assert "no launch finishes faster than" in r.speed_of_light_note


@needs_ncu_report
def test_sm_busier_than_memory_gets_no_memory_advice() -> None:
    """GH200 SiLU: ncu stored SM 68 %, memory 42 %: ncu's rule names the SM, so no
    coalescing advice."""
    name = "cs599k__silu-2025-04-18-v1.ncu-rep"
    m = ncu_metrics(name)[0]
    sm = m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    mem = m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] / 100
    assert sm >= SOL["latency_bound"] and sm - mem >= SOL["balanced"]
    r = _analysis(name).launches.iloc[0]
    assert not r["diagnosis"].startswith("memory") and "check coalescing" not in r["advice"]
    assert f"SM {100 * sm:.0f}%, memory {100 * mem:.0f}%" in r["evidence"]


@needs_ncu_report
def test_achieved_at_theoretical_occupancy_and_warp_sized_blocks() -> None:
    """self-join: achieved 48 %, theoretical 50 %, blocks of 32 threads."""
    name = "self-join-MiSTIC__ilpProf.ncu-rep"
    m = ncu_metrics(name)[0]
    occ, theo = (
        m["sm__warps_active.avg.pct_of_peak_sustained_active"] / 100,
        m["sm__maximum_warps_per_active_cycle_pct"] / 100,
    )
    assert occ >= TH["diagnosis"]["occupancy_gap"] * theo
    r = _analysis(name).launches.iloc[0]
    assert (
        "well below" not in r["advice"]
        and f"at the launch's theoretical {100 * theo:.0f}%" in r["advice"]
    )


def test_one_thread_blocks_name_their_idle_lanes() -> None:
    k = _analysis("alife_cuda__profile_output.ncu-rep").launches
    one = k[(k["block"] == "(1, 1, 1)") & (k["diagnosis"] != "not_classified")]
    assert len(one) > 0
    assert one["advice"].str.contains("blocks of 1 thread: 31 of 32 lanes of every warp idle").all()


def test_a_verdict_of_one_thread_blocks_names_their_idle_lanes() -> None:
    """The one-thread-block rule through :func:`diagnose.verdict` (runs without ../shared): a
    latency-bound launch of 2 blocks of 1 thread leaves 32 - 1 = 31 lanes of its warp idle; the
    evidence says so and the advice adds the fix."""
    facts = {
        "status": "ok",
        "bound": "latency",
        "sm_throughput_frac": 0.01,
        "memory_throughput_frac": 0.01,
        "waves_per_sm": 0.01,
        "blocks": 2.0,
        "threads_per_block": 1.0,
    }
    cls, ev, advice = diagnose.verdict(facts, SOL)
    idle = "blocks of 1 thread: 31 of 32 lanes of every warp idle"
    assert cls == "latency_bound" and idle in ev
    assert f"{idle}: use blocks of a multiple of 32 threads" in advice


def test_lanes_by_hand() -> None:
    assert diagnose.lanes(1.0).startswith("blocks of 1 thread: 31 of 32 lanes")
    # 48 threads: 2 warps, the second with 16 of 32 lanes busy; 16 of 64 lanes idle = 25 %
    assert (
        diagnose.lanes(48.0)
        == "blocks of 48 threads: the last of each block's 2 warps has 16 of 32 lanes busy (25% of"
        " lanes idle)"
    )
    assert diagnose.lanes(256.0) == "" and diagnose.lanes(math.nan) == ""
    # 64 blocks at 0.4 waves: a full wave is 160 blocks
    assert "fills 40% of one wave (64 blocks, a full wave is about 160)" in diagnose.lanes(
        256.0, 64.0, 0.4
    )


def test_unclassified_csv_names_what_is_missing_and_the_option() -> None:
    """A CSV with FLOPs and DRAM bytes and no device name: only the roofs are missing, so --gpu,
    not re-profiling."""
    a = _analysis("ESMM-Research__metrics.csv")
    k = a.launches
    assert (k["diagnosis"] == "not_classified").all()
    assert (k["fp32_flop"] > 0).all() and (k["dram_bytes"] > 0).all()
    assert k["evidence"].str.contains("missing: roofs").all()
    assert (
        k["advice"].str.contains("--gpu").all() and not k["advice"].str.contains("re-profile").any()
    )
    # the SM throughput a CSV does hold is quoted, never called absent
    r = _analysis("GPU-Roofline-Profiler__saxpy.csv").launches.iloc[0]
    assert r["sm_throughput_frac"] == pytest.approx(0.223) and "SM throughput 22%" in r["evidence"]
    assert "SpeedOfLight values" not in r["evidence"]


def test_a_verdict_from_dram_traffic_alone_quotes_that_traffic() -> None:
    """The saxpy CSV holds DRAM bytes, a duration and the SM throughput, no FLOPs and no memory
    throughput; with ``--gpu rtx-5070`` classify binds it to memory from its DRAM traffic alone
    (bytes / time / roof). The verdict once took its evidence from SpeedOfLight and its advice
    began "n/a of the memory roof"; both now quote the traffic, by hand from the file's numbers:
    (134,221,568 + 43,631,104) B in 292,928 ns against the datasheet's 672 GB/s is 90.3 %."""
    frac = (134_221_568 + 43_631_104) / 292_928e-9 / 672e9
    a = ncuroof.analyze(shared("GPU-Roofline-Profiler__saxpy.csv"), gpu="rtx-5070")
    for r in (a.launches.iloc[0], a.summary.iloc[0]):
        assert r["bound"] == "memory" and r["diagnosis"] == "memory_near_roof"
        assert r["evidence"].startswith(f"DRAM traffic at {fmt.pct(frac)} of the DRAM roof")
        assert "n/a" not in r["advice"] and r["advice"].startswith("at the DRAM roof")
    assert fmt.pct(frac) == "90%" and frac == pytest.approx(0.9035, abs=1e-4)


@pytest.mark.parametrize(
    "name", ["cuda-roofline__output.csv", "cutlass-panjd123__4f3955ed3c_report.ncu-rep"]
)
def test_instantiations_are_told_apart_by_their_template(name: str) -> None:
    """CUTLASS's Kernel<...> and a <float>/<__half> pair: labels from the demangled names,
    identity unchanged (the embedded CUTLASS report's two Kernel instantiations run without
    ../shared)."""
    s = _analysis(name).summary
    labels = dict(zip(s["kernel_demangled"], s["kernel_label"]))
    assert any("GemmShape<" in d for d in labels)  # the Kernel<...> rule is exercised
    for demangled, label in labels.items():
        m = re.search(r"GemmShape<\(int\)(\d+), \(int\)(\d+), \(int\)(\d+)>", demangled)
        if m:
            assert label == f"Kernel<{'x'.join(m.groups())}>"
        if demangled.startswith("void InitializeMatrix_kernel<"):
            assert label == "InitializeMatrix_kernel<" + demangled.split("<")[1].split(",")[0] + ">"
    assert s["kernel_label"].is_unique and s["kernel_key"].nunique() == len(s)


def test_integer_tensor_work_reads_as_ops() -> None:
    """The int8 CUTLASS GEMM (IMMA): its roof and hovers say OP, never FLOP; float
    precisions keep FLOP."""
    from ncuroof.render import figure
    from ncuroof.schema import work_unit

    a = _analysis("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep")
    assert (
        work_unit("tensor:sass_imma") == "OP"
        and work_unit("fp32") == "FLOP"
        and work_unit("tensor:sass_hmma") == "FLOP"
    )
    fig = figure.plot_roofline(a.points, a.launches, summary=a.summary)
    roofs = [
        t
        for t in fig.data
        if (t.meta or {}).get("role") == "roof_flop"
        and t.meta.get("precision") == "tensor:sass_imma"
    ]
    assert roofs and all("OP/s" in t.name and "FLOP" not in t.name for t in roofs)
    assert all(
        t.line.dash == "solid" for t in fig.data if (t.meta or {}).get("role") == "roof_flop"
    )  # dashed is achievable
    dots = [
        t for t in fig.data if (t.meta or {}).get("role") == "dots" and t.meta.get("unit") == "OP"
    ]
    assert dots and all("OP/B" in t.hovertemplate and "FLOP/B" not in t.hovertemplate for t in dots)


def test_header_names_a_missing_device_and_the_gpu_option() -> None:
    from ncuroof.render import provenance

    path = shared("ESMM-Research__metrics.csv")
    assert (
        provenance.device_text(analysis.build([path]).launches) == "not named in the input (CC 8.6)"
    )
    text = provenance.device_text(
        analysis.build([path], analysis.AnalysisOptions(gpu="a10g")).launches
    )
    assert "nan" not in text and "A10G datasheet (--gpu)" in text


def test_unclassified_words_by_hand() -> None:
    gpus = catalog.load_gpus()
    base = {
        "status": "ok",
        "time_s": 1e-3,
        "has_flop": True,
        "has_bytes": True,
        "has_roof": False,
        "sm_throughput_frac": math.nan,
        "memory_throughput_frac": math.nan,
        "device_name": None,
        "cc": "7.0",
        "kernel_name": "k",
    }
    ids = [g.id for g in gpus.gpus if g.cc == "7.0"]
    ev, fix = diagnose.unclassified(base, gpus)
    assert ev.startswith("missing: roofs") and "present: FLOPs, bytes, duration 1 ms" in ev
    assert fix.startswith(f"pass --gpu NAME (CC 7.0: {', '.join(ids)})") and "re-profile" not in fix
    ev, fix = diagnose.unclassified(
        {
            **base,
            "has_flop": False,
            "has_bytes": False,
            "has_roof": True,
            "sm_throughput_frac": 0.97,
        },
        gpus,
    )
    assert (
        "FLOP counters" in ev
        and "memory traffic" in ev
        and "SM throughput 97%" in ev
        and "SpeedOfLight" not in ev
    )
    assert "ncuroof profile -k k -c 1" in fix
    ev, fix = diagnose.unclassified(
        {**base, "status": "failed_measurement", "kernel_name": "a b;c"}, gpus
    )
    assert (
        "NaN" in ev and "-k NAME" in fix
    )  # a name that is not a plain identifier is not pasted into a command
    assert (
        "missing: a readable record"
        in diagnose.unclassified({**base, "status": "corrupt_record"}, gpus)[0]
    )
