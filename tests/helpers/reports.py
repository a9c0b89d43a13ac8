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
REPORTS = sorted(SHARED.glob("*.ncu-rep")) if SHARED.is_dir() else []

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"{SHARED} is absent: the shared real-report fixtures are not beside this checkout",
)

HAVE_NCU_REPORT = importlib.util.find_spec("ncu_report") is not None  # no wheel on aarch64 hosts

needs_ncu_report = pytest.mark.skipif(
    not HAVE_NCU_REPORT, reason="ncu_report is not installed (no wheel for this platform)"
)


def shared(name: str) -> Path:
    """Path of a shared fixture; skips the test when the shared folder is absent."""
    path = SHARED / name
    if not path.exists():
        pytest.skip(
            f"{path} is absent: the shared real-report fixtures are not beside this checkout"
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
    ncuroof's parser, catalog or calculator.
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
