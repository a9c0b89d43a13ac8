"""Bad input and unwritable output: one line on stderr naming the file, exit code 2, no
traceback, no output directory left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import NCUROOF, assert_clean_failure, run
from tests.helpers.reports import needs_ncu_report, shared


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ncu-rep"
    proc = run("analyze", str(missing), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, missing, tmp_path / "out", "no such file")


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", ("empty",)),
        (os.urandom(4096), ("Nsight Compute report",)),
        (b'"ID","Process ID","Process Name"\n"0","1","a.out"\n', ("text",)),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 64, ("Nsight Compute report",)),
    ],
)
def test_not_a_report(tmp_path: Path, content: bytes, words: tuple[str, ...]) -> None:
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(content)
    proc = run("analyze", str(bad), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, bad, tmp_path / "out", *words)


@needs_ncu_report
@pytest.mark.parametrize("cut", [0.5, 0.999, -1])
def test_truncated_report(tmp_path: Path, cut: float) -> None:
    src = shared("ESMM-Research__profile_output.ncu-rep").read_bytes()
    size = len(src) - 1 if cut == -1 else int(len(src) * cut)
    bad = tmp_path / "cut.ncu-rep"
    bad.write_bytes(src[:size])
    proc = run("analyze", str(bad), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, bad, tmp_path / "out", "truncated")


def test_directory_as_input(tmp_path: Path) -> None:
    proc = run("analyze", str(tmp_path), "-o", str(tmp_path / "out"))
    assert_clean_failure(proc, tmp_path)


@needs_ncu_report
def test_unwritable_output(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root writes anywhere: use a path whose parent is a file instead
        blocker = tmp_path / "file"
        blocker.write_text("x")
        out = blocker / "out"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        out = locked / "out"
    report = shared("ESMM-Research__profile_output.ncu-rep")
    proc = run("analyze", str(report), "-o", str(out))
    assert_clean_failure(proc, out)
    assert not out.exists()


def test_missing_ncu_report_module_names_the_fix(tmp_path: Path) -> None:
    """Where ncu_report is not installed, --reader ncu_report says how to get it or export a CSV."""
    report = shared("ESMM-Research__profile_output.ncu-rep")
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "ncu_report.py").write_text("raise ImportError('blocked for the test')\n")
    env = dict(os.environ, PYTHONPATH=f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(
        [*NCUROOF, "analyze", str(report), "-o", str(tmp_path / "out"), "--reader", "ncu_report"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert_clean_failure(proc, report, tmp_path / "out", "pip install ncu-report", "--csv")


@needs_ncu_report
def test_existing_output_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = shared("ESMM-Research__profile_output.ncu-rep")
    assert run("analyze", str(report), "-o", str(out), "-q").returncode == 0
    first = {p.name: p.stat().st_size for p in out.iterdir()}
    assert run("analyze", str(report), "-o", str(out), "-q").returncode == 0
    assert {p.name: p.stat().st_size for p in out.iterdir()} == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], (
        "no temporary directory left"
    )
    shutil.rmtree(out)
