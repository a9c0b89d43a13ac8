"""ncu CSV exports: every shared CSV parses, values equal an independent reading of the file,
report and CSV exports of the same run agree, merged runs and hand-computed FLOPs check out."""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncuroof.schema import cell_text
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import close, inputs, ncu_metrics, needs_ncu_report, shared

CSVS = [p.name for p in inputs("*.csv") if "session" not in p.name]

# Launch counts, read off each file by eye (distinct values of its ID column) and PROVENANCE.md.
LAUNCHES = {
    "ESMM-Research__metrics.csv": 9,
    "GPU-Roofline-Profiler__saxpy.csv": 1,
    "Roofline-Analysis__flashinfer_paged_decode__gqa_bf16_b128_ctx2k_p64.ncu.csv": 64,
    "RooflineAnalysis_On_NVIDIA_GPU__output0.csv": 1,
    "accelsim-test__algo23_details.csv": 1,
    "accelsim-test__algo23_raw.csv": 1,
    "cuda-roofline__output.csv": 11,
    "gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.csv": 4,
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.csv": 4,
    "gene-pop2020__out_nvroof_ncuroof_region-dgdxy-1.csv": (
        8
    ),  # IDs 0-7, each once per process (two runs)
    "llm-perf-opt__kernel_0001_ncu.metrics.csv": 1,
}

# The test's own unit table (ncu base units: ns, byte, Hz), written out independently of
# metrics/csv.toml: every unit the shared CSVs use on a metric ncuroof reads.
UNITS = {
    "": 1,
    "%": 1,
    "byte": 1,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "inst": 1,
    "cycle": 1,
    "sector": 1,
    "ns": 1,
    "nsecond": 1,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "hz": 1,
    "cycle/second": 1,
    "Ghz": 1e9,
    "Mhz": 1e6,
    "block": 1,
    "SM": 1,
    "pass": 1,
    "thread": 1,
    "register/thread": 1,
}


# Section labels and the metric each shows, from ncu's SpeedOfLight and LaunchStatistics sections.
LABELS = {
    "Duration": "gpu__time_duration.sum",
    "Memory Throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM Throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "Compute (SM) Throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM Frequency": "dram__cycles_elapsed.avg.per_second",
    "Waves Per SM": "launch__waves_per_multiprocessor",
    "Block Size": "launch__block_size",
    "Grid Size": "launch__grid_size",
}


def independent_rows(name: str | Path) -> tuple[str, list[dict[str, str]], list[str] | None]:
    """Parse an export (a shared fixture's name or a path) with the stdlib only: (page, rows as
    dicts, units row or None). A header line repeated by ``cat`` is dropped."""
    text = (
        (name if isinstance(name, Path) else shared(name))
        .read_bytes()
        .decode("utf-8")
        .lstrip("\ufeff")
    )
    lines = text.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.lstrip("\ufeff").startswith('"ID","Process ID"')
    )
    body = [lines[start]] + [
        line for line in lines[start + 1 :] if line.startswith('"') and line != lines[start]
    ]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = rows[0]
    if "Metric Name" in header:
        return "details", [dict(zip(header, r)) for r in rows[1:]], None
    return "raw", [dict(zip(header, r)) for r in rows[2:]], rows[1]


def number(text: str) -> float:
    text = text.strip().replace(",", "")
    return math.nan if text in ("", "n/a") else float(text)


@pytest.fixture(scope="module")
def cat():
    from ncuroof import catalog

    return catalog.load()


def read(name: str, cat):
    from ncuroof.parser import read

    return read(shared(name), cat)


@pytest.mark.parametrize("name", CSVS)
def test_every_shared_csv_parses_with_its_launch_count(name: str, cat) -> None:
    raw = read(name, cat)
    assert len(raw) == LAUNCHES[name]
    assert raw["launch_id"].is_unique
    assert (raw["kernel_name"].str.len() > 0).all()


@pytest.mark.parametrize("name", CSVS)
def test_every_value_equals_an_independent_reading_of_the_file(name: str, cat) -> None:
    """No value silently zeroed, scaled wrong or dropped: each metric ncuroof kept equals the
    number printed in the file times the unit factor of this test's own table; n/a is NaN."""
    raw = read(name, cat).set_index("launch_id")
    page, rows, units = independent_rows(name)
    expected: dict[tuple[int, str], float] = {}
    if page == "details":
        for r in rows:
            m = LABELS.get(r["Metric Name"], r["Metric Name"])
            if m in raw.columns:
                expected.setdefault(
                    (int(r["ID"]), m), number(r["Metric Value"]) * UNITS[r["Metric Unit"]]
                )
    else:
        header = list(rows[0].keys())
        for r in rows:
            for col, unit in zip(header, units):
                if col in raw.columns and col != "ID":
                    expected[(int(r["ID"]), col)] = number(r[col]) * UNITS[unit]
    checked = 0
    for (launch, metric), value in expected.items():
        got = raw.loc[launch, metric]
        if math.isnan(value):
            assert math.isnan(got), (launch, metric)
        else:
            assert got == pytest.approx(value, rel=1e-12, abs=0), (launch, metric)
        checked += 1
    assert checked > 0


