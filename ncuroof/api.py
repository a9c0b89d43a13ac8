"""The Python API behind the command line: load, place on the roofline, plot, write."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import calculator, catalog, ceilings, classify, collector, diagnose, parser, plot, report
from . import compare as _compare
from . import expect as _expect
from .errors import InputError
from .schema import KERNELS, validate_kernels, validate_points
from .summary import FOCUS_SHARE, kernel_summary

__all__ = ["profile", "load", "points", "plot_roofline", "analyze", "collection_text", "collection_warnings", "AnalysisResult", "default_outdir", "roof_sources", "clock_text", "csv_limits",
           "load_side", "compare_runs", "CompareResult"]

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
         peak_bandwidth: dict[str, float] | None = None, expect: PathLike | None = None) -> pd.DataFrame:
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
    expect : path, optional
        Expected FLOPs and DRAM bytes per kernel-name pattern (:mod:`ncuroof.expect`): fills
        ``expected_flop``/``expected_dram_bytes`` and flags launches whose counted work differs.

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
    k = calculator.time_at_roof(k)
    if expect is not None:
        k = _expect.apply_expectations(k, _expect.read_expectations(expect))
    pts = calculator.compute_points(k)
    k = classify.classify(k, pts, cat)
    k = diagnose.diagnose_launches(k, pts, cat, catalog.load_gpus())
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


def plot_roofline(points: pd.DataFrame, kernels: pd.DataFrame | None = None, title: str = "Hierarchical roofline",
                  **options: Any) -> go.Figure:
    """Plot a points table (and its kernels table); see :func:`ncuroof.plot.plot_roofline` for ``options``."""
    return plot.plot_roofline(points, kernels, title=title, **options)


def collection_text(inputs: Sequence[PathLike]) -> str:
    """How ``ncuroof profile`` collected the inputs (from each report's sidecar record), or ''."""
    parts = []
    for p in inputs:
        rec = collector.read_sidecar(Path(p))
        if rec is None:
            continue
        passes = sorted(set(rec.get("passes", {}).values()))
        parts.append(f"{Path(p).name}: ncu {rec.get('ncu_version', '?')}, clock control {rec.get('clock_control', '?')}, "
                     f"cache control {rec.get('cache_control', '?')}, replay {rec.get('replay_mode', '?')}"
                     + (f", {'/'.join(map(str, passes))} passes" if passes else "")
                     + f" ({' '.join(rec.get('ncu_command', []))})")
    return "; ".join(parts)


def collection_warnings(before: PathLike | Sequence[PathLike], after: PathLike | Sequence[PathLike]) -> list[str]:
    """Differences in how ``ncuroof profile`` collected the two sides (clock control, cache
    control, replay mode, metric list), read from the reports' ``.ncuroof.json`` records; empty
    when either side has none."""
    def record(side: PathLike | Sequence[PathLike]) -> dict[str, Any] | None:
        recs = [collector.read_sidecar(p) for p in _as_list(side)]
        return recs[0] if len(recs) == 1 else None

    rb, ra = record(before), record(after)
    if rb is None or ra is None:
        return []
    out = []
    for key, what in (("clock_control", "clock control"), ("cache_control", "cache control"), ("replay_mode", "replay mode"),
                      ("metrics", "collected metrics")):
        if rb.get(key) != ra.get(key):
            b, a = (x if isinstance(x, str) else f"{len(x)} explicit metrics" for x in (rb.get(key), ra.get(key)))
            out.append(f"collected differently: {what} {b} before, {a} after")
    return out


def profile(cmd: Sequence[str], output: PathLike | None = None, *, ncu: PathLike | None = None,
            echo: Callable[[str], None] | None = None, **options: Any) -> Path:
    """Run ``cmd`` under ncu with the roofline metrics and return the report's path.

    Parameters
    ----------
    cmd : sequence of str
        The program and its arguments.
    output : path, optional
        The report (``.ncu-rep`` appended when missing); default ``<program name>.ncu-rep`` in
        the current directory.
    ncu : path, optional
        The ncu executable (default: :func:`ncuroof.collector.find_ncu`).
    echo : callable, optional
        Receives each line ncu and the program print (default: stderr).
    **options
        Fields of :class:`ncuroof.collector.ProfileOptions` (``levels``, ``precisions``,
        ``kernel_name``, ``launch_count``, ``nvtx_include``, ``clock_control``, ``force``, ...).

    Returns
    -------
    Path
        The ``.ncu-rep`` report, next to its ``.ncuroof.json`` collection record.

    Raises
    ------
    NcuNotFoundError
        No usable ncu.
    ProfileError
        ncu or the program failed; no report is left behind.
    """
    if not cmd:
        raise ValueError("no program to profile")
    out = Path(output) if output is not None else Path(Path(cmd[0]).name + ".ncu-rep")
    for key in ("levels", "precisions", "nvtx_include", "nvtx_exclude", "extra"):
        if key in options and options[key] is not None and not isinstance(options[key], tuple):
            options[key] = tuple(options[key])
    opts = collector.ProfileOptions(output=out, **options)
    return collector.run_profile(list(cmd), opts, ncu=Path(ncu) if ncu is not None else None, echo=echo).report


def clock_text(kernels: pd.DataFrame) -> str:
    """The SM clock ncu measured, for headers: median, and the range when launches differ by more than 1 %."""
    clk = kernels["sm_clock_hz"].to_numpy(float)
    clk = clk[np.isfinite(clk)]
    if not len(clk):
        return ""
    med, lo, hi = float(np.median(clk)), float(clk.min()), float(clk.max())
    text = f"SM {med / 1e9:.3g} GHz (median over launches"
    text += f", {lo / 1e9:.3g}-{hi / 1e9:.3g} GHz)" if hi > lo * 1.01 else ")"
    return text + "; roofs from the report are at this clock"


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
    what_if: pd.DataFrame | None = None
    missing_metrics: bool = False


def analyze(paths: PathLike | Sequence[PathLike], outdir: PathLike | None = None, traffic: str = "ncu",
            plotlyjs: str | bool = True, top: int = 10, progress: bool = False, write: bool = True,
            stack: bool = False, gpu: str | None = None, peak_flops: dict[str, float] | None = None,
            peak_bandwidth: dict[str, float] | None = None, focus: float = FOCUS_SHARE,
            image: str | None = None, what_if: str | None = None, expect: PathLike | None = None) -> AnalysisResult:
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
    focus : float, default 0.95
        The chart shows the fewest kernels that make up this share of GPU time (a control on the
        page shows the rest).
    image : {'png', 'svg'}, optional
        Also write ``roofline.png``/``.svg``, the chart's default view, through plotly's image
        export (kaleido and a Chrome or Chromium browser).
    what_if : str, optional
        A ``metrics/gpus.toml`` entry: project every kernel onto its datasheet roofs
        (:func:`ncuroof.diagnose.what_if`) and write ``whatif.csv``.
    expect : path, optional
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
                   peak_bandwidth=peak_bandwidth, expect=expect)
    pts = points(kernels)
    summary = diagnose.diagnose_kernels(kernel_summary(kernels, pts, focus=focus), kernels, catalog.load(), catalog.load_gpus())
    projected = None
    if what_if is not None:
        target = catalog.load_gpus().by_name(what_if)
        if target is None:
            raise InputError(f"--what-if {what_if!r} is not in metrics/gpus.toml; use one of "
                             + ", ".join(g.id for g in catalog.load_gpus().gpus))
        projected = diagnose.what_if(summary, kernels, target)
    result = AnalysisResult(kernels, pts, summary.head(top).reset_index(drop=True), None, what_if=projected, missing_metrics=bool((kernels["status"] == "no_roofline_metrics").all()))
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
        "clocks": clock_text(kernels),
        "collected with": collection_text(inputs),
        "roofs": roof_sources(kernels),
        **({"CSV input": limits} if (limits := csv_limits(kernels, inputs)) else {}),
    }
    fig = plot.plot_roofline(pts, kernels, title=f"Hierarchical roofline — {inputs[0].name}", focus=focus, summary=summary)
    files: dict[str, str | bytes] = {
        "kernels.csv": kernels.to_csv(index=False),
        "points.csv": pts.to_csv(index=False),
        "roofline.html": report.render_html(fig, kernels, meta, plotlyjs=plotlyjs, summary=summary),
    }
    if image is not None:
        files[f"roofline.{image}"] = report.render_image(fig, image)
    if projected is not None:
        files["whatif.csv"] = projected.to_csv(index=False)
    report.write_outputs(out, files)
    result.outdir = out
    result.files = {name: out / name for name in files}
    return result


