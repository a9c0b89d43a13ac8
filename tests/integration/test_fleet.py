"""Fleets: many reports as one dask job give the tables of each report analyzed alone; a corrupt
report is listed as a failure and the others succeed (LocalCluster through the CLI, and a real
``dask scheduler`` with two ``dask worker`` processes on the loopback address)."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import ncuroof
from ncuroof import schema
from ncuroof.errors import InputError
from ncuroof.parser.saved import read_table
from ncuroof.runs import fleet
from tests.helpers.cli import run
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO, needs_ncu_report, shared

pytestmark = needs_ncu_report

SMALL = (
    "ESMM-Research__profile_output.ncu-rep",
    "nsight-training__manual_nvtx.ncu-rep",
    "RooflineAnalysis_On_NVIDIA_GPU__output0.ncu-rep",
    "CudaCode__naive.ncu-rep",
)


def _runs(tmp_path: Path) -> list[str]:
    """Copies of small shared reports and a truncated one in tmp_path/runs;
    relative names, in order."""
    runs = tmp_path / "runs"
    runs.mkdir()
    names = []
    for i, name in enumerate(SMALL):
        shutil.copyfile(shared(name), runs / f"r{i}.ncu-rep")
        names.append(f"runs/r{i}.ncu-rep")
        if i == 1:
            (runs / "bad.ncu-rep").write_bytes(shared(name).read_bytes()[:60_000])
            names.append("runs/bad.ncu-rep")
    return names


def _alone(tmp_path: Path, names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each good report analyzed alone, concatenated (source as given)."""
    ks = []
    for n in names:
        if "bad" not in n:
            k = ncuroof.load(tmp_path / n)
            k = k.assign(source=n).astype({"source": "string"})
            ks.append(k)
    # concatenated texts held as the analysis holds them (schema.compact_text)
    kernels = schema.compact_text(pd.concat(ks, ignore_index=True), schema.LAUNCHES)
    points = pd.concat([ncuroof.points(k) for k in ks], ignore_index=True)
    return kernels, schema.compact_text(points, schema.POINTS)


def _equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        a.reset_index(drop=True), b.reset_index(drop=True), check_exact=True, check_dtype=False
    )
    assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes]


def test_fleet_on_local_cluster_equals_each_report_alone(tmp_path: Path) -> None:
    names = _runs(tmp_path)
    proc = run(
        "analyze", *names, "--stack", "--workers", "2", "-o", "out", "-q", cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    line = assert_one_line_error(proc.stderr, "runs/bad.ncu-rep", "truncated")
    assert line.startswith("ncuroof: error: runs/bad.ncu-rep: ")
    out = tmp_path / "out"
    failures = pd.read_csv(out / "failures.csv")
    assert failures["source"].tolist() == ["runs/bad.ncu-rep"]
    # One hive partition per good input, read back in input order.
    parts = sorted(p.name for p in (out / "launches.parquet").iterdir())
    assert parts == sorted(
        f"input_key={hashlib.sha1(n.encode()).hexdigest()[:16]}" for n in names if "bad" not in n
    )
    kernels, points = _alone(tmp_path, names)
    _equal(ncuroof.load(out), kernels)
    _equal(read_table(out / "points.parquet"), points)
    assert pd.read_csv(out / "launches.csv")["source"].tolist() == kernels["source"].tolist()
    assert "runs/bad.ncu-rep" in (out / "roofline.html").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fleet_on_a_real_scheduler_and_two_workers(tmp_path: Path) -> None:
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this Python")
    names = _runs(tmp_path)
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmds = [[str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]]
    cmds += [
        [
            str(dask),
            "worker",
            addr,
            "--nthreads",
            "1",
            "--nworkers",
            "1",
            "--no-dashboard",
            "--host",
            "127.0.0.1",
        ]
    ] * 2
    procs: list[subprocess.Popen] = []
    try:
        for cmd in cmds:
            procs.append(
                subprocess.Popen(
                    cmd, cwd="/", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
            time.sleep(1 if len(procs) == 1 else 0)
        from distributed import Client

        with Client(addr, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            result = fleet.run(names, scheduler=addr)
        finally:
            os.chdir(cwd)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    kernels, points = _alone(tmp_path, names)
    _equal(result.launches, kernels)
    _equal(ncuroof.points(result.launches), points)
    assert result.failures["source"].tolist() == ["runs/bad.ncu-rep"]


def test_no_input_succeeds_is_an_input_error(tmp_path: Path) -> None:
    for n in ("a", "b"):
        (tmp_path / f"{n}.ncu-rep").write_bytes(b"NVR\0" + b"\xff" * 64)
    with pytest.raises(InputError) as err:
        fleet.run([tmp_path / "a.ncu-rep", tmp_path / "b.ncu-rep"])
    assert_one_line_error(err, tmp_path / "a.ncu-rep", "2 inputs")


def test_unreachable_scheduler_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleet, "CONNECT_TIMEOUT_S", 2)
    port = _free_port()
    with pytest.raises(InputError) as err:
        fleet.run([shared(SMALL[0])], scheduler=f"tcp://127.0.0.1:{port}")
    assert_one_line_error(err, None, "dask scheduler", f"127.0.0.1:{port}")


def test_a_stack_runs_on_dask_from_sixteen_inputs_or_when_asked() -> None:
    from ncuroof.runs.fleet import FLEET_MIN_INPUTS, wanted

    assert (
        FLEET_MIN_INPUTS == 16
    )  # scripts/bench_fleet.py: dask pays from about 16 small reports on 2 cores
    assert not wanted(15, None) and wanted(16, None)
    assert wanted(2, None, workers=2) and wanted(1, "tcp://127.0.0.1:8786")


def _worker_levels() -> tuple[int, int]:
    """The effective levels of the ``distributed.worker`` and ``distributed`` loggers here."""
    import logging

    return (
        logging.getLogger("distributed.worker").getEffectiveLevel(),
        logging.getLogger("distributed").getEffectiveLevel(),
    )


@pytest.mark.parametrize(("root", "expected"), [("WARNING", "CRITICAL"), ("INFO", "INFO")])
def test_local_workers_log_only_what_verbose_asks_for(root: str, expected: str) -> None:
    """A worker's heartbeat racing the cluster's shutdown logged an ERROR traceback on our stderr
    after a successful run (CI, 2 cores): the local workers, and dask in this process, log at
    CRITICAL unless -v."""
    import logging

    before = logging.getLogger().level
    logging.getLogger().setLevel(root)
    try:
        with fleet._quiet_dask(), fleet._client(None, 1) as client:
            levels = list(client.run(_worker_levels).values())
            here = _worker_levels()
    finally:
        logging.getLogger().setLevel(before)
    want = logging.getLevelName(expected)
    assert levels == [(want, want)] and here == (want, want)
