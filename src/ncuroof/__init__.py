"""ncuroof: hierarchical roofline analysis of Nsight Compute profiles that agrees with ncu.

Public API::

    report = ncuroof.profile(["./app", "arg"])    # runs ncu --set roofline, returns the .ncu-rep
    launches = ncuroof.load("report.ncu-rep")    # one row per kernel launch (SI units)
    pts = ncuroof.points(launches)                # one row per (launch, precision, level)
    fig = ncuroof.plot_roofline(pts)              # plotly Figure
    ncuroof.analyze("report.ncu-rep", outdir)     # launches, kernels, points .csv; roofline.html
    ncuroof.compare_runs("before.ncu-rep", "after.ncu-rep", outdir)   # compare.csv, compare.html

Importing ncuroof has no side effects: it runs no ncu and imports ncu_report only when a
``.ncu-rep`` is read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import NcuroofError

if TYPE_CHECKING:
    from .api import (
        AnalysisResult,
        CompareResult,
        analyze,
        compare_runs,
        load,
        plot_roofline,
        points,
        profile,
    )

__all__ = [
    "profile",
    "load",
    "points",
    "plot_roofline",
    "analyze",
    "AnalysisResult",
    "compare_runs",
    "CompareResult",
    "NcuroofError",
    "__version__",
]


def __dir__() -> list[str]:
    """The public API (imported lazily by :func:`__getattr__`) with the module's own names, so that
    ``dir(ncuroof)`` and completion in a notebook list ``load``, ``points``, ``analyze``..."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})


def __getattr__(name: str) -> Any:
    """The public API, imported on first use (a process that imports only a part, such as a decoding
    worker importing :mod:`ncuroof.parser.ncu_rep.decode`, does not pay for the rest); a subpackage
    or module by its name (``ncuroof.api``, ``from .. import fmt``)."""
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}.api"), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
