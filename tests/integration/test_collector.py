"""ncuroof profile and doctor without a GPU: command lines, metric lists checked against real
reports, and every failure path against a stand-in ncu (tests/fake_ncu/ncu) that prints ncu's
real messages."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog, cli
from ncuroof.collector import ncu as collector
from ncuroof.collector.ncu import ProfileOptions, build_command, metric_list
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import needs_ncu_report, shared

FAKE = Path(__file__).resolve().parent / "fake_ncu"
#: The stand-in's versions (tests/fake_ncu/ncu): the report suffix ncu writes by default for each.
VERSIONS = {"2023.2.2.0": ".ncu-rep", "2025.3.1.0": ".ncu-rep", "2026.3.1.0": ".ncu-repz"}


@pytest.fixture(params=VERSIONS)
def version(request, monkeypatch):
    """Each test that runs the stand-in runs it as ncu 2023.2, 2025.3 and 2026.3."""
    monkeypatch.setenv("FAKE_NCU_VERSION", request.param)
    return request.param


@pytest.fixture
def fake_env(monkeypatch, tmp_path, version):
    """PATH with the stand-in ncu first; no other place to find a real one."""
    monkeypatch.setenv("PATH", f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(collector, "SEARCH_PATTERNS", ())
    log = tmp_path / "ncu-args.jsonl"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.chdir(tmp_path)
    # The program the tests profile: real ncu refuses a program that does not exist.
    (tmp_path / "app").write_text("#!/bin/sh\n")
    (tmp_path / "app").chmod(0o755)
    return log


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


#: What ncuroof asks an ncu before it profiles (collector.facts): its version, option table, sets,
#: sections and report suffix; and for an explicit list whether it knows the metrics.
_QUERIES = (["--version"], ["--help"], ["--list-sets"], ["--list-sections"])


def _runs(log: Path) -> list[list[str]]:
    """The calls that profile: ncu's queries about itself left out."""
    return [
        c
        for c in _calls(log)
        if c not in _QUERIES
        and "--query-metrics" not in c
        and "/proc/ncuroof-probe/x" not in "".join(c)
    ]


def _files(folder: Path) -> list[str]:
    """What ``folder`` holds, the program the tests profile (./app) aside."""
    return sorted(p.name for p in folder.iterdir() if p.name != "app")


# --- command lines -------------------------------------------------------------------------


def test_default_command_is_set_roofline(tmp_path):
    opts = ProfileOptions(output=tmp_path / "run")
    cmd = build_command(Path("/x/ncu"), opts, ["./app", "--n", "3"])
    assert cmd == [
        "/x/ncu",
        "--set",
        "roofline",
        "--nvtx",
        "-o",
        str(tmp_path / "run"),
        "./app",
        "--n",
        "3",
    ]


def test_every_scoping_option_is_passed_through(tmp_path):
    opts = ProfileOptions(
        output=tmp_path / "r.ncu-rep",
        kernel_name="regex:gemm.*",
        kernel_name_base="demangled",
        kernel_id="::vec:2",
        launch_skip=5,
        launch_count=10,
        nvtx_include=("train/", "step@*"),
        nvtx_exclude=("warmup/",),
        target_processes="all",
        replay_mode="application",
        clock_control="none",
        cache_control="none",
        extra=("--graph-profiling", "node"),
    )
    cmd = build_command(Path("ncu"), opts, ["python", "train.py"])
    assert cmd == [
        "ncu",
        "--set",
        "roofline",
        "--nvtx",
        "--kernel-name-base",
        "demangled",
        "--kernel-name",
        "regex:gemm.*",
        "--kernel-id",
        "::vec:2",
        "--launch-skip",
        "5",
        "--launch-count",
        "10",
        "--target-processes",
        "all",
        "--replay-mode",
        "application",
        "--clock-control",
        "none",
        "--cache-control",
        "none",
        "--nvtx-include",
        "train/",
        "--nvtx-include",
        "step@*",
        "--nvtx-exclude",
        "warmup/",
        "-o",
        str(tmp_path / "r.ncu-rep"),
        "--graph-profiling",
        "node",
        "python",
        "train.py",
    ]


def test_explicit_metric_list_replaces_the_set(tmp_path):
    m = metric_list(["dram"], ["fp32"], "9.0")
    cmd = build_command(Path("ncu"), ProfileOptions(output=tmp_path / "r"), ["./a"], metrics=m)
    assert cmd[1:3] == ["--metrics", ",".join(m)] and "--set" not in cmd


