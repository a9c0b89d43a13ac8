"""A production timeline joined to the analysis (issue 24): production time per kernel, the time
basis of shares, focus, savings and the top kernels, coverage, unprofiled
kernels, ``--group-by op``.

The report is a real one (Cuda_Gemm_Practice: cuBLAS ``ampere_sgemm_128x64_nn`` and a templated
``gemm<...>``, one launch each); the timelines are made by hand here, so every expected number is
a sum of the durations written below, against ncu's numbers read from the report.
"""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import ncuroof
from ncuroof import fmt
from ncuroof.cli import cli
from ncuroof.model import production, summary
from ncuroof.schema import TIMELINE_LAUNCH
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import kernels_of, shared

GEMM = "Cuda_Gemm_Practice__gemm_v9.ncu-rep"
SGEMM = "ampere_sgemm_128x64_nn"
# The Itanium demangler's spelling (PyTorch's profiler) of ncu's "void gemm<(int)128, ...,
# (bool)0>(float *, ...)".
GEMM_KINETO = (
    "void gemm<128, 8, 128, 8, 8, false>(float*, float*, float*, int, int, int, unsigned long,"
    " unsigned long, unsigned long)"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int,"
    " at::native::AddFunctor<float>)"
)


def _ncu() -> pd.DataFrame:
    """ncu's time and saving per kernel key of the report (one launch each)."""
    k = kernels_of(GEMM)
    return k.assign(kernel_key=summary.kernel_keys(k)).set_index("kernel_key")


def _gemm_key() -> str:
    return next(key for key in _ncu().index if key != SGEMM)


def _launches() -> list[tuple[str, float, str]]:
    """(name, duration [s], operator) of each production launch: 30 sgemm of 500 us (20 under
    addmm, 10 under mm), one gemm at 1.1x ncu's duration (under mm), 4 unprofiled adds of 200 us."""
    t_gemm = float(_ncu().loc[_gemm_key(), "time_s"])
    return (
        [(SGEMM, 500e-6, "aten::addmm")] * 20
        + [(SGEMM, 500e-6, "aten::mm")] * 10
        + [(GEMM_KINETO, 1.1 * t_gemm, "aten::mm")]
        + [(ADD, 200e-6, "aten::add_")] * 4
    )


def _frame(
    launches: list[tuple[str, float, str]],
    gpu: str = "NVIDIA GeForce RTX 3080",
    dims: list[tuple[int, ...]] | None = None,
) -> pd.DataFrame:
    """A :data:`ncuroof.schema.TIMELINE_LAUNCH` table by hand, back to back, 1 us apart; ``dims``:
    (grid x, y, z, block x, y, z) per launch, default all 1."""
    n = len(launches)
    dur = np.array([d for _, d, _ in launches])
    start = np.concatenate([[0.0], np.cumsum(dur + 1e-6)[:-1]])
    dims = np.array(dims or [(1,) * 6] * n)
    tl = pd.DataFrame(
        {
            "kernel_name": [k for k, _, _ in launches],
            "start_s": start,
            "duration_s": dur,
            "device": 0,
            "stream": 7,
            **{
                f"{k}_{a}": dims[:, i]
                for i, (k, a) in enumerate((k, a) for k in ("grid", "block") for a in "xyz")
            },
            "correlation": np.arange(n),
            "op": [o for _, _, o in launches],
            "scope": None,
            "nvtx": None,
        }
    ).astype({c: v.dtype for c, v in TIMELINE_LAUNCH.items()})
    tl.attrs = {
        "format": "kineto",
        "path": "hand.json",
        "device": 0,
        "gpu_name": gpu,
        "devices": [0],
        "span_s": float(start[-1] + dur[-1]),
        "busy_s": float(dur.sum()),
    }
    return tl


