"""The Python API behind the command line: a facade over
:mod:`ncuroof.model.analysis` and the renderers.

Every function here takes the same :class:`~ncuroof.model.analysis.AnalysisOptions` (or its fields
as keyword arguments), builds the analysis once and hands it to the page, the tables or ``compare``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import catalog, fmt, views
from .collector import ncu as collector
from .errors import InputError
from .model import analysis as _analysis
from .model import formulas
from .model import summary as _summary
from .model.analysis import Analysis, AnalysisOptions
from .output import folder
from .output.tables import table_files
from .parser.memory import release_memory
from .parser.saved import read_saved_launches, saved_launches
from .render import figure, page, provenance
from .runs import compare as _compare
from .runs import fleet
from .runs import ranks as _ranks
from .schema import validate_points
from .views.timeline import time_basis

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = [
    "profile",
    "profile_run",
    "load",
    "points",
    "plot_roofline",
    "analyze",
    "AnalysisResult",
    "AnalysisOptions",
    "default_outdir",
    "analysis_of",
    "compare_runs",
    "CompareResult",
    "compare_series",
    "SeriesResult",
    "runs_in",
    "analyze_trace",
    "TraceResult",
    "is_trace",
    "as_paths",
]

PathLike = str | Path


def as_paths(paths: PathLike | Sequence[PathLike]) -> list[Path]:
    """One path or several, as a list of :class:`~pathlib.Path`."""
    if isinstance(paths, (str, Path)):
        return [Path(paths)]
    return [Path(p) for p in paths]


@contextlib.contextmanager
def _progress_bar(
    enabled: bool, label: str = "reading launches"
) -> Iterator[Callable[[int], Callable[..., None]] | None]:
    """A rich progress bar on stderr, or None when disabled or stderr is not a terminal: a factory
    ``bar(total)`` of callables ``advance(n=1)``."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as prog:

        def factory(total: int) -> Callable[..., None]:
            task = prog.add_task("read", total=total)
            return lambda n=1: prog.advance(task, n)

        yield factory


def load(
    paths: PathLike | Sequence[PathLike],
    options: AnalysisOptions | None = None,
    progress: bool = False,
    **option_fields: Any,
) -> pd.DataFrame:
    """Read ncu output and return the launch table: one classified row per kernel launch.

    Parameters
    ----------
    paths : path or list of paths
        ``.ncu-rep`` reports or ncu CSV exports (details, raw or session page). Several files
        are taken as parts of one ncu run and merged launch by launch
        (:func:`ncuroof.parser.merge.merge`), unless ``stack``. Or one saved analysis: an
        ``ncuroof analyze`` output directory or a ``launches.parquet`` file or dataset, read
        back as saved with its dtypes (:func:`ncuroof.parser.saved.read_table`;
        ``attrs['units']`` holds each column's unit), the options ignored.
    options : AnalysisOptions, optional
        How to analyze (traffic definition, roofs, ``--expect``, kernel identity, ...).
    progress : bool, default False
        Show a progress bar on stderr while reading (only when stderr is a terminal).
    **option_fields
        Fields of :class:`~ncuroof.model.analysis.AnalysisOptions` overriding ``options``
        (``traffic``, ``gpu``, ``peak_flops``, ``peak_bandwidth``, ``achievable_flops``,
        ``achievable_bandwidth``, ``expect``, ``match``, ``stack``, ``timeline``, ``device``).

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.LAUNCHES` table (SI units, missing values NaN, never 0),
        followed by ``tensor_<path>_flop``, ``tensor_<path>_flop_per_s`` and
        ``peak_tensor_<path>_flop_per_s`` for each tensor datapath with work (and
        ``achievable_tensor_<path>_flop_per_s`` where a datapath has an achievable roof).

    Raises
    ------
    NcuroofError
        For missing, corrupt or unsupported input (one-line message naming the file).
    ValueError
        For an unknown option value.
    """
    inputs = as_paths(paths)
    if len(inputs) == 1 and (saved := saved_launches(inputs[0])) is not None:
        return read_saved_launches(saved)
    with _progress_bar(progress) as bar:
        return _analysis.build(inputs, AnalysisOptions.of(options, **option_fields), bar).launches


def points(kernels: pd.DataFrame) -> pd.DataFrame:
    """Place the launches of a launch table on the roofline.

    Parameters
    ----------
    kernels : DataFrame
        From :func:`load`, possibly filtered.

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.POINTS` table, see
        :func:`ncuroof.model.formulas.compute_points`.
    """
    return validate_points(formulas.compute_points(kernels))


def plot_roofline(
    points: pd.DataFrame,
    kernels: pd.DataFrame | None = None,
    title: str = "Hierarchical roofline",
    **options: Any,
) -> go.Figure:
    """Plot a points table (and its launch table); see
    :func:`ncuroof.render.figure.plot_roofline` for ``options``.

    Without ``kernels``, one row per launch of ``points``
    (:func:`ncuroof.model.summary.launch_kernels`); without ``options["summary"]``,
    :func:`ncuroof.model.summary.kernel_summary` of them.
    """
    if len(points):
        kernels = _summary.launch_kernels(points) if kernels is None else kernels
        focus = options.get("focus", _summary.FOCUS_SHARE)
        options.setdefault("summary", _summary.kernel_summary(kernels, points, focus=focus))
    return figure.plot_roofline(points, kernels, title=title, **options)


