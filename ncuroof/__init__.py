"""ncuroof: hierarchical roofline analysis of Nsight Compute profiles that agrees with ncu.

Public API::

    report = ncuroof.profile(["./app", "arg"])    # runs ncu --set roofline, returns the .ncu-rep
    kernels = ncuroof.load("report.ncu-rep")     # one row per kernel launch (SI units)
    pts = ncuroof.points(kernels)                 # one row per (launch, precision, level)
    fig = ncuroof.plot_roofline(pts)              # plotly Figure
    ncuroof.analyze("report.ncu-rep", outdir)     # kernels.csv, points.csv, roofline.html
    ncuroof.compare_runs("before.ncu-rep", "after.ncu-rep")   # compare.csv, compare.html

Importing ncuroof has no side effects: it runs no ncu and imports ncu_report only when a
``.ncu-rep`` is read.
"""

from __future__ import annotations

from ._version import __version__
from .api import AnalysisResult, CompareResult, analyze, compare_runs, load, plot_roofline, points, profile
from .errors import NcuroofError

__all__ = ["profile", "load", "points", "plot_roofline", "analyze", "AnalysisResult", "compare_runs", "CompareResult", "NcuroofError",
           "__version__"]
