"""Multi-rank runs: the spread over ranks and the load-imbalance flag checked by hand arithmetic on
synthetic ranks made from a real report; rank recognition from file names and from the process
ID stored in the report (binary-edited copies)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, kernels_of, needs_ncu_report, shared

import ncuroof
from ncuroof import catalog, ranks
from ncuroof.summary import kernel_summary

pytestmark = needs_ncu_report

ESMM = "ESMM-Research__profile_output.ncu-rep"
#: Time factor of each rank, per kernel: warptiling's slowest rank is 1.25 / 1.05 - 1 = 19 % over
#: the median (flagged), the others' at most 1.08 / 1.05 - 1 = 2.9 % (not flagged).
FACTORS = {"warptiling": (1.0, 1.25, 1.05), "default": (1.08, 1.0, 1.05)}


def _rank(k: pd.DataFrame, r: int) -> pd.DataFrame:
    """Rank r: every launch's time scaled by its kernel's factor, achieved rates divided by it."""
    f = np.array([FACTORS.get(n, FACTORS["default"])[r] for n in k["kernel_name"]])
    out = k.copy()
    out["time_s"] = k["time_s"] * f
    for c in k.columns:
        if c.endswith("_per_s") and not c.startswith("peak_"):
            out[c] = k[c] / f
    return out.assign(source=f"rank{r}").astype({"source": "string"})


def test_spread_and_flag_by_hand() -> None:
    base = kernels_of(ESMM)
    k = pd.concat([_rank(base, r) for r in range(3)], ignore_index=True)
    threshold = catalog.load().thresholds["ranks"]["imbalance"]
    assert threshold == 0.10
    table = ranks.spread(k, ncuroof.points(k), {f"rank{r}": str(r) for r in range(3)}, threshold).set_index("kernel_name")
    s0 = kernel_summary(base, ncuroof.points(base)).set_index("kernel_name")
    assert sorted(table.index) == sorted(s0.index) and (table["ranks"] == 3).all()
    for name, row in table.iterrows():
        f = sorted(FACTORS.get(name, FACTORS["default"]))
        t, ai, rf = s0.loc[name, ["time_s", "ai_flop_per_byte", "roof_fraction"]]
        np.testing.assert_allclose(row[["time_s_min", "time_s_median", "time_s_max"]].to_numpy(float), [t * x for x in f], rtol=1e-12)
        np.testing.assert_allclose(row[["ai_flop_per_byte_min", "ai_flop_per_byte_median", "ai_flop_per_byte_max"]].to_numpy(float),
                                   [ai] * 3, rtol=1e-12)
        np.testing.assert_allclose(row[["roof_fraction_min", "roof_fraction_median", "roof_fraction_max"]].to_numpy(float),
                                   [rf / f[2], rf / f[1], rf / f[0]], rtol=1e-12)
        factors = FACTORS.get(name, FACTORS["default"])
        assert row["slowest_rank"] == str(int(np.argmax(factors))) and row["fastest_rank"] == str(int(np.argmin(factors)))
        np.testing.assert_allclose(row["imbalance"], f[2] / f[1] - 1, rtol=1e-12)
    assert table["load_imbalance"].to_dict() == {n: n == "warptiling" for n in table.index}


def _copy_with_pid(src: Path, dst: Path, pid: int) -> None:
    """A copy of a report whose process messages name another process ID (a varint of the same length)."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)

    proc = ranks.process_of(src)
    assert proc is not None
    old = b"\x08" + varint(proc["pid"]) + b"\x12" + bytes([len(proc["host"])]) + proc["host"].encode()
    new = b"\x08" + varint(pid) + old[1 + len(varint(proc["pid"])):]
    data = src.read_bytes()
    assert len(new) == len(old) and data[:4096].count(old) >= 1  # the block header and the session's process
    dst.write_bytes(data.replace(old, new))


def test_ranks_recognised_from_names_and_processes(tmp_path: Path) -> None:
    src = shared(ESMM)
    pid = ranks.process_of(src)["pid"]
    assert ranks.process_of(src) == {"pid": 9166, "host": "127.0.0.1", "executable": "/home/ec2-user/cuda_work/tests/a.out"}
    for r in range(3):
        _copy_with_pid(src, tmp_path / f"app.{r}.ncu-rep", pid + 1 + r)
        shutil.copyfile(src, tmp_path / f"same.{r}.ncu-rep")
    assert ranks.process_of(tmp_path / "app.2.ncu-rep")["pid"] == pid + 3
    distinct = [tmp_path / f"app.{r}.ncu-rep" for r in range(3)]
    assert ranks.looks_like_ranks(distinct)
    assert not ranks.looks_like_ranks([tmp_path / f"same.{r}.ncu-rep" for r in range(3)])  # one process: not ranks
    assert not ranks.looks_like_ranks([shared("gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep"),
                                       shared("gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep")])  # parts of one run
    assert ranks.rank_labels(distinct) == ["0", "1", "2"]
    shutil.copyfile(tmp_path / "app.0.ncu-rep", tmp_path / "alpha.ncu-rep")
    shutil.copyfile(tmp_path / "app.1.ncu-rep", tmp_path / "beta.ncu-rep")
    assert ranks.rank_labels([tmp_path / "alpha.ncu-rep", tmp_path / "beta.ncu-rep"]) == [f"127.0.0.1:{pid + 1}", f"127.0.0.1:{pid + 2}"]


@pytest.mark.parametrize("flag", [["--ranks"], []])
def test_analyze_ranks_writes_the_spread(tmp_path: Path, flag: list[str]) -> None:
    src = shared(ESMM)
    for r in range(3):
        _copy_with_pid(src, tmp_path / f"app.{r}.ncu-rep", 200 + r) if not flag else shutil.copyfile(src, tmp_path / f"app.{r}.ncu-rep")
    proc = subprocess.run([sys.executable, "-m", "ncuroof", "analyze", *(f"app.{r}.ncu-rep" for r in range(3)), *flag, "-o", "out", "-q"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "out" / "ranks.csv").set_index("kernel_name")
    s0 = kernel_summary(kernels_of(ESMM), ncuroof.points(kernels_of(ESMM))).set_index("kernel_name")
    assert (table["ranks"] == 3).all() and not table["load_imbalance"].any()
    for stat in ("min", "median", "max"):
        np.testing.assert_array_equal(table[f"time_s_{stat}"].to_numpy(float), s0.loc[table.index, "time_s"].to_numpy(float))
    assert len(ncuroof.load(tmp_path / "out")) == 3 * len(kernels_of(ESMM))
    assert "MPI ranks" in (tmp_path / "out" / "roofline.html").read_text()