def test_dram_fp32_list_is_small_and_complete():
    m = metric_list(["dram"], ["fp32"], "8.6")
    # time, clocks, SOL throughputs, waves; 3 FP32 rates + peak; DRAM bytes, rate, peak, clock.
    assert len(m) == 6 + 4 + 4
    assert (
        "dram__bytes.sum" in m
        and "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained" in m
    )
    assert not any(x.startswith(("lts__", "l1tex__", "sm__ops_path")) for x in m)


@pytest.mark.parametrize(
    "cc, l1",
    [
        ("7.0", "l1tex__lsu_writeback_active.sum"),
        ("8.6", "l1tex__lsu_writeback_active_mem_lg.sum"),
        ("9.0", "l1tex__lsu_writeback_active_mem_lgds.sum"),
    ],
)
def test_l1_metric_follows_the_architecture(cc, l1):
    m = metric_list(["l1"], ["fp32"], cc)
    assert [x for x in m if x.startswith("l1tex__lsu")][0] == l1


def test_fp32_pair_instructions_only_on_blackwell():
    assert any("ffma2" in x for x in metric_list(["dram"], ["fp32"], "10.0"))
    assert not any("ffma2" in x for x in metric_list(["dram"], ["fp32"], "9.0"))


def test_unknown_names_are_refused():
    with pytest.raises(ValueError) as err:
        metric_list(["hbm"], ["fp32"], "9.0")
    assert_one_line_error(err, None, "'hbm'")
    # Xavier (7.2): no tensor metric in any ncu (Volta 7.0 has the 512 x tensor-pipe count).
    with pytest.raises(ValueError) as err:
        metric_list(["dram"], ["tensor"], "7.2")
    assert_one_line_error(err, None, "tensor", "7.2")


@pytest.mark.parametrize("cc", ["7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"])
def test_collected_metrics_are_read_by_the_parser(cc):
    cat = catalog.load()
    precs = ["fp64", "fp32", "fp16", "tensor"]
    for version in (None, "2022.3.0.0", "2024.1.1.0"):
        for name in metric_list(["dram", "l2", "l1"], precs, cc, ncu_version=version):
            known = name in cat.scalar_metrics or cat.is_tensor_path_metric(name)
            assert known or name == "sass__inst_executed_per_opcode_with_modifier_all", name


@needs_ncu_report
@pytest.mark.parametrize(
    "report, tensor",
    [
        ("CudaCode__naive.ncu-rep", False),
        ("cutlass-panjd123__4f3955ed3c_report.ncu-rep", False),
        ("CUDA_Learning__report.ncu-rep", False),
        ("BBAStar__profile_output.ncu-rep", False),
        ("cs599k__2025-04-21-vector-based.ncu-rep", True),
    ],
)
def test_collected_metric_names_exist_on_that_architecture(report, tensor):
    """Every metric asked for is spelled as ncu spells it on that CC: real full-set reports of
    that CC store it (or another rollup of the same counter)."""
    import ncu_report

    action = ncu_report.load_report(str(shared(report))).range_by_idx(0).action_by_idx(0)
    names = set(action.metric_names())
    cc = (
        f"{action.metric_by_name('device__attribute_compute_capability_major').value()}."
        f"{action.metric_by_name('device__attribute_compute_capability_minor').value()}"
    )
    # FP16 only where the report's ncu had the half-precision chart (2025.x;
    # older full sets lack it).
    half = ["fp16"] if any("op_hfma" in n for n in names) else []
    wanted = metric_list(
        ["dram", "l2", "l1"], ["fp64", "fp32", *half] + (["tensor"] if tensor else []), cc
    )
    counters = {n.split(".")[0] for n in names}
    # A stored derived__<counter>_x2 (ncu's pre-multiplied form) shows the counter exists too.
    counters |= {
        re.sub(r"_x\d+$", "", c[len("derived__") :]) for c in counters if c.startswith("derived__")
    }
    missing = [m for m in wanted if m not in names and m.split(".")[0] not in counters]
    assert missing == [], f"{report} (CC {cc}) lacks {missing}"


# --- running the stand-in ncu --------------------------------------------------------------