def profile_run(
    cmd: Sequence[str],
    output: PathLike | None = None,
    *,
    ncu: PathLike | None = None,
    echo: Callable[[str], None] | None = None,
    **options: Any,
) -> collector.ProfileResult:
    """Run ``cmd`` under ncu with the roofline metrics; see :func:`profile` for the parameters.

    Returns
    -------
    ncuroof.collector.ncu.ProfileResult
        The report, ncu's version, the metrics of an explicit list and the replay passes per launch.
    """
    if not cmd:
        raise ValueError("no program to profile")
    out = (
        Path(output) if output is not None else Path(Path(cmd[0]).name)
    )  # ncu's own suffix for its version
    for key in ("levels", "precisions", "nvtx_include", "nvtx_exclude", "extra"):
        if key in options and options[key] is not None and not isinstance(options[key], tuple):
            options[key] = tuple(options[key])
    opts = collector.ProfileOptions(output=out, **options)
    return collector.run_profile(
        list(cmd), opts, ncu=Path(ncu) if ncu is not None else None, echo=echo
    )


def profile(
    cmd: Sequence[str],
    output: PathLike | None = None,
    *,
    ncu: PathLike | None = None,
    echo: Callable[[str], None] | None = None,
    **options: Any,
) -> Path:
    """Run ``cmd`` under ncu with the roofline metrics and return the report's path.

    Parameters
    ----------
    cmd : sequence of str
        The program and its arguments.
    output : path, optional
        The report; without a ``.ncu-rep``/``.ncu-repz`` suffix, the one this ncu writes by default
        is appended (``.ncu-repz`` from ncu 2026.3). Default ``<program name>`` in
        the current directory.
    ncu : path, optional
        The ncu executable (default: :func:`ncuroof.collector.ncu.find_ncu`).
    echo : callable, optional
        Receives each line ncu and the program print (default: stderr).
    **options
        Fields of :class:`ncuroof.collector.ncu.ProfileOptions` (``levels``, ``precisions``,
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
    return profile_run(cmd, output, ncu=ncu, echo=echo, **options).report


def default_outdir(path: PathLike) -> Path:
    """``<stem>.ncuroof/`` next to the (first) input file (a PyTorch trace's stem without
    ``.json``/``.json.gz``)."""
    p = Path(path)
    if is_trace(p):
        return _trace_outdir(p)
    stem = p.name[: -len(".ncu-rep")] if p.name.endswith(".ncu-rep") else p.stem
    return p.with_name(f"{stem}.ncuroof")


@dataclass
class AnalysisResult:
    """What :func:`analyze` produced: the analysis, the top of its summary, its tables
    (:func:`ncuroof.views.build`: view name -> table) and the files written.

    Each view's table is also an attribute named as the view (``result.whatif``,
    ``result.phases``, ``result.failures``, ...): None when not built.
    """

    analysis: Analysis
    summary: pd.DataFrame
    outdir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __getattr__(self, name: str) -> pd.DataFrame | None:
        if name != "tables" and name in views.declared():
            return self.tables.get(name)
        raise AttributeError(name)

    @property
    def view_lines(self) -> tuple[list[str], list[str]]:
        """The terminal summary's lines of the views built (:func:`ncuroof.views.summary_lines`):
        those before the top kernels' findings and those after them."""
        return views.summary_lines(self.tables, self.analysis)

    @property
    def launches(self) -> pd.DataFrame:
        """The launch table (:data:`ncuroof.schema.LAUNCHES`); ``kernels`` is the per-kernel
        table (:data:`ncuroof.schema.KERNELS`)."""
        return self.analysis.launches

    @property
    def points(self) -> pd.DataFrame:
        """The points table."""
        return self.analysis.points

    @property
    def missing_metrics(self) -> bool:
        """True when no launch has roofline metrics."""
        return self.analysis.missing_metrics

    def _repr_html_(self) -> str:
        """A notebook's view: the top kernels and the roofline figure
        (:func:`ncuroof.render.notebook.analysis_html`)."""
        from .render import notebook

        fig = plot_roofline(self.points, self.launches) if len(self.points) else None
        return notebook.analysis_html(self, fig)


def _table_formats(formats: Sequence[str], apart: bool) -> list[str]:
    """The table formats asked for; a fleet's or multi-rank run's (``apart``)
    always with Parquet."""
    return sorted(set(formats) | ({"parquet"} if apart else set()))


