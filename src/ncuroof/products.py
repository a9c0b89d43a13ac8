"""The derived outputs of ``ncuroof analyze``, each declared once: the products registry (issue 31).

A :class:`Product` is a table ncuroof writes (``<name>.csv`` and/or ``<name>.parquet`` through
:func:`ncuroof.parser.tables_io.table_files`; its columns and units declared in
:data:`ncuroof.schema.TABLES` under the same name), how it is built from the analysis and the
request, and what it adds to the roofline page: a chart the page's chart control switches to, a
section under the chart, lines of the page header. :data:`PRODUCTS` lists them in the page's order;
:func:`ncuroof.api.analyze` builds the requested ones (:func:`build`), writes every one built and
hands the page the charts, sections and header lines of those present (:func:`charts`,
:func:`sections`, :func:`page_meta`); ``--json`` and the MCP server serialize the same tables.

A new view: its declaration in ``schema.py`` (``TABLES``), its computation (``model/`` or
``runs/``), its chart or section in ``render/``, and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .errors import InputError
from .model import diagnose
from .model import phases as _phases
from .model import production as _production
from .model import roofs as _roofs
from .model.analysis import Analysis
from .model.instruction_roofline import instruction_points
from .render import analytic as analytic_page
from .render import views
from .render.figure import MAX_LAUNCH_DOTS, longest_launches
from .render.viewcontract import Chart
from .runs import fleet
from .runs import ranks as _ranks

__all__ = [
    "Request",
    "Product",
    "PRODUCTS",
    "build",
    "written",
    "in_document",
    "charts",
    "sections",
    "page_meta",
]


@dataclass(frozen=True)
class Request:
    """What ``analyze`` was asked for beyond :class:`~ncuroof.model.analysis.AnalysisOptions`.

    Attributes
    ----------
    what_if : str, optional
        A ``metrics/gpus.toml`` id: the ``whatif`` table (``--what-if``).
    group_by : str, optional
        ``nvtx[:DEPTH]`` (the ``phases`` table) or ``op`` (the ``ops`` table).
    ranks : bool
        The inputs are one report per MPI rank: the ``ranks`` table.
    roofs : bool
        The ``roofs`` table (``--roofs``): every roof of every launch with its source, clock and
        confidence (:func:`ncuroof.model.roofs.roof_table`).
    failures : DataFrame, optional
        The inputs a fleet or multi-rank run could not analyze (:func:`ncuroof.runs.fleet.run`):
        the ``failures`` table, given for such a run, None otherwise.
    fp32_matmul : {'fp32', 'tf32'}
        ``--fp32-matmul``: the roof of FP32 matmul-class operators in the ``operators`` table.
    """

    what_if: str | None = None
    group_by: str | None = None
    ranks: bool = False
    roofs: bool = False
    failures: pd.DataFrame | None = None
    fp32_matmul: str = "fp32"


Build = Callable[[Analysis, Request], "pd.DataFrame | None"]


@dataclass(frozen=True)
class Product:
    """One derived output.

    Attributes
    ----------
    name : str
        File stem and key of :data:`ncuroof.schema.TABLES` (its declared columns and units).
    build : callable
        ``build(analysis, request)``: the table, or None when not requested or not applicable.
    chart : callable, optional
        ``chart(table, analysis)``: a :class:`~ncuroof.render.viewcontract.Chart` of the page's
        chart control, or None to draw none.
    section : callable, optional
        ``section(table, analysis)``: HTML of a section under the chart.
    meta : callable, optional
        ``meta(table)``: lines of the page header (label -> text).
    empty_written : bool, default True
        Whether a table without rows is still written.
    in_document : bool, default True
        Whether the ``--json`` document carries it (``products``): not the tables the document
        has in its own terms (kernels, points, failures) nor one row per launch.
    """

    name: str
    build: Build
    chart: Callable[[pd.DataFrame, Analysis], Chart | None] | None = None
    section: Callable[[pd.DataFrame, Analysis], str] | None = None
    meta: Callable[[pd.DataFrame], dict[str, str]] | None = None
    empty_written: bool = True
    in_document: bool = True


def _timeline(a: Analysis, req: Request) -> pd.DataFrame | None:
    return a.production.table if a.production is not None else None


def _ranks_table(a: Analysis, req: Request) -> pd.DataFrame | None:
    """:func:`ncuroof.runs.ranks.spread` over the inputs, one rank each, when asked."""
    if not req.ranks:
        return None
    labels = dict(zip(map(str, a.inputs), _ranks.rank_labels(a.inputs), strict=True))
    threshold = a.catalog.thresholds["ranks"]["imbalance"]
    return _ranks.spread(a.kernels, a.points, labels, threshold, by=a.options.match)


def _phases_table(a: Analysis, req: Request) -> pd.DataFrame | None:
    if req.group_by in (None, _phases.BY_OPERATOR):
        return None
    return _phases.phase_table(a.kernels, _phases.parse_group_by(req.group_by))


def _ops_table(a: Analysis, req: Request) -> pd.DataFrame | None:
    """``--group-by op``: :func:`ncuroof.model.production.op_table`; InputError without a PyTorch
    profiler trace."""
    if req.group_by != _phases.BY_OPERATOR:
        return None
    if a.production is None or a.production.format != "kineto":
        raise InputError(
            "--group-by op needs the PyTorch profiler trace of the run (--timeline trace.json or"
            " .json.gz): it names the operator that launched each kernel"
        )
    return _production.op_table(a.kernels, a.production)


def _operators_table(a: Analysis, req: Request) -> pd.DataFrame | None:
    """Issue 41: with a PyTorch trace recorded with shapes as ``--timeline``, each operator's
    analytic (useful) work beside ncu's counted work (:func:`ncuroof.model.production.
    operator_work`); None for other timelines."""
    if a.production is None or a.production.format != "kineto" or a.options.timeline is None:
        return None
    return _production.operator_work(a.kernels, a.production, a.gpus, req.fp32_matmul)


def _operators_section(t: pd.DataFrame, a: Analysis) -> str:
    return analytic_page.section_html(t) if len(t) else ""


def _instruction_points(a: Analysis, req: Request) -> pd.DataFrame:
    sector = a.catalog.instruction.sector_bytes if a.catalog.instruction else 32.0
    return instruction_points(a.kernels, sector)


def _what_if(a: Analysis, req: Request) -> pd.DataFrame | None:
    """:func:`ncuroof.model.diagnose.what_if` onto ``--what-if``'s datasheet roofs."""
    if req.what_if is None:
        return None
    target = a.gpus.by_name(req.what_if)
    if target is None:
        raise InputError(
            f"--what-if {req.what_if!r} is not in metrics/gpus.toml; use one of "
            + ", ".join(g.id for g in a.gpus.gpus)
        )
    return diagnose.what_if(a.summary, a.kernels, target, a.gpus)


def _roofs_table(a: Analysis, req: Request) -> pd.DataFrame | None:
    return _roofs.roof_table(a.kernels, a.gpus) if req.roofs else None


def _phase_chart(t: pd.DataFrame, a: Analysis) -> Chart | None:
    return views.phase_chart(t, a.points, a.summary) if len(t) else None


def _ops_chart(t: pd.DataFrame, a: Analysis) -> Chart | None:
    if not len(t):
        return None
    ops = t.rename(columns={"op": "phase"})
    return views.phase_chart(ops, a.points, a.summary, "ops", "PyTorch operators")


def _instruction_chart(t: pd.DataFrame, a: Analysis) -> Chart | None:
    """The instruction roofline of the longest launches (as many as the roofline's launch dots)."""
    shown = longest_launches(t, a.kernels, MAX_LAUNCH_DOTS)
    return views.instruction_chart(shown) if len(shown) else None


def _rank_section(t: pd.DataFrame, a: Analysis) -> str:
    return views.rank_section(t, a.summary, a.catalog.thresholds["ranks"]["imbalance"])


def _timeline_section(t: pd.DataFrame, a: Analysis) -> str:
    return views.timeline_section(a.production, a.summary) if a.production is not None else ""


#: Every product, in the page's order of charts and sections (and the order files are listed).
PRODUCTS: tuple[Product, ...] = (
    Product("kernels", lambda a, req: a.kernels, in_document=False),
    Product("points", lambda a, req: a.points, in_document=False),
    Product("failures", lambda a, req: req.failures, meta=fleet.page_meta, in_document=False),
    Product("timeline", _timeline, section=_timeline_section),
    Product("ranks", _ranks_table, section=_rank_section, meta=_ranks.page_meta),
    Product("phases", _phases_table, chart=_phase_chart),
    Product("ops", _ops_table, chart=_ops_chart),
    Product("operators", _operators_table, section=_operators_section),
    Product(
        "instruction_points",
        _instruction_points,
        chart=_instruction_chart,
        empty_written=False,
        in_document=False,
    ),
    Product("whatif", _what_if),
    Product("roofs", _roofs_table, in_document=False),
)


def build(a: Analysis, request: Request) -> dict[str, pd.DataFrame]:
    """The products of one analysis.

    Parameters
    ----------
    a : Analysis
        :func:`ncuroof.model.analysis.build` or :func:`~ncuroof.model.analysis.from_kernels`.
    request : Request
        What was asked for.

    Returns
    -------
    dict of str to DataFrame
        Product name -> table (the :data:`ncuroof.schema.TABLES` declaration of that name), in
        :data:`PRODUCTS` order, those built only.

    Raises
    ------
    InputError
        A request the analysis cannot serve (``--what-if`` of an unknown GPU, ``--group-by op``
        without a PyTorch profiler trace).
    """
    out = {p.name: p.build(a, request) for p in PRODUCTS}
    return {name: t for name, t in out.items() if t is not None}


def written(products: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The products written to files: all but the empty ones whose entry says not to."""
    entry = {p.name: p for p in PRODUCTS}
    return {n: t for n, t in products.items() if len(t) or entry[n].empty_written}


def in_document(products: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The products the ``--json`` document carries
    (:func:`ncuroof.render.json_doc.analysis_document` ``products=``)."""
    entry = {p.name: p for p in PRODUCTS}
    return {n: t for n, t in products.items() if entry[n].in_document}


def charts(products: Mapping[str, pd.DataFrame], a: Analysis) -> list[Chart]:
    """The charts of the products present
    (:func:`ncuroof.render.figure.plot_roofline` ``charts=``)."""
    drawn = (p.chart(products[p.name], a) for p in PRODUCTS if p.chart and p.name in products)
    return [c for c in drawn if c is not None]


def sections(products: Mapping[str, pd.DataFrame], a: Analysis) -> str:
    """The HTML sections of the products present, in :data:`PRODUCTS` order."""
    return "".join(
        p.section(products[p.name], a) for p in PRODUCTS if p.section and p.name in products
    )


def page_meta(products: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """The page header's lines of the products present."""
    out: dict[str, Any] = {}
    for p in PRODUCTS:
        if p.meta and p.name in products:
            out.update(p.meta(products[p.name]))
    return out