@needs_ncu_report
def test_profile_keeps_report_records_collection_and_analyzes(
    fake_env, version, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_REPORT", str(shared("cs599k__2025-04-21-vector-based.ncu-rep")))
    with pytest.raises(SystemExit) as exc:
        cli.main(
            [
                "profile",
                "-o",
                "silu",
                "--clock-control",
                "none",
                "-c",
                "2",
                "--",
                "python3",
                "silu.py",
                "--n",
                "5",
            ]
        )
    assert exc.value.code == 0
    out = capsys.readouterr()
    report = tmp_path / f"silu{VERSIONS[version]}"
    assert report.is_file() and not list(tmp_path.glob(".*partial*"))
    assert _files(tmp_path) == sorted(
        [report.name, report.name + ".ncuroof.json", "silu.ncuroof", "ncu-args.jsonl"]
    )
    assert (report.read_bytes()[:4] == b"\x28\xb5\x2f\xfd") == (VERSIONS[version] == ".ncu-repz")
    assert "hello from the profiled program" in out.err  # program output streamed
    assert "2 kernel launches profiled, 3 replay passes each" in out.out
    calls = _runs(fake_env)
    assert _calls(fake_env)[0] == ["--version"] and len(calls) == 1
    assert calls[0][:3] == ["--set", "roofline", "--nvtx"] and calls[0][-4:] == [
        "python3",
        "silu.py",
        "--n",
        "5",
    ]
    assert ["--clock-control", "none"] == calls[0][
        calls[0].index("--clock-control") : calls[0].index("--clock-control") + 2
    ]
    rec = json.loads((tmp_path / f"{report.name}.ncuroof.json").read_text())
    assert (
        rec["ncu_version"] == version
        and rec["clock_control"] == "none"
        and rec["cache_control"] == "all (ncu default)"
    )
    assert rec["passes"] == {"vectorAdd - 0": 3, "vectorAdd - 1": 3}
    assert (
        rec["report"] == report.name
        and rec["ncu_command"][rec["ncu_command"].index("-o") + 1] == report.name
    )
    html = (tmp_path / "silu.ncuroof" / "roofline.html").read_text()
    assert "clock control none" in html and "silu_kernel_vector" in html
    # the report's own clock status (the stand-in copies a real report: locked), then the
    # record's --clock-control
    kernels = pd.read_csv(tmp_path / "silu.ncuroof" / "launches.csv")
    assert (kernels["clock_control"] == "locked: none").all() and "locked: none" in html


def test_existing_report_is_not_overwritten(fake_env, version, tmp_path, capsys):
    name = f"r{VERSIONS[version]}"
    (tmp_path / name).write_bytes(b"old")
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "-o", "r", "--no-analyze", "--", "./app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, name, "--force")
    # ncu was asked about itself, never run on the program.
    assert (tmp_path / name).read_bytes() == b"old" and _runs(fake_env) == []


@pytest.mark.parametrize("asked", [".ncu-rep", ".ncu-repz"])
def test_an_explicit_suffix_is_honoured(fake_env, version, monkeypatch, tmp_path, asked):
    """-o run1.ncu-rep / run1.ncu-repz keep that name whatever the version's default; the report is
    compressed where ncu compresses it (an ncu before 2026.2 writes no .ncu-repz: it appends
    .ncu-rep, and the report, read by its content, is kept under the name asked for).
    Nothing else is left."""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_REPORT", str(shared("cs599k__2025-04-21-vector-based.ncu-rep")))
    res = collector.run_profile(
        ["./app"], ProfileOptions(output=Path(f"run1{asked}")), echo=lambda s: None
    )
    assert res.report == Path(f"run1{asked}")
    assert _files(tmp_path) == sorted(
        [f"run1{asked}", f"run1{asked}.ncuroof.json", "ncu-args.jsonl"]
    )
    compressed = (tmp_path / f"run1{asked}").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert compressed == (asked == ".ncu-repz" and version >= "2026.2")
    assert _runs(fake_env)[0][_runs(fake_env)[0].index("-o") + 1].endswith(f".partial{asked}")


@pytest.mark.parametrize("clock", ["boost", "force-boost"])
def test_clock_control_choices_follow_the_version(fake_env, version, tmp_path, clock):
    """boost and force-boost exist from ncu 2026.1: an older ncu is not even started with them."""
    opts = ProfileOptions(output=Path("r"), clock_control=clock, force=True)
    if version < "2026.1":
        with pytest.raises(collector.ProfileError) as err:
            collector.run_profile(["./app"], opts, echo=lambda s: None)
        assert_one_line_error(err, None, "--clock-control", f"'{clock}'")
        assert _runs(fake_env) == []
    else:
        res = collector.run_profile(["./app"], opts, echo=lambda s: None)
        assert json.loads(res.sidecar.read_text())["clock_control"] == clock


def test_ncu_defaults_per_version():
    d = {v: collector.ncu_defaults(v) for v in ("2020.1.0", "2025.3.1.0", "2026.1.0", "2026.3.1.0")}
    assert [x.report_suffix for x in d.values()] == [
        ".ncu-rep",
        ".ncu-rep",
        ".ncu-rep",
        ".ncu-repz",
    ]
    assert d["2025.3.1.0"].clock_control == ("base", "none", "reset") and d[
        "2026.3.1.0"
    ].clock_control[-2:] == ("boost", "force-boost")
    assert {x.clock_default for x in d.values()} == {"base"}
    assert collector.report_path(Path("a/run1"), ".ncu-repz") == Path("a/run1.ncu-repz")
    assert collector.report_path(Path("run1.ncu-rep"), ".ncu-repz") == Path("run1.ncu-rep")


@pytest.mark.parametrize(
    "mode, words",
    [
        ("perm", ("ERR_NVGPUCTRPERM", "root", "NVreg_RestrictProfilingToAdminUsers=0")),
        ("app_error", ("code 3", "no report")),
        ("no_kernels", ("--target-processes all", "no report")),
        ("unknown_device", ("device", "driver")),
    ],
)
def test_failures_leave_no_report_and_explain(fake_env, monkeypatch, tmp_path, capsys, mode, words):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "-o", "r", "-q", "--", "./app"])
    assert exc.value.code == 2
    assert assert_one_line_error(capsys.readouterr().err, None, *words).startswith(
        "ncuroof: error: "
    )
    assert _files(tmp_path) == ["ncu-args.jsonl"]


