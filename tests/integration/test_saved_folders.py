"""Saved runs and option files are input too (issues 43 and 45): what ``compare`` and ``load`` read
back from an output folder is validated as fresh tables are, every file goes through one reading
gate, and no failure ever exits with 1, the code of a failed gate. Inputs are built here from the
embedded ESMM report."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ncuroof
from ncuroof.errors import InputError
from tests.helpers.cli import assert_clean_failure, run
from tests.helpers.reports import shared

ESMM = "ESMM-Research__profile_output.ncu-rep"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ncuroof analyze`` of the ESMM report, with Parquet too (CSV and Parquet forgeries)."""
    out = tmp_path_factory.mktemp("saved") / "a"
    proc = run("analyze", str(shared(ESMM)), "-q", "-o", str(out), "--format", "csv,parquet")
    assert proc.returncode == 0, proc.stderr
    return out


def _forged(saved: Path, tmp_path: Path, edit) -> Path:
    """A copy of the saved folder whose launches.csv is ``edit(frame)`` (its Parquet removed, so the
    CSV is what is read)."""
    out = tmp_path / "forged"
    shutil.copytree(saved, out)
    (out / "launches.parquet").unlink()
    (out / "manifest.json").unlink(missing_ok=True)
    k = pd.read_csv(out / "launches.csv")
    changed = edit(k)  # in place, or a new frame
    (k if changed is None else changed).to_csv(out / "launches.csv", index=False)
    return out


def _negative_time(k: pd.DataFrame) -> None:
    k.loc[1, "time_s"] = -k.loc[1, "time_s"]


def _inf_flop(k: pd.DataFrame) -> None:
    k.loc[0, "fp32_flop"] = np.inf


def _huge_flop(k: pd.DataFrame) -> None:
    k.loc[0, "fp32_flop"] = 1e300


def _negative_bytes(k: pd.DataFrame) -> None:
    k.loc[2, "dram_bytes"] = -1.0


def _negative_peak(k: pd.DataFrame) -> None:
    k.loc[0, "peak_fp32_flop_per_s"] = -5e12


def _bad_bound(k: pd.DataFrame) -> None:
    k.loc[0, "bound"] = "fastest"


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (_negative_time, ("'time_s'", "row 2", "negative")),
        (_inf_flop, ("'fp32_flop'", "row 1", "not finite")),
        (_huge_flop, ("'fp32_flop'", "beyond any GPU")),
        (_negative_bytes, ("'dram_bytes'", "row 3", "negative")),
        (_negative_peak, ("'peak_fp32_flop_per_s'", "negative")),
        (_bad_bound, ("'bound'", "not one of")),
    ],
)
def test_an_edited_saved_table_is_refused_never_judged(saved, tmp_path, edit, words) -> None:
    forged = _forged(saved, tmp_path, edit)
    for before, after in ((saved, forged), (forged, saved)):
        proc = run(
            "compare", str(before), str(after), "--fail-if-slower", "5", "-o", str(tmp_path / "c")
        )
        assert_clean_failure(proc, forged / "launches.csv", tmp_path / "c", *words)
    with pytest.raises(InputError, match="launches.csv"):  # ncuroof.load reads it back the same way
        ncuroof.load(forged)


def test_a_repeated_launch_row_is_corrupt_input_not_a_slowdown(saved, tmp_path) -> None:
    out = tmp_path / "twice"
    shutil.copytree(saved, out)
    (out / "launches.parquet").unlink()
    (out / "manifest.json").unlink(missing_ok=True)
    k = pd.read_csv(out / "launches.csv")
    pd.concat([k, k.iloc[[0]]], ignore_index=True).to_csv(out / "launches.csv", index=False)
    proc = run("compare", str(saved), str(out), "--fail-if-slower", "5", "-o", str(tmp_path / "c"))
    assert_clean_failure(proc, out / "launches.csv", tmp_path / "c", "repeats a launch", "row 5")


def test_a_saved_table_without_an_identity_column_is_refused(saved, tmp_path) -> None:
    forged = _forged(saved, tmp_path, lambda k: k.drop(columns=["launch_id"]))
    proc = run("compare", str(saved), str(forged), "-o", str(tmp_path / "c"))
    assert_clean_failure(proc, forged / "launches.csv", tmp_path / "c", "launch_id")