def _kineto(
    path, launches: list[tuple[str, float, str]], gpu: str = "NVIDIA GeForce RTX 3080"
) -> None:
    """The same launches as a PyTorch profiler trace: per launch a cpu_op, the cudaLaunchKernel
    inside it and the kernel 1 us after the op (ts/dur in us), linked by correlation ID
    as Kineto links them.
    """
    events, ts = [], 0.0
    for i, (name, dur, op) in enumerate(launches):
        link = {"External id": i, "correlation": 1000 + i}
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": op,
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": 2.0,
                "args": {"External id": i},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts + 0.5,
                "dur": 1.0,
                "args": link,
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": 0,
                "tid": 7,
                "ts": ts + 3.0,
                "dur": dur * 1e6,
                "args": {**link, "device": 0, "stream": 7, "grid": [1, 1, 1], "block": [1, 1, 1]},
            }
        )
        ts += dur * 1e6 + 4.0
    with gzip.open(path, "wt") as f:
        json.dump({"deviceProperties": [{"id": 0, "name": gpu}], "traceEvents": events}, f)


def _joined(launches=None, **options) -> ncuroof.api.AnalysisResult:
    """The report analyzed with a hand-made timeline frame (the reader is tested on its own)."""
    tl = _frame(launches or _launches())
    orig = production.read
    production.read = lambda path, device, gpus, progress=None: tl
    try:
        return ncuroof.analyze(shared(GEMM), write=False, timeline="hand.json", top=100, **options)
    finally:
        production.read = orig


def test_join_by_hand() -> None:
    ncu, gemm = _ncu(), _gemm_key()
    t = _joined().analysis.production.table.set_index("kernel_key")
    total = 30 * 500e-6 + 1.1 * ncu.loc[gemm, "time_s"] + 4 * 200e-6
    assert math.isclose(t["production_time_s"].sum(), total, rel_tol=1e-12)
    assert list(t.index) == [SGEMM, gemm, ADD]  # most production time first
    assert list(t["match"]) == ["name", "spelling", "unprofiled"]
    assert list(t["production_launches"]) == [30, 1, 4] and list(t["profiled_launches"]) == [
        1,
        1,
        0,
    ]
    assert math.isclose(t.loc[SGEMM, "production_share"], 30 * 500e-6 / total, rel_tol=1e-12)
    # Per launch: 500 us against ncu's 77 us (flagged), 1.1x ncu's (within 25 %).
    assert math.isclose(
        t.loc[SGEMM, "duration_ratio"], 500e-6 / ncu.loc[SGEMM, "time_s"], rel_tol=1e-12
    )
    assert math.isclose(t.loc[gemm, "duration_ratio"], 1.1, rel_tol=1e-12)
    assert list(t["duration_differs"]) == [True, False, False]
    assert list(t["has_roofline_point"]) == [True, True, False]
    assert list(t["op"]) == ["aten::addmm", "aten::mm", "aten::add_"]
    assert (
        t.loc[ADD, "ncu_filter"] == "-k 'regex:^vectorized_elementwise_kernel$'"
        and t.loc[SGEMM, "ncu_filter"] == ""
    )


def test_coverage_and_idle_by_hand() -> None:
    p = _joined().analysis.production
    covered = 30 * 500e-6 + 1.1 * _ncu().loc[_gemm_key(), "time_s"]
    assert math.isclose(p.coverage, covered / (covered + 4 * 200e-6), rel_tol=1e-12)
    gaps = (len(_launches()) - 1) * 1e-6  # 1 us between launches
    assert math.isclose(p.idle_share, gaps / (p.total_s + gaps), rel_tol=1e-9)


def test_shares_focus_savings_and_order_follow_production_time() -> None:
    ncu, gemm = _ncu(), _gemm_key()
    res = _joined(focus=0.5)
    s = res.analysis.summary.set_index("kernel_key")
    total = res.analysis.production.total_s
    # ncu has gemm first (8.9 ms against 77 us); production has sgemm first (15 ms against 9.7 ms).
    assert list(res.analysis.summary["kernel_key"]) == [SGEMM, gemm]
    assert math.isclose(s.loc[SGEMM, "time_s"], 15e-3, rel_tol=1e-12)
    assert math.isclose(s.loc[SGEMM, "time_share"], 15e-3 / total, rel_tol=1e-12)
    assert math.isclose(s.loc[SGEMM, "profiled_time_s"], ncu.loc[SGEMM, "time_s"], rel_tol=1e-12)
    assert bool(s.loc[SGEMM, "in_focus"]) and not bool(s.loc[gemm, "in_focus"])
    for key in (SGEMM, gemm):  # the saving scaled by production / profiled time
        scale = s.loc[key, "time_s"] / ncu.loc[key, "time_s"]
        assert math.isclose(s.loc[key, "saving_s"], ncu.loc[key, "saving_s"] * scale, rel_tol=1e-12)
        assert math.isclose(
            s.loc[key, "saving_share"], s.loc[key, "saving_s"] / total, rel_tol=1e-12
        )
    # The roofline position stays ncu's.
    plain = ncuroof.analyze(shared(GEMM), write=False, top=100).analysis.summary.set_index(
        "kernel_key"
    )
    for col in ("ai_flop_per_byte", "flop_per_s", "roof_fraction"):
        assert (s[col] == plain.loc[s.index, col]).all()