def test_na_values_are_missing_and_reported_never_zero(cat) -> None:
    raw = read("llm-perf-opt__kernel_0001_ncu.metrics.csv", cat)
    assert math.isnan(raw.loc[0, "sm__ops_path_tensor_src_bf16_dst_bf16.sum"])
    assert raw.loc[0, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"] == 0
    note = raw.loc[0, "input_notes"]
    for metric in (
        "flop_count_hp.sum",
        "flop_count_sp.sum",
        "sm__ops_path_tensor_src_bf16_dst_bf16.sum",
    ):
        assert metric in note
    # Auto-scaled units: 2.33 Mbyte and 6.75 us.
    assert raw.loc[0, "dram__bytes_read.sum"] == pytest.approx(2.33e6)
    assert raw.loc[0, "gpu__time_duration.sum"] == pytest.approx(6750)


def test_program_output_bom_and_anonymous_namespace(cat) -> None:
    raw = read("GPU-Roofline-Profiler__saxpy.csv", cat)
    assert raw.loc[0, "kernel_name"] == "saxpy_kernel"
    # Blackwell DRAM names dram__bytes_op_read/_op_write, summed as DRAM traffic.
    import ncuroof

    k = ncuroof.load(shared("GPU-Roofline-Profiler__saxpy.csv"))
    assert k.loc[0, "dram_bytes"] == 134_221_568 + 43_631_104
    assert k.loc[0, "dram_definition"] == "ncu"


def test_old_layout_has_no_geometry_and_long_names(cat) -> None:
    raw = read("gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.csv", cat)
    assert raw["cc"].isna().all() and raw["grid"].isna().all()
    assert (raw["kernel_demangled"].str.len() > 4000).all()
    assert (raw["kernel_name"] == "kernel_assign_6").all()


def test_section_labels_map_to_metrics_and_the_rest_are_counted(cat) -> None:
    details = read("accelsim-test__algo23_details.csv", cat)
    rawpage = read("accelsim-test__algo23_raw.csv", cat)
    for metric in (
        "gpu__time_duration.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "launch__waves_per_multiprocessor",
    ):
        # The details page prints 2 decimals of the auto-scaled value; the raw page 6.
        a, b = details.loc[0, metric], rawpage.loc[0, metric]
        assert abs(a - b) <= 0.005 * (1e3 if metric.startswith("gpu__time") else 1) + 1e-12, metric
    assert re.search(r"\d+ section labels not mapped", details.loc[0, "input_notes"])


def test_section_labels_of_the_embedded_export_map_and_the_rest_are_counted(
    tmp_path: Path, cat
) -> None:
    """The same rule on the repository's llm-perf-opt details export (runs without ../shared):
    its SpeedOfLight section's Duration (6.75 us) and Compute (SM) Throughput (9.15 %) are its
    metric rows' values (6.75 us, 9.15 %); a label ncu writes that no metric stands behind
    ("SM Frequency", not read) and an unknown one are counted in a note, never read."""
    from tests.helpers.reports import details_copy

    path = details_copy(
        "llm-perf-opt__kernel_0001_ncu.metrics.csv",
        tmp_path / "x.csv",
        [
            ("GPU Speed Of Light Throughput", "SM Frequency", "Ghz", "1.20"),
            ("GPU Speed Of Light Throughput", "Made-up Label", "%", "50"),
        ],
    )
    raw = read(path, cat)
    assert raw.loc[0, "gpu__time_duration.sum"] == pytest.approx(6750)
    assert raw.loc[0, "sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(9.15)
    assert "2 section labels not mapped" in raw.loc[0, "input_notes"]


@needs_ncu_report
@pytest.mark.parametrize(
    "csv_name,decimals_rel",
    [("accelsim-test__algo23_raw.csv", 1e-6), ("accelsim-test__algo23_details.csv", None)],
)
def test_report_and_its_csv_exports_agree(csv_name: str, decimals_rel: float | None, cat) -> None:
    """One run exported as .ncu-rep, raw page and details page: every metric both carry agrees."""
    report = ncu_metrics("accelsim-test__algo23_profile.ncu-rep")[0]
    raw = read(csv_name, cat)
    shared_metrics = [c for c in raw.columns if c in report]
    assert len(shared_metrics) >= 5
    printed: dict[str, tuple[str, str]] = {}
    if decimals_rel is None:
        _, rows, _ = independent_rows(csv_name)
        printed = {
            LABELS.get(r["Metric Name"], r["Metric Name"]): (r["Metric Value"], r["Metric Unit"])
            for r in rows
        }
    for m in shared_metrics:
        got, want = raw.loc[0, m], report[m]
        if decimals_rel is not None and m != "launch__waves_per_multiprocessor":
            # The raw page prints 6 decimals: small percentages (pipe utilisation) agree to
            # half a unit of the 6th.
            assert close(got, want, rel=decimals_rel) or abs(got - want) <= 5e-7, m
        else:
            # ncu prints this value rounded (22.59 us, 3.99 Ghz, 0.29 waves): agree to half a unit
            # of the last printed digit.
            text, unit = printed.get(m, ("0.00", ""))
            decimals = len(text.split(".")[1]) if "." in text else 0
            assert abs(got - want) <= 0.5 * 10**-decimals * UNITS[unit] * (1 + 1e-9), m


@needs_ncu_report
def test_report_and_csv_kernels_tables_agree_for_the_v100_pair(cat) -> None:
    import ncuroof

    F = "gene-pop2020__time-{}_dzv_ak_ncuroof-time-0.{}"
    for part in ("dram", "flops"):
        a = ncuroof.load(shared(F.format(part, "ncu-rep")))
        b = ncuroof.load(shared(F.format(part, "csv")))
        for col in ("time_s", "fp64_flop", "dram_bytes", "sm_clock_hz"):
            x, y = a[col].to_numpy(float), b[col].to_numpy(float)
            assert np.array_equal(np.isnan(x), np.isnan(y)), col
            ok = ~np.isnan(x)
            assert np.allclose(x[ok], y[ok], rtol=1e-6, atol=0), col


@needs_ncu_report
def test_merged_pair_gives_fp64_points_with_time_from_the_unpatched_run(cat) -> None:
    import ncuroof

    F = "gene-pop2020__time-{}_dzv_ak_ncuroof-time-0.{}"
    for ext, gpu in (("ncu-rep", None), ("csv", "v100-sxm2")):
        # Order on purpose: the FLOP run first, so taking time from it would be the naive choice.
        k = ncuroof.load([shared(F.format("flops", ext)), shared(F.format("dram", ext))], gpu=gpu)
        dram_run = ncu_metrics(F.format("dram", "ncu-rep"))
        flop_run = ncu_metrics(F.format("flops", "ncu-rep"))
        for i in range(4):
            t = (
                dram_run[i]["sm__cycles_elapsed.avg"]
                / dram_run[i]["sm__cycles_elapsed.avg.per_second"]
            )
            assert k.loc[i, "time_s"] == pytest.approx(t, rel=1e-6)
            assert 0.001 < t < 0.0013  # the instrumented run measured ~0.113 s
            fl = flop_run[i]
            flop = (
                fl["sm__sass_thread_inst_executed_op_dadd_pred_on.sum"]
                + fl["sm__sass_thread_inst_executed_op_dmul_pred_on.sum"]
                + 2 * fl["sm__sass_thread_inst_executed_op_dfma_pred_on.sum"]
            )
            assert k.loc[i, "fp64_flop"] == pytest.approx(flop, rel=1e-6)
            assert k.loc[i, "dram_bytes"] == pytest.approx(dram_run[i]["dram__bytes.sum"], rel=1e-6)
            assert "SASS-patched" in cell_text("notes", k.loc[i, "notes"])
        pts = ncuroof.points(k)
        fp64 = pts[(pts["precision"] == "fp64") & (pts["level"] == "dram")]
        assert len(fp64) == 4
        assert (fp64["peak_flop_source"] == "datasheet").all()
        # V100 SXM2 datasheet FP64 7.8 TFLOP/s at its 1530 MHz boost, at the SM clock each launch
        # ran at (one clock); DRAM as is
        clock = fp64["launch_id"].map(k.set_index("launch_id")["sm_clock_hz"]).to_numpy(float)
        assert (clock < 1530e6).all() and np.allclose(
            fp64["peak_flop_per_s"], 7.8e12 * clock / 1530e6, rtol=1e-12
        )
        assert fp64["peak_bytes_per_s"].eq(900e9).all()
        assert (k["bound"] == "memory").all()


def test_cuda_roofline_flops_and_ai_by_hand() -> None:
    """V100 NERSC counters: FP32/FP64/FP16 FLOPs, legacy x512 tensor FLOPs, time and AI
    recomputed here from the file's own numbers with ROOFLINE_SPEC's weights."""
    import ncuroof

    k = ncuroof.load(shared("cuda-roofline__output.csv"), gpu="v100-pcie").set_index("launch_id")
    pts = ncuroof.points(k.reset_index()).set_index(["launch_id", "precision", "level"])
    _, rows, _ = independent_rows("cuda-roofline__output.csv")
    by: dict[int, dict[str, float]] = {}
    for r in rows:
        by.setdefault(int(r["ID"]), {})[r["Metric Name"]] = number(r["Metric Value"])
    op = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
    for launch, m in by.items():
        fp32 = m[op.format("fadd")] + m[op.format("fmul")] + 2 * m[op.format("ffma")]
        fp64 = m[op.format("dadd")] + m[op.format("dmul")] + 2 * m[op.format("dfma")]
        fp16 = 2 * m[op.format("hadd")] + 2 * m[op.format("hmul")] + 4 * m[op.format("hfma")]
        tensor = 512 * m["sm__inst_executed_pipe_tensor.sum"]
        time = m["sm__cycles_elapsed.avg"] / m["sm__cycles_elapsed.avg.per_second"]
        row = k.loc[launch]
        assert (
            row["fp32_flop"],
            row["fp64_flop"],
            row["fp16_flop"],
            row["tensor_flop"],
        ) == pytest.approx((fp32, fp64, fp16, tensor), rel=1e-12)
        assert row["time_s"] == pytest.approx(time, rel=1e-12)
        for level, traffic in (
            ("dram", "dram__bytes.sum"),
            ("l2", "lts__t_bytes.sum"),
            ("l1", "l1tex__t_bytes.sum"),
        ):
            for prec, flop in (("fp32", fp32), ("tensor:legacy_x512", tensor)):
                if flop > 0:
                    assert pts.loc[(launch, prec, level), "ai_flop_per_byte"] == pytest.approx(
                        flop / m[traffic], rel=1e-9
                    )
    # The GEMMs are 20480 x 20480 x 20480: the program prints 1651.14 ms and 10404.8 GFLOPS for
    # the CUTLASS one, i.e. 1.718e13 FLOP = 2 * 20480^3, which 512 x tensor-pipe instructions
    # gives exactly (HMMA.884 with FP32 accumulation).
    assert (k.loc[4:10, "tensor_flop"] == 2 * 20480**3).all()
    assert (k.loc[4:10, "l2_definition"] == "nersc").all()


def test_same_kernels_table_from_raw_page_and_report() -> None:
    pytest.importorskip("ncu_report")
    import ncuroof

    a = ncuroof.load(shared("accelsim-test__algo23_profile.ncu-rep"))
    b = ncuroof.load(
        [shared("accelsim-test__algo23_raw.csv"), shared("accelsim-test__algo23_session.csv")]
    )
    assert b.loc[0, "ncu_version"] == "2025.2.1.0" == a.loc[0, "ncu_version"]
    assert b.loc[0, "device_name"] == a.loc[0, "device_name"] == "NVIDIA B200"
    assert b.loc[0, "kernel_name"] == a.loc[0, "kernel_name"] == "Kernel2"
    for col in ("time_s", "sm_throughput_frac", "memory_throughput_frac"):
        assert close(a.loc[0, col], b.loc[0, col], rel=1e-6), col
    assert b.loc[0, "waves_per_sm"] == pytest.approx(
        a.loc[0, "waves_per_sm"], abs=0.005
    )  # ncu prints 2 decimals
    assert a.loc[0, "status"] == b.loc[0, "status"] == "no_roofline_metrics"
    assert a.loc[0, "bound"] == b.loc[0, "bound"]


# --- merging and bad input ------------------------------------------------------------------

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block'
    ' Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
)


def details(rows: list[tuple[int, str, str, str, str]], prefix: str = "") -> str:
    out = [prefix, HEADER]
    for launch, kernel, metric, unit, value in rows:
        out.append(
            f'"{launch}","1","a.out","127.0.0.1","{kernel}","1","7","(32, 1, 1)","(8, 1,'
            f' 1)","0","8.6","Command line profiler metrics","{metric}","{unit}","{value}"\n'
        )
    return "".join(out)


def test_noise_bom_separators_and_quoted_numbers(tmp_path: Path, cat) -> None:
    from ncuroof.parser import read

    text = details(
        [
            (0, "k(int)", "gpu__time_duration.sum", "msecond", "1,234.5"),
            (0, "k(int)", "lts__t_bytes.sum", "Kbyte", "3,000 (lts0: 1,000; lts1: 2,000)"),
            (0, "k(int)", "dram__bytes.sum", "Gbyte", "2.5"),
        ],
        prefix="==PROF== Connected to process 1\nhello\n",
    )
    text = text.replace('"2.5"\n', '"2.5"\n==WARNING== something odd\nprogram says hi\n')
    text += details(
        [
            (1, "void ns::k<(int)2>(int)", "gpu__time_duration.sum", "ns", "10"),
            (1, "void ns::k<(int)2>(int)", "dram__bytes.sum", "byte", "n/a"),
        ]
    ).split("\n", 1)[1]
    path = tmp_path / "x.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    raw = read(path, cat).set_index("launch_id")
    assert raw.loc[0, "gpu__time_duration.sum"] == pytest.approx(1234.5e6)
    assert raw.loc[0, "dram__bytes.sum"] == pytest.approx(2.5e9)
    assert raw.loc[0, "lts__t_bytes.sum"] == pytest.approx(3e6)  # the aggregate, not an instance
    assert math.isnan(raw.loc[1, "dram__bytes.sum"])
    assert list(raw["kernel_name"]) == ["k", "k"]
    assert "ncu warning: something odd" in raw.loc[0, "input_notes"]
    assert "n/a in the CSV" in raw.loc[1, "input_notes"]


@pytest.mark.parametrize(
    "content,words",
    [
        ("just some text\nnot a csv\n", ("CSV",)),
        ("", ("empty",)),
        (details([(0, "k", "dram__bytes.sum", "Fooby", "1")]), ("'Fooby'", "dram__bytes.sum")),
        (details([(0, "k", "dram__bytes.sum", "byte", "lots")]), ("'lots'",)),
        (details([(0, "k", "dram__bytes.sum", "byte", "1")])[:-8], ("truncated",)),
        ('Launch Settings\n"Launch Attribute","Value"\n', ("launches",)),
        (
            (
                '"Kernel Name","Invocations","Section Name","Metric Name","Metric'
                ' Unit","Minimum","Maximum","Average"\n'
                '"k","3","s","gpu__time_duration.sum","ns","1","2","1.5"\n'
            ),
            ("--print-summary",),
        ),
    ],
)
def test_bad_csv_gives_one_line_and_exit_2(
    tmp_path: Path, content: str, words: tuple[str, ...]
) -> None:
    from tests.helpers.cli import assert_clean_failure, run

    path = tmp_path / "bad.csv"
    path.write_text(content)
    proc = run("analyze", str(path), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, path, tmp_path / "out", *words)


def test_merge_refuses_runs_that_do_not_line_up(tmp_path: Path) -> None:
    from tests.helpers.cli import assert_clean_failure, run

    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    a.write_text(
        details(
            [(0, "k1", "dram__bytes.sum", "byte", "1"), (1, "k2", "dram__bytes.sum", "byte", "1")]
        )
    )
    b.write_text(
        details(
            [
                (0, "k1", "gpu__time_duration.sum", "ns", "5"),
                (1, "other", "gpu__time_duration.sum", "ns", "5"),
            ]
        )
    )
    c.write_text(details([(0, "k1", "gpu__time_duration.sum", "ns", "5")]))
    proc = run("analyze", str(a), str(b), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, b, tmp_path / "out", "launch 1", "'other'", "'k2'")
    proc = run("analyze", str(a), str(c), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, c, tmp_path / "out", "2 launches")
    # --stack keeps unrelated inputs side by side.
    proc = run("analyze", str(a), str(c), "--stack", "-q", "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_csv(tmp_path / "out" / "launches.csv")) == 3


#: The session page ``ncu --import ESMM-Research__profile_output.ncu-rep --csv --page session``
#: prints (ncu 2024.1), cut to the lines read: what the ESMM details export lacks.
ESMM_SESSION = """Session Info
"Session Attribute","Value"
"Nsight Compute Target","2023.1.1.0 (build 32678585) (public-release)"

Device Attributes
"Device Attribute","Device 0"
"multiprocessor_count","80"
"display_name","NVIDIA A10G"
"compute_capability_major","8"
"compute_capability_minor","6"
"""


def test_a_session_page_completes_the_embedded_details_export(tmp_path: Path) -> None:
    """A session page names the device, CC and ncu version a details export lacks (runs without
    ../shared): the ESMM metrics export with its report's session page is an A10G run, judged on
    the A10G datasheet's DRAM roof (600 GB/s in metrics/gpus.toml); another GPU's session page
    beside the report, which names its device, is refused in one line naming it."""
    import ncuroof
    from ncuroof.errors import InputError
    from tests.helpers.reports import datasheet

    export, session = shared("ESMM-Research__metrics.csv"), tmp_path / "session.csv"
    session.write_text(ESMM_SESSION)
    alone, k = ncuroof.load(export), ncuroof.load([export, session])
    assert alone["device_name"].isna().all() and len(k) == len(alone) == 9  # 8 kernels
    assert (k["device_name"] == "NVIDIA A10G").all() and (k["cc"] == "8.6").all()
    assert (k["ncu_version"] == "2023.1.1.0").all()
    assert (k["peak_dram_bytes_per_s"] == datasheet("a10g")["dram_gbps"] * 1e9).all()
    session.write_text(ESMM_SESSION.replace("NVIDIA A10G", "NVIDIA H100 PCIe"))
    with pytest.raises(InputError) as err:  # the report names its A10G
        ncuroof.load([shared("ESMM-Research__profile_output.ncu-rep"), session])
    assert_one_line_error(err, session, "session page", "NVIDIA H100 PCIe")


def test_session_page_for_another_gpu_is_refused(tmp_path: Path, cat) -> None:
    from ncuroof.errors import InputError
    from ncuroof.parser import read_many

    raw = shared("accelsim-test__algo23_raw.csv")
    session = tmp_path / "s.csv"
    session.write_text(
        shared("accelsim-test__algo23_session.csv")
        .read_text()
        .replace('"display_name","NVIDIA B200"', '"display_name","NVIDIA H100 PCIe"')
    )
    with pytest.raises(InputError) as err:
        read_many([raw, session], cat)
    assert_one_line_error(err, session, "session page", "NVIDIA H100 PCIe")


# --- two runs written into one file; kernel names of any length ---------------------------------

GENE_JOINED = "gene-pop2020__out_nvroof_ncuroof_region-dgdxy-1.csv"
GENE_PAIR = "gene-pop2020__time-{}_dzv_ak_ncuroof-time-0.csv"


def split_by_process(path: Path, outdir: Path) -> list[Path]:
    """Write the rows of each process ID of a details export to its own file, with the same header,
    in the order the processes first appear (the stdlib csv module, not ncuroof's reader)."""
    _, rows, _ = independent_rows(path)
    header = list(rows[0].keys())
    parts: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        parts.setdefault(r["Process ID"], []).append(r)
    out = []
    for pid, part in parts.items():
        f = outdir / f"process-{pid}.csv"
        with f.open("w", newline="") as fh:
            w = csv.DictWriter(fh, header, quoting=csv.QUOTE_ALL, lineterminator="\n")
            w.writeheader()
            w.writerows(part)
        out.append(f)
    return out


def assert_same_tables(one_file: Path, halves: list[Path]) -> pd.DataFrame:
    """The kernels and points tables of ``one_file`` equal those of ``halves`` merged as files, but
    for ``source`` and the note that says the runs were joined; returns the one-file kernels table.
    """
    import ncuroof

    a = ncuroof.load(one_file, gpu="v100-sxm2")
    b = ncuroof.load(halves, gpu="v100-sxm2")
    assert len(a) == len(b) > 0
    pids = [h.stem.removeprefix("process-") for h in halves]
    joined = (
        f"{len(halves)} ncu runs of the same launches (processes {', '.join(pids)}) written one"
        " after the other into this file"
    )
    for i in range(len(a)):
        notes = [n for n in a.loc[i, "notes"] if not n.startswith(joined)]
        assert len(notes) == len(a.loc[i, "notes"]) - 1, a.loc[i, "notes"]
        for pid, half in zip(pids, halves):  # the merge names the run a value came from
            notes = [n.replace(f"{one_file.name} (process {pid})", half.name) for n in notes]
        assert notes == b.loc[i, "notes"]
    assert (a["source"] == str(one_file)).all()
    rest = [c for c in a.columns if c not in ("source", "notes")]
    pd.testing.assert_frame_equal(a[rest], b[rest])
    pa, pb = ncuroof.points(a), ncuroof.points(b)
    pd.testing.assert_frame_equal(pa.drop(columns="source"), pb.drop(columns="source"))
    return a


def test_two_runs_written_into_one_file_equal_their_halves_as_two_files(tmp_path: Path) -> None:
    """The GENE authors' file: IDs 0-7 once per process, time and DRAM bytes from one run, FP64
    op counts from the other; the same numbers as its two halves passed as two files, and each
    value recomputed here from the file's cells."""
    path = shared(GENE_JOINED)
    halves = split_by_process(path, tmp_path)
    assert [h.name for h in halves] == ["process-85801.csv", "process-127605.csv"]
    k = assert_same_tables(path, halves).set_index("launch_id")
    _, rows, _ = independent_rows(path)
    cells: dict[int, dict[str, float]] = {}
    for r in rows:
        cells.setdefault(int(r["ID"]), {})[r["Metric Name"]] = number(r["Metric Value"])
    op = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
    assert sorted(cells) == list(range(8)) == sorted(k.index)
    for launch, m in cells.items():
        assert (
            k.loc[launch, "fp64_flop"]
            == m[op.format("dadd")] + m[op.format("dmul")] + 2 * m[op.format("dfma")]
        )
        assert k.loc[launch, "dram_bytes"] == m["dram__bytes.sum"]
        assert k.loc[launch, "time_s"] == pytest.approx(
            m["sm__cycles_elapsed.avg"] / m["sm__cycles_elapsed.avg.per_second"], rel=1e-12
        )
    # By hand from the cells: launch 0 (ij_deriv_kernel) 0 + 55,050,240 + 2 x 137,625,600 FP64
    # operations in 1,209,252.43 cycles at 1,309,394,950.84 cycles/s; launch 1
    # (add_i_col_times_ij_block_kernel) 4 x 27,525,120.
    assert (
        k.loc[0, "kernel_name"] == "ij_deriv_kernel"
        and k.loc[1, "kernel_name"] == "add_i_col_times_ij_block_kernel"
    )
    assert k.loc[0, "fp64_flop"] == 330_301_440 and k.loc[1, "fp64_flop"] == 110_100_480
    assert k.loc[0, "dram_bytes"] == 690_960_320 and k.loc[7, "dram_bytes"] == 891_799_648
    assert k.loc[0, "time_s"] == pytest.approx(9.23519e-4, rel=1e-5)


@pytest.mark.parametrize("order", [("dram", "flops"), ("flops", "dram")])
@pytest.mark.parametrize("repeat_header", [True, False])
def test_separate_gene_exports_concatenated_equal_the_two_files(
    tmp_path: Path, order: tuple[str, str], repeat_header: bool
) -> None:
    """The time-dram and time-flops exports written into one file (``cat``, or without the second
    header as the GENE authors did): both carry sm__cycles_elapsed.avg, and, as for two files, it
    is taken from the run without SASS-patched metrics whichever comes first."""
    first, second = (shared(GENE_PAIR.format(x)).read_text() for x in order)
    one = tmp_path / "concatenated.csv"
    one.write_text(first + (second if repeat_header else second.split("\n", 1)[1]))
    halves = [
        tmp_path / f"process-{ {'dram': 169988, 'flops': 6242}[x] }.csv" for x in order
    ]  # the files' process IDs
    for x, half in zip(order, halves):
        half.write_text(shared(GENE_PAIR.format(x)).read_text())
    k = assert_same_tables(one, halves)
    _, rows, _ = independent_rows(GENE_PAIR.format("dram"))
    m = {(int(r["ID"]), r["Metric Name"]): number(r["Metric Value"]) for r in rows}
    for i in range(4):
        t = m[(i, "sm__cycles_elapsed.avg")] / m[(i, "sm__cycles_elapsed.avg.per_second")]
        assert (
            k.loc[i, "time_s"] == pytest.approx(t, rel=1e-12) and 0.001 < t < 0.0013
        )  # the FLOP run took ~0.11 s
        assert "SASS-patched" in cell_text("notes", k.loc[i, "notes"])
    assert (
        k["fp64_flop"] == 27_525_120 + 2 * 330_301_440
    ).all()  # dmul + 2 dfma, every launch of the FLOP run


def _rewrite(name: str, tmp_path: Path, edit) -> Path:
    lines = shared(name).read_text().splitlines(keepends=True)
    out = tmp_path / "edited.csv"
    out.write_text("".join(edit(line) for line in lines))
    return out


@pytest.mark.parametrize(
    "edit,words",
    [
        (
            lambda ln: '"5"' + ln[3:] if ln.startswith('"7","127605"') else ln,
            ("launch ID 5", "127605"),
        ),
        (
            lambda ln: ln.replace("add_i_col_", "other_") if ln.startswith('"1","127605"') else ln,
            ("launch 1", "'other_times_ij_block_kernel'", "'add_i_col_times_ij_block_kernel'"),
        ),
        (
            lambda ln: "" if ln.startswith('"7","127605"') else ln,
            ("8 launches",),
        ),
    ],
)
def test_runs_in_one_file_that_do_not_line_up_are_refused(
    tmp_path: Path, edit, words: tuple[str, ...]
) -> None:
    """A launch ID repeated within one process is two launches sharing an ID (refused as before);
    processes whose launches differ are not two runs of the same launches."""
    from tests.helpers.cli import assert_clean_failure, run

    path = _rewrite(GENE_JOINED, tmp_path, edit)
    proc = run("analyze", str(path), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, path, tmp_path / "out", *words)


def test_kernel_names_of_any_length(tmp_path: Path, cat) -> None:
    """A 300 KiB kernel name (deep expression templates) on the first and the last launch: read
    whole, the values unchanged; cut inside the name, the file is still called truncated."""
    from ncuroof.parser import read
    from ncuroof.parser.csv import read_session
    from tests.helpers.cli import assert_clean_failure, run

    name = "ESMM-Research__metrics.csv"
    long = (
        "void gt::detail::kernel_assign_6<"
        + "gt::gfunction<gt::ops::plus, " * 11_000
        + "double"
        + ">" * 11_000
        + ">(int)"
    )
    assert len(long) > 300 * 1024
    first, last = (
        "basic(int, int, int, const float *, const float *, float *)",
        "ampere_sgemm_128x64_nn",
    )
    path = tmp_path / "long.csv"
    path.write_text(shared(name).read_text().replace(first, long).replace(f'"{last}"', f'"{long}"'))
    raw, ref = read(path, cat), read(shared(name), cat)
    renamed = ref["kernel_demangled"].isin([first, last])
    assert list(renamed[renamed].index) == [0, 7, 8]  # ampere_sgemm_128x64_nn ran twice, last
    assert (raw.loc[renamed, "kernel_demangled"] == long).all() and (
        raw.loc[renamed, "kernel_name"] == "kernel_assign_6"
    ).all()
    # (held as category, schema.RAW_COMPACT: compared as text)
    names, ref_names = raw["kernel_demangled"].astype(str), ref["kernel_demangled"].astype(str)
    assert (names[~renamed] == ref_names[~renamed]).all()
    metrics = [c for c in ref.columns if "__" in c]
    pd.testing.assert_frame_equal(raw[metrics], ref[metrics])
    proc = run("analyze", str(path), "-q", "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert (
        pd.read_csv(tmp_path / "out" / "launches.csv")["kernel_demangled"].str.len() == len(long)
    ).sum() == 3
    cut = tmp_path / "cut.csv"
    cut.write_bytes(path.read_bytes()[: -len(long) // 2])  # inside the last launch's name
    proc = run("analyze", str(cut), "-o", str(tmp_path / "out2"))
    assert_clean_failure(proc, cut, tmp_path / "out2", "truncated")
    session = tmp_path / "session.csv"
    session.write_text(
        shared("accelsim-test__algo23_session.csv")
        .read_text()
        .replace('"NVIDIA B200"', f'"{long}"')
    )
    assert read_session(session).device_name == long


RAW_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","gpu__time_duration.sum","dram__bytes.sum",'
    '"derived__smsp__sass_thread_inst_executed_op_hadd_pred_on_x2",'
    '"sass__inst_executed_per_opcode_with_modifier_all"\n'
    '"","","","","","","","","","","","ns","byte","inst",""\n'
)


def _raw_row(launch: int, time: str, hadd: str, opcodes: str) -> str:
    return (
        f'"{launch}","1","app","h","k(int)","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0",'
        f'"{time}","1,024","{hadd}","{opcodes}"\n'
    )


def test_raw_export_cells_without_a_value_are_missing_and_instances_are_read(
    tmp_path: Path, cat
) -> None:
    """ncu 2024.1's raw page: ``no data`` and ``-nan`` are missing values (not a refused file);
    an instanced metric exported with --print-metric-instances details gives its instance
    columns as the report reader names them; exported as totals only, it is dropped with a note
    saying how to export it, never read as zero work."""
    from ncuroof.parser import read
    from ncuroof.parser.csv import NO_INSTANCES_NOTE

    path = tmp_path / "raw.csv"
    path.write_text(
        RAW_HEADER
        + _raw_row(0, "2,000", "no data", "638208 (HMMA.16816.F32: 110592; IADD3: 49536)")
        + _raw_row(1, "-nan", "3", "12 (YIELD: 4; MEMBAR.SC.GPU: 8)")
    )
    raw = read(path, cat).set_index("launch_id")
    opcodes = "sass__inst_executed_per_opcode_with_modifier_all"
    assert raw.loc[0, "gpu__time_duration.sum"] == 2000  # ns, as ncu stores it
    assert math.isnan(raw.loc[1, "gpu__time_duration.sum"])
    assert math.isnan(raw.loc[0, "derived__smsp__sass_thread_inst_executed_op_hadd_pred_on_x2"])
    assert raw.loc[0, f"{opcodes}[HMMA.16816.F32]"] == 110592
    assert raw.loc[1, f"{opcodes}[HMMA.16816.F32]"] == 0  # no such instance in launch 1
    assert raw.loc[1, f"{opcodes}[MEMBAR.SC.GPU]"] == 8
    assert f"{opcodes}[IADD3]" not in raw.columns  # not an opcode any formula reads
    assert "gpu__time_duration.sum" in raw.loc[1, "input_notes"]

    totals = tmp_path / "totals.csv"
    totals.write_text(RAW_HEADER + _raw_row(0, "2,000", "1", "638208"))
    raw = read(totals, cat)
    assert not any(c.startswith(opcodes) for c in raw.columns)
    assert NO_INSTANCES_NOTE in raw.loc[0, "input_notes"]