def _page(a: Analysis, tables: dict[str, pd.DataFrame], plotlyjs: str | bool) -> tuple[Any, str]:
    """The roofline figure (with the views' charts) and the page's HTML (with their sections and
    header lines, :mod:`ncuroof.views`). The tables hold lists; the page writes their text."""
    summ = a.summary
    fig = figure.plot_roofline(
        a.points,
        a.launches,
        title=f"Hierarchical roofline — {a.inputs[0].name}",
        focus=a.options.focus,
        summary=summ,
        dots={"kernel": a.dots},
        catalog=a.catalog,
        charts=views.charts(tables, a),
    )
    meta = {**provenance.page_meta(a.launches, a.inputs), **views.page_meta(tables)}
    html = page.render_html(
        fig,
        a.launches,
        meta,
        plotlyjs=plotlyjs,
        summary=summ,
        focus=a.options.focus,
        extra=page.page_sections(summ, views.sections(tables, a)),
        basis=time_basis(a.production),
    )
    return fig, html


def _page_files(
    a: Analysis,
    plotlyjs: str | bool,
    image: str | None,
    tables: dict[str, pd.DataFrame] | None = None,
    formats: Sequence[str] = ("csv",),
) -> dict[str, Any]:
    """The views' files (:func:`ncuroof.output.tables.table_files`; a fleet's or multi-rank
    run's, with a ``failures`` table, as Parquet datasets by input), roofline.html and the
    optional image of one analysis. ``tables`` default: the kernels and points tables."""
    tables = tables if tables is not None else views.build(a, views.request())
    # The page first; each file converts its table when it is written
    # (ncuroof.output.tables.table_files).
    release_memory()
    fig, html = _page(a, tables, plotlyjs)
    release_memory()
    apart = "failures" in tables
    files: dict[str, Any] = {
        **table_files(
            views.written(tables),
            _table_formats(formats, apart),
            a.inputs,
            dataset=apart,
            declared=views.declared(),
        ),
        "roofline.html": html,
    }
    if image is not None:
        files[f"roofline.{image}"] = page.render_image(fig, image)
    return files


def _analyze_apart(
    inputs: list[Path],
    options: AnalysisOptions,
    scheduler: str | None,
    workers: int | None,
    progress: bool,
) -> tuple[Analysis, pd.DataFrame]:
    """Each input analyzed alone (:func:`ncuroof.runs.fleet.run`), then one analysis of them all;
    and the failures."""
    # the timeline is joined once, to the whole
    with _progress_bar(progress, "analyzing inputs") as bar:
        fr = fleet.run(
            inputs,
            replace(options, timeline=None),
            scheduler=scheduler,
            workers=workers,
            progress=bar,
        )
    cat, gpus = catalog.load(), catalog.load_gpus()
    a = _analysis.from_launches(fr.launches, options, cat, gpus, inputs=inputs, classified=True)
    return a, fr.failures


def _analysis_and_request(
    inputs: list[Path],
    opts: AnalysisOptions,
    request: views.Request,
    scheduler: str | None,
    workers: int | None,
    progress: bool,
) -> tuple[Analysis, views.Request]:
    """The analysis: a fleet's or multi-rank run's input by input, with its failures in the request;
    else of the inputs together."""
    if request["ranks"] or (opts.stack and fleet.wanted(len(inputs), scheduler, workers)):
        a, failures = _analyze_apart(inputs, opts, scheduler, workers, progress)
        return a, views.Request(request.values, failures)
    with _progress_bar(progress) as bar:
        return _analysis.build(inputs, opts, bar), request