def test_old_ncu_is_refused(fake_env, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_NCU_VERSION", "2019.5.0")
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--", "./app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "2019.5.0", "2020.1")


def test_levels_without_cc_or_nvidia_smi(fake_env, monkeypatch, capsys):
    monkeypatch.setattr(collector, "gpu_compute_capability", lambda: None)
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--levels", "dram", "--", "./app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "--cc")


def test_levels_become_an_explicit_metric_list(fake_env, monkeypatch, capsys):
    monkeypatch.setenv(
        "FAKE_NCU_MODE", "no_kernels"
    )  # fails after ncu ran: the command line is logged
    with pytest.raises(SystemExit):
        cli.main(
            ["profile", "--levels", "dram", "--precisions", "fp64", "--cc", "8.0", "--", "./app"]
        )
    call = _runs(fake_env)[0]
    assert call[0] == "--metrics" and call[1].split(",") == metric_list(["dram"], ["fp64"], "8.0")


def test_bad_level_is_a_usage_error(fake_env, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--levels", "dram,hbm", "--", "./app"])
    assert exc.value.code == 2 and "'hbm': choose from dram,l2,l1" in capsys.readouterr().err


# --- no ncu at all, and doctor -------------------------------------------------------------


@pytest.fixture
def no_ncu(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(collector, "SEARCH_PATTERNS", ())
    monkeypatch.chdir(tmp_path)


def test_profile_without_ncu_exits_2(no_ncu, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--", "./app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "ncu", "PATH")


def test_doctor_without_ncu_exits_2(no_ncu, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["doctor"])
    out = capsys.readouterr()
    assert exc.value.code == 2
    assert "FAIL ncu: not found" in out.out and "fix: install Nsight Compute" in out.out
    assert out.err.strip().count("\n") == 0 and "ncuroof: error:" in out.err


def test_doctor_counter_permission(fake_env, version, tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    checks = {c.name: c for c in collector.doctor(params=params)}
    assert checks["ncu"].ok and version in checks["ncu"].detail
    assert f"writes {VERSIONS[version]} reports by default" in checks["ncu defaults"].detail
    assert "--clock-control base by default" in checks["ncu defaults"].detail
    assert (
        checks["counters"].ok is False
        and "NVreg_RestrictProfilingToAdminUsers=0" in checks["counters"].fix
    )
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert {c.name: c for c in collector.doctor(params=params)}["counters"].ok is True


def test_api_profile_returns_the_report(fake_env, version, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    lines: list[str] = []
    path = ncuroof.profile(["./app"], tmp_path / "api", echo=lines.append, launch_count=1)
    assert path == tmp_path / f"api{VERSIONS[version]}" and path.is_file()
    assert any("3 passes" in ln for ln in lines)
    assert "--launch-count" in _runs(fake_env)[0]


def test_find_ncu_order(tmp_path, monkeypatch):
    cuda = tmp_path / "cuda" / "bin"
    cuda.mkdir(parents=True)
    shutil.copy(FAKE / "ncu", cuda / "ncu")
    opt = tmp_path / "opt"
    for v in ("2024.1.0", "2025.2.1"):
        (opt / v).mkdir(parents=True)
        shutil.copy(FAKE / "ncu", opt / v / "ncu")
    monkeypatch.setattr(collector, "SEARCH_PATTERNS", (str(opt / "*" / "ncu"),))
    assert collector.find_ncu({"PATH": str(FAKE)}) == FAKE / "ncu"
    assert collector.find_ncu({"PATH": "", "CUDA_HOME": str(tmp_path / "cuda")}) == cuda / "ncu"
    assert collector.find_ncu({"PATH": ""}) == opt / "2025.2.1" / "ncu"


@needs_ncu_report
def test_compare_warns_when_collected_differently(fake_env, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_REPORT", str(shared("cs599k__2025-04-21-vector-based.ncu-rep")))
    a = ncuroof.profile(["./app"], tmp_path / "a", echo=lambda s: None)
    b = ncuroof.profile(["./app"], tmp_path / "b", echo=lambda s: None, clock_control="none")
    warns = ncuroof.compare_runs(a, b, write=False).warnings
    assert "collected differently: clock control base (ncu default) before, none after" in warns
    assert ncuroof.compare_runs(a, a, write=False).warnings == []


def test_compare_warns_about_the_pipeline_boost_state(fake_env, version, monkeypatch, tmp_path):
    """ncu 2026.1+ records --pipeline-boost-state (given with --ncu-arg); an older ncu has no
    such option and refuses it in its own words, which ncuroof turns into one line."""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    a = collector.run_profile(["./app"], ProfileOptions(output=Path("a")), echo=lambda s: None)
    boosted = ProfileOptions(output=Path("b"), extra=("--pipeline-boost-state=stable",))
    if version < "2026.1":
        with pytest.raises(collector.ProfileError) as err:
            collector.run_profile(["./app"], boosted, echo=lambda s: None)
        assert_one_line_error(err, None, f"ncu {version}", "no option --pipeline-boost-state")
        assert "pipeline_boost_state" not in json.loads(a.sidecar.read_text())
        return
    b = collector.run_profile(["./app"], boosted, echo=lambda s: None)
    ra, rb = (json.loads(r.sidecar.read_text()) for r in (a, b))
    from ncuroof.render.provenance import collection_warnings

    assert (ra["pipeline_boost_state"], rb["pipeline_boost_state"]) == ("ncu default", "stable")
    assert collection_warnings([a.report], [b.report]) == [
        "collected differently: pipeline boost state ncu default before, stable after"
    ]


@pytest.mark.parametrize("separators", [["--"], ["--", "--"]], ids=["one", "doubled"])
def test_the_programs_own_double_dash_reaches_it(fake_env, monkeypatch, separators):
    """Only the separator before CMD is ncuroof's (also when written twice, which click passes on):
    `profile -- ./app -- --x` runs `./app -- --x`."""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_REPORT", str(shared("cs599k__2025-04-21-vector-based.ncu-rep")))
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "-o", "r", "--no-analyze", "-q", *separators, "./app", "--", "--x"])
    assert exc.value.code in (0, None)
    assert _calls(fake_env)[-1][-3:] == ["./app", "--", "--x"]


def test_samples_adds_the_pm_sampling_sections(fake_env, version, monkeypatch, tmp_path, capsys):
    """``profile --samples --sample-interval 2000`` (issue 51) adds the PM sampling sections this
    ncu lists (ncu 2024.1's recording: PmSampling, PmSampling_WarpStates) and the interval, beside
    --set roofline, and records them; an ncu without them (2023.2, recorded as 2022.3) is refused
    in one line before it runs."""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_REPORT", str(shared("cs599k__2025-04-21-vector-based.ncu-rep")))
    args = ["profile", "-o", "s", "--samples", "--sample-interval", "2000", "--no-analyze", "-q"]
    with pytest.raises(SystemExit) as exc:
        cli.main([*args, "--", "python3", "silu.py"])
    if version < "2024.1":
        assert exc.value.code == 2
        assert_one_line_error(capsys.readouterr().err, None, "no PmSampling section", "2024.1")
        assert not _runs(fake_env)
        return
    assert exc.value.code == 0
    call = _runs(fake_env)[0]
    assert call[:2] == ["--set", "roofline"]
    sections = [call[i + 1] for i, a in enumerate(call) if a == "--section"]
    assert sections == ["PmSampling", "PmSampling_WarpStates"]
    assert call[call.index("--pm-sampling-interval") + 1] == "2000"
    report = tmp_path / f"s{VERSIONS[version]}"
    rec = json.loads((tmp_path / f"{report.name}.ncuroof.json").read_text())
    assert rec["options"]["samples"] is True and rec["options"]["sample_interval"] == 2000
