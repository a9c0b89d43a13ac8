"""One analysis, computed once: the tables every renderer and ``compare`` consume.

:func:`build` runs the pipeline once (parser → formulas → roofs → classify → summary →
diagnose) and returns an :class:`Analysis` holding the launch table (``kernels``), its roofline
points, the per-kernel dots and the per-kernel summary, with the catalog and the options used.
The page (:mod:`ncuroof.render.figure`, :mod:`ncuroof.render.page`), the CLI summary and
:mod:`ncuroof.runs.compare` read these tables; none of them recomputes a point, a dot or a summary.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import catalog, parser
from ..catalog import Catalog, GpuCatalog
from ..errors import InputError
from ..parser.clocks import clock_control
from ..parser.memory import release_memory
from ..parser.patterns import UserPattern
from ..schema import (
    LAUNCHES,
    STATUSES,
    compact_text,
    from_text,
    validate_launches,
    validate_points,
)
from . import classify, diagnose, expect, formulas, production, roofs, samples, summary
from .limiters import LIMITER_COLUMNS
from .summary import FOCUS_SHARE, KEY_CHOICES

__all__ = [
    "AnalysisOptions",
    "Analysis",
    "build",
    "from_launches",
    "launch_table",
    "restore_launches",
]

TRAFFIC_CHOICES = ("ncu", "nersc")


@dataclass(frozen=True)
class AnalysisOptions:
    """Everything that changes the numbers of an analysis; every command that analyzes takes it.

    Attributes
    ----------
    traffic : {'ncu', 'nersc'}
        Preferred traffic definition of the L1/L2 levels (``metrics/roofline.toml``).
    gpu : str, optional
        Datasheet entry (``metrics/gpus.toml`` id or name) for roofs the input lacks.
    peak_flops, peak_bandwidth : mapping, optional
        User roofs in FLOP/s by precision and B/s by level; they replace all others.
    achievable_flops, achievable_bandwidth : mapping, optional
        User achievable roofs, named the same way; they replace the published measurements of
        ``metrics/gpus.toml`` and sit beside the peak roofs
        (:func:`ncuroof.model.roofs.fill_achievable`).
    expect : path, optional
        Expected FLOPs and DRAM bytes per kernel-name pattern (:mod:`ncuroof.model.expect`).
    match : str
        Kernel identity (:data:`ncuroof.model.summary.KEY_CHOICES`): ``kernel`` (demangled name),
        ``config``, ``nvtx`` or ``launch``.
    focus : float
        Share of GPU time whose kernels the page shows first
        (:func:`ncuroof.model.summary.focus_set`).
    stack : bool
        Stack unrelated inputs instead of merging them as files of one run.
    reader : {'auto', 'fast', 'ncu_report'}
        How ``.ncu-rep`` files are read (:func:`ncuroof.parser.read`); the numbers do not depend
        on it.
    timeline : path, optional
        A production timeline (PyTorch profiler trace or Nsight Systems export): shares, focus,
        savings and the kernel order follow its kernel time (:mod:`ncuroof.model.production`).
    device : int, optional
        The timeline's device (default: the only one with kernels, else the report's GPU).
    kernels : str, optional
        Only the launches of the kernels whose function or demangled name is this, or matches
        ``regex:PATTERN`` (as ncu's ``-k``; :func:`only_kernels`).
    """

    traffic: str = "ncu"
    gpu: str | None = None
    peak_flops: Mapping[str, float] | None = None
    peak_bandwidth: Mapping[str, float] | None = None
    achievable_flops: Mapping[str, float] | None = None
    achievable_bandwidth: Mapping[str, float] | None = None
    expect: Path | None = None
    match: str = "kernel"
    focus: float = FOCUS_SHARE
    stack: bool = False
    reader: str = "auto"
    timeline: Path | None = None
    device: int | None = None
    kernels: str | None = None

    def __post_init__(self) -> None:
        parser.check_reader(self.reader)
        if self.traffic not in TRAFFIC_CHOICES:
            raise ValueError(
                f"traffic must be one of {', '.join(TRAFFIC_CHOICES)}, not {self.traffic!r}"
            )
        if self.match not in KEY_CHOICES:
            raise ValueError(f"match must be one of {', '.join(KEY_CHOICES)}, not {self.match!r}")
        if not (0 < self.focus <= 1) or math.isnan(self.focus):
            raise ValueError(f"focus must be in (0, 1], not {self.focus!r}")
        if self.device is not None and self.timeline is None:
            raise ValueError(
                "device (--device) picks a device of the production timeline: give the timeline too"
                " (--timeline TRACE)"
            )

    @classmethod
    def of(cls, options: AnalysisOptions | None = None, **overrides: Any) -> AnalysisOptions:
        """``options`` (default: the defaults) with the non-None ``overrides`` applied."""
        base = options if options is not None else cls()
        given = {k: v for k, v in overrides.items() if v is not None}
        for name in ("expect", "timeline"):
            if name in given:
                given[name] = Path(given[name])
        return replace(base, **given)


@dataclass
class Analysis:
    """The result of one analysis (see the module docstring).

    Attributes
    ----------
    inputs : list of Path
        The files analyzed.
    options : AnalysisOptions
        The options used.
    launches : DataFrame
        One row per launch (:data:`ncuroof.schema.LAUNCHES`), ``kernel_key`` set
        by ``options.match``.
    points : DataFrame
        One row per (launch, precision, level) (:data:`ncuroof.schema.POINTS`).
    dots : DataFrame
        One row per (kernel, precision, level) (:data:`ncuroof.schema.DOTS`).
    summary : DataFrame
        One row per kernel, diagnosed, longest first (:data:`ncuroof.schema.KERNEL_SUMMARY`).
    catalog : Catalog
        The metric catalog.
    gpus : GpuCatalog
        The datasheet catalog.
    production : Production, optional
        The timeline joined to the analysis (``options.timeline``), the summary's time basis.
    samples, sample_phases : DataFrame, optional
        The PM sampling series of the sampled launches (:data:`ncuroof.schema.SAMPLES`) and their
        ramp, plateau and tail (:data:`ncuroof.schema.SAMPLE_PHASES`); None for a saved table.
    """

    inputs: list[Path]
    options: AnalysisOptions
    launches: pd.DataFrame
    points: pd.DataFrame
    dots: pd.DataFrame
    summary: pd.DataFrame
    catalog: Catalog
    gpus: GpuCatalog
    notes: list[str] = field(default_factory=list)
    production: production.Production | None = None
    samples: pd.DataFrame | None = None
    sample_phases: pd.DataFrame | None = None

    @property
    def missing_metrics(self) -> bool:
        """True when no launch has roofline metrics (a basic-set report)."""
        return bool(len(self.launches)) and bool(
            (self.launches["status"] == "no_roofline_metrics").all()
        )


_log = logging.getLogger(__name__)


@contextlib.contextmanager
def _stage(what: str) -> Iterator[None]:
    """Log how long one stage of the analysis took (``ncuroof -vv``: DEBUG)."""
    t0 = time.perf_counter()
    yield
    _log.debug("%s: %.3f s", what, time.perf_counter() - t0)


def read_launches(
    inputs: Sequence[Path],
    options: AnalysisOptions,
    cat: Catalog,
    gpus: GpuCatalog,
    progress: Callable[[int], Callable[[], None]] | None = None,
) -> pd.DataFrame:
    """Read the inputs and compute each launch's work, traffic, roofs and time at the roof.

    Parameters
    ----------
    inputs : sequence of Path
        Reports and CSV exports (:func:`ncuroof.parser.read_many`).
    options : AnalysisOptions
        ``traffic``, ``gpu``, user roofs, ``expect``, ``stack``.
    cat, gpus : Catalog, GpuCatalog
        The catalogs.
    progress : callable, optional
        Progress-bar factory for reading.

    Returns
    -------
    DataFrame
        The launch table before classification (``bound``/``diagnosis`` not yet filled).

    Raises
    ------
    NcuroofError
        Bad input (one line naming the file).
    """
    if not inputs:
        raise InputError("no input files given")
    with _stage("read the inputs"):
        raw = parser.read_many(
            list(inputs), cat, progress, stack=options.stack, reader=options.reader
        )
    release_memory()  # the decoded chunks, joined into ``raw``, and the reader's copies
    _log.info("read %d launches from %d input(s)", len(raw), len(inputs))
    with _stage("work and traffic of each launch"):
        k = formulas.compute_launches(raw, cat, traffic=options.traffic)
    del raw  # the metric columns are not needed past here
    clocks = {s: clock_control(Path(s)) for s in k["source"].dropna().unique()}
    k["clock_control"] = k["source"].map(clocks).astype(object)
    k = roofs.fill_ceilings(
        k,
        gpus,
        gpu=options.gpu,
        peak_flops=options.peak_flops,
        peak_bandwidth=options.peak_bandwidth,
        catalog=cat,
        achievable_flops=options.achievable_flops,
        achievable_bandwidth=options.achievable_bandwidth,
    )
    k = formulas.time_at_roof(k, cat)
    if options.expect is not None:
        k = expect.apply_expectations(k, expect.read_expectations(options.expect))
    # from here on the launch table's texts are held once each (the stages after this one replace
    # whole columns, never cells); the raw table and the texts' copies are given back
    k = compact_text(k, LAUNCHES)
    release_memory()
    return k


def from_launches(
    kernels: pd.DataFrame,
    options: AnalysisOptions,
    cat: Catalog,
    gpus: GpuCatalog,
    inputs: Sequence[Path] = (),
    classified: bool = False,
    progress: Callable[[int], Callable[..., None]] | None = None,
) -> Analysis:
    """Finish an analysis from a launch table: points, bound, diagnosis, dots
    and summary, once each.

    Parameters
    ----------
    kernels : DataFrame
        From :func:`read_launches`, or a saved ``launches.csv`` after :func:`restore_launches`.
    options : AnalysisOptions
        ``match``, ``focus``, ``timeline`` and ``device`` are used here.
    cat, gpus : Catalog, GpuCatalog
        The catalogs.
    inputs : sequence of Path
        The files the table came from.
    classified : bool, default False
        True when ``bound`` and the launch diagnosis are already filled (a saved table).
    progress : callable, optional
        Progress-bar factory for reading the production timeline (``--timeline``).

    Returns
    -------
    Analysis
    """
    kernels = only_kernels(kernels, options.kernels)
    with _stage("points"):
        pts = validate_points(formulas.compute_points(kernels))
    smp = phs = None
    if not classified:  # the reports are at hand: their sampled series, if any
        with _stage("PM samples and phases"):
            smp = samples.read_samples(kernels, cat)
            phs = samples.phase_table(smp, kernels, cat)
        if len(smp):
            _log.info("%d PM samples of %d launch(es)", len(smp), smp["launch_id"].nunique())
    with _stage("bound and diagnosis of each launch"):
        k = (
            _classified(kernels, pts, options, cat, gpus, phs)
            if not classified
            else _keyed(kernels, options)
        )
    release_memory()  # the launch table's intermediate copies
    dots = summary.kernel_dots(k, pts)
    prod = production.from_options(
        k, dots, options.timeline, options.device, options.match, cat.thresholds, progress
    )
    summ = summary.kernel_summary(
        k,
        focus=options.focus,
        dots=dots,
        production_s=prod.weights if prod else None,
        production_total_s=prod.total_s if prod else None,
    )
    with _stage("kernel verdicts"):
        summ = diagnose.diagnose_kernels(summ, k, cat, gpus)
    _log.info("%d kernels, %d launches, %d points", len(summ), len(k), len(pts))
    return Analysis(
        list(inputs),
        options,
        k,
        pts,
        dots,
        summ,
        cat,
        gpus,
        production=prod,
        samples=smp,
        sample_phases=phs,
    )


def only_kernels(launches: pd.DataFrame, kernels: str | None) -> pd.DataFrame:
    """The launches of the kernels ``kernels`` names (all without it).

    Parameters
    ----------
    launches : DataFrame
        A launch table (:data:`ncuroof.schema.LAUNCHES`).
    kernels : str, optional
        A function or demangled name, or ``regex:PATTERN`` searched in both (as ncu's ``-k``;
        :class:`ncuroof.parser.patterns.UserPattern`, under its time limit).

    Returns
    -------
    DataFrame
        The launches kept, their order and columns as they were.

    Raises
    ------
    InputError
        When no launch matches (the message names some of the kernels there are).
    """
    if not kernels:
        return launches
    names = launches["kernel_name"].astype(str).to_numpy()
    demangled = launches["kernel_demangled"].astype(str).to_numpy()
    if kernels.startswith("regex:"):
        rx = UserPattern(kernels[len("regex:") :], "-k")
        found = {n: rx.search(n) for n in {*names, *demangled}}
        keep = np.array([found[a] or found[b] for a, b in zip(names, demangled)], dtype=bool)
    else:
        keep = (names == kernels) | (demangled == kernels)
    if not keep.any():
        some = ", ".join(sorted(set(names))[:8]) + (", ..." if len(set(names)) > 8 else "")
        raise InputError(
            f"no kernel matches -k {kernels!r} (a function or demangled name, or regex:PATTERN);"
            f" the inputs' kernels: {some}"
        )
    return launches[keep].reset_index(drop=True)


def _keyed(kernels: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    """The classified launch table with its ``kernel_key`` (``options.match``), validated."""
    return validate_launches(
        kernels.assign(kernel_key=summary.kernel_keys(kernels, options.match).array)
    )


def _classified(
    kernels: pd.DataFrame,
    points: pd.DataFrame,
    options: AnalysisOptions,
    cat: Catalog,
    gpus: GpuCatalog,
    sample_phases: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """:func:`read_launches`' table classified and diagnosed launch by launch (``points``:
    its points; ``sample_phases``: the tail shares of its sampled launches, as evidence),
    keyed."""
    bind = classify.binding_points(points)  # once, handed on
    k = classify.classify(kernels, points, cat, bind)
    k = diagnose.diagnose_launches(k, points, cat, gpus, bind)
    return _keyed(samples.with_tail_evidence(k, sample_phases, cat), options)


def launch_table(paths: Sequence[Path], options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The launch table of ``paths`` alone, as :func:`build` makes it, without the
    rest of the analysis.

    What a fleet worker keeps of each input (:mod:`ncuroof.runs.fleet`): read, work, traffic, roofs,
    classification and diagnosis of every launch; no kernel aggregation.

    Parameters
    ----------
    paths : sequence of Path
        Reports and CSV exports.
    options : AnalysisOptions, optional
        Default: :class:`AnalysisOptions` defaults.

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.LAUNCHES`, equal to ``build(paths, options).launches``.

    Raises
    ------
    NcuroofError
        Bad input (one line naming the file).
    """
    options, cat, gpus, k = _read(paths, options)
    return _classified(k, validate_points(formulas.compute_points(k)), options, cat, gpus)


