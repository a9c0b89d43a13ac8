"""What a Jupyter notebook shows of a result (``_repr_html_``): the top-kernels table and the
roofline figure of an analysis, the largest changes and the gate of a comparison.

The cells are those of the Markdown summary (:func:`ncuroof.render.markdown.analysis_rows`),
HTML-escaped; the figure is plotly's. plotly.js is embedded in the first figure a Python session
shows and referred to by the others (:func:`figure_html`), so that a notebook shows its figures
offline and as HTML exported by nbconvert (a CDN script was blank there) at one copy of plotly.js
per notebook, not one per figure.
"""

from __future__ import annotations

import html
from typing import Any

from .. import fmt
from .markdown import analysis_rows, compare_rows

__all__ = ["analysis_html", "compare_html", "figure_html"]


def _table(header: list[str], rows: list[list[str]]) -> str:
    """An HTML table; numbers (header ending in ``>``) right-aligned, text left-aligned."""
    right = [h.endswith(">") for h in header]

    def cell(tag: str, text: str, r: bool) -> str:
        style = f' style="text-align:{"right" if r else "left"}"'  # Jupyter's CSS: all right
        return f"<{tag}{style}>{html.escape(fmt.printable(text, layout=False))}</{tag}>"

    head = "".join(cell("th", h.rstrip(">"), r) for h, r in zip(header, right))
    body = "".join(
        "<tr>" + "".join(cell("td", c, r) for c, r in zip(row, right)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Session:
    """Whether this Python session has put plotly.js into a notebook's output."""

    plotlyjs_shown = False


def figure_html(figure: Any) -> str:
    """A plotly figure as a notebook output fragment: with plotly.js (offline) the first time in
    this Python session, without it after (the notebook's first figure defined ``Plotly``).

    Parameters
    ----------
    figure : plotly.graph_objects.Figure

    Returns
    -------
    str
        An HTML fragment (a ``div`` and its scripts).
    """
    first = not _Session.plotlyjs_shown
    _Session.plotlyjs_shown = True
    return figure.to_html(full_html=False, include_plotlyjs=first)


def analysis_html(result: Any, figure: Any = None, top: int = 10) -> str:
    """The notebook view of an :class:`ncuroof.api.AnalysisResult`: its top ``top`` kernels
    (``summary``) and, when given, the plotly ``figure``.

    Returns
    -------
    str
        An HTML fragment.
    """
    header, rows = analysis_rows(result.summary.head(top))
    fig = "" if figure is None else figure_html(figure)
    return f"<div><h4>Top kernels by GPU time</h4>{_table(header, rows)}{fig}</div>"


def compare_html(result: Any, top: int = 10) -> str:
    """The notebook view of an :class:`ncuroof.api.CompareResult`: the headline, the gate and the
    ``top`` largest changes."""
    from ..runs.compare import headline
    from .compare import gate_words

    header, rows = compare_rows(result.table.head(top))
    gate = "" if result.gate is None else f"<p>gate: {html.escape(gate_words(result.gate))}</p>"
    return (
        f"<div><p>{html.escape(fmt.printable(headline(result.totals), layout=False))}</p>"
        f"{gate}{_table(header, rows)}</div>"
    )
