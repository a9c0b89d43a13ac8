"""The evidence ledger (issue 33): FLOPs from the SASS opcode tables, checked against the roofline
counters; bytes from read + write counters; no silent L2 zero; every roof of a launch at one clock.

The opcode counts are read here straight through NVIDIA's ``ncu_report`` (instances keyed by
opcode), not through ncuroof's parser, and the FLOPs are hand arithmetic on them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pytest

from ncuroof import fmt
from ncuroof.schema import cell_text
from tests.helpers.reports import (
    EMBEDDED,
    REPORTS,
    kernels_of,
    ncu_actions,
    ncu_metrics,
    needs_ncu_report,
    shared,
)

pytestmark = [needs_ncu_report]

THREAD = "sass__thread_inst_executed_true_per_opcode"
WARP = "sass__inst_executed_per_opcode"
# Reports the repository embeds (fixtures/third_party): the tests on them run without ../shared.
S8 = "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep"  # launch 1: ReferenceGemm_kernel (A100)
MISTIC = "self-join-MiSTIC__ilpProf.ncu-rep"  # one FP64 launch on an A100
EMBEDDED_REPORTS = sorted(EMBEDDED.glob("*.ncu-rep"))


@functools.cache
def opcode_table(name: str, metric: str = THREAD) -> tuple[Mapping[str, float], ...]:
    """Per launch, the opcode -> count instances of ``metric`` as ncu_report gives them (read-only
    mappings, cached)."""
    out = []
    for action in ncu_actions(name):
        table: dict[str, float] = {}
        if metric in action.metric_names():
            m = action.metric_by_name(metric)
            if m.has_correlation_ids():
                keys = m.correlation_ids()
                table = {keys.as_string(i): m.as_double(i) for i in range(m.num_instances())}
        out.append(MappingProxyType(table))
    return tuple(out)


def _counter_flops(values: dict[str, float], precision: str) -> float:
    """FLOPs from ncu's stored per-cycle counters x its measured clock x its duration (ncu's chart
    form times the launch time, [NCU-SEC]); NaN where the report has no such counter."""
    ops = {
        "fp64": {"dadd": 1, "dmul": 1, "dfma": 2},
        "fp32": {"fadd": 1, "fmul": 1, "ffma": 2},
        "fp16": {"hadd": 2, "hmul": 2, "hfma": 4},
    }[precision]
    per_cycle = [
        values.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
        for op in ops
    ]
    if any(v is None for v in per_cycle):
        return float("nan")
    rate = (
        sum(w * v for w, v in zip(ops.values(), per_cycle))
        * values["smsp__cycles_elapsed.avg.per_second"]
    )
    return rate * values["gpu__time_duration.sum"] * 1e-9


# Hand arithmetic on the opcode counts ncu_report returns (FFMA 2, FADD/FMUL 1; DFMA
# 2, DADD 1; HFMA2 4).
HAND = [
    # CudaCode naive SGEMM (GTX 1660 SUPER): 1,074,790,400 FFMA + 1,048,576 FMUL
    # thread instructions.
    (
        "CudaCode__naive.ncu-rep",
        0,
        "fp32",
        {"FFMA": 1_074_790_400, "FMUL": 1_048_576},
        2 * 1_074_790_400 + 1_048_576,
    ),
    # Cuda_Gemm_Practice hand-written SGEMM: 450,567,040 FFMA = exactly 2*M*N*K/2 for
    # M=1312 N=110 K=3122.
    (
        "Cuda_Gemm_Practice__gemm_v9.ncu-rep",
        0,
        "fp32",
        {"FFMA": 450_567_040},
        2 * 1312 * 110 * 3122,
    ),
    # self-join on an A100: 113,525,592,936 DFMA + 212,860,780,167 DADD.
    (
        "self-join-MiSTIC__ilpProf.ncu-rep",
        0,
        "fp64",
        {"DFMA": 113_525_592_936, "DADD": 212_860_780_167},
        2 * 113_525_592_936 + 212_860_780_167,
    ),
    # cs599k SiLU on an A100: FFMA (all modifiers) 671,088,640, FADD 67,108,864.
    (
        "cs599k__2025-04-21-77_06-MT.ncu-rep",
        0,
        "fp32",
        {"FFMA": 671_088_640, "FADD": 67_108_864},
        2 * 671_088_640 + 67_108_864,
    ),
]


@pytest.mark.parametrize("name, launch, precision, counts, flops", HAND, ids=[h[0] for h in HAND])
def test_opcode_flops_by_hand_equal_the_counters(
    name: str, launch: int, precision: str, counts: dict[str, int], flops: int
) -> None:
    table = opcode_table(name)[launch]
    for opcode, count in counts.items():
        assert table[opcode] == count
    # the counters (per-cycle rate x clock x duration) give the same FLOPs, and so does ncuroof
    assert _counter_flops(ncu_metrics(name)[launch], precision) == pytest.approx(flops, rel=1e-9)
    row = kernels_of(name).set_index("launch_id").loc[launch]
    assert row[f"{precision}_flop"] == pytest.approx(flops, rel=1e-9)
    assert f"{precision}: rate x time = sass_thread_opcodes" in row["evidence_sources"]


WEIGHTS = {
    "fp64": {"DFMA": 2, "DADD": 1, "DMUL": 1},
    "fp32": {"FFMA": 2, "FADD": 1, "FMUL": 1},
    "fp16": {"HFMA2": 4, "HADD2": 2, "HMUL2": 2},
}


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_report_with_both_sources_agrees(path) -> None:
    """On every shared report holding a precision's counters and the thread-opcode table, they agree
    (within 1e-9: the counters are rates x duration); no launch is flagged sources_disagree."""
    tables, metrics = opcode_table(path.name), ncu_metrics(path.name)
    k = kernels_of(path.name)
    compared = 0
    for launch, (table, values) in enumerate(zip(tables, metrics)):
        if not table:
            continue
        for precision, weights in WEIGHTS.items():
            counter = _counter_flops(values, precision)
            if np.isnan(counter):
                continue
            opcodes = sum(w * table.get(op, 0.0) for op, w in weights.items())
            assert opcodes == pytest.approx(counter, rel=1e-9, abs=1e-6), (launch, precision)
            compared += 1
        assert "sources_disagree" not in cell_text("flags", k.loc[launch, "flags"])
    if not compared:
        pytest.skip(f"{path.name}: no launch with both the FP counters and {THREAD}")


def test_fp16_from_the_opcode_table_where_the_report_has_no_fp16_counter() -> None:
    # KernelBench (ncu 2023.2 full set on an H100) stores no hfma counter; its table holds
    # 16,777,216 HFMA2 thread instructions (the compiler's HFMA2.MMA), 4 FLOPs each
    # as ncu weights HFMA2.
    name = "KernelBench__matmul_kernel.ncu-rep"
    assert (
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed"
        not in ncu_metrics(name)[0]
    )
    hfma2 = opcode_table(name)[0]["HFMA2"]
    row = kernels_of(name).iloc[0]
    assert hfma2 == 16_777_216 and row["fp16_flop"] == 4 * hfma2
    assert row["fp16_flop_per_s"] == pytest.approx(4 * hfma2 / row["time_s"], rel=1e-12)
    assert (
        "sass_thread_opcodes" in row["flop_source"]
        and "fp16: sass_thread_opcodes" in row["evidence_sources"]
    )


# Embedded launches without an hfma counter whose thread table holds HFMA2 (counts as
# ncu_report gives them): MiSTIC 28,801,470,907, the INT8 report's ReferenceGemm 147,456.
FP16_OPCODES_ONLY = [(MISTIC, 0, 28_801_470_907), (S8, 1, 147_456)]


@pytest.mark.parametrize("name, launch, hfma2", FP16_OPCODES_ONLY, ids=["mistic", "s8"])
def test_fp16_from_the_opcode_table_on_embedded_reports(name: str, launch: int, hfma2: int) -> None:
    """FP16 work from the thread-opcode table where the report stores no hfma counter: 4 FLOPs per
    HFMA2, the rate over ncu's duration, and the ledger names the table (issue 54 item 10: runs
    without ../shared)."""
    v = ncu_metrics(name)[launch]
    assert not any("sass_thread_inst_executed_op_h" in m for m in v)
    assert opcode_table(name)[launch]["HFMA2"] == hfma2
    row = kernels_of(name).set_index("launch_id").loc[launch]
    assert row["fp16_flop"] == 4 * hfma2
    assert row["fp16_flop_per_s"] == pytest.approx(
        4 * hfma2 / (v["gpu__time_duration.sum"] * 1e-9), rel=1e-12
    )
    assert "sass_thread_opcodes" in row["flop_source"]
    assert "fp16: sass_thread_opcodes" in row["evidence_sources"]


def _raw(name: str):
    from ncuroof import catalog, parser

    cat = catalog.load()
    return parser.read(shared(name), cat), cat


def _without_roofline_counters(name: str):
    """The launch table of ``name`` computed without the FP counters, dram__bytes, L1/L2 and
    derived metrics (the issue's cuBLAS case drops them)."""
    from ncuroof.model import formulas

    raw, cat = _raw(name)
    drop = [
        c
        for c in raw.columns
        if "sass_thread_inst_executed_op_" in c
        or c.startswith("dram__bytes.")
        or c.startswith(("lts__", "l1tex__", "derived__"))
    ]
    return formulas.compute_launches(raw.drop(columns=drop), cat)


def test_sgemm_without_roofline_counters_gets_a_point_from_opcodes_and_read_write_bytes() -> None:
    """The issue's cuBLAS case: no FP counters, no dram__bytes, but the opcode table and
    dram__bytes_read/write.sum: FP32 FLOPs from FFMA/FMUL, DRAM
    bytes = read + write, a roofline point.
    """
    from ncuroof.model import formulas

    name = "Cuda_Gemm_Practice__gemm_v9.ncu-rep"  # launch 1 is cuBLAS's SGEMM
    k = _without_roofline_counters(name).set_index("launch_id")
    table, values = opcode_table(name)[1], ncu_metrics(name)[1]
    row = k.loc[1]
    assert row["status"] == "ok" and row["flop_source"] == "sass_thread_opcodes"
    assert row["fp32_flop"] == 2 * table["FFMA"] + table["FMUL"] == 2 * 481_689_600 + 4_300_800
    assert row["dram_bytes"] == values["dram__bytes_read.sum"] + values["dram__bytes_write.sum"]
    assert "dram: dram__bytes_read.sum + dram__bytes_write.sum" in row["evidence_sources"]
    pts = formulas.compute_points(k.reset_index())
    dram = pts[(pts["launch_id"] == 1) & (pts["level"] == "dram") & (pts["precision"] == "fp32")]
    assert len(dram) == 1 and dram["ai_flop_per_byte"].iloc[0] == pytest.approx(
        row["fp32_flop"] / row["dram_bytes"], rel=1e-9
    )


# By hand from ncu_report's thread-opcode counts: the INT8 report's ReferenceGemm 56,623,104
# FFMA (no FADD/FMUL); MiSTIC 113,525,592,936 DFMA + 212,860,780,167 DADD (DRAM writes held).
NO_COUNTERS = [
    (S8, 1, "fp32", {"FFMA": 56_623_104}, 2 * 56_623_104),
    (MISTIC, 0, "fp64", {"DFMA": 113_525_592_936, "DADD": 212_860_780_167}, 439_911_966_039),
]


@pytest.mark.parametrize(
    "name, launch, precision, counts, flops", NO_COUNTERS, ids=["s8", "mistic"]
)
def test_no_roofline_counters_point_from_opcodes_and_read_write_bytes_embedded(
    name: str, launch: int, precision: str, counts: dict[str, int], flops: int
) -> None:
    """Without the FP counters and dram__bytes, FLOPs come from the thread-opcode table and DRAM
    bytes from read + write, and the launch gets a DRAM point (issue 54 item 10: runs without
    ../shared)."""
    from ncuroof.model import formulas

    k = _without_roofline_counters(name).set_index("launch_id")
    table, values = opcode_table(name)[launch], ncu_metrics(name)[launch]
    assert {op: table[op] for op in counts} == counts
    row = k.loc[launch]
    assert row["status"] == "ok" and row["flop_source"] == "sass_thread_opcodes"
    assert row[f"{precision}_flop"] == flops
    assert row["dram_bytes"] == values["dram__bytes_read.sum"] + values["dram__bytes_write.sum"]
    assert "dram: dram__bytes_read.sum + dram__bytes_write.sum" in row["evidence_sources"]
    pts = formulas.compute_points(k.reset_index())
    dram = pts[
        (pts["launch_id"] == launch) & (pts["level"] == "dram") & (pts["precision"] == precision)
    ]
    assert len(dram) == 1 and dram["ai_flop_per_byte"].iloc[0] == pytest.approx(
        flops / row["dram_bytes"], rel=1e-9
    )


def test_warp_table_is_the_named_fallback_with_its_assumption() -> None:
    from ncuroof.model import formulas

    name = "CudaCode__naive.ncu-rep"
    raw, cat = _raw(name)
    drop = [c for c in raw.columns if "sass_thread_inst_executed_op_" in c or c.startswith(THREAD)]
    row = formulas.compute_launches(raw.drop(columns=drop), cat).iloc[0]
    warp = opcode_table(name, WARP)[0]
    assert row["flop_source"] == "sass_warp_opcodes_x32"
    assert row["fp32_flop"] == 32 * (2 * warp["FFMA"] + warp["FMUL"])
    assert any("every lane active" in n for n in row["notes"])


# By hand from ncu_report's warp-opcode counts: MiSTIC 3,877,585,248 DFMA + 7,270,752,543 DADD
# (x 32 above the thread table's count: not every lane was active); ReferenceGemm 1,769,472 FFMA.
WARP_ONLY = [
    (MISTIC, 0, "fp64", {"DFMA": 3_877_585_248, "DADD": 7_270_752_543}),
    (S8, 1, "fp32", {"FFMA": 1_769_472}),
]


@pytest.mark.parametrize("name, launch, precision, counts", WARP_ONLY, ids=["mistic", "s8"])
def test_warp_table_fallback_on_embedded_reports(
    name: str, launch: int, precision: str, counts: dict[str, int]
) -> None:
    """Without the FP counters and the thread table, FLOPs are 32 x the warp table's, named as
    such with the every-lane-active assumption (issue 54 item 10: runs without ../shared)."""
    from ncuroof.model import formulas

    raw, cat = _raw(name)
    drop = [c for c in raw.columns if "sass_thread_inst_executed_op_" in c or c.startswith(THREAD)]
    row = formulas.compute_launches(raw.drop(columns=drop), cat).set_index("launch_id").loc[launch]
    warp = opcode_table(name, WARP)[launch]
    assert {op: warp[op] for op in counts} == counts
    weights = WEIGHTS[precision]
    assert row["flop_source"] == "sass_warp_opcodes_x32"
    assert row[f"{precision}_flop"] == 32 * sum(weights[op] * c for op, c in counts.items())
    title = precision.upper()
    assert any(n.startswith(f"{title} FLOPs from {WARP} x 32") for n in row["notes"])
    assert any("every lane active" in n for n in row["notes"])


def test_a_counter_and_its_opcode_table_disagreeing_is_a_flag_embedded() -> None:
    """The INT8 report's ReferenceGemm (launch 1) with 10 % fewer FFMA in its thread table than
    its counters: the counters are kept, the launch flagged sources_disagree; launch 0 (no FFMA)
    is not (issue 54 item 10: runs without ../shared)."""
    from ncuroof.model import diagnose, formulas

    raw, cat = _raw(S8)
    raw[f"{THREAD}[FFMA]"] = raw[f"{THREAD}[FFMA]"] * 0.9
    k = formulas.compute_launches(raw, cat)
    counted = _counter_flops(ncu_metrics(S8)[1], "fp32")
    assert counted == pytest.approx(2 * 56_623_104, rel=1e-9)
    assert k.loc[1, "fp32_flop"] == pytest.approx(counted, rel=1e-12)
    codes = [[getattr(n, "code", "") for n in notes] for notes in k["notes"]]
    assert "sources_disagree" not in codes[0] and codes[1].count("sources_disagree") == 1
    (note,) = [n for n in k.loc[1, "notes"] if getattr(n, "code", "") == "sources_disagree"]
    assert "FP32 FLOPs 113 MFLOP from the counters" in note and "(10.0 % apart" in note
    flags = diagnose.launch_flags(k, formulas.compute_points(k), cat.thresholds["diagnosis"])
    assert ["sources_disagree" in [c for c, _ in f] for f in flags] == [False, True]


def test_a_counter_and_its_opcode_table_disagreeing_is_a_flag() -> None:
    from ncuroof.model import diagnose, formulas
    from ncuroof.model.evidence import SOURCES_DISAGREE

    raw, cat = _raw("CudaCode__naive.ncu-rep")
    raw[f"{THREAD}[FFMA]"] = raw[f"{THREAD}[FFMA]"] * 0.9  # 10 % fewer FFMA than the counters saw
    k = formulas.compute_launches(raw, cat)
    assert np.allclose(
        k["fp32_flop"], 2 * 1_074_790_400 + 1_048_576, rtol=1e-9
    )  # the counters are kept
    assert all(any(n.startswith(SOURCES_DISAGREE) for n in notes) for notes in k["notes"])
    # the note carries its code where it is decided: the flag reads the code, not the words
    assert all(
        [getattr(n, "code", "") for n in notes].count("sources_disagree") >= 1
        for notes in k["notes"]
    )
    flags = diagnose.launch_flags(k, formulas.compute_points(k), cat.thresholds["diagnosis"])
    assert all("sources_disagree" in [c for c, _ in f] for f in flags)
    assert "sources_disagree" in diagnose.FLAG_CODES


def test_store_only_kernel_l2_counts_its_writes_against_the_tag_stage_roof() -> None:
    # BBAStar launch 0 only stores (STG): 0 B L2 -> L1 reads (ncu-legacy L2), 8.1 GB written to L2.
    name = "BBAStar__profile_output.ncu-rep"
    v = ncu_metrics(name)[0]
    assert (
        v["l1tex__m_xbar2l1tex_read_bytes.sum"] == 0
        and v["lts__t_sectors_srcunit_tex_op_write.sum"] > 2.5e8
    )
    row = kernels_of(name).iloc[0]
    # issue 50 class 8: the reads-only definition's 0 B is below DRAM while the report holds the
    # writes: L2 counts them (and no longer raises l2_reads_only)
    assert row["dram_bytes"] == v["dram__bytes_read.sum"] + v["dram__bytes_write.sum"] > 0
    assert row["l2_bytes"] == 32 * v["lts__t_sectors_srcunit_tex_op_write.sum"]
    assert row["l2_definition"] == "ncu-legacy+writes"
    assert "l2_reads_only" not in cell_text("flags", row["flags"])
    assert "L2 counts writes" in cell_text("notes", row["notes"])
    # the L2 roof from what the report holds: lts__t_sectors per second over its percentage of peak
    roof = (
        32
        * v["lts__t_sectors.sum.per_second"]
        / (v["lts__t_sectors.sum.pct_of_peak_sustained_elapsed"] / 100)
    )
    assert row["peak_l2_bytes_per_s"] == pytest.approx(roof, rel=1e-12)


def test_store_only_l2_counts_writes_against_the_tag_stage_roof_embedded() -> None:
    """The INT8 report's launch 0 with its L2 -> L1 reads set to 0 (a store-only kernel's
    ncu-legacy L2): L2 counts the 32 B write sectors ncu stored, against the roof of the L2 tag
    stage (lts__t_sectors per second over its percentage of peak); no l2_reads_only flag
    (issue 54 item 10: runs without ../shared)."""
    from ncuroof.model import diagnose, formulas

    raw, cat = _raw(S8)
    raw["l1tex__m_xbar2l1tex_read_bytes.sum"] = 0.0
    k = formulas.compute_launches(raw, cat)
    v, row = ncu_metrics(S8)[0], k.iloc[0]
    assert row["dram_bytes"] == v["dram__bytes_read.sum"] + v["dram__bytes_write.sum"] > 0
    assert row["l2_bytes"] == 32 * v["lts__t_sectors_srcunit_tex_op_write.sum"] > row["dram_bytes"]
    assert row["l2_definition"] == "ncu-legacy+writes"
    assert any(n.startswith("L2 counts writes") for n in row["notes"])
    roof = (
        32
        * v["lts__t_sectors.sum.per_second"]
        / (v["lts__t_sectors.sum.pct_of_peak_sustained_elapsed"] / 100)
    )
    assert row["peak_l2_bytes_per_s"] == pytest.approx(roof, rel=1e-12)
    flags = diagnose.launch_flags(k, formulas.compute_points(k), cat.thresholds["diagnosis"])
    assert "l2_reads_only" not in [c for c, _ in flags[0]]
    # launch 1: its writes held (590 kB) still under its DRAM bytes (892 kB): the note says the
    # definition holds the writes, never that it counts reads only
    v1, row1 = ncu_metrics(S8)[1], k.iloc[1]
    assert row1["l2_definition"] == "ncu-legacy+writes" and row1["l2_bytes"] < row1["dram_bytes"]
    assert row1["l2_bytes"] == 32 * v1["lts__t_sectors_srcunit_tex_op_write.sum"]
    (said,) = [n for n in row1["notes"] if n.startswith("levels out of order: L2")]
    assert "counts its reads and the L2 writes held" in said and "reads only" not in said


@pytest.mark.parametrize("path", EMBEDDED_REPORTS, ids=lambda p: p.name)
def test_no_l2_reads_only_flag_on_embedded_reports(path) -> None:
    """No launch of an embedded report is flagged l2_reads_only; where ncu stored L2 -> L1 reads,
    they are the L2 bytes (issue 54 item 10: runs without ../shared)."""
    k = kernels_of(path.name)
    assert not k["flags"].map(lambda f: "l2_reads_only" in cell_text("flags", f)).any()
    for launch, v in enumerate(ncu_metrics(path.name)):
        if v.get("l1tex__m_xbar2l1tex_read_bytes.sum", 0) > 0:
            assert k.loc[launch, "l2_definition"] == "ncu-legacy"
            assert k.loc[launch, "l2_bytes"] == v["l1tex__m_xbar2l1tex_read_bytes.sum"]


def test_no_l2_reads_only_flag_where_l2_reads_exist() -> None:
    for name in ("CUDA_Learning__report.ncu-rep", "cs599k__2025-04-21-vector-based.ncu-rep"):
        assert (
            not kernels_of(name)["flags"]
            .map(lambda f: "l2_reads_only" in cell_text("flags", f))
            .any()
        )


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_datasheet_roof_is_at_the_measured_clock(path) -> None:
    """One clock: on every shared report whose measured SM clock is below boost, every datasheet
    compute roof is at most datasheet x measured / boost (DRAM runs on the memory clock)."""
    from ncuroof.catalog import load_gpus
    from ncuroof.schema import parse_sources

    gpus = load_gpus()
    k = kernels_of(path.name)
    checked = 0
    for _, row in k[k["datasheet_gpu"] != ""].iterrows():
        spec = gpus.by_name(row["datasheet_gpu"])
        clock = row["sm_clock_hz"]
        if not (np.isfinite(clock) and clock < spec.boost_hz):
            continue
        for name, src in parse_sources(row["ceiling_sources"]).items():
            if src != "datasheet" or name == "dram":
                continue
            if name.startswith("tensor_"):
                value, col = (
                    spec.tensor[gpus.tensor_key(name[len("tensor_") :])],
                    f"peak_{name}_flop_per_s",
                )
            else:
                value, col = spec.flop_per_s[name], f"peak_{name}_flop_per_s"
            assert row[col] <= value * clock / spec.boost_hz * (1 + 1e-12), (row["launch_id"], name)
            assert row[col] == pytest.approx(value * clock / spec.boost_hz, rel=1e-12)
            checked += 1
    if not checked:
        pytest.skip(
            f"{path.name}: no datasheet compute roof on a launch with a measured clock below boost"
        )


# The body items of SpeedOfLight_RooflineChart.section in the order
# `ncu --page details --print-details all` prints them (FP32 roofline, FP64 roofline, FP32 achieved,
# FP64 achieved), each with the metric it shows, the unit ncu prints and the scale of that unit
# ([NCU-SEC]; values with ncu's two decimals).
CHART = [
    (
        "Theoretical Predicated-On FFMA Operations",
        "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2",
        "inst",
        1,
    ),
    ("SM Frequency", "sm__cycles_elapsed.avg.per_second", "Ghz", 1e9),
    ("Theoretical DRAM Bytes Accessible", "dram__bytes.sum.peak_sustained", "byte/cycle", 1),
    ("DRAM Frequency", "dram__cycles_elapsed.avg.per_second", "Ghz", 1e9),
    (
        "Theoretical Predicated-On DFMA Operations",
        "derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2",
        "inst",
        1,
    ),
    ("SM Frequency", "sm__cycles_elapsed.avg.per_second", "Ghz", 1e9),
    ("Theoretical DRAM Bytes Accessible", "dram__bytes.sum.peak_sustained", "byte/cycle", 1),
    ("DRAM Frequency", "dram__cycles_elapsed.avg.per_second", "Ghz", 1e9),
    (
        "Predicated-On FADD Thread Instructions Executed Per Cycle",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
        "inst/cycle",
        1,
    ),
    (
        "Predicated-On FMUL Thread Instructions Executed Per Cycle",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
        "inst/cycle",
        1,
    ),
    (
        "Predicated-On FFMA Operations Per Cycle",
        "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2",
        "inst",
        1,
    ),
    ("SM Frequency", "smsp__cycles_elapsed.avg.per_second", "Ghz", 1e9),
    ("DRAM Bandwidth", "dram__bytes.sum.per_second", "Gbyte/second", 1e9),
    (
        "Predicated-On DADD Thread Instructions Executed Per Cycle",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
        "inst/cycle",
        1,
    ),
    (
        "Predicated-On DMUL Thread Instructions Executed Per Cycle",
        "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
        "inst/cycle",
        1,
    ),
    (
        "Predicated-On DFMA Operations Per Cycle",
        "derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2",
        "inst",
        1,
    ),
    ("SM Frequency", "smsp__cycles_elapsed.avg.per_second", "Ghz", 1e9),
    ("DRAM Bandwidth", "dram__bytes.sum.per_second", "Gbyte/second", 1e9),
]
ROOFLINE_REPORT = (  # the --set roofline report: every chart metric stored
    "ESMM-Research__profile_output.ncu-rep"
)


def roofline_details_csv(path):
    """A details-page CSV of the roofline chart section with the values ncu stored
    in ROOFLINE_REPORT."""
    import csv

    head = [
        "ID",
        "Process ID",
        "Process Name",
        "Host Name",
        "Kernel Name",
        "Context",
        "Stream",
        "Block Size",
        "Grid Size",
        "Device",
        "CC",
        "Section Name",
        "Metric Name",
        "Metric Unit",
        "Metric Value",
    ]
    k = kernels_of(ROOFLINE_REPORT)
    with path.open("w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(head)
        for launch, values in enumerate(ncu_metrics(ROOFLINE_REPORT)):
            r = k.iloc[launch]
            for label, metric, unit, scale in CHART:
                w.writerow(
                    [
                        launch,
                        "4242",
                        "esmm",
                        "127.0.0.1",
                        r["kernel_demangled"],
                        "1",
                        "7",
                        r["block"],
                        r["grid"],
                        "0",
                        r["cc"],
                        "GPU Speed Of Light Roofline Chart",
                        label,
                        unit,
                        f"{values[metric] / scale:,.2f}",
                    ]
                )
    return path


def test_rate_only_roofline_details_export_gives_a_point_without_a_duration(tmp_path) -> None:
    import ncuroof

    k = ncuroof.load(roofline_details_csv(tmp_path / "roofline_details.csv"))
    ref = kernels_of(ROOFLINE_REPORT)
    assert len(k) == len(ref) and (k["status"] == "ok").all()
    assert k["time_s"].isna().all()  # the section holds no duration
    for launch, values in enumerate(ncu_metrics(ROOFLINE_REPORT)):
        row = k.iloc[launch]
        # FP32 rate = (fadd + fmul + 2*ffma per cycle) x SM frequency, as ncu's chart
        # computes it, by hand
        fp32 = (
            values["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed"]
            + values["smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed"]
            + values["derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2"]
        ) * values["smsp__cycles_elapsed.avg.per_second"]
        assert row["fp32_flop_per_s"] == pytest.approx(fp32, rel=0.02)
        assert row["dram_bytes_per_s"] == pytest.approx(
            values["dram__bytes.sum.per_second"], rel=0.02
        )
        assert row["peak_fp32_flop_per_s"] == pytest.approx(
            ref.iloc[launch]["peak_fp32_flop_per_s"], rel=0.02
        )
        assert row["peak_dram_bytes_per_s"] == pytest.approx(
            ref.iloc[launch]["peak_dram_bytes_per_s"], rel=0.02
        )
        assert "no duration" in cell_text("notes", row["notes"])
    pts = ncuroof.points(k)
    dram = pts[(pts["precision"] == "fp32") & (pts["level"] == "dram")]
    assert len(dram) == len(k)
    assert np.allclose(
        dram["ai_flop_per_byte"], k["fp32_flop_per_s"] / k["dram_bytes_per_s"], rtol=1e-12
    )


def test_bytes_without_flops_get_a_dram_verdict() -> None:
    # GENE time-dram run (V100, ncu 2020.1): dram__bytes.sum and the SM cycles only, no FLOP
    # counter, no SpeedOfLight: bytes / time against the V100 SXM2 datasheet DRAM roof (900
    # GB/s) is the verdict.
    name = "gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep"
    k = kernels_of(name)
    for launch, v in enumerate(ncu_metrics(name)):
        frac = (
            v["dram__bytes.sum"]
            / (v["sm__cycles_elapsed.avg"] / v["sm__cycles_elapsed.avg.per_second"])
            / 900e9
        )
        notes = cell_text("notes", k.loc[launch, "notes"])
        assert f"DRAM traffic at {100 * frac:.0f}% of the DRAM roof" in notes
        assert k.loc[launch, "bound"] == ("memory" if frac >= 0.8 else "unknown")


@pytest.mark.parametrize(
    "name",
    [
        "cutlass-panjd123__4f3955ed3c_report.ncu-rep",
        "cs599k__2025-04-21-vector-based.ncu-rep",
        "KernelBench__matmul_kernel.ncu-rep",
        "ESMM-Research__profile_output.ncu-rep",
    ],
)
def test_dram_roof_does_not_follow_the_sm_clock(name: str) -> None:
    """Why datasheet DRAM roofs are not scaled by measured / boost SM clock: on reports taken at
    62-77 % of the boost SM clock, ncu's own DRAM roof (dram__bytes.sum.peak_sustained x
    dram__cycles_elapsed.avg.per_second) is the datasheet bandwidth within 3 %: the memory clock is
    not the SM clock."""
    from ncuroof.catalog import load_gpus

    v = ncu_metrics(name)[0]
    spec = load_gpus().by_device(kernels_of(name).iloc[0]["device_name"])
    assert v["sm__cycles_elapsed.avg.per_second"] < 0.8 * spec.boost_hz
    roof = v["dram__bytes.sum.peak_sustained"] * v["dram__cycles_elapsed.avg.per_second"]
    assert roof == pytest.approx(spec.dram_bytes_per_s, rel=0.03)


def test_time_and_clock_sources_are_listed_with_their_agreement() -> None:
    # CudaCode stores gpu__time_duration and the SM cycles and clock: both times are listed, the
    # duration used, with how far apart the elapsed-cycles form is (by hand from ncu's values).
    name = "CudaCode__naive.ncu-rep"
    v = ncu_metrics(name)[0]
    t1, t2 = (
        v["gpu__time_duration.sum"] * 1e-9,
        v["sm__cycles_elapsed.avg"] / v["sm__cycles_elapsed.avg.per_second"],
    )
    apart = abs(t1 - t2) / max(t1, t2)
    ledger = kernels_of(name).iloc[0]["evidence_sources"]
    assert (
        "time: gpu__time_duration.sum = sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second"
        f" ({fmt.apart(apart)} apart)" in ledger
    )
    assert (
        "clock: sm__cycles_elapsed.avg.per_second = smsp__cycles_elapsed.avg.per_second" in ledger
    )


@pytest.mark.parametrize("name", [S8, "cutlass-panjd123__4f3955ed3c_report.ncu-rep"])
def test_time_and_clock_sources_listed_on_embedded_reports(name: str) -> None:
    """Every launch of the CUTLASS reports stores the duration and the SM cycles and clocks: the
    ledger lists both times and both clocks with how far apart they are, by hand from ncu's values
    (issue 54 item 10: runs without ../shared)."""
    k = kernels_of(name)
    for launch, v in enumerate(ncu_metrics(name)):
        t1 = v["gpu__time_duration.sum"] * 1e-9
        t2 = v["sm__cycles_elapsed.avg"] / v["sm__cycles_elapsed.avg.per_second"]
        c1, c2 = v["sm__cycles_elapsed.avg.per_second"], v["smsp__cycles_elapsed.avg.per_second"]
        ledger = k.loc[launch, "evidence_sources"]
        assert (
            "time: gpu__time_duration.sum = sm__cycles_elapsed.avg /"
            f" sm__cycles_elapsed.avg.per_second ({fmt.apart(abs(t1 - t2) / max(t1, t2))} apart)"
            in ledger
        )
        assert (
            "clock: sm__cycles_elapsed.avg.per_second = smsp__cycles_elapsed.avg.per_second"
            f" ({fmt.apart(abs(c1 - c2) / max(c1, c2))} apart)" in ledger
        )
        assert k.loc[launch, "time_s"] == pytest.approx(t1, rel=1e-12)


def test_level_below_the_level_under_it_is_flagged_by_hand() -> None:
    # Issue 44 class 4: H100 stochastic rounding, L2 224 B (read-only definition) below DRAM
    # 5,632 B; a second launch in order; a third with L1 0 B over L2 bytes.
    from ncuroof.model.evidence import level_order_evidence

    notes: list[list[str]] = [[], [], []]
    got = level_order_evidence(
        {
            "l1": np.array([1e4, 1e4, 0.0]),
            "l2": np.array([224.0, 6000.0, 1e6]),
            "dram": np.array([5632.0, 5632.0, 1e5]),
        },
        {lv: np.array(["ncu"] * 3, dtype=object) for lv in ("l1", "l2", "dram")},
        np.array([4096.0, np.nan, np.nan]),
        0.05,
        notes,
    )
    assert got.tolist() == [True, False, True]
    assert notes[0][0].code == "levels_out_of_order"
    assert "L2 224 B" in notes[0][0] and "DRAM 5.63 kB" in notes[0][0] and "4.1 kB" in notes[0][0]
    assert "L1 0 B" in notes[2][0] and notes[1] == []


MODIFIER = "sass__inst_executed_per_opcode_with_modifier_all"


@pytest.mark.parametrize(
    # MISTIC's 905,341,693 and S8 launch 1's 4,608 FP16 warp instructions are all HFMA2.MMA
    # (embedded: these two run without ../shared, issue 54 item 10)
    "name",
    ["KernelBench__matmul_kernel.ncu-rep", "cs599k__silu-2025-04-18-v1.ncu-rep", MISTIC, S8],
)
def test_fp16_work_only_from_hfma2_mma_is_flagged_as_moves(name: str) -> None:
    # Issue 44 class 10: every FP16 warp instruction of these launches is HFMA2.MMA (ncu_report's
    # own with-modifier table): the FP16 point is flagged "probably moves, not math".
    k = kernels_of(name)
    for i, mods in enumerate(opcode_table(name, MODIFIER)):
        warp = opcode_table(name, WARP)[i]
        moves = sum(v for op, v in mods.items() if op.startswith("HFMA2.MMA"))
        fp16 = sum(warp.get(op, 0.0) for op in ("HFMA2", "HADD2", "HMUL2"))
        row = k[k["launch_id"] == i].iloc[0]
        notes = cell_text("notes", row["notes"])
        if moves > 0 and moves >= 0.95 * fp16 and row["fp16_flop"] > 0:
            assert f"{moves:,.0f} of the {fp16:,.0f} FP16 warp instructions" in notes
            assert "fp16_moves" in [c for c, _ in row["flags"]]
        else:
            assert "probably moves" not in notes


def test_spin_wait_at_gpu_scope_is_named() -> None:
    # Issue 44 class 9: strong GPU-scope loads polling a flag with a GPU fence (cuBLAS split-K
    # semaphore on the RTX 3080 SGEMM report): named with the counts ncu_report stores.
    name = "Cuda_Gemm_Practice__gemm_v9.ncu-rep"
    k = kernels_of(name)
    named = 0
    for i, mods in enumerate(opcode_table(name, MODIFIER)):
        notes = cell_text("notes", k[k["launch_id"] == i].iloc[0]["notes"])
        strong = {
            op: v
            for op, v in mods.items()
            if op.startswith(("LD.", "LDG.")) and "STRONG.GPU" in op and v > 0
        }
        fence = {op: v for op, v in mods.items() if op.startswith("MEMBAR") and v > 0}
        if strong and fence:
            named += 1
            assert "spin wait at GPU scope" in notes
            for op, v in {**strong, **fence}.items():
                assert f"{op} x {v:,.0f}" in notes
        else:
            assert "spin wait" not in notes
    assert named >= 1


def test_spin_wait_at_system_scope_is_named() -> None:
    """Issue 50 class 2 (an H800 FP8 cast kernel's opcode table): a grid barrier at system scope
    (MEMBAR.SC.SYS, LDG.E.STRONG.SYS, YIELD) is matched by the signal's pattern and named with its
    counts; a launch with the fence alone (no polling load) is not."""
    import re

    from ncuroof import catalog
    from ncuroof.model.evidence import _spin_barrier

    pattern = re.compile(catalog.load().opcodes.signals["spin_barrier"])
    table = {"MEMBAR.SC.SYS": [1056, 8], "LDG.E.STRONG.SYS": [132, 0], "YIELD": [132, 0]}
    table |= {"ATOMG.E.ADD.STRONG.GPU": [132, 0], "FFMA": [9, 9]}
    counts = {k: np.array(v, dtype=float) for k, v in table.items() if pattern.search(k)}
    assert sorted(counts) == ["LDG.E.STRONG.SYS", "MEMBAR.SC.SYS", "YIELD"]
    notes: list[list[str]] = [[], []]
    _spin_barrier(counts, 2, notes)
    assert notes[1] == []
    (note,) = notes[0]
    assert note.startswith("spin wait at system scope")
    assert "MEMBAR.SC.SYS x 1,056, LDG.E.STRONG.SYS x 132, YIELD x 132" in note


def test_spin_wait_at_gpu_scope_is_named_synthetic() -> None:
    """The GPU-scope form of the spin barrier (cuBLAS split-K semaphore: LDG.E.STRONG.GPU polling
    with MEMBAR.SC.GPU, CCTL.IVALL): named "at GPU scope" with its counts; a launch with the strong
    load alone (no fence, no invalidate) is not; a .SYS load held at 0 counts does not make it
    system scope (issue 54 item 10: runs without ../shared)."""
    import re

    from ncuroof import catalog
    from ncuroof.model.evidence import _spin_barrier

    pattern = re.compile(catalog.load().opcodes.signals["spin_barrier"])
    table = {"LDG.E.STRONG.GPU": [640, 64], "MEMBAR.SC.GPU": [80, 0], "CCTL.IVALL": [80, 0]}
    table |= {"LDG.E.STRONG.SYS": [0, 0], "ATOMG.E.ADD.STRONG.GPU": [80, 8], "FFMA": [9, 9]}
    counts = {k: np.array(v, dtype=float) for k, v in table.items() if pattern.search(k)}
    assert sorted(counts) == ["CCTL.IVALL", "LDG.E.STRONG.GPU", "LDG.E.STRONG.SYS", "MEMBAR.SC.GPU"]
    notes: list[list[str]] = [[], []]
    _spin_barrier(counts, 2, notes)
    assert notes[1] == []
    (note,) = notes[0]
    assert note.startswith("spin wait at GPU scope")
    assert "(LDG.E.STRONG.GPU x 640, MEMBAR.SC.GPU x 80, CCTL.IVALL x 80)" in note
