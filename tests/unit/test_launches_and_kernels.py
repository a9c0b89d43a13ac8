"""Issue 40: ``launches.csv`` holds one row per launch and ``kernels.csv`` one row per kernel, its
sums and rates equal to those of its launches (a second path: pandas over launches.csv); a folder
written before schema version 2 (``kernels.csv`` holding launches) still loads and compares."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import schema
from ncuroof.parser.saved import MANIFEST, read_manifest, read_table, saved_launches
from tests.helpers.reports import fixture_path

CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"  # 3 launches of 2 kernels, embedded


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = fixture_path(CUTLASS)
    if path is None:
        pytest.skip(f"{CUTLASS} is in neither fixtures/third_party nor ../shared")
    out = tmp_path_factory.mktemp("cutlass") / "out"
    ncuroof.analyze(path, out, formats=("csv", "parquet"), plotlyjs="cdn")
    return out


def test_kernels_csv_is_one_row_per_kernel_summed_from_launches_csv(saved) -> None:
    launches = pd.read_csv(saved / "launches.csv")
    kernels = pd.read_csv(saved / "kernels.csv")
    assert list(kernels.columns[: len(schema.KERNELS)]) == list(schema.KERNELS)
    assert len(launches) > len(kernels) == launches["kernel_key"].nunique() > 1
    g = launches.groupby("kernel_key")
    k = kernels.set_index("kernel_key")
    assert (k["launches"] == g.size().reindex(k.index)).all()
    np.testing.assert_allclose(k["time_s"], g["time_s"].sum().reindex(k.index), rtol=1e-12)
    assert (np.diff(kernels["time_s"].to_numpy()) <= 0).all()  # longest first
    for col in ("fp32_flop", "dram_bytes", "l2_bytes"):
        np.testing.assert_allclose(k[col], g[col].sum().reindex(k.index), rtol=1e-12)
        # the rate: summed work over the summed time of the launches that have it
        timed = launches[launches[col].notna()].groupby("kernel_key")
        rate = timed[col].sum() / timed["time_s"].sum()
        np.testing.assert_allclose(k[f"{col}_per_s"], rate.reindex(k.index), rtol=1e-12)
    assert set(k["bound"]) <= set(schema.BOUNDS) and k["diagnosis"].notna().all()


def test_the_document_and_the_files_say_which_table_is_which(saved) -> None:
    listed = read_manifest(saved)
    assert {"launches.csv", "launches.parquet", "kernels.csv", "kernels.parquet"} <= set(listed)
    meta = read_table(saved / "launches.parquet").attrs
    assert meta["schema_version"] == schema.SCHEMA_VERSION == 2
    assert saved_launches(saved) == saved / "launches.parquet"
    with pytest.raises(ncuroof.NcuroofError, match="one row per kernel"):
        ncuroof.load(saved / "kernels.parquet")


def _version_one(v2, to):
    """The folder ncuroof wrote before schema version 2: the launches as kernels.csv, no
    launches table, its manifest listing what it held."""
    to.mkdir()
    shutil.copy(v2 / "launches.csv", to / "kernels.csv")
    shutil.copy(v2 / "points.csv", to / "points.csv")
    (to / MANIFEST).write_text(json.dumps({"files": ["kernels.csv", "points.csv"]}))
    return to


def test_a_version_one_folder_loads_and_compares_as_launches(saved, tmp_path) -> None:
    old = _version_one(saved, tmp_path / "old")
    assert saved_launches(old) == old / "kernels.csv"
    a, b = ncuroof.load(old), ncuroof.load(saved)
    assert len(a) == len(b) and a["launch_id"].tolist() == b["launch_id"].tolist()
    np.testing.assert_allclose(a["time_s"], b["time_s"], rtol=0)
    res = ncuroof.compare_runs(old, saved, tmp_path / "cmp", plotlyjs="cdn")
    matched = res.table["speedup"].dropna()
    assert len(matched) and (matched == 1.0).all()


def test_a_library_call_writes_nothing_unless_given_a_folder(tmp_path) -> None:
    """Issue 54 item 3: ``compare_runs(a, b)`` and ``analyze(a)`` without an output folder write
    nothing beside their inputs (the CLI asks for its default with ``write=True``)."""
    src = tmp_path / "in" / "r.ncu-rep"
    src.parent.mkdir()
    shutil.copy(fixture_path("ESMM-Research__profile_output.ncu-rep"), src)
    assert ncuroof.analyze(src).outdir is None
    assert ncuroof.compare_runs(src, src).outdir is None
    assert sorted(p.name for p in src.parent.iterdir()) == ["r.ncu-rep"]
    assert ncuroof.analyze(src, write=True).outdir == src.parent / "r.ncuroof"


def test_a_kernel_quotes_the_geometry_of_its_longest_launch() -> None:
    """Issue 50 class 4: the kernel row quoted a median geometry no launch had (171,500 blocks
    over launches of 290,304 / 68,600 / 68,600 / 274,400). Now the longest launch's blocks,
    threads and waves, which some launch had."""
    from ncuroof.model import summary
    from tests.helpers import synthetic

    k = synthetic.kernels_table(40, 1, seed=3)
    k = k.iloc[:4].copy()
    k["grid"] = ["(290304, 1, 1)", "(68600, 1, 1)", "(68600, 1, 1)", "(274400, 1, 1)"]
    k["block"] = ["(128, 1, 1)", "(256, 1, 1)", "(256, 1, 1)", "(64, 1, 1)"]
    k["waves_per_sm"] = [10.0, 2.0, 2.0, 9.0]
    k["time_s"] = [1e-3, 2e-3, 2e-3, 5e-3]  # the fourth launch is the longest
    s = summary.kernel_summary(k, ncuroof.points(k)).iloc[0]
    assert (s["blocks"], s["threads_per_block"], s["waves_per_sm"]) == (274400, 64, 9.0)


def test_kernel_filter_keeps_the_named_kernels_with_their_numbers() -> None:
    """``-k NAME`` / ``-k regex:PATTERN`` (issue 54, as ncu's -k): only those kernels' launches,
    each with the numbers the unfiltered analysis gives it; no match is one line naming the
    kernels there are."""
    from ncuroof.errors import InputError
    from ncuroof.model.analysis import AnalysisOptions, build
    from tests.helpers.reports import shared

    report = [shared("ESMM-Research__profile_output.ncu-rep")]
    full = build(report).launches.set_index("kernel_name")
    for pattern, names in (
        ("warptiling", {"warptiling"}),
        ("regex:^(one|two)_", {"one_blocktiling", "two_blocktiling"}),
    ):
        got = build(report, AnalysisOptions(kernels=pattern)).launches
        assert set(got["kernel_name"]) == names
        for r in got.itertuples():
            assert r.time_s == full.loc[r.kernel_name, "time_s"]
            assert r.fp32_flop == full.loc[r.kernel_name, "fp32_flop"]
    with pytest.raises(InputError, match="no kernel matches -k 'gemm'.*warptiling"):
        build(report, AnalysisOptions(kernels="gemm"))