def build(
    paths: Sequence[Path],
    options: AnalysisOptions | None = None,
    progress: Callable[[int], Callable[[], None]] | None = None,
) -> Analysis:
    """Run the whole analysis of ``paths`` once.

    Parameters
    ----------
    paths : sequence of Path
        Reports and CSV exports.
    options : AnalysisOptions, optional
        Default: :class:`AnalysisOptions` defaults.
    progress : callable, optional
        Progress-bar factory for reading.

    Returns
    -------
    Analysis

    Raises
    ------
    NcuroofError
        Bad input (one line naming the file).
    """
    options, cat, gpus, k = _read(paths, options, progress)
    return from_launches(k, options, cat, gpus, inputs=paths, progress=progress)


def _read(
    paths: Sequence[Path],
    options: AnalysisOptions | None,
    progress: Callable[[int], Callable[[], None]] | None = None,
) -> tuple[AnalysisOptions, Catalog, GpuCatalog, pd.DataFrame]:
    """The options (defaults for None), the catalogs and :func:`read_launches` of ``paths``."""
    options = options if options is not None else AnalysisOptions()
    cat, gpus = catalog.load(), catalog.load_gpus()
    return options, cat, gpus, read_launches(paths, options, cat, gpus, progress)


#: Columns a saved launch table may lack (written by an older ncuroof): recomputed on reading.
_DERIVED = (
    "kernel_key",
    "time_at_roof_s",
    "saving_s",
    "expected_flop",
    "expected_dram_bytes",
    "diagnosis",
    "evidence",
    "advice",
    "flags",
    "hot_pipe",
    "hot_pipe_frac",
    "hot_memory_unit",
    "hot_memory_unit_frac",
    "time_at_roof_bound",
    "speed_of_light_note",
    *(c for c in LAUNCHES if c.startswith("achievable_")),
    "roof_fraction",
    "pm_sample_interval_s",
    *LIMITER_COLUMNS,
)