def test_group_by_op_dots_add_up() -> None:
    k = _ncu()
    res = _joined(group_by="op")
    ops = res.ops.set_index("op")
    assert math.isclose(ops["time_s"].sum(), res.analysis.production.total_s, rel_tol=1e-12)
    assert ops["launches"].sum() == 35 and ops.loc["aten::mm", "launches"] == 11
    flop = k["fp32_flop"] + k["fp64_flop"].fillna(0) + k["fp16_flop"].fillna(0)
    assert math.isclose(ops["flop"].sum(), flop.sum(), rel_tol=1e-12)
    assert math.isclose(ops["dram_bytes"].sum(), k["dram_bytes"].sum(), rel_tol=1e-12)
    # addmm ran 20 of sgemm's 30 launches (all of equal length): two thirds of
    # its ncu work and time.
    assert math.isclose(
        ops.loc["aten::addmm", "dram_bytes"], 2 / 3 * k.loc[SGEMM, "dram_bytes"], rel_tol=1e-12
    )
    assert math.isclose(
        ops.loc["aten::addmm", "flop_per_s"],
        k.loc[SGEMM, "fp32_flop"] / k.loc[SGEMM, "time_s"],
        rel_tol=1e-9,
    )
    assert math.isclose(ops.loc["aten::add_", "time_s"], 4 * 200e-6, rel_tol=1e-12) and np.isnan(
        ops.loc["aten::add_", "flop"]
    )


def test_cli_writes_timeline_csv_and_page_follow_production(tmp_path) -> None:
    trace, out = tmp_path / "run.json.gz", tmp_path / "out"
    _kineto(trace, _launches())
    res = CliRunner().invoke(
        cli,
        [
            "analyze",
            str(shared(GEMM)),
            "--timeline",
            str(trace),
            "--group-by",
            "op",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    t = pd.read_csv(out / "timeline.csv").set_index("kernel_key")
    assert t.loc[SGEMM, "production_launches"] == 30 and math.isclose(
        t.loc[SGEMM, "production_time_s"], 15e-3, rel_tol=1e-9
    )
    assert t.loc[ADD, "match"] == "unprofiled" and (out / "ops.csv").exists()
    share = fmt.pct(15e-3 / t["production_time_s"].sum(), 1)
    page = (out / "roofline.html").read_text()
    assert (
        "Time basis: production timeline run.json.gz" in page
        and "regex:^vectorized_elementwise_kernel$" in page
    )
    assert ">production share<" in page and ">ncu time<" in page
    assert (
        share in page and share in res.output
    )  # the top kernel's share, production's, on the page and in the CLI
    assert "not profiled: vectorized_elementwise_kernel" in res.output


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1',
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}',
        b"not a trace at all",
    ],
)
def test_bad_timeline_refused_with_nothing_written(tmp_path, content: bytes) -> None:
    trace, out = tmp_path / "bad.json", tmp_path / "out"
    trace.write_bytes(content)
    proc = _main("analyze", str(shared(GEMM)), "--timeline", str(trace), "-o", str(out))
    assert proc.returncode == 2, proc.stderr
    assert_one_line_error(proc.stderr, trace)
    assert not out.exists()


def test_group_by_op_without_a_kineto_trace_is_refused(tmp_path) -> None:
    sqlite = shared("gpu4__report.sqlite")  # an Nsight Systems export: no PyTorch operators
    for extra in ((), ("--timeline", str(sqlite))):
        proc = _main(
            "analyze", str(shared(GEMM)), "--group-by", "op", "-o", str(tmp_path / "out"), *extra
        )
        assert proc.returncode == 2, proc.stderr
        assert_one_line_error(proc.stderr, None, "--group-by op", "--timeline")
        assert not (tmp_path / "out").exists()


