"""Table outputs: pyarrow CSV equivalent to pandas' CSV, Parquet round trip bit for bit with the
schema's dtypes, units and metadata, ncuroof.load of a saved analysis, whole-or-nothing writes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ncuroof
from ncuroof import schema
from ncuroof.errors import InputError, OutputError
from ncuroof.output.folder import write_outputs
from ncuroof.output.tables import (
    CSV_ROWS,
    arrow_table,
    csv_bytes,
    csv_safe,
    dataset_writer,
    parquet_bytes,
    table_files,
)
from ncuroof.parser.ncu_rep import parallel
from ncuroof.parser.saved import read_table
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO, kernels_of, needs_ncu_report, shared

ESMM = "ESMM-Research__profile_output.ncu-rep"


def _awkward_kernels() -> pd.DataFrame:
    """A kernels table with the values a writer gets wrong: NaN, -0.0, subnormal,
    huge, None vs ''."""
    k = kernels_of(ESMM).copy()
    k = pd.concat([k, k], ignore_index=True)
    k["launch_id"] = np.arange(len(k))
    floats = [c for c, col in schema.LAUNCHES.items() if col.dtype == "float64"]
    special = [np.nan, -0.0, 5e-324, 1.7976931348623157e308, 0.1 + 0.2, 1 / 3, 1e-300, 123456789.0]
    for i, c in enumerate(floats):
        k.loc[i % len(k), c] = special[i % len(special)]
    k.loc[0, "nvtx_range"] = None
    k.loc[1, "nvtx_range"] = ""
    k["notes"] = k["notes"].astype(object)
    k.at[2, "notes"] = ['a "quoted", comma\nand newline', "a second note"]
    return schema.validate_launches(k)


def _same_bits(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert list(a.dtypes) == list(b.dtypes)
    for c in a.columns:
        if a[c].dtype == "float64":
            assert np.array_equal(a[c].to_numpy().view(np.int64), b[c].to_numpy().view(np.int64)), c
        else:
            pd.testing.assert_series_equal(a[c], b[c], check_exact=True)


@needs_ncu_report
def test_parquet_round_trip_is_bit_for_bit_with_units_and_metadata(tmp_path: Path) -> None:
    k = _awkward_kernels()
    inputs = [str(shared(ESMM)), "second input.ncu-rep"]
    path = tmp_path / "launches.parquet"
    path.write_bytes(parquet_bytes(arrow_table(k, schema.LAUNCHES, "launches", inputs)))
    back = read_table(path)
    _same_bits(k, back)
    assert pd.isna(back.loc[0, "nvtx_range"]) and back.loc[1, "nvtx_range"] == ""
    # Metadata as written, read independently of ncuroof's reader.
    s = pq.read_schema(path)
    assert s.metadata[b"ncuroof.schema_version"] == str(schema.SCHEMA_VERSION).encode()
    assert s.metadata[b"ncuroof.table"] == b"launches"
    assert json.loads(s.metadata[b"ncuroof.inputs"]) == inputs
    assert s.field("dram_bytes_per_s").metadata[b"unit"] == b"B/s"
    assert str(s.field("launch_id").type) == "int64" and str(s.field("cc").type) == "string"
    assert (
        back.attrs["units"]["time_s"] == "s" and back.attrs["units"]["fp32_flop_per_s"] == "FLOP/s"
    )
    assert back.attrs["inputs"] == inputs and back.attrs["schema_version"] == schema.SCHEMA_VERSION


@needs_ncu_report
def test_arrow_csv_reads_back_like_pandas_csv(tmp_path: Path) -> None:
    k = _awkward_kernels()
    ours = csv_bytes(arrow_table(k, schema.LAUNCHES, "launches"))
    a = pd.read_csv(io.BytesIO(ours))
    b = pd.read_csv(
        io.StringIO(schema.to_text(k).to_csv(index=False))
    )  # list columns as text, as ncuroof writes them
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        if pd.api.types.is_numeric_dtype(b[c]):
            # Same doubles (a whole float is written without '.0', so pandas may infer int64).
            assert np.array_equal(a[c].to_numpy(float), b[c].to_numpy(float), equal_nan=True), c
        else:
            assert a[c].fillna("").astype(str).tolist() == b[c].fillna("").astype(str).tolist(), c
    # ncuroof's reader restores the declared dtypes and tells None from ''.
    (tmp_path / "launches.csv").write_bytes(ours)
    _same_bits(k, read_table(tmp_path / "launches.csv"))


@needs_ncu_report
def test_analyze_format_parquet_and_load_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncuroof",
            "analyze",
            str(shared(ESMM)),
            "-o",
            str(out),
            "-q",
            "--format",
            "csv,parquet",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "kernels.csv",
        "kernels.parquet",
        "launches.csv",
        "launches.parquet",
        "ncuroof-manifest.json",
        "points.csv",
        "points.parquet",
        "roofline.html",
    ]
    direct = ncuroof.load(shared(ESMM))
    for saved in (out, out / "launches.parquet"):
        _same_bits(direct, ncuroof.load(saved))
    pts = read_table(out / "points.parquet")
    _same_bits(ncuroof.points(direct), pts)
    assert pts.attrs["units"]["ai_flop_per_byte"] == "FLOP/B"
    # The CSV of the same run, read by pandas, has the same values as the Parquet.
    csv = pd.read_csv(out / "launches.csv")
    assert np.array_equal(csv["time_s"].to_numpy(float), direct["time_s"].to_numpy(float))
    assert csv["kernel_name"].tolist() == direct["kernel_name"].tolist()


def test_not_a_table_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "launches.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError) as err:
        ncuroof.load(bad)
    assert_one_line_error(err, bad, "table")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import ncuroof.cli; ncuroof.cli.main(['compare', '{bad}', '{bad}'])",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr, bad, "table")


def test_failing_writer_leaves_nothing(tmp_path: Path) -> None:
    def broken(path: Path) -> None:
        path.mkdir()
        (path / "part-0.parquet").write_bytes(b"x")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError) as err:
        write_outputs(tmp_path / "out", {"a.csv": "x\n", "launches.parquet": broken})
    assert_one_line_error(err, tmp_path / "out", "No space left")  # the OS's reason passed on
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_dataset_directory_replaces_the_old_one(tmp_path: Path) -> None:
    t = arrow_table(
        pd.DataFrame({"source": ["a", "b"], "error": ["x", "y"]}),
        schema.FAILURES,
        "failures",
        ["a", "b"],
    )
    out = tmp_path / "out"
    write_outputs(out, {"failures.parquet": dataset_writer(t)})
    t2 = arrow_table(
        pd.DataFrame({"source": ["c"], "error": ["z"]}), schema.FAILURES, "failures", ["c"]
    )
    write_outputs(out, {"failures.parquet": dataset_writer(t2)})
    back = read_table(out / "failures.parquet")
    assert back["source"].tolist() == ["c"] and back["error"].tolist() == ["z"]


@needs_ncu_report
def test_parquet_only_directory_compares_and_bad_format_is_refused(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ncuroof", *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    out = tmp_path / "out"
    assert (
        run("analyze", str(shared(ESMM)), "-o", str(out), "-q", "--format", "parquet").returncode
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "kernels.parquet",
        "launches.parquet",
        "ncuroof-manifest.json",
        "points.parquet",
        "roofline.html",
    ]
    proc = run("compare", str(out), str(out), "-o", str(tmp_path / "cmp"), "-q")
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "cmp" / "compare.csv")
    assert len(table) == len(kernels_of(ESMM)) and np.allclose(table["speedup"], 1.0)
    bad = run("analyze", str(shared(ESMM)), "-o", str(tmp_path / "x"), "--format", "csv,feather")
    assert bad.returncode == 2 and "feather" in bad.stderr and not (tmp_path / "x").exists()


def _as_text(k: pd.DataFrame) -> pd.DataFrame:
    """``k`` with its category text columns back as plain 'string' columns (as held before
    schema.compact_text)."""
    cats = [c for c, d in k.dtypes.items() if isinstance(d, pd.CategoricalDtype)]
    return k.astype(dict.fromkeys(cats, "string"))


@needs_ncu_report
def test_files_of_category_texts_written_in_slices_equal_the_plain_text_table_at_once(
    tmp_path: Path,
) -> None:
    """table_files writes a launch table of category texts a slice at a time (CSV_ROWS rows,
    formatted in threads): the files are byte for byte those of the same table with plain text
    columns written whole (the writer before it), formula-like cells escaped in the CSV (a
    dictionary's values) and not in the Parquet file."""
    k = _as_text(_awkward_kernels())
    k = pd.concat([k] * (2 * CSV_ROWS // len(k) + 3), ignore_index=True)
    k["launch_id"] = np.arange(len(k))
    k.loc[::7, "advice"] = '=HYPERLINK("http://x")'
    k.loc[1::7, "advice"] = None
    k.loc[2::7, "evidence"] = "-1 + 2"
    held = schema.validate_launches(k)
    assert isinstance(held["advice"].dtype, pd.CategoricalDtype)
    assert len(held) > 2 * CSV_ROWS
    files = table_files({"launches": held}, ("csv", "parquet"), ["in.ncu-rep"])
    write_outputs(tmp_path / "out", files)
    plain = arrow_table(_as_text(held), schema.LAUNCHES, "launches", ["in.ncu-rep"])
    assert not any(str(f.type).startswith("dictionary") for f in plain.schema)
    written = (tmp_path / "out" / "launches.csv").read_bytes()
    assert written == csv_bytes(csv_safe(plain))
    assert written.count(b'"\'=HYPERLINK(""http://x"")"') == len(k[::7])
    assert written.count(b'"\'-1 + 2"') == len(k[2::7])
    assert (tmp_path / "out" / "launches.parquet").read_bytes() == parquet_bytes(plain)


def test_compact_text_keeps_the_values_missing_and_empty_apart() -> None:
    """compact_text holds the COMPACT_TEXT columns as category: the same texts, a missing cell still
    missing and '' still '', a number as its text (as a 'string' column), fillna('') possible; the
    other columns untouched."""
    columns = {n: schema.LAUNCHES[n] for n in ("advice", "cc", "kernel_name", "time_s")}
    df = pd.DataFrame(
        {
            "advice": pd.Series(["a", None, "", "a"], dtype="string"),
            "cc": pd.Series(["8.6", 9.0, None, "8.6"], dtype=object),
            "kernel_name": pd.Series(["k", "k", None, "j"], dtype="string"),
            "time_s": [1.0, 2.0, np.nan, 4.0],
        }
    )
    out = schema.compact_text(df, columns)
    assert [str(out[c].dtype) for c in out] == ["category", "category", "string", "float64"]
    assert out["advice"].isna().tolist() == [False, True, False, False]
    assert out["advice"].fillna("").tolist() == ["a", "", "", "a"]
    assert out["cc"].astype(object).tolist()[:2] == ["8.6", "9.0"] and pd.isna(out["cc"][2])
    assert out["kernel_name"] is df["kernel_name"] or out["kernel_name"].equals(df["kernel_name"])
    assert schema.compact_text(out, columns)["advice"].equals(out["advice"])


def test_returning_pool_leaves_the_environment() -> None:
    """The command line's Arrow pool choice stays in the process: ``ncuroof profile`` runs the
    user's program with the environment."""
    code = (
        "import os, pyarrow as pa; from ncuroof.parser import memory;"
        " memory.use_returning_pool();"
        " print(pa.default_memory_pool().backend_name, os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env["PYTHONPATH"] = str(REPO / "src")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    pool, environ = out.stdout.split()
    assert environ == "None"
    assert pool == ("jemalloc" if _has_jemalloc() else pool)


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


def test_decoding_workers_take_this_process_arrow_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoding worker is started with this process's Arrow pool, whatever the environment."""
    seen: dict[str, str] = {}

    def popen(*args: object, env: dict[str, str], **kwargs: object) -> object:
        seen.update(env)
        return object()

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setattr(parallel.subprocess, "Popen", popen)
    parallel._remove(parallel._start("json").result)
    assert seen["ARROW_DEFAULT_MEMORY_POOL"] == pa.default_memory_pool().backend_name
    assert "ARROW_DEFAULT_MEMORY_POOL" not in os.environ


def test_validate_raw_holds_the_demangled_name_once_each() -> None:
    """validate_raw holds the RAW_COMPACT columns as compact_text does (string categories, a missing
    name still missing, fillna('') possible), from text (ncu_report, CSV) and from the decoder's
    category of 'str' categories alike: the same values and the same dtype either way."""
    meta = {n: None for n in schema.RAW_META}
    names = ["void k<int>(int)", None, "void k<int>(int)", "b()"]
    rows = [{**meta, "source": "r", "range_id": 0, "launch_id": i} for i in range(4)]
    as_text = pd.DataFrame(rows).assign(kernel_demangled=pd.Series(names, dtype="str"))
    as_codes = as_text.assign(kernel_demangled=as_text["kernel_demangled"].astype("category"))
    a, b = schema.validate_raw(as_text, "r"), schema.validate_raw(as_codes, "r")
    for out in (a, b):
        col = out["kernel_demangled"]
        assert isinstance(col.dtype, pd.CategoricalDtype)
        assert str(col.cat.categories.dtype) == "string"
        assert col.isna().tolist() == [False, True, False, False]
        assert col.fillna("").tolist() == ["void k<int>(int)", "", "void k<int>(int)", "b()"]
    assert sorted(a["kernel_demangled"].cat.categories) == sorted(
        b["kernel_demangled"].cat.categories
    )


def test_two_writers_of_one_folder_take_turns_and_leave_no_lock(tmp_path: Path) -> None:
    """Issue 53 item 2: a run into a folder another run is writing waits for it (here: the lock
    held by hand for 0.3 s), then replaces its files as the manifest says; nothing but the folder
    is left beside it."""
    import threading
    import time

    from ncuroof.output import folder

    out = tmp_path / "o"
    write_outputs(out, {"a.csv": "1\n", "roofs.csv": "r\n"})
    done = []
    with folder._one_writer(out):
        t = threading.Thread(target=lambda: done.append(write_outputs(out, {"a.csv": "2\n"})))
        t.start()
        time.sleep(0.3)
        assert done == [] and (out / "roofs.csv").exists()  # it waits, nothing written yet
    t.join(30)
    assert done == [None]
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "ncuroof-manifest.json"]
    assert (out / "a.csv").read_text() == "2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["o"]


def test_a_staging_folder_a_killed_run_left_is_removed_by_the_next(tmp_path: Path) -> None:
    out = tmp_path / "o"
    write_outputs(out, {"a.csv": "1\n"})
    (out / ".o.new.abc123").mkdir()
    (out / ".o.new.abc123" / "launches.csv").write_text("partial")
    (tmp_path / ".o.new.zz").mkdir()
    (out / ".other").mkdir()  # not ncuroof's: kept
    write_outputs(out, {"a.csv": "2\n"})
    assert sorted(p.name for p in out.iterdir()) == [".other", "a.csv", "ncuroof-manifest.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["o"]
