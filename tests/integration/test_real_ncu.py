"""The real-ncu tier: what ncuroof assumes about ncu, checked against NVIDIA's own binaries.

Debian's ncu 2022.3 and 2024.1 (scripts/real-ncu unpacks them; .ci/run does so) run here without a
GPU: every command line ``ncuroof profile`` builds must get past their option parsing to the
missing driver, every metric of an explicit list must be one that version knows on that chip (or
be refused in one line), ncu's refusals must become one line each, and the recordings the stand-in
replays must still be what the binaries say. Skipped, with the reason, when the binaries are absent.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ncuroof import catalog, cli
from ncuroof.collector import facts
from ncuroof.collector import ncu as collector
from ncuroof.collector.ncu import ProfileOptions, build_command, metric_list
from tests.helpers.errors import assert_one_line_error
from tests.helpers.real_ncu import PROBES, real_ncus, record_probe, recorded

REAL = real_ncus()
pytestmark = [
    pytest.mark.real_ncu,
    pytest.mark.skipif(not REAL, reason="no real ncu: run scripts/real-ncu (fetches Debian's ncu)"),
]
VERSIONS = [v for v, _ in REAL]
#: What real ncu prints once it has parsed its command line and looks for the driver.
DRIVER = "failed to connect to the CUDA driver"
#: What it prints for a command line it refuses.
USAGE = ("unrecognised option", "is ambiguous", "is invalid", "does not exist")


@pytest.fixture(params=REAL, ids=VERSIONS)
def real(request, tmp_path, monkeypatch):
    """(version, path) of one real ncu, with HOME in tmp_path (ncu copies its section files into
    $HOME/Documents on first use) and the working folder holding an executable ./app."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    app = tmp_path / "app"
    app.write_text("#!/bin/sh\n")
    app.chmod(0o755)
    return request.param