def _split_fields(fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``analyze``'s keywords: the :class:`AnalysisOptions` fields, and the views' options
    (:func:`ncuroof.views.view_options`). TypeError for any other name."""
    mine = {o.name for o in views.view_options()}
    known = mine | {f.name for f in dataclasses.fields(AnalysisOptions)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise TypeError(f"analyze() got unexpected keyword argument(s): {', '.join(unknown)}")
    return (
        {k: v for k, v in fields.items() if k not in mine},
        {k: v for k, v in fields.items() if k in mine},
    )


def _request(inputs: list[Path], opts: AnalysisOptions, fields: dict[str, Any]) -> views.Request:
    """The views asked for (:func:`ncuroof.views.request`); ``ranks`` None: recognised from the
    inputs (:func:`ncuroof.runs.ranks.looks_like_ranks`) unless ``stack``."""
    request = views.request(**fields)
    if request["ranks"] is None:
        ranks = not opts.stack and len(inputs) > 1 and _ranks.looks_like_ranks(inputs)
        request = views.Request({**request.values, "ranks": ranks})
    return request


def analyze(
    paths: PathLike | Sequence[PathLike],
    outdir: PathLike | None = None,
    options: AnalysisOptions | None = None,
    *,
    plotlyjs: str | bool = True,
    top: int = 10,
    progress: bool = False,
    write: bool | None = None,
    image: str | None = None,
    formats: Sequence[str] = ("csv",),
    scheduler: str | None = None,
    workers: int | None = None,
    **fields: Any,
) -> AnalysisResult:
    """Run the whole analysis, build its views (:mod:`ncuroof.views`) and write their tables with
    ``roofline.html`` (whole or not at all) into ``outdir``; nothing is written unless ``outdir``
    is given or ``write=True`` (then default :func:`default_outdir`).

    Parameters
    ----------
    paths, options, progress
        Inputs and how to analyze them, see :func:`load`.
    plotlyjs : True or 'cdn', default True
        Embed plotly.js in the HTML (offline) or link the CDN.
    top : int, default 10
        Kernels in the returned summary.
    write, image : bool or None, {'png', 'svg'} or None
        Write the output directory (None, the default: only when ``outdir`` is given; True:
        ``outdir`` or :func:`default_outdir`); also ``roofline.png``/``.svg`` (plotly's image
        export).
    formats : sequence of {'csv', 'parquet'}, default ('csv',)
        Table formats (:func:`ncuroof.output.tables.table_files`); a fleet or multi-rank run
        always writes Parquet too, as datasets partitioned by input.
    scheduler, workers
        A stack's or multi-rank run's dask scheduler and workers (:func:`ncuroof.runs.fleet.run`).
    **fields
        Fields of :class:`~ncuroof.model.analysis.AnalysisOptions` overriding ``options`` (see
        :func:`load`), and the views' options (:func:`ncuroof.views.view_options`): ``what_if`` (a
        ``metrics/gpus.toml`` id), ``group_by`` (``nvtx[:DEPTH]`` or ``op``), ``ranks`` (None:
        recognised from the inputs, :func:`ncuroof.runs.ranks.looks_like_ranks`, unless
        ``stack``), ``roofs``, ``fp32_matmul`` (``fp32``/``tf32``).

    Returns
    -------
    AnalysisResult
        The analysis, its tables and the files written. NcuroofError for bad input, a request the
        analysis cannot serve or an unwritable output directory (a fleet: when no input was read);
        TypeError for a keyword that is neither.
    """
    inputs = as_paths(paths)
    option_fields, view_fields = _split_fields(fields)
    opts = AnalysisOptions.of(options, **option_fields)
    request = _request(inputs, opts, view_fields)
    a, request = _analysis_and_request(inputs, opts, request, scheduler, workers, progress)
    result = AnalysisResult(
        a, a.summary.head(top).reset_index(drop=True), tables=views.build(a, request)
    )
    if _writes(write, outdir):
        out = Path(outdir) if outdir is not None else default_outdir(inputs[0])
        _write_analysis(result, out, plotlyjs, image, formats)
    return result


def _write_analysis(
    result: AnalysisResult,
    out: Path,
    plotlyjs: str | bool,
    image: str | None,
    formats: Sequence[str],
) -> None:
    """Write the tables and the page of ``result`` into ``out`` and note the files in it."""
    a = result.analysis
    files = _page_files(a, plotlyjs, image, result.tables, formats)
    timeline = [a.options.timeline] if a.options.timeline is not None else []
    folder.write_outputs(out, files, [*a.inputs, *timeline])
    result.outdir = out
    result.files = {name: out / name for name in files}


def analysis_of(
    side: PathLike | Sequence[PathLike],
    options: AnalysisOptions | None = None,
    progress: bool = False,
) -> Analysis:
    """The analysis of one side of a comparison: inputs analyzed, or a saved output
    directory read back.

    Parameters
    ----------
    side : path or list of paths
        ``.ncu-rep`` or CSV inputs (see :func:`load`), or a directory written by :func:`analyze`
        (its ``launches.csv``, ``kernels.csv`` before schema version 2, is read back and
        re-aggregated with ``options.match``).
    options : AnalysisOptions, optional
        The same for both sides of a comparison.
    progress : bool, default False
        Progress bar while reading.

    Returns
    -------
    Analysis
        Of the inputs, or of the saved launch table (re-aggregated with ``options.match``);
        NcuroofError for bad input or a directory without a saved launch table.
    """
    options = options if options is not None else AnalysisOptions()
    paths = as_paths(side)
    if len(paths) == 1 and paths[0].is_dir():
        table = saved_launches(paths[0])
        if table is None:
            raise InputError(
                "is a directory without launches.csv; pass an ncuroof output directory, a report or"
                " a CSV export",
                paths[0],
            )
        cat, gpus = catalog.load(), catalog.load_gpus()
        frame = read_saved_launches(table)
        k = _analysis.restore_launches(frame, table, cat, gpus)
        return _analysis.from_launches(k, options, cat, gpus, inputs=paths, classified=True)
    with _progress_bar(progress) as bar:
        return _analysis.build(paths, options, bar)


@dataclass
class CompareResult:
    """What :func:`compare_runs` produced."""

    table: pd.DataFrame
    warnings: list[str]
    totals: dict[str, float]
    outdir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)
    gate: _compare.Gate | None = None
    #: The two sides' analyses and the kernel pairing (:func:`ncuroof.runs.compare.match`), for the
    #: ``--json`` document.
    before: Analysis | None = None
    after: Analysis | None = None
    pairs: pd.DataFrame | None = None

    def slower(self, pct: float) -> list[str]:
        """The CI gate's failures and what it could not judge: see
        :func:`ncuroof.runs.compare.slower`."""
        return _compare.slower(self.table, self.totals, pct)

    def _repr_html_(self) -> str:
        """A notebook's view: the headline, the gate and the largest changes
        (:func:`ncuroof.render.notebook.compare_html`)."""
        from .render import notebook

        return notebook.compare_html(self)

    def judge(self, pct: float, **gate_options: bool) -> _compare.Gate:
        """The CI gate's verdict (:func:`ncuroof.runs.compare.gate`; ``fail_on_new``,
        ``fail_on_gone``, ``allow_unmatched``)."""
        return _compare.gate(self.table, self.totals, pct, **gate_options)


def _compare_files(
    result: CompareResult,
    before: list[Path],
    after: list[Path],
    sides: tuple[Analysis, Analysis],
    plotlyjs: str | bool,
    formats: Sequence[str],
) -> dict[str, Any]:
    from .render import compare as compare_page

    names = f"{', '.join(p.name for p in before)} → {', '.join(p.name for p in after)}"
    html = compare_page.compare_page(
        result,
        sides[0].points,
        sides[1].points,
        before,
        after,
        f"Before → after — {names}",
        plotlyjs,
    )
    return {
        **table_files({"compare": result.table}, formats, [*before, *after]),
        "compare.html": html,
    }


def _refuse_stale(side: PathLike | Sequence[PathLike]) -> None:
    """InputError when a saved analysis directory holds a ``launches.csv`` and a
    ``launches.parquet`` (``kernels.*`` before schema version 2) that disagree (launches or summed
    time): one is left from an earlier ``analyze``, and a gate must not read the stale one."""
    paths = as_paths(side)
    if len(paths) != 1 or not paths[0].is_dir():
        return
    saved = saved_launches(paths[0])
    stem = saved.name.split(".")[0] if saved is not None else "launches"
    csv, parquet = paths[0] / f"{stem}.csv", paths[0] / f"{stem}.parquet"
    if not (csv.is_file() and parquet.exists()):
        return
    a, b = (read_saved_launches(p) for p in (csv, parquet))
    ta, tb = (pd.to_numeric(t["time_s"], errors="coerce") for t in (a, b))
    if (
        len(a) != len(b)
        or ta.isna().sum() != tb.isna().sum()
        or abs(ta.sum() - tb.sum()) > 1e-9 * max(abs(ta.sum()), 1e-30)
    ):
        raise InputError(
            f"holds a {csv.name} ({len(a)} launches, {fmt.time(ta.sum())}) and a {parquet.name}"
            f" ({len(b)} launches, {fmt.time(tb.sum())}) that disagree: one is left from an earlier"
            " analyze; re-run analyze into an empty directory or remove the stale file",
            paths[0],
        )


def _comparable(ab: Analysis, aa: Analysis, before: Any, after: Any, strict: bool) -> list[str]:
    """Why the two runs may not be comparable point for point, then their timelines' warnings;
    InputError with ``strict`` when the first list is not empty."""
    warns = _compare.warnings(ab.launches, aa.launches) + provenance.collection_warnings(
        as_paths(before), as_paths(after)
    )
    if strict and warns:
        raise InputError(
            "the runs are not comparable point for point: "
            + "; ".join(warns)
            + " (drop --strict to compare anyway)"
        )
    timelines = (a.production.warnings for a in (ab, aa) if a.production is not None)
    return warns + list(dict.fromkeys(w for ws in timelines for w in ws))


def _joined(
    ab: Analysis, aa: Analysis, by: str, specs: list, pair_option: str, warns: list[str]
) -> CompareResult:
    """The comparison of two analyses, kernels paired by ``match`` and the ``specs`` by hand."""
    resolved = _compare.resolve_pairs(specs, ab.summary, aa.summary, pair_option)
    table = _compare.join(
        ab.summary,
        aa.summary,
        kernels=(ab.launches, aa.launches),
        by=by,
        pairs=resolved,
    )
    result = CompareResult(table, warns, _compare.totals(table, ab.launches, aa.launches))
    result.before, result.after = ab, aa
    result.pairs = _compare.match(ab.summary, aa.summary, resolved)
    return result


def _writes(write: bool | None, outdir: PathLike | None) -> bool:
    """Whether an API call writes its folder: ``write`` as given, else (None, the default) only
    when the caller named ``outdir``; a library call writes nothing it was not asked for (the
    CLI passes ``write=True`` and so gets its default folder beside the input)."""
    return outdir is not None if write is None else write


def _beside(side: PathLike | Sequence[PathLike], suffix: str) -> Path:
    """The default output folder of a comparison: ``<stem><suffix>`` beside the side's first input
    (a saved analysis directory's own name)."""
    first = as_paths(side)[0]
    return first.with_name((first.name if first.is_dir() else default_outdir(first).stem) + suffix)


def compare_runs(
    before: PathLike | Sequence[PathLike],
    after: PathLike | Sequence[PathLike],
    outdir: PathLike | None = None,
    options: AnalysisOptions | None = None,
    *,
    by_launch: bool = False,
    plotlyjs: str | bool = True,
    write: bool | None = None,
    strict: bool = False,
    progress: bool = False,
    pairs: Sequence[tuple[str, str]] = (),
    pair_file: PathLike | None = None,
    fail_if_slower: float | None = None,
    fail_on_new: bool = False,
    fail_on_gone: bool = False,
    allow_unmatched: bool = False,
    formats: Sequence[str] = ("csv",),
    **option_fields: Any,
) -> CompareResult:
    """Compare two runs analyzed with the same options: a join of their kernel summaries
    (:func:`ncuroof.runs.compare.join`); write compare.csv/.parquet and compare.html into ``outdir``
    (with ``write=True`` and no ``outdir``: ``<after stem>.compare/``; nothing unless one of
    them is given), whole or not at all; with ``fail_if_slower`` [%], the CI
    gate's verdict in ``result.gate`` (:func:`ncuroof.runs.compare.gate`, with ``fail_on_new``,
    ``fail_on_gone``, ``allow_unmatched``).

    ``before``/``after`` are each a report, CSV export(s) or an output directory
    (:func:`analysis_of`); ``options``, ``**option_fields``, ``progress``, ``plotlyjs``, ``write``
    and ``formats`` as in :func:`analyze`; ``by_launch`` pairs the k-th launches of each kernel
    (``match='launch'``); ``strict`` raises instead of warning when the runs are not comparable
    point for point; ``pairs`` (``(OLD, NEW)``) and ``pair_file`` (TOML ``[[pair]]``) pair kernels
    by hand (:func:`ncuroof.runs.compare.resolve_pairs`).

    Returns
    -------
    CompareResult
        ``table`` (:data:`ncuroof.schema.COMPARE`), ``warnings``, ``totals`` and ``gate``.
        NcuroofError for bad input (a pair naming no kernel or several) and, with ``strict``, runs
        that differ in GPU, ncu version, clocks or metric set.
    """
    opts = AnalysisOptions.of(
        options, **option_fields, **({"match": "launch"} if by_launch else {})
    )
    specs = [*pairs, *(_compare.read_pair_file(pair_file) if pair_file is not None else [])]
    for side in (before, after):
        _refuse_stale(side)
    ab, aa = analysis_of(before, opts, progress), analysis_of(after, opts, progress)
    warns = _comparable(ab, aa, before, after, strict)
    pair_option = "--pair-file" if pair_file and not pairs else "--pair"
    result = _joined(ab, aa, opts.match, specs, pair_option, warns)
    if fail_if_slower is not None:
        gate = dict(fail_on_new=fail_on_new, fail_on_gone=fail_on_gone)
        result.gate = result.judge(fail_if_slower, **gate, allow_unmatched=allow_unmatched)
    if _writes(write, outdir):
        out = Path(outdir) if outdir is not None else _beside(after, ".compare")
        sides = as_paths(before), as_paths(after)
        files = _compare_files(result, *sides, (ab, aa), plotlyjs, formats)
        folder.write_outputs(out, files, [*sides[0], *sides[1]])
        result.outdir, result.files = out, {name: out / name for name in files}
    return result


@dataclass
class TraceCompareResult:
    """What :func:`compare_traces` produced: the operators side by side
    (:data:`ncuroof.schema.TRACE_COMPARE`), the headline totals, the gate, the two analyses."""

    table: pd.DataFrame
    totals: dict[str, float]
    before: TraceResult
    after: TraceResult
    gate: _compare.Gate | None = None
    outdir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)