def restore_launches(
    table: pd.DataFrame, where: Path, cat: Catalog, gpus: GpuCatalog
) -> pd.DataFrame:
    """A launch table read back from a saved ``launches.csv`` (``kernels.csv`` before schema
    version 2), with the declared dtypes and any
    derived column an older ncuroof did not write recomputed.

    Parameters
    ----------
    table : DataFrame
        As read by :func:`pandas.read_csv`.
    where : Path
        The file, for error messages.
    cat, gpus : Catalog, GpuCatalog
        The catalogs (for a re-diagnosis).

    Returns
    -------
    DataFrame
        The classified table (``bound`` and the launch diagnosis filled), cast to
        :data:`ncuroof.schema.LAUNCHES` dtypes; notes, flags and roof sources as data
        (:func:`ncuroof.schema.from_text`: the one place their text is read).

    Raises
    ------
    InputError
        When a declared column that cannot be recomputed is missing.
    """
    if "clock_control" not in table.columns:  # kernels.csv of ncuroof before issue 32
        table = table.assign(clock_control=None)
    _check_saved(table, where)
    k = _typed(from_text(table))
    if "hot_pipe" not in k.columns:  # written before issue 15
        k["hot_pipe"], k["hot_pipe_frac"] = "", np.nan
    if "hot_memory_unit" not in k.columns:  # written before issue 44
        k["hot_memory_unit"], k["hot_memory_unit_frac"] = "", np.nan
    for c, missing in LIMITER_COLUMNS.items():  # written before issue 50
        if c not in k.columns:
            k[c] = missing
    if any(
        c not in k.columns
        for c in ("time_at_roof_s", "saving_s", "time_at_roof_bound", "speed_of_light_note")
    ):
        k = formulas.time_at_roof(k, cat)
    for c in ("expected_flop", "expected_dram_bytes", "pm_sample_interval_s", *_ACHIEVABLE):
        if c not in k.columns:
            k[c] = np.nan
    if "achievable_sources" not in k.columns:
        k["achievable_sources"] = pd.Series([()] * len(k), index=k.index, dtype=object)
    if "roof_fraction" not in table.columns:  # written before issue 21
        bind = k[["source", "launch_id"]].merge(
            classify.binding_points(formulas.compute_points(k)), how="left"
        )
        k["roof_fraction"] = pd.to_numeric(bind["roof_fraction"], errors="coerce").to_numpy(float)
    if any(c not in table.columns for c in ("diagnosis", "evidence", "advice", "flags")):
        k = diagnose.diagnose_launches(k, formulas.compute_points(k), cat, gpus)
    return k.drop(columns=["kernel_key"], errors="ignore")