def _run(args: list[str]) -> str:
    out = subprocess.run(
        args, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    return out.stdout + out.stderr


def _cc_of_chip() -> dict[str, str]:
    return dict(catalog.load_toml(None, "collect.toml")["chips"])


# --- the recordings the stand-in replays ----------------------------------------------------


def test_the_recordings_are_what_the_binaries_say(real):
    """tests/integration/fake_ncu/recorded/ncu-<version>.json (scripts/record-ncu-facts) still
    equals the binary: options, values, sets, sections, report suffix, and every refusal's words,
    stream and exit code."""
    version, ncu = real
    rec = recorded(version)
    live = facts.ncu_facts(ncu, collector.ncu_version(ncu)).to_json()
    assert {k: live[k] for k in live} == {k: rec[k] for k in live}
    for name, args in PROBES.items():
        assert record_probe(ncu, args) == rec["probes"][name], name


def test_the_binary_names_its_report_suffix_and_refuses_a_double_dash(real):
    version, ncu = real
    assert facts.probe_report_suffix(ncu) == (".ncu-rep", False)
    assert "option is ambiguous" in _run([str(ncu), "--", "./app"])


# --- command lines ---------------------------------------------------------------------------

OPTION_SETS = {
    "default": ProfileOptions(output=Path("r")),
    "kernel filters": ProfileOptions(
        output=Path("r"), kernel_name="regex:gemm.*", kernel_name_base="demangled"
    ),
    "kernel id": ProfileOptions(output=Path("r.ncu-rep"), kernel_id="::vec:2"),
    "launch skip and count": ProfileOptions(output=Path("r"), launch_skip=5, launch_count=10),
    "nvtx": ProfileOptions(
        output=Path("r"), nvtx_include=("train/", "step@*"), nvtx_exclude=("warmup/",)
    ),
    "replay application": ProfileOptions(output=Path("r"), replay_mode="application"),
    "replay range": ProfileOptions(output=Path("r"), replay_mode="range"),
    "clocks and caches": ProfileOptions(
        output=Path("r"), clock_control="none", cache_control="none"
    ),
    "clock base, all processes": ProfileOptions(
        output=Path("r"), clock_control="base", target_processes="all"
    ),
    "extra args": ProfileOptions(output=Path("r"), extra=("--apply-rules", "no")),
}
#: Explicit lists per compute capability: (levels, precisions).
EXPLICIT = {
    "7.0": (("dram", "l2", "l1"), ("fp64", "fp32", "fp16", "tensor")),
    "8.0": (("dram", "l2", "l1"), ("fp64", "fp32", "fp16", "tensor")),
    "8.6": (("dram", "l2"), ("fp32", "tensor")),
    "9.0": (("dram", "l2", "l1"), ("fp64", "fp32", "fp16", "tensor")),
}


@pytest.mark.parametrize("name", [*OPTION_SETS, *(f"explicit CC {cc}" for cc in EXPLICIT)])
@pytest.mark.parametrize(
    "program", [["./app", "--n", "3", "--", "-x"], ["-app"]], ids=["app", "dash"]
)
def test_every_command_line_gets_past_ncus_option_parsing(real, name, program, tmp_path):
    """The command line profile builds is accepted by real ncu: it goes on to look for the
    driver (the program's own '--' and a program named '-app' included)."""
    version, ncu = real
    if program == ["-app"]:
        (tmp_path / "-app").write_text("#!/bin/sh\n")
        (tmp_path / "-app").chmod(0o755)
    if name.startswith("explicit"):
        cc = name.split()[-1]
        metrics = metric_list(*EXPLICIT[cc], cc, ncu_version=version)
        cmd = build_command(ncu, ProfileOptions(output=Path("r")), program, metrics=metrics)
    else:
        cmd = build_command(ncu, OPTION_SETS[name], program)
    out = _run(cmd)
    assert DRIVER in out and not any(u in out for u in USAGE), out[:400]


@pytest.mark.parametrize("name", [*OPTION_SETS, "explicit"])
def test_profile_without_a_driver_is_one_line(real, name, capsys):
    """``ncuroof profile --ncu REAL ...`` on a machine without a GPU: exit 2, one line that says
    the driver is missing, never ncu's raw text or 'no kernel profiled'."""
    version, ncu = real
    args = ["profile", "--ncu", str(ncu), "-o", "r", "--no-analyze", "-q"]
    if name == "explicit":
        args += ["--levels", "dram,l2", "--precisions", "fp32,tensor", "--cc", "8.0"]
    else:
        opts = OPTION_SETS[name]
        args += ["--clock-control", opts.clock_control] if opts.clock_control else []
        args += ["--replay-mode", opts.replay_mode] if opts.replay_mode else []
        args += ["--launch-count", str(opts.launch_count)] if opts.launch_count else []
        args += [a for v in opts.nvtx_include for a in ("--nvtx-include", v)]
        args += ["-k", opts.kernel_name] if opts.kernel_name else []
    with pytest.raises(SystemExit) as exc:
        cli.main([*args, "--", "./app", "--n", "3"])
    assert exc.value.code == 2
    line = assert_one_line_error(capsys.readouterr().err, None, f"ncu {version}", "CUDA driver")
    assert "no kernel" not in line and len(line) < 400
    assert not list(Path(".").glob("r*")) and not list(Path(".").glob(".r*"))


def test_a_value_this_version_lacks_is_refused_before_ncu_runs(real, capsys):
    """--replay-mode app-range exists in ncu 2024.1, not 2022.3: the older one is refused in one
    line from its own --help, the newer gets to the driver."""
    version, ncu = real
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--ncu", str(ncu), "-q", "--replay-mode", "app-range", "--", "./app"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    if version < "2024.1":
        assert_one_line_error(err, None, "--replay-mode", "'app-range'", "kernel|application|range")
    else:
        assert_one_line_error(err, None, "CUDA driver")


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--ncu-arg", "--ncuroof-bogus"], ("no option --ncuroof-bogus",)),
        (["--ncu-arg", "--cache-control=sometimes"], ("does not take", "--cache-control")),
        (["--ncu-arg", "--launch"], ("abbreviation",)),
    ],
    ids=["unknown option", "invalid value", "ambiguous"],
)
def test_ncus_refusals_become_one_line(real, extra, words, capsys):
    version, ncu = real
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--ncu", str(ncu), "-q", "-o", "r", *extra, "--", "./app"])
    assert exc.value.code == 2
    line = assert_one_line_error(capsys.readouterr().err, None, f"ncu {version}", *words)
    assert len(line) < 400


def test_a_missing_program_is_named(real, capsys):
    version, ncu = real
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--ncu", str(ncu), "-q", "--", "./no-such-app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "./no-such-app", "path")


def test_ncu_given_by_its_bare_name_in_this_folder(real, monkeypatch, tmp_path, capsys):
    """--ncu NAME: the file NAME here (it was looked for on PATH only)."""
    version, ncu = real
    (tmp_path / "my-ncu").symlink_to(ncu)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--ncu", "my-ncu", "-q", "--", "./app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "CUDA driver")