def compare_traces(
    before: PathLike,
    after: PathLike,
    outdir: PathLike | None = None,
    *,
    gpu: str | None = None,
    device: int | None = None,
    fp32_matmul: str = "fp32",
    fail_if_slower: float | None = None,
    fail_on_new: bool = False,
    fail_on_gone: bool = False,
    write: bool | None = None,
    formats: Sequence[str] = ("csv",),
) -> TraceCompareResult:
    """Compare two PyTorch traces without counters (issue 52): operators matched by name and
    shapes, their GPU time and analytic work before and after, and the CI gate.

    Parameters
    ----------
    before, after : path
        Kineto traces recorded with shapes (:func:`analyze_trace` reads each).
    outdir : path, optional
        Where ``trace_compare.csv``/``.parquet`` go (with ``write=True`` and none:
        ``<after stem>.compare/``); nothing is written unless one of them is given.
    gpu, device, fp32_matmul
        As :func:`analyze_trace`, for both traces.
    fail_if_slower, fail_on_new, fail_on_gone
        The gate (:func:`ncuroof.runs.compare.gate`): a matched operator, or the matched total,
        slower by more than ``fail_if_slower`` percent fails (exit 1); nothing to judge is unknown
        (exit 2).

    Returns
    -------
    TraceCompareResult
        NcuroofError (one line, exit 2) for a bad trace.
    """
    from .runs import trace_compare

    opts = dict(gpu=gpu, device=device, fp32_matmul=fp32_matmul)
    b, a = analyze_trace(before, write=False, **opts), analyze_trace(after, write=False, **opts)
    table = trace_compare.join_operators(b.operators, a.operators)
    result = TraceCompareResult(table, trace_compare.totals(table), b, a)
    if fail_if_slower is not None:
        result.gate = trace_compare.gate(
            table, fail_if_slower, fail_on_new=fail_on_new, fail_on_gone=fail_on_gone
        )
    if _writes(write, outdir):
        out = Path(outdir) if outdir is not None else _beside(after, ".compare")
        sides = [Path(before), Path(after)]
        files = table_files({"trace_compare": table}, formats, sides)
        folder.write_outputs(out, files, sides)
        result.outdir, result.files = out, {name: out / name for name in files}
    return result