def load_side(side: PathLike | Sequence[PathLike], **kwargs: Any) -> pd.DataFrame:
    """The kernels table of one side of a comparison.

    Parameters
    ----------
    side : path or list of paths
        ``.ncu-rep`` or CSV inputs (see :func:`load`), or a directory written by :func:`analyze`
        (its ``kernels.csv`` is read back).
    **kwargs
        Passed to :func:`load` (``traffic``, ``gpu``, ...).

    Returns
    -------
    DataFrame
        A kernels table.

    Raises
    ------
    NcuroofError
        Bad input, or a directory without ``kernels.csv``.
    """
    paths = _as_list(side)
    if len(paths) == 1 and paths[0].is_dir():
        table = paths[0] / "kernels.csv"
        if not table.is_file():
            raise InputError("is a directory without kernels.csv; pass an ncuroof output directory, a report or a CSV export", paths[0])
        k = pd.read_csv(table, keep_default_na=True)
        # Recomputed for tables written before these columns existed.
        derived = ("time_at_roof_s", "saving_s", "expected_flop", "expected_dram_bytes", "diagnosis", "evidence", "advice", "flags")
        newer = ("hot_pipe", "hot_pipe_frac", "time_at_roof_bound", "speed_of_light_note")  # issue 15
        missing = [c for c in KERNELS if c not in k.columns and c not in derived and c not in newer]
        if missing:
            raise InputError(f"kernels.csv lacks {missing[:4]}; it was not written by this version of ncuroof analyze", table)
        for col in ("kernel_demangled", "device_name", "cc", "ncu_version", "bound", "status", "peak_source",
                    "dram_definition", "l2_definition", "source"):
            if col in k.columns:
                k[col] = k[col].astype(object).where(k[col].notna(), None)
        k["cc"] = k["cc"].map(lambda c: f"{c:.1f}" if isinstance(c, float) else c)
        if "hot_pipe" not in k.columns:
            k["hot_pipe"], k["hot_pipe_frac"] = "", np.nan
        for col in ("diagnosis", "evidence", "advice", "flags", "notes", "grid", "block", "hot_pipe", "time_at_roof_bound",
                    "speed_of_light_note"):
            if col in k.columns:
                k[col] = k[col].astype(object).where(k[col].notna(), "")
        if any(c not in k.columns for c in (*derived[:2], "time_at_roof_bound")):
            k = calculator.time_at_roof(k)
        for c in derived[2:4]:
            if c not in k.columns:
                k[c] = np.nan
        if any(c not in k.columns for c in derived[4:]):
            k = diagnose.diagnose_launches(k, calculator.compute_points(k), catalog.load(), catalog.load_gpus())
        return k
    return load(paths, **kwargs)