def test_a_duplicated_column_is_refused(saved, tmp_path) -> None:
    out = tmp_path / "dup"
    shutil.copytree(saved, out)
    (out / "launches.parquet").unlink()
    (out / "manifest.json").unlink(missing_ok=True)
    lines = (out / "launches.csv").read_text(encoding="utf-8").splitlines()
    lines = [f"{line},{line.split(',')[0]}" for line in lines[:1]] + [
        f"{line},{line.split(',')[0]}" for line in lines[1:]
    ]
    (out / "launches.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run("compare", str(saved), str(out), "-o", str(tmp_path / "c"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "launches.csv" in proc.stderr and "internal error" not in proc.stderr


def _parquet_folder(saved: Path, tmp_path: Path, table: pa.Table, name: str = "p") -> Path:
    out = tmp_path / name
    shutil.copytree(saved, out)
    (out / "launches.csv").unlink()
    (out / "manifest.json").unlink(missing_ok=True)
    pq.write_table(table, out / "launches.parquet")
    return out


def test_forged_parquet_is_refused_in_one_line(saved, tmp_path) -> None:
    t = pq.read_table(saved / "launches.parquet")
    meta = dict(t.schema.metadata)
    cases = {
        "version": (
            t.replace_schema_metadata({**meta, b"ncuroof.schema_version": b"abc"}),
            "schema_version",
        ),
        "strings": (
            pa.table(
                {
                    n: pa.array(["abc"] * len(c)) if n == "time_s" else c
                    for n, c in zip(t.column_names, t.columns)
                }
            ).replace_schema_metadata(meta),
            "time_s",
        ),
        "no_time": (t.drop(["time_s"]), "time_s"),
    }
    for name, (table, word) in cases.items():
        folder = _parquet_folder(saved, tmp_path, table, name)
        proc = run(
            "compare",
            str(saved),
            str(folder),
            "--fail-if-slower",
            "5",
            "-o",
            str(tmp_path / f"c{name}"),
        )
        assert proc.returncode == 2, (name, proc.stderr)
        assert_clean_failure(proc, folder / "launches.parquet", None, word)


@pytest.mark.parametrize("kind", ["fifo", "urandom"])
def test_a_fifo_or_device_in_a_saved_folder_does_not_hang(saved, tmp_path, kind) -> None:
    out = tmp_path / kind
    shutil.copytree(saved, out)
    for f in ("launches.parquet", "manifest.json", "launches.csv"):
        (out / f).unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(out / "launches.csv")
    else:
        (out / "launches.csv").symlink_to("/dev/urandom")
    start = time.monotonic()
    proc = run("compare", str(saved), str(out), "-o", str(tmp_path / "c"), timeout=30)
    assert time.monotonic() - start < 10
    assert_clean_failure(proc, out / "launches.csv", tmp_path / "c", "not a regular file")


@pytest.mark.parametrize("kind", ["zero", "fifo", "big"])
def test_a_pair_file_is_a_bounded_regular_file(saved, tmp_path, kind) -> None:
    if kind == "zero":
        pair = Path("/dev/zero")
    elif kind == "fifo":
        pair = tmp_path / "pairs.toml"
        os.mkfifo(pair)
    else:
        pair = tmp_path / "pairs.toml"
        with open(pair, "wb") as f:
            f.truncate(17 * 1024 * 1024)  # sparse: 17 MiB past limits.option_file_bytes
    start = time.monotonic()
    proc = run(
        "compare",
        str(saved),
        str(saved),
        "--pair-file",
        str(pair),
        "-o",
        str(tmp_path / "c"),
        timeout=30,
    )
    assert time.monotonic() - start < 10
    word = "option_file_bytes" if kind == "big" else "not a regular file"
    assert_clean_failure(proc, pair, tmp_path / "c", word)


@pytest.mark.parametrize("pattern", ["(a+)+$", "^(a|aa)+$"])
def test_a_backtracking_pattern_returns_within_seconds(tmp_path, pattern) -> None:
    """Issue 43: kernel names of forty and sixty ``a`` and a ``!``; Python's ``re`` runs for
    minutes on these patterns. Each is answered (no kernel, or the time limit) in seconds."""
    text = shared("ESMM-Research__metrics.csv").read_text(encoding="utf-8")
    before = tmp_path / "b.csv"
    before.write_text(text.replace("basic(", "a" * 60 + "!basic("), encoding="utf-8")
    start = time.monotonic()
    proc = run(
        "compare",
        str(before),
        str(shared("ESMM-Research__metrics.csv")),
        "--pair",
        f"regex:{pattern}=x",
        "-o",
        str(tmp_path / "c"),
        timeout=60,
    )
    assert time.monotonic() - start < 10
    line = assert_clean_failure(proc, None, tmp_path / "c", pattern)
    assert "regex_seconds" in line or "names no kernel" in line
