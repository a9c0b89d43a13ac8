"""Real ncu CSV exports read like their reports (the real-ncu tier).

ncu 2024.1 (scripts/real-ncu) exports every real ``.ncu-rep`` here at test time (the shared ones and
the repository's own copies, so that a clone with nothing beside it tests on those), four ways:

* ``issue``: ``--csv --page raw --print-units base --print-metric-instances details``; with
  ``--print-units base`` ncu prints two decimals (a 0.0149 % is "0.01");
* ``full``: ``--csv --page raw --print-metric-instances details`` (what the docs recommend: base
  units are implied, six decimals);
* ``default``: ``--csv --page raw`` (instanced metrics as totals only);
* ``details``: ``--csv --page details``.

The launch table of each raw export must equal the report's (NVIDIA's ``ncu_report`` is the
reference the report reader is held to) within the precision ncu printed, with the same bound; the
default export the same wherever it holds the counters, the opcode work left unknown with a note
saying how to export it; the details export analyzed or refused in one line. No library warning.
"""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog
from ncuroof.errors import NcuroofError
from ncuroof.parser.csv import NO_INSTANCES_NOTE
from tests.helpers.errors import assert_one_line_error
from tests.helpers.real_ncu import real_ncus
from tests.helpers.reports import REPORTS

NCU = dict(real_ncus()).get("2024.1")
pytestmark = [
    pytest.mark.real_ncu,
    pytest.mark.skipif(NCU is None, reason="no real ncu 2024.1: run scripts/real-ncu"),
]
EXPORTS = {
    "issue": ["--page", "raw", "--print-units", "base", "--print-metric-instances", "details"],
    "full": ["--page", "raw", "--print-metric-instances", "details"],
    "default": ["--page", "raw"],
    "details": ["--page", "details"],
}
#: Launch-table columns compared: counts, rates, roofs, times, fractions.
NUMERIC_SUFFIXES = ("_flop", "_bytes", "_per_s", "_s", "_frac", "_hz", "waves_per_sm")


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Path:
    """Every real report exported the four ways by ncu 2024.1 (HOME in a temporary folder:
    ncu copies its section files there)."""
    out = tmp_path_factory.mktemp("csv")
    home = out / "home"
    home.mkdir()
    for report in REPORTS:
        for kind, args in EXPORTS.items():
            with open(out / f"{report.stem}.{kind}.csv", "wb") as f:
                subprocess.run(
                    [str(NCU), "--import", str(report), "--csv", *args],
                    stdout=f,
                    stderr=subprocess.DEVNULL,
                    env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                    check=True,
                    timeout=300,
                )
    return out


def _load(path: Path) -> pd.DataFrame:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = ncuroof.load(path)
    assert [str(w.message)[:120] for w in caught] == [], path
    return table.set_index("launch_id").sort_index()


def _pct_inputs() -> dict[str, list[str]]:
    """Per memory level, the percent-of-peak metrics a roof of that level may be derived from
    (``metrics/roofline.toml`` peak formulas with ``divide_by``): a printed "0.01" % makes such a
    roof uncertain by 0.005 / 0.01."""
    levels = catalog.load_toml(None, "roofline.toml")["level"]
    return {
        level: [
            m
            for d in spec.get("definition", [])
            for p in d.get("peak", [])
            for m in p.get("divide_by", [])
            if m.endswith("pct_of_peak_sustained_elapsed")
        ]
        for level, spec in levels.items()
    }


def _tolerance(col: str, raw_csv: pd.DataFrame, pct: dict[str, list[str]]) -> np.ndarray:
    """Relative tolerance per launch for ``col``: 1e-2, or what the printed digits allow."""
    tol = np.full(len(raw_csv), 1e-2)
    for level, metrics in pct.items():
        if col == f"peak_{level}_bytes_per_s":
            for m in (m for m in metrics if m in raw_csv.columns):
                with np.errstate(divide="ignore", invalid="ignore"):
                    tol = np.fmax(tol, 0.005 / raw_csv[m].to_numpy(dtype=float) * 1.01)
    return tol