@dataclass
class SeriesResult:
    """What :func:`compare_series` produced."""

    table: pd.DataFrame
    names: list[str]
    warnings: list[str]
    outdir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)


def runs_in(directory: PathLike) -> list[Path]:
    """The runs of a directory, in name order: its ``.ncu-rep`` reports, ncu CSV exports and saved
    analyses (subdirectories with a launch table). InputError when it holds fewer than two."""
    d = Path(directory)
    files = [
        p
        for p in d.iterdir()
        if p.is_file() and (p.name.endswith(collector.REPORT_SUFFIXES) or p.suffix == ".csv")
    ]
    # analyze writes <stem>.ncuroof/ beside each report: that folder is the same
    # run, not another one
    stems = {p.name.split(".")[0] for p in files}
    saved = [
        p
        for p in d.iterdir()
        if p.is_dir()
        and saved_launches(p) is not None
        and not (p.name.endswith(".ncuroof") and p.name[: -len(".ncuroof")].split(".")[0] in stems)
    ]
    found = sorted(files + saved)
    if len(found) < 2:
        raise InputError(
            "holds fewer than two runs (.ncu-rep, .ncu-repz, .csv or analyze output directories);"
            " pass the runs themselves",
            d,
        )
    return found


def compare_series(
    runs: Sequence[PathLike | Sequence[PathLike]],
    outdir: PathLike | None = None,
    options: AnalysisOptions | None = None,
    *,
    plotlyjs: str | bool = True,
    write: bool | None = None,
    progress: bool = False,
    pairs: Sequence[tuple[str, str]] = (),
    pair_file: PathLike | None = None,
    formats: Sequence[str] = ("csv",),
    **option_fields: Any,
) -> SeriesResult:
    """Several runs in order: each kernel's trail through them; write trail.csv/.html.

    Parameters
    ----------
    runs : sequence
        Each a report, CSV export(s) or an ncuroof output directory (:func:`analysis_of`), in order.
    outdir : path, optional
        Output directory; with ``write=True`` and none, ``<last run's stem>.trail/`` next to
        the last run; nothing is written when neither is given.
    options : AnalysisOptions, optional
        How to analyze every run; ``**option_fields`` override its fields.
    plotlyjs, write, progress, formats
        As in :func:`compare_runs`.
    pairs, pair_file
        Pairs by hand (:func:`ncuroof.runs.compare.series`).

    Returns
    -------
    SeriesResult
        ``table`` (:data:`ncuroof.schema.COMPARE_TRAIL`), the run names, the warnings of each
        consecutive pair of runs.

        NcuroofError for bad input, fewer than two runs, a pair naming one kernel in no two
        consecutive runs.
    """
    if len(runs) < 2:
        raise InputError("a series needs at least two runs", ", ".join(str(r) for r in runs))
    opts = AnalysisOptions.of(options, **option_fields)
    specs = [*pairs, *(_compare.read_pair_file(pair_file) if pair_file is not None else [])]
    sides = [analysis_of(r, opts, progress) for r in runs]
    names = [", ".join(p.name for p in as_paths(r)) for r in runs]
    warns = [
        f"runs {i} → {i + 1}: {w}"
        for i in range(1, len(sides))
        for w in _compare.warnings(sides[i - 1].launches, sides[i].launches)
    ]
    table = _compare.series(
        [a.summary for a in sides], [a.launches for a in sides], names, opts.match, specs
    )
    result = SeriesResult(table, names, warns)
    if _writes(write, outdir):
        out = Path(outdir) if outdir is not None else _beside(runs[-1], ".trail")
        _write_series(result, out, runs, (sides[0], sides[-1]), plotlyjs, formats)
    return result