#: The achievable roof columns of the launch table (their sources: ``achievable_sources``).
_ACHIEVABLE = tuple(
    c for c in LAUNCHES if c.startswith("achievable_") and c != "achievable_sources"
)


def _check_saved(table: pd.DataFrame, where: Path) -> None:
    """InputError when a saved launch table lacks a column that cannot be recomputed, or has a
    status ncuroof does not write."""
    missing = [c for c in LAUNCHES if c not in table.columns and c not in _DERIVED]
    if missing:
        raise InputError(
            f"lacks the columns {missing[:4]}; it was not written by this version of ncuroof"
            " analyze",
            where,
        )
    unknown = table["status"][~table["status"].isin(STATUSES)]
    if len(unknown):
        raise InputError(
            f"has status {str(unknown.iloc[0])[:40]!r}, not one of"
            f" {', '.join(STATUSES)}: it was edited or not written by ncuroof; rerun ncuroof"
            " analyze on the inputs",
            where,
        )


def _typed(k: pd.DataFrame) -> pd.DataFrame:
    """The text columns of a saved launch table with their in-memory missing value ('' or None),
    and ``cc`` as text ('8.6' where a CSV reader made it a number)."""
    for name, col in LAUNCHES.items():
        if name in k.columns and col.dtype == "string":
            k[name] = (
                k[name].astype(object).where(k[name].notna(), "" if name in _TEXT_EMPTY else None)
            )
    k["cc"] = k["cc"].map(lambda c: f"{c:.1f}" if isinstance(c, float) and np.isfinite(c) else c)
    return k


#: Text columns whose missing value is the empty string (not None) in a launch table.
_TEXT_EMPTY = (
    "diagnosis",
    "evidence",
    "advice",
    "grid",
    "block",
    "datasheet_gpu",
    "flop_source",
    "tensor_source",
    "input_notes",
    "hot_pipe",
    "hot_memory_unit",
    "top_stall",
    "second_stall",
    "limiter",
    "time_at_roof_bound",
    "speed_of_light_note",
)