def test_device_without_a_timeline_is_refused(tmp_path) -> None:
    """--device picks a device of the timeline: alone it would be silently ignored."""
    proc = _main("analyze", str(shared(GEMM)), "--device", "1", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    # click's usage error: the reason on its last line
    assert "Traceback" not in proc.stderr
    assert_one_line_error(proc.stderr.splitlines()[-1], None, "--device", "--timeline")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError) as err:
        ncuroof.load(shared(GEMM), device=1)
    assert_one_line_error(err, None, "--device", "timeline")


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    """``ncuroof ARGS`` as the console script runs it (errors become one line and exit 2 there)."""
    return subprocess.run(
        [sys.executable, "-m", "ncuroof", *args], capture_output=True, text=True, timeout=300
    )


def test_another_gpu_is_a_warning(tmp_path) -> None:
    trace = tmp_path / "a100.json.gz"
    _kineto(trace, _launches(), gpu="NVIDIA A100-SXM4-40GB")
    res = CliRunner().invoke(
        cli,
        ["analyze", str(shared(GEMM)), "--timeline", str(trace), "-o", str(tmp_path / "out"), "-q"],
    )
    assert (
        res.exit_code == 0
        and "warning: timeline a100.json.gz ran on NVIDIA A100-SXM4-40GB" in res.output
    )


def test_real_trace_production_time_is_the_sum_of_its_kernel_events() -> None:
    # AlexNet on an A100 (PyTorch profiler) against a GH200 report of PyTorch's uniform_ kernel:
    # both run distribution_elementwise_grid_stride_kernel, but two instantiations of it (the
    # trace's uniform_and_transform has one more template argument) at another grid (864 against
    # 1056 blocks): two kernels, not paired by their base name alone, so no production time
    # has a roofline point.
    trace = shared("hta__alexnet_trace.json.gz")
    with gzip.open(trace, "rt") as f:
        kernels = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    a = ncuroof.analyze(
        shared("cs599k__silu-2025-04-18-v1.ncu-rep"), write=False, timeline=trace
    ).analysis
    t = a.production.table.set_index("kernel_key")
    assert math.isclose(
        t["production_time_s"].sum(), sum(e["dur"] for e in kernels) * 1e-6, rel_tol=1e-12
    )
    assert t["production_launches"].sum() == len(kernels) == 79
    uniform = [e for e in kernels if "distribution_elementwise_grid_stride_kernel" in e["name"]]
    assert uniform and {tuple(e["args"]["grid"]) for e in uniform} == {(864, 1, 1)}
    assert (
        sorted(t["match"].unique()) == ["not_in_timeline", "unprofiled"]
        and a.production.coverage == 0
    )
    assert any("none of its" in w and "is one of the report's" in w for w in a.production.warnings)
    assert any("ran on NVIDIA A100-PG509-200" in w for w in a.production.warnings)


def test_operator_view_in_the_browser(tmp_path, browser) -> None:  # noqa: F811 - the fixture
    """--group-by op on the page: the chart control offers the operators, each operator with work
    is one drawn dot, the top kernel beside the chart has its production share."""
    from tests.helpers.browser import open_page as _open
    from tests.integration.test_views_page import DRAWN

    trace, out = tmp_path / "run.json.gz", tmp_path / "out"
    _kineto(trace, _launches())
    ncuroof.analyze(shared(GEMM), out, timeline=trace, group_by="op")
    ops = pd.read_csv(out / "ops.csv")
    page, errors = _open(browser, out / "roofline.html")
    labels = page.evaluate(
        "() => [...document.querySelectorAll('input[name=ctl-chart]')].map(e =>"
        " e.parentElement.textContent)"
    )
    assert "PyTorch operators" in labels
    top = page.locator("ol.top li").first.inner_text()
    t = pd.read_csv(out / "timeline.csv").set_index("kernel_key")
    assert top.strip().startswith(SGEMM) and fmt.pct(t.loc[SGEMM, "production_share"], 1) in top
    page.locator('input[name="ctl-chart"]').nth(labels.index("PyTorch operators")).check()
    page.wait_for_timeout(400)
    drawn = ops[(ops["flop"] > 0) & (ops["dram_bytes"] > 0)]
    assert (
        len(drawn) == 2
        and page.evaluate(DRAWN, "phase_dots") == len(drawn)
        and page.evaluate(DRAWN, "dots") == 0
    )
    assert errors == []