def _write_series(
    result: SeriesResult,
    out: Path,
    runs: Sequence[PathLike | Sequence[PathLike]],
    ends: tuple[Analysis, Analysis],
    plotlyjs: str | bool,
    formats: Sequence[str],
) -> None:
    """Write trail.csv/.parquet and trail.html (the first and last runs' roofs) into ``out``."""
    from .render import compare as compare_page

    inputs = [p for r in runs for p in as_paths(r)]
    html = compare_page.trail_page(
        result.table, ends[0].points, ends[1].points, result.names, result.warnings, plotlyjs
    )
    files = {**table_files({"trail": result.table}, formats, inputs), "trail.html": html}
    folder.write_outputs(out, files, inputs)
    result.outdir, result.files = out, {name: out / name for name in files}


# --- issue 41, a PyTorch trace alone: operators with analytic work ------------------------------


@dataclass
class TraceResult:
    """What :func:`analyze_trace` produced: the operator table
    (:data:`ncuroof.schema.ANALYTIC_OPS`), the device, the timeline's attributes and the files
    written."""

    operators: pd.DataFrame
    gpu: catalog.GpuSpec
    trace: Path
    attrs: dict[str, Any] = field(default_factory=dict)
    fp32_matmul: str = "fp32"
    outdir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)


def is_trace(path: PathLike) -> bool:
    """Whether ``path`` names a PyTorch profiler trace (``.json``, ``.json.gz``, ``.pt.trace.json``)
    rather than ncu output: what ``ncuroof analyze`` analyzes alone."""
    name = Path(path).name.lower()
    return name.endswith((".json", ".json.gz"))


