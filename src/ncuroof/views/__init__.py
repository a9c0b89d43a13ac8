"""The tables of ``ncuroof analyze`` and what shows them: one module per view, listed once in
:data:`REGISTRY` (issue 40).

Each optional view (:mod:`~ncuroof.views.timeline`, :mod:`~ncuroof.views.ranks`,
:mod:`~ncuroof.views.phases`, :mod:`~ncuroof.views.ops`, :mod:`~ncuroof.views.operators`,
:mod:`~ncuroof.views.instruction`, :mod:`~ncuroof.views.samples`, :mod:`~ncuroof.views.whatif`,
:mod:`~ncuroof.views.roofs`) owns its option, its table's declared columns, its builder and its
chart, section, header or summary lines (:class:`~ncuroof.views.base.View`).
:func:`ncuroof.api.analyze` builds the views asked for (:func:`build`), writes every table built
and hands the page the charts, sections and header lines of those present; ``--json`` and the MCP
server carry the same tables. The command line's options, ``api.analyze``'s keywords and the MCP
tools' parameters are generated from :func:`view_options`.

A new view: one module with a ``VIEW`` and one line in :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..model.analysis import Analysis
from ..model.summary import kernel_table
from ..render import json_doc
from ..render.viewcontract import Chart
from ..runs import fleet
from ..schema import FAILURES, KERNELS, LAUNCHES, POINTS, Column
from . import instruction, operators, ops, phases, ranks, roofs, samples, timeline, whatif
from .base import Option, Request, View

__all__ = [
    "REGISTRY",
    "View",
    "Option",
    "Request",
    "view_options",
    "view_values",
    "request",
    "declared",
    "document_tables",
    "schema_text",
    "build",
    "written",
    "in_document",
    "charts",
    "sections",
    "page_meta",
    "summary_lines",
]

#: Every view, in the page's order of charts and sections (and the order files are listed): the
#: tables every analysis writes, then the optional views.
REGISTRY: tuple[View, ...] = (
    View("launches", LAUNCHES, lambda a, req: a.launches, in_document=False),
    View("kernels", KERNELS, lambda a, req: kernel_table(a.summary, a.launches), in_document=False),
    View("points", POINTS, lambda a, req: a.points, in_document=False),
    View(
        "failures", FAILURES, lambda a, req: req.failures, meta=fleet.page_meta, in_document=False
    ),
    timeline.VIEW,
    ranks.VIEW,
    phases.VIEW,
    ops.VIEW,
    operators.VIEW,
    instruction.VIEW,
    samples.VIEW,
    samples.PHASES_VIEW,
    whatif.VIEW,
    roofs.VIEW,
)


def view_options() -> list[Option]:
    """The views' options, once each, in :data:`REGISTRY` order."""
    found = {v.option.name: v.option for v in REGISTRY if v.option is not None}
    return list(found.values())


def request(failures: pd.DataFrame | None = None, **values: Any) -> Request:
    """The request of ``values`` (view option name -> value as the API takes it; the others their
    defaults).

    Raises
    ------
    TypeError
        A name that is no view's option.
    """
    known = {o.name: o.default for o in view_options()}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise TypeError(f"unexpected view option(s): {', '.join(unknown)}")
    return Request({**known, **{k: v for k, v in values.items() if v is not None}}, failures)


def view_values(values: dict[str, Any]) -> dict[str, Any]:
    """Pop the views' options (:func:`view_options`) out of a command's or tool call's arguments,
    each as the API takes it (:meth:`~ncuroof.views.base.Option.value`).

    Raises
    ------
    ValueError
        A value that does not parse (the message says why).
    """
    return {o.name: o.value(values.pop(o.name, None)) for o in view_options()}


def declared() -> dict[str, Mapping[str, Column]]:
    """Each view's declared columns by table name."""
    return {v.name: v.columns for v in REGISTRY}


def document_tables() -> dict[str, Mapping[str, Column]]:
    """The tables the ``--json`` document of ``analyze`` may carry under ``products``."""
    return {v.name: v.columns for v in REGISTRY if v.in_document}


def schema_text(kind: str) -> str:
    """The shipped JSON Schema of the ``kind`` document (``ncuroof/schemas/<kind>.schema.json``,
    :func:`ncuroof.render.json_doc.schema_text`), its ``products`` the views'."""
    return json_doc.schema_text(kind, document_tables())


def build(a: Analysis, req: Request) -> dict[str, pd.DataFrame]:
    """The tables of one analysis.

    Parameters
    ----------
    a : Analysis
        :func:`ncuroof.model.analysis.build` or :func:`~ncuroof.model.analysis.from_launches`.
    req : Request
        What was asked for (:func:`request`).

    Returns
    -------
    dict of str to DataFrame
        View name -> table (its declared columns), in :data:`REGISTRY` order, those built only.

    Raises
    ------
    InputError
        A request the analysis cannot serve (``--what-if`` of an unknown GPU, ``--group-by op``
        without a PyTorch profiler trace).
    """
    out = {v.name: v.build(a, req) for v in REGISTRY}
    return {name: t for name, t in out.items() if t is not None}


def _present(tables: Mapping[str, pd.DataFrame], hook: str) -> list[tuple[View, pd.DataFrame]]:
    """The views with a ``hook`` whose table is in ``tables``, in :data:`REGISTRY` order."""
    return [(v, tables[v.name]) for v in REGISTRY if getattr(v, hook) and v.name in tables]


def written(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables written to files: all but the empty ones whose view says not to."""
    entry = {v.name: v for v in REGISTRY}
    return {n: t for n, t in tables.items() if len(t) or entry[n].empty_written}


def in_document(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables the ``--json`` document carries under ``products``
    (:func:`ncuroof.render.json_doc.analysis_document`)."""
    entry = {v.name: v for v in REGISTRY}
    return {n: t for n, t in tables.items() if entry[n].in_document}


def charts(tables: Mapping[str, pd.DataFrame], a: Analysis) -> list[Chart]:
    """The charts of the views present (:func:`ncuroof.render.figure.plot_roofline` ``charts=``)."""
    drawn = (v.chart(t, a) for v, t in _present(tables, "chart"))
    return [c for c in drawn if c is not None]


def sections(tables: Mapping[str, pd.DataFrame], a: Analysis) -> str:
    """The HTML sections of the views present."""
    return "".join(v.section(t, a) for v, t in _present(tables, "section"))


def page_meta(tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """The page header's lines of the views present."""
    out: dict[str, Any] = {}
    for v, t in _present(tables, "meta"):
        out.update(v.meta(t))
    return out


def summary_lines(tables: Mapping[str, pd.DataFrame], a: Analysis) -> tuple[list[str], list[str]]:
    """The terminal summary's lines of the views present: those before the top kernels' findings,
    and those after them."""
    lead = [line for v, t in _present(tables, "lead") for line in v.lead(t, a)]
    tail = [line for v, t in _present(tables, "lines") for line in v.lines(t, a)]
    return lead, tail
