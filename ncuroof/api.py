"""The Python API behind the command line: load, place on the roofline, plot, write."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pandas as pd
import plotly.graph_objects as go

from . import calculator, catalog, ceilings, classify, parser, plot, report
from .errors import InputError
from .schema import validate_kernels, validate_points

__all__ = ["load", "points", "plot_roofline", "analyze", "AnalysisResult", "default_outdir", "roof_sources", "csv_limits"]

PathLike = str | Path


@contextlib.contextmanager
def _progress_bar(enabled: bool) -> Iterator[Callable[[int], Callable[[], None]] | None]:
    """A rich progress bar on stderr, or None when disabled or stderr is not a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("reading launches"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as prog:
        def factory(total: int) -> Callable[[], None]:
            task = prog.add_task("read", total=total)
            return lambda: prog.advance(task)

        yield factory


def _as_list(paths: PathLike | Sequence[PathLike]) -> list[Path]:
    if isinstance(paths, (str, Path)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def load(paths: PathLike | Sequence[PathLike], traffic: str = "ncu", progress: bool = False, stack: bool = False,
         gpu: str | None = None, peak_flops: dict[str, float] | None = None,
         peak_bandwidth: dict[str, float] | None = None) -> pd.DataFrame:
    """Read ncu output and return the kernels table: one classified row per kernel launch.

    Parameters
    ----------
    paths : path or list of paths
        ``.ncu-rep`` reports or ncu CSV exports (details, raw or session page). Several files
        are taken as parts of one ncu run and merged launch by launch
        (:func:`ncuroof.parser.merge.merge`), unless ``stack``.
    traffic : {'ncu', 'nersc'}, default 'ncu'
        Preferred traffic definition of the L1/L2 levels (``metrics/roofline.toml``).
    progress : bool, default False
        Show a progress bar on stderr while reading (only when stderr is a terminal).
    stack : bool, default False
        Stack unrelated inputs instead of merging them (the ``source`` column tells them apart).
    gpu : str, optional
        Datasheet entry (``metrics/gpus.toml`` id or name) for roofs the input lacks, instead of
        matching the device name (:func:`ncuroof.ceilings.fill_ceilings`).
    peak_flops, peak_bandwidth : dict, optional
        User roofs in FLOP/s by precision and B/s by level; they replace all others.

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.KERNELS` table (SI units, missing values NaN, never 0),
        followed by ``tensor_<path>_flop``, ``tensor_<path>_flop_per_s`` and
        ``peak_tensor_<path>_flop_per_s`` for each tensor datapath with work.

    Raises
    ------
    NcuroofError
        For missing, corrupt or unsupported input (one-line message naming the file).
    """
    if traffic not in ("ncu", "nersc"):
        raise ValueError(f"traffic must be 'ncu' or 'nersc', not {traffic!r}")
    cat = catalog.load()
    inputs = _as_list(paths)
    if not inputs:
        raise InputError("no input files given")
    with _progress_bar(progress) as bar:
        raw = parser.read_many(inputs, cat, bar, stack=stack)
    k = calculator.compute_kernels(raw, cat, traffic=traffic)
    k = ceilings.fill_ceilings(k, catalog.load_gpus(), gpu=gpu, peak_flops=peak_flops, peak_bandwidth=peak_bandwidth)
    k = classify.classify(k, calculator.compute_points(k), cat)
    return validate_kernels(k)


def points(kernels: pd.DataFrame) -> pd.DataFrame:
    """Place the launches of a kernels table on the roofline.

    Parameters
    ----------
    kernels : DataFrame
        From :func:`load`, possibly filtered.

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.POINTS` table, see :func:`ncuroof.calculator.compute_points`.
    """
    return validate_points(calculator.compute_points(kernels))


def plot_roofline(points: pd.DataFrame, title: str = "Hierarchical roofline") -> go.Figure:
    """Plot a points table; see :func:`ncuroof.plot.plot_roofline`."""
    return plot.plot_roofline(points, title=title)


def roof_sources(kernels: pd.DataFrame) -> str:
    """One line saying where the roofs of a kernels table come from, for headers and summaries."""
    parts = []
    used = set("+".join(kernels["peak_source"].dropna().astype(str)).split("+")) - {""}
    if "report" in used:
        parts.append("report: ncu peak_sustained × the clock ncu measured for each launch")
    if "datasheet" in used:
        names = sorted(kernels.loc[kernels["datasheet_gpu"] != "", "datasheet_gpu"].astype(str).unique())
        parts.append(f"datasheet ({', '.join(names)}): boost clock, metrics/gpus.toml")
    if "user" in used:
        parts.append("user: --peak-flops/--peak-bandwidth")
    return "; ".join(parts) or "none: the input has no peak_sustained metrics and no datasheet entry matched (use --gpu)"


def csv_limits(kernels: pd.DataFrame, inputs: Sequence[PathLike]) -> str | None:
    """What the CSV inputs could not carry, in one line, or None when no input is a CSV."""
    if not any(Path(p).suffix.lower() in (".csv", ".txt", ".log") for p in inputs):
        return None
    missing = ["NVTX ranges", "per-opcode SASS instance values (tensor estimate)"]
    if not kernels["peak_source"].astype(str).str.contains("report").any():
        missing.append("peak_sustained roofs")
    if kernels["device_name"].isna().any():
        missing.append("the device name")
    if kernels["ncu_version"].isna().any():
        missing.append("the ncu version (pass the session-page export too)")
    if kernels["cc"].isna().any():
        missing.append("compute capability and launch geometry (ncu 2020 layout)")
    return "the CSV export does not carry " + ", ".join(missing)


def default_outdir(path: PathLike) -> Path:
    """``<stem>.ncuroof/`` next to the (first) input file."""
    p = Path(path)
    stem = p.name[: -len(".ncu-rep")] if p.name.endswith(".ncu-rep") else p.stem
    return p.with_name(f"{stem}.ncuroof")


@dataclass
class AnalysisResult:
    """What :func:`analyze` produced."""

    kernels: pd.DataFrame
    points: pd.DataFrame
    summary: pd.DataFrame
    outdir: Path | None
    files: dict[str, Path] = field(default_factory=dict)
    missing_metrics: bool = False


def analyze(paths: PathLike | Sequence[PathLike], outdir: PathLike | None = None, traffic: str = "ncu",
            plotlyjs: str | bool = True, top: int = 10, progress: bool = False, write: bool = True,
            stack: bool = False, gpu: str | None = None, peak_flops: dict[str, float] | None = None,
            peak_bandwidth: dict[str, float] | None = None) -> AnalysisResult:
    """Run the whole analysis and write ``kernels.csv``, ``points.csv`` and ``roofline.html``.

    Parameters
    ----------
    paths : path or list of paths
        Inputs, see :func:`load`.
    outdir : path, optional
        Output directory; default :func:`default_outdir` of the first input.
    traffic : {'ncu', 'nersc'}, default 'ncu'
        See :func:`load`.
    plotlyjs : True or 'cdn', default True
        Embed plotly.js in the HTML (offline) or link the CDN.
    top : int, default 10
        Kernels in the summary.
    progress : bool, default False
        Progress bar on stderr while reading.
    write : bool, default True
        Write the output directory (whole or not at all).
    stack, gpu, peak_flops, peak_bandwidth
        See :func:`load`.

    Returns
    -------
    AnalysisResult

    Raises
    ------
    NcuroofError
        Bad input or an output directory that cannot be written.
    """
    inputs = _as_list(paths)
    kernels = load(inputs, traffic=traffic, progress=progress, stack=stack, gpu=gpu, peak_flops=peak_flops,
                   peak_bandwidth=peak_bandwidth)
    pts = points(kernels)
    summary = report.summarize(kernels, pts, top=top)
    result = AnalysisResult(kernels, pts, summary, None, missing_metrics=bool((kernels["status"] == "no_roofline_metrics").all()))
    if not write:
        return result
    out = Path(outdir) if outdir is not None else default_outdir(inputs[0])
    devices = ", ".join(f"{d} (CC {c})" for d, c in kernels[["device_name", "cc"]].drop_duplicates().astype(str).itertuples(index=False))
    meta: dict[str, Any] = {
        "inputs": ", ".join(str(p) for p in inputs),
        "GPU": devices,
        "ncu version": ", ".join(sorted(kernels["ncu_version"].dropna().astype(str).unique())),
        "launches": f"{len(kernels)} ({int((kernels['status'] == 'ok').sum())} with roofline metrics, "
                    f"{int((kernels['status'] == 'failed_measurement').sum())} failed measurements)",
        "roofs": roof_sources(kernels),
        **({"CSV input": limits} if (limits := csv_limits(kernels, inputs)) else {}),
    }
    fig = plot_roofline(pts, title=f"Hierarchical roofline — {inputs[0].name}")
    files = {
        "kernels.csv": kernels.to_csv(index=False),
        "points.csv": pts.to_csv(index=False),
        "roofline.html": report.render_html(fig, kernels, meta, plotlyjs=plotlyjs),
    }
    report.write_outputs(out, files)
    result.outdir = out
    result.files = {name: out / name for name in files}
    return result