@dataclass
class CompareResult:
    """What :func:`compare_runs` produced."""

    table: pd.DataFrame
    warnings: list[str]
    totals: dict[str, float]
    outdir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)


def compare_runs(before: PathLike | Sequence[PathLike], after: PathLike | Sequence[PathLike], outdir: PathLike | None = None,
            by_launch: bool = False, plotlyjs: str | bool = True, write: bool = True, strict: bool = False,
            **kwargs: Any) -> CompareResult:
    """Compare two runs: match kernels, speedups, how each dot moved; write compare.csv/.html.

    Parameters
    ----------
    before, after : path or list of paths
        Each a report, CSV export(s) or an ncuroof output directory (:func:`load_side`).
    outdir : path, optional
        Output directory; default ``<after stem>.compare/`` next to the after input.
    by_launch : bool, default False
        Pair launches in order within a kernel name instead of aggregating per name.
    plotlyjs : True or 'cdn', default True
        See :func:`analyze`.
    write : bool, default True
        Write ``compare.csv`` and ``compare.html`` (whole or not at all).
    strict : bool, default False
        Raise instead of warning when the runs are not comparable point for point.
    **kwargs
        Passed to :func:`load` for both sides.

    Returns
    -------
    CompareResult
        ``table`` from :func:`ncuroof.compare.compare`; ``warnings`` (why the runs may not be
        comparable point for point); ``totals``: ``time_s_before``, ``time_s_after``, ``speedup``
        and, for the after run, the share of time per bound (``share_memory``, ``share_compute``,
        ``share_latency``, ``share_unknown``).

    Raises
    ------
    NcuroofError
        Bad input; with ``strict``, runs that differ in GPU, ncu version, clocks or metric set.
    """
    kb, ka = load_side(before, **kwargs), load_side(after, **kwargs)
    warns = _compare.warnings(kb, ka) + collection_warnings(before, after)
    if strict and warns:
        raise InputError("the runs are not comparable point for point: " + "; ".join(warns) + " (drop --strict to compare anyway)")
    table = _compare.compare(kb, ka, by_launch=by_launch)
    tb, ta = float(np.nansum(kb["time_s"])), float(np.nansum(ka["time_s"]))
    totals = {"time_s_before": tb, "time_s_after": ta, "speedup": tb / ta if ta > 0 else float("nan")}
    t_after = pd.Series(np.nan_to_num(ka["time_s"].to_numpy(float))).groupby(ka["bound"].to_numpy()).sum()
    for b in ("memory", "compute", "latency", "unknown"):
        totals[f"share_{b}"] = float(t_after.get(b, 0.0) / ta) if ta > 0 else float("nan")
    result = CompareResult(table, warns, totals)
    if not write:
        return result
    first_after = _as_list(after)[0]
    out = Path(outdir) if outdir is not None else first_after.with_name(
        (first_after.name if first_after.is_dir() else default_outdir(first_after).stem) + ".compare")
    fig = _compare.plot_compare(table, title=f"Before → after at DRAM — {', '.join(p.name for p in _as_list(before))} → "
                                              f"{', '.join(p.name for p in _as_list(after))}")
    meta = {"before": ", ".join(str(p) for p in _as_list(before)), "after": ", ".join(str(p) for p in _as_list(after)),
            "GPU time": f"{tb:.4g} s before, {ta:.4g} s after (speedup {totals['speedup']:.3g}x)",
            "after, share of time": ", ".join(f"{b} {100 * totals[f'share_{b}']:.0f}%" for b in ("memory", "compute", "latency", "unknown")),
            "warnings": "; ".join(warns)}
    cols = [("kernel_name", "kernel"), ("status", "status"), ("match", "match"), ("launches_before", "launches before"),
            ("launches_after", "launches after"), ("time_s_before", "time before [s]"), ("time_s_after", "time after [s]"),
            ("speedup", "speedup"), ("dram_ai_flop_per_byte_before", "DRAM AI before"), ("dram_ai_flop_per_byte_after", "DRAM AI after"),
            ("dram_roof_fraction_before", "roof frac before"), ("dram_roof_fraction_after", "roof frac after"),
            ("bound_before", "bound before"), ("bound_after", "bound after"), ("movement", "movement")]
    files = {"compare.csv": table.to_csv(index=False),
             "compare.html": report.render_page("ncuroof compare", fig, meta, "Kernels", report.html_table(table, cols), plotlyjs)}
    report.write_outputs(out, files)
    result.outdir = out
    result.files = {name: out / name for name in files}
    return result
