"""What a view is: an :class:`Option` the user sets, and a :class:`View` that builds a table from
the analysis and shows it (issue 40).

An option is declared once, here or in its view's module; the command line
(:mod:`ncuroof.cli.options`), the keywords of :func:`ncuroof.api.analyze` and the MCP tools'
parameters (:mod:`ncuroof.mcp_server`) are generated from the declarations. A view owns its option,
its table's declared columns, the builder of the table and what the page and the terminal show of it
(a chart of the page's chart control, a section under the chart, header lines, summary lines).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..model.analysis import Analysis
    from ..render.viewcontract import Chart
    from ..schema import Column

__all__ = ["Option", "View", "Request"]


@dataclass(frozen=True)
class Option:
    """One user option, spelled once.

    Attributes
    ----------
    name : str
        The Python keyword (``api.analyze``, ``AnalysisOptions`` field, MCP parameter).
    help : str
        What it does: ``--help`` and the MCP parameter's description.
    kind : type
        The value's type as the MCP client sends it (``str``, ``bool``, ``float``, ``list[str]``).
    default : object
        The value when not given.
    choices : tuple of str, optional
        The values allowed.
    flag : str, optional
        The command line's spellings, space-separated (default ``--`` + ``name`` with dashes;
        ``-c --launch-count``; ``--x/--no-x`` for a three-state flag).
    metavar : str, optional
        The value's name in ``--help``.
    multiple : bool
        Repeatable on the command line (a list over MCP).
    is_flag : bool
        A switch without a value.
    path : bool
        A file to read (the command line checks it is not a directory).
    bounds : tuple, optional
        ``(low, high or None, low excluded)``: the range the command line and MCP enforce.
    parse : callable, optional
        ``parse(value)``: the command line's or client's value as the API takes it (ValueError with
        the reason when it does not parse).
    show_default : bool
        ``--help`` prints the default.
    """

    name: str
    help: str
    kind: Any = str
    default: Any = None
    choices: tuple[str, ...] | None = None
    flag: str | None = None
    metavar: str | None = None
    multiple: bool = False
    is_flag: bool = False
    path: bool = False
    bounds: tuple[float, float | None, bool] | None = None
    parse: Callable[[Any], Any] | None = None
    show_default: bool = False

    @property
    def cli_flags(self) -> list[str]:
        """The command line's spellings (``flag`` split on spaces)."""
        return (self.flag or "--" + self.name.replace("_", "-")).split()

    def value(self, given: Any) -> Any:
        """``given`` as the API takes it (:attr:`parse`); the default when None or empty."""
        if given is None or (self.multiple and not given):
            return self.default
        return self.parse(given) if self.parse is not None else given


@dataclass(frozen=True)
class Request(Mapping):
    """The view options of one ``analyze`` (name -> value, every option of the registry), and the
    inputs a fleet or multi-rank run could not analyze (the ``failures`` table; None otherwise)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    failures: pd.DataFrame | None = None

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


#: ``build(analysis, request)``: the view's table, or None when not asked for or not applicable.
Build = Callable[["Analysis", Request], "pd.DataFrame | None"]


@dataclass(frozen=True)
class View:
    """One table of ``analyze`` and what shows it.

    Attributes
    ----------
    name : str
        The table's file stem (``<name>.csv``/``.parquet``), its key in ``products`` of the
        ``--json`` document and the attribute of :class:`ncuroof.api.AnalysisResult`.
    columns : mapping of str to Column
        The declared columns and units (:mod:`ncuroof.schema`).
    build : callable
        ``build(analysis, request)``: the table, or None.
    option : Option, optional
        The option that asks for it.
    chart : callable, optional
        ``chart(table, analysis)``: a :class:`~ncuroof.render.viewcontract.Chart` of the page's
        chart control, or None.
    section : callable, optional
        ``section(table, analysis)``: HTML of a section under the chart.
    meta : callable, optional
        ``meta(table)``: lines of the page header (label -> text).
    lead, lines : callable, optional
        ``f(table, analysis)``: lines the terminal summary prints before the top kernels' findings
        (``lead``) or after them (``lines``).
    empty_written : bool
        A table without rows is still written.
    in_document : bool
        The ``--json`` document carries it under ``products`` (not the tables the document has in
        its own terms, nor one row per launch).
    """

    name: str
    columns: Mapping[str, Column]
    build: Build
    option: Option | None = None
    chart: Callable[[pd.DataFrame, Analysis], Chart | None] | None = None
    section: Callable[[pd.DataFrame, Analysis], str] | None = None
    meta: Callable[[pd.DataFrame], dict[str, str]] | None = None
    lead: Callable[[pd.DataFrame, Analysis], list[str]] | None = None
    lines: Callable[[pd.DataFrame, Analysis], list[str]] | None = None
    empty_written: bool = True
    in_document: bool = True