# --- metric lists ----------------------------------------------------------------------------


def test_every_explicit_metric_is_known_to_that_version_on_that_chip(real):
    """For each chip this ncu lists: the full explicit list (every level, every precision) holds
    only metrics `--query-metrics --chips CHIP` knows (launch__ and sass__ metrics aside, which
    ncu collects but does not list), or is refused in one line; the list without tensor work
    always is collectable."""
    version, ncu = real
    chips = _run([str(ncu), "--list-chips"]).strip().split(", ")
    cc_of = _cc_of_chip()
    assert set(chips) <= set(cc_of), set(chips) - set(cc_of)
    refused = []
    for chip in chips:
        cc = cc_of[chip]
        for levels, precisions in (
            (("dram", "l2", "l1"), ("fp64", "fp32", "fp16", "tensor")),
            (("l2", "l1"), ("fp64", "fp32", "fp16")),
        ):
            try:
                wanted = metric_list(levels, precisions, cc, ncu_version=version, chip=chip)
            except ValueError as exc:
                assert_one_line_error(exc, None, cc if "CC" in str(exc) else chip)
                refused.append((chip, len(precisions)))
                continue
            out = _run(
                [str(ncu), "--query-metrics", "--chips", chip, "--query-metrics-mode", "suffix"]
                + ["--metrics", ",".join(wanted)]
            )
            unknown = [
                m for m in facts.unknown_metrics(out) if not m.startswith(("launch__", "sass__"))
            ]
            assert unknown == [], f"ncu {version} on {chip} (CC {cc}) lacks {unknown}"
    # Only the full list is ever refused (tensor on Xavier and GTX 16xx, DRAM on Orin).
    assert all(n == 4 for _, n in refused), refused


def test_ncu_2022_3_counts_tensor_work_with_the_tensor_pipe(real):
    version, ncu = real
    names = metric_list(["dram"], ["tensor"], "8.0", ncu_version=version)
    ops_path = [m for m in names if m.startswith("sm__ops_path_tensor_")]
    pipe = [m for m in names if "inst_executed_pipe_tensor" in m]
    if version < "2024.1":
        assert not ops_path and len(pipe) == 3
        assert "sass__inst_executed_per_opcode_with_modifier_all" in names
    else:
        assert ops_path and not pipe


# --- doctor ----------------------------------------------------------------------------------


def test_doctor_says_what_this_ncu_offers(real):
    version, ncu = real
    checks = {c.name: c for c in collector.doctor(env={"PATH": str(ncu.parent)})}
    offered = checks["ncu offers"].detail + "; " + checks["ncu defaults"].detail
    assert f"{version}" in checks["ncu"].detail and checks["ncu offers"].ok
    assert "roofline" in offered and "SpeedOfLight_HierarchicalTensorRooflineChart" in offered
    assert ".ncu-rep" in offered and "base, none, reset" in offered
    assert ("PmSampling" in offered) == (version >= "2024.1")


def test_samples_where_this_ncu_has_pm_sampling(real, capsys):
    """``profile --samples --sample-interval 2000``: ncu 2024.1 lists PmSampling and
    PmSampling_WarpStates (--list-sections) and takes the sections and --pm-sampling-interval
    with --set roofline (it gets to the driver); ncu 2022.3 has no PM sampling: refused in one line
    before it runs."""
    version, ncu = real
    offered = facts.ncu_facts(ncu, collector.ncu_version(ncu))
    opts = ProfileOptions(output=Path("r"), samples=True, sample_interval=2000)
    if version < "2024.1":
        assert "PmSampling" not in offered.sections
        with pytest.raises(SystemExit) as exc:
            cli.main(["profile", "--ncu", str(ncu), "-q", "--samples", "--", "./app"])
        assert exc.value.code == 2
        assert_one_line_error(capsys.readouterr().err, None, "no PmSampling section", "2024.1")
        return
    sections = collector.sampling_sections(opts, offered, ncu)
    assert sections == ("PmSampling", "PmSampling_WarpStates")
    cmd = build_command(ncu, opts, ["./app"], sections=sections)
    assert cmd[cmd.index("--pm-sampling-interval") + 1] == "2000"
    out = _run(cmd)
    assert DRIVER in out and not any(u in out for u in USAGE), out[:400]
    with pytest.raises(SystemExit) as exc:
        cli.main(["profile", "--ncu", str(ncu), "-q", "--samples", "--", "./app"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "CUDA driver")