def _compare(report: pd.DataFrame, csv: pd.DataFrame, raw_csv: pd.DataFrame) -> list[str]:
    """Where the CSV's launch table differs from the report's beyond ncu's printed precision."""
    pct = _pct_inputs()
    failed = report["notes"].map(lambda n: any(x.startswith("measurement failed") for x in n))
    failed = failed.to_numpy(dtype=bool)
    bad = []
    for col in report.columns:
        if not col.endswith(NUMERIC_SUFFIXES) or not pd.api.types.is_numeric_dtype(report[col]):
            continue
        r = report[col].to_numpy(dtype=float)
        if col not in csv.columns:
            bad += [f"{col} missing"] if np.isfinite(r).any() else []
            continue
        c = csv[col].to_numpy(dtype=float)
        # A failed measurement (BBAStar's launch 1, grid (0, 0, 0)): the report stores NaN, and
        # ncu 2024.1's export without --print-units base writes some of those cells as 0.000000;
        # the launch is flagged and kept off the chart either way.
        c = np.where(failed & np.isnan(r), np.nan, c)
        if (np.isnan(r) != np.isnan(c)).any():
            bad.append(f"{col}: missing in one of them")
            continue
        rel = np.abs(r - c) / np.maximum(np.abs(r), 1e-300)
        # Fractions and waves are printed with two decimals (as percentages and counts; issue
        # slots per cycle, smsp__issue_active.avg.per_cycle_active, as a ratio).
        two_decimals = col in ("waves_per_sm", "issue_active_frac")
        floor = 5e-3 if two_decimals else 5e-5 if col.endswith("_frac") else 0.0
        ok = np.isnan(r) | (rel <= _tolerance(col, raw_csv, pct)) | (np.abs(r - c) <= floor)
        if not ok.all():
            bad.append(f"{col}: {r[~ok][0]:.6g} vs {c[~ok][0]:.6g}")
    if not (report["bound"].astype(str).to_numpy() == csv["bound"].astype(str).to_numpy()).all():
        bad.append("bound")
    return bad


def _raw(path: Path) -> pd.DataFrame:
    from ncuroof.parser import read

    return read(path, catalog.load()).set_index("launch_id").sort_index()


@pytest.mark.parametrize("kind", ["issue", "full"])
@pytest.mark.parametrize("report", REPORTS, ids=[r.stem for r in REPORTS])
def test_a_raw_export_with_instances_reads_like_its_report(exports, report, kind):
    csv_path = exports / f"{report.stem}.{kind}.csv"
    got, want = _load(csv_path), _load(report)
    assert list(got.index) == list(want.index)
    assert _compare(want, got, _raw(csv_path)) == []


@pytest.mark.parametrize("report", REPORTS, ids=[r.stem for r in REPORTS])
def test_the_default_export_holds_the_same_values_or_says_what_is_unknown(exports, report):
    """Instanced metrics as totals only: the opcode-counted work is missing (never 0) with a note
    on every launch saying how to export it; everything else as in the report."""
    csv_path = exports / f"{report.stem}.default.csv"
    got, want = _load(csv_path), _load(report)
    assert list(got.index) == list(want.index)
    noted = got["notes"].map(lambda n: any(NO_INSTANCES_NOTE in x for x in n)).all()
    work = [c for c in want.columns if c.endswith("_flop") and c not in got.columns]
    differing = _compare(want, got, _raw(csv_path))
    if noted:
        # Only the work from opcodes may be unknown: FLOPs and what is computed from them.
        allowed = ("_flop", "_flop_per_s", "roof_fraction", "intensity")
        assert [d for d in differing if not any(a in d.split(":")[0] for a in allowed)] == []
        # What the export does hold is right: a known value equals the report's (no silent 0).
        for c in (c for c in got.columns if c.endswith("_flop") and c in want.columns):
            known = got[c].notna().to_numpy()
            g, w = got[c].to_numpy(dtype=float)[known], want[c].to_numpy(dtype=float)[known]
            assert np.allclose(g, w, rtol=1e-2, equal_nan=True), c
    else:
        assert differing == [] and work == []


@pytest.mark.parametrize("report", REPORTS, ids=[r.stem for r in REPORTS])
def test_the_details_export_is_analyzed_or_refused_in_one_line(exports, report):
    path = exports / f"{report.stem}.details.csv"
    try:
        got = _load(path)
    except NcuroofError as exc:
        assert_one_line_error(exc, path.name)
        return
    assert len(got) == len(_load(report))