def test_one_spelling_of_the_two_demanglers() -> None:
    # ncu / Nsight Systems (NVIDIA's demangler) against PyTorch's profiler
    # (__cxa_demangle), by hand.
    ncu = (
        "void at::native::<unnamed>::k<(int)4, (bool)1, (unsigned long)8>(const float *,"
        " [lambda(int) (instance 1)])"
    )
    itanium = (
        "void at::native::(anonymous namespace)::k<4, true, 8ul>(float const*, {lambda(int)#1})"
    )
    assert (
        summary.spelling(ncu)
        == summary.spelling(itanium)
        == "voidat::native::<unnamed>::k<4,1,8>(float*,[lambda(int)(instance1)])"
    )
    assert summary.spelling("k<(int)4>(int)") != summary.spelling("k<5>(int)")


def test_real_nsys_export_every_kernel_unprofiled() -> None:
    # A T4 Nsight Systems export (vecAdd on several streams) against the RTX 3080 GEMM report: no
    # kernel in common, so all of its time is unprofiled, coverage 0, and two warnings.
    import sqlite3

    export = shared("gpu4__report.sqlite")
    with sqlite3.connect(export) as con:
        n, ns = con.execute(
            "SELECT COUNT(*), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ).fetchone()
    p = ncuroof.analyze(shared(GEMM), write=False, timeline=export).analysis.production
    t = p.table
    assert math.isclose(p.total_s, ns * 1e-9, rel_tol=1e-12) and t["production_launches"].sum() == n
    assert set(t["match"]) == {"unprofiled", "not_in_timeline"} and p.coverage == 0.0
    assert t.loc[t["match"] == "unprofiled", "ncu_filter"].tolist() == ["-k 'regex:^vecAdd$'"]
    assert (
        len(p.warnings) == 2
        and "ran on Tesla T4" in p.warnings[0]
        and "none of its 1 kernel is" in p.warnings[1]
    )


def test_instantiations_told_apart_by_launch_configuration() -> None:
    # Two instantiations of gemm in the timeline, spelled unlike ncu: the base name is ambiguous,
    # the one launched as ncu's gemm was (grid (25, 11, 1), block (16, 16, 1)) pairs with it.
    a, b = "void gemm<A>(float*)", "void gemm<B>(float*)"
    tl = _frame(
        [(a, 1e-3, "aten::mm"), (b, 2e-3, "aten::mm")],
        dims=[(25, 11, 1, 16, 16, 1), (1, 1, 1, 1, 1, 1)],
    )
    k = kernels_of(GEMM)
    assert set(k.loc[k["kernel_name"] == "gemm", ["grid", "block"]].itertuples(index=False)) == {
        ("(25, 11, 1)", "(16, 16, 1)")
    }
    analysis = ncuroof.analyze(shared(GEMM), write=False).analysis
    t = production.join(analysis.launches, analysis.dots, tl).table.set_index("timeline_name")
    assert (
        t.loc[a, "match"] == "base name and configuration" and t.loc[a, "kernel_key"] == _gemm_key()
    )
    assert t.loc[b, "match"] == "unprofiled" and t.loc[a, "profiled_launches"] == 1


def test_another_instantiation_at_another_configuration_is_not_paired() -> None:
    """The only gemm of the timeline, with other template arguments and another launch configuration
    than ncu's gemm, is another kernel: unprofiled, its time given no roofline point (the base name
    alone would pair the two, and coverage would count it)."""
    tl = _frame([("void gemm<64>(float*)", 1e-3, "aten::mm")], dims=[(9, 1, 1, 64, 1, 1)])
    analysis = ncuroof.analyze(shared(GEMM), write=False).analysis
    prod = production.join(analysis.launches, analysis.dots, tl)
    t = prod.table.set_index("timeline_name")
    assert t.loc["void gemm<64>(float*)", "match"] == "unprofiled" and prod.coverage == 0
    assert t.loc["void gemm<64>(float*)", "ncu_filter"] == "-k 'regex:^gemm$'"