def _trace_gpu(name: str | None, gpu: str | None, path: Path) -> catalog.GpuSpec:
    """The datasheet of ``--gpu``, else of the trace's deviceProperties name."""
    gpus = catalog.load_gpus()
    spec = gpus.entry(gpu, name)
    if spec is None:
        if gpu:
            raise InputError(gpus.unknown("--gpu", gpu), path)
        raise InputError(
            f"the trace's GPU {name or '(unnamed)'!r} is not in metrics/gpus.toml; pass --gpu ID"
            " (ncuroof list-gpus names them)",
            path,
        )
    return spec


def analyze_trace(
    path: PathLike,
    outdir: PathLike | None = None,
    *,
    gpu: str | None = None,
    device: int | None = None,
    fp32_matmul: str = "fp32",
    captures: Sequence[PathLike] = (),
    write: bool | None = None,
    formats: Sequence[str] = ("csv",),
    plotlyjs: str | bool = True,
    progress: bool = False,
) -> TraceResult:
    """Analyze a PyTorch profiler trace recorded with shapes, alone (no ncu): one row per operator
    and input shape with analytic FLOPs and compulsory bytes against the datasheet roofs.

    Parameters
    ----------
    path : path
        A Kineto trace (``.json``, ``.json.gz``) of ``torch.profiler.profile(record_shapes=True)``.
    outdir : path, optional
        Where to write; with ``write=True`` and none, ``<stem>.ncuroof/`` beside the trace;
        nothing is written when neither is given.
    gpu : str, optional
        ``--gpu``: the datasheet (default: the trace's deviceProperties name).
    device : int, optional
        ``--device``: the CUDA device (default: the only one with kernels).
    fp32_matmul : {'fp32', 'tf32'}
        The roof of FP32 matmul-class operators (the trace does not say whether TF32 ran).
    captures : sequence of path
        ``--capture``: traces of the CUDA/HIP graph captures the trace replays (vLLM, SGLang):
        each replayed kernel is given the operator and shapes of the launch that captured it
        (``attrs`` ``graph_kernels``/``graph_matched`` of the result count them).
    write, formats, plotlyjs, progress
        Write ``operators.csv``/``.parquet`` and ``roofline.html`` (whole or not at all).

    Returns
    -------
    TraceResult
        NcuroofError (one line, exit 2) for a bad trace, one without shapes, an unknown GPU.
    """
    from .model import analytic
    from .parser.timeline import read_operator_launches
    from .render import analytic as analytic_page

    p = Path(path)
    cat = catalog.load_operators()
    with _progress_bar(progress, "reading the trace") as bar:
        launches, ops, values = read_operator_launches(
            p,
            frozenset(cat.rules),
            device,
            bar,
            absorbs=cat.absorbs,
            transfers=True,
            captures=[Path(c) for c in captures],
        )
    spec = _trace_gpu(launches.attrs.get("gpu_name"), gpu, p)
    table = analytic.operator_table(launches, ops, values, cat, spec, fp32_matmul)
    result = TraceResult(table, spec, p, dict(launches.attrs), fp32_matmul)
    if _writes(write, outdir):
        out = Path(outdir) if outdir is not None else default_outdir(p)
        fig = analytic_page.figure(
            table, f"Operator roofline, {analytic.ANALYTIC_SOURCE}: {p.name}"
        )
        html = analytic_page.page_html(table, fig, _trace_meta(result), plotlyjs)
        files: dict[str, Any] = {
            **table_files({"operators": table}, formats, [p]),
            "roofline.html": html,
        }
        folder.write_outputs(out, files, [p])
        result.outdir, result.files = out, {name: out / name for name in files}
    return result


def _trace_outdir(p: Path) -> Path:
    """``<name without .json/.json.gz>.ncuroof/`` beside the trace."""
    name = p.name
    for suffix in (".json.gz", ".json"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return p.with_name(f"{name}.ncuroof")


def _trace_meta(r: TraceResult) -> dict[str, str]:
    """The page header of a trace's analysis."""
    gpu = r.gpu
    return {
        "work": "analytic (from shapes): FLOPs and compulsory bytes from each operator's Input"
        " Dims with the formulas of metrics/operators.toml; time from the kernels it launched",
        "trace": r.trace.name,
        "device": f"{r.attrs.get('device')} ({r.attrs.get('gpu_name') or 'unnamed'}) as {gpu.name}",
        "roofs": f"datasheet at {gpu.boost_hz / 1e6:.0f} MHz boost: DRAM"
        f" {fmt.si(gpu.dram_bytes_per_s, 'B/s')}; {gpu.source}",
        "FP32 matmuls": f"roof {r.fp32_matmul} (--fp32-matmul; the trace does not say whether TF32"
        " was allowed)",
    }
