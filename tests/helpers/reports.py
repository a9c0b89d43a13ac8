"""The shared real-report fixtures (``../shared/fixtures``, read by path, never copied) and the
independent path to what ncu stored in them (``ncu_report``), for every test folder.

Cached reads are handed out as copies (:func:`kernels_of`) or read-only views
(:func:`ncu_metrics`): one test cannot change another test's input.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "fixtures"
#: The few real inputs whose license allows a copy in the repository (fixtures/third_party/
#: PROVENANCE.md): a clone with nothing beside it tests on them.
EMBEDDED = REPO / "fixtures" / "third_party"


def fixture_path(name: str) -> Path | None:
    """Where a real input of that name is: the repository's own copy (``fixtures/third_party``),
    else the shared folder beside the checkout, else None. The one decision of where tests read
    real inputs from (the copies are byte-identical, ``tests/unit/test_fixtures.py``)."""
    for folder in (EMBEDDED, SHARED):
        if (folder / name).is_file():
            return folder / name
    return None


def inputs(*patterns: str) -> list[Path]:
    """Every real input matching the glob ``patterns`` in either folder (:func:`fixture_path`),
    by name."""
    names = {
        p.name
        for folder in (EMBEDDED, SHARED)
        if folder.is_dir()
        for pat in patterns
        for p in folder.glob(pat)
    }
    return [fixture_path(n) for n in sorted(names)]  # type: ignore[misc]


REPORTS = inputs("*.ncu-rep")

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"{SHARED} is absent: the shared real-report fixtures are not beside this checkout",
)

HAVE_NCU_REPORT = importlib.util.find_spec("ncu_report") is not None  # no wheel on aarch64 hosts

needs_ncu_report = pytest.mark.skipif(
    not HAVE_NCU_REPORT, reason="ncu_report is not installed (no wheel for this platform)"
)


def shared(name: str) -> Path:
    """Path of a real input (:func:`fixture_path`); skips the test when neither the repository's
    copies nor the shared folder beside the checkout hold it."""
    path = fixture_path(name)
    if path is None:
        pytest.skip(
            f"{SHARED / name} is absent: the shared real-report fixtures are not beside this"
            " checkout (fixtures/third_party holds only the redistributable few)"
        )
    return path


@functools.cache
def _kernels(name: str) -> pd.DataFrame:
    import ncuroof

    return ncuroof.load(shared(name))


def kernels_of(name: str) -> pd.DataFrame:
    """The kernels table of a shared fixture: read once per session, a deep copy for each caller
    (its ``attrs`` too), so a test may change its table without reaching another test's."""
    return _kernels(name).copy(deep=True)


@functools.cache
def _ncu_metrics(name: str) -> tuple[Mapping[str, float], ...]:
    out = []
    for action in ncu_actions(name):
        values = {}
        for m in action.metric_names():
            metric = action.metric_by_name(m)
            if metric.num_instances() == 0 or m.startswith("sass__"):
                v = metric.value()
                if isinstance(v, (int, float)):
                    values[m] = float(v)
        out.append(MappingProxyType(values))
    return tuple(out)


def ncu_metrics(name: str) -> tuple[Mapping[str, float], ...]:
    """Every scalar metric ncu stored for each launch, read directly through ncu_report: one
    read-only mapping (metric name -> value) per launch, in report order, cached for the session.

    This is the independent path the tests compare ncuroof against: it does not go through
    ncuroof's parser, catalog or formulas.
    """
    return _ncu_metrics(name)


def ncu_actions(name: str) -> Iterator:
    """Every launch (ncu_report action) of a shared report, in report order, read by ncu_report
    alone."""
    import ncu_report

    ctx = ncu_report.load_report(str(shared(name)))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            yield rng.action_by_idx(a)


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    """Relative closeness that treats two NaNs as different and 0 == 0."""
    if math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= rel * max(abs(a), abs(b)) or a == b


def details_copy(name: str, dst: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    """A copy at ``dst`` of the details-page export ``name`` (:func:`shared`) with ``rows`` added:
    each ``(section, label, unit, value)`` written as ncu writes a details row, the launch columns
    those of the file's first row."""
    import csv

    lines = list(csv.reader(shared(name).open(newline="", encoding="utf-8-sig")))
    head = lines[0]
    at = [head.index(c) for c in ("Section Name", "Metric Name", "Metric Unit", "Metric Value")]
    added = []
    for values in rows:
        row = list(lines[1])
        for i, v in zip(at, values):
            row[i] = v
        added.append(row)
    with dst.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows([*lines, *added])
    return dst


def datasheet(gpu_id: str) -> dict:
    """The ``[[gpu]]`` entry ``gpu_id`` of ``metrics/gpus.toml`` as the file holds it (TFLOP/s,
    GB/s, MHz), read here, not through :mod:`ncuroof.catalog`."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    with open(REPO / "metrics" / "gpus.toml", "rb") as fh:
        return next(g for g in tomllib.load(fh)["gpu"] if g["id"] == gpu_id)
