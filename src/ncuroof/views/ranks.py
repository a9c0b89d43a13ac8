"""The multi-rank view (``--ranks``, issue 12): each kernel's spread over the MPI ranks of one run
(``ranks.csv``), a section of the page and a line of its header."""

from __future__ import annotations

import pandas as pd
from markupsafe import Markup

from .. import fmt
from ..model.analysis import Analysis
from ..render.page import html_table, labels_by_key, render_fragment
from ..runs import ranks as _ranks
from ..schema import RANKS
from .base import Option, Request, View

__all__ = ["VIEW", "RANKS_OPTION", "rank_section", "RANKS_ON_PAGE"]

#: ``--ranks/--no-ranks``: the inputs are one report per MPI rank (None: recognised from them).
RANKS_OPTION = Option(
    "ranks",
    "Inputs are one report per MPI rank of one run: merge them into each kernel's spread over"
    " ranks (ranks.csv, load-imbalance flag). Default: recognised from file names differing in"
    " one number and distinct processes.",
    bool | None,
    flag="--ranks/--no-ranks",
)


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    """:func:`ncuroof.runs.ranks.spread` over the inputs, one rank each, when asked."""
    if not req["ranks"]:
        return None
    labels = dict(zip(map(str, a.inputs), _ranks.rank_labels(a.inputs), strict=True))
    threshold = a.catalog.thresholds["ranks"]["imbalance"]
    return _ranks.spread(a.launches, a.points, labels, threshold, by=a.options.match)


def _section(t: pd.DataFrame, a: Analysis) -> str:
    return rank_section(t, a.summary, a.catalog.thresholds["ranks"]["imbalance"])


#: Kernels listed in the spread-over-ranks section: the longest by median time per rank.
RANKS_ON_PAGE = 15

_RANK_COLUMNS = [
    ("kernel_label", "kernel"),
    ("ranks", "ranks"),
    ("time_s_min", "time per rank: fastest"),
    ("time_s_median", "median"),
    ("time_s_max", "slowest"),
    ("slowest_rank", "slowest rank"),
    ("imbalance", "slowest over median"),
    ("ai_text", "AI [FLOP/B]"),
    ("roof_text", "fraction of roof"),
    ("flag", "load imbalance"),
]

_RANK_KINDS = {
    "kernel_label": "name",
    "ranks": "int",
    "time_s_min": "time",
    "time_s_median": "time",
    "time_s_max": "time",
    "slowest_rank": "text",
    "imbalance": "pct",
    "ai_text": "text",
    "roof_text": "text",
    "flag": "text",
}


def rank_section(
    ranks: pd.DataFrame,
    summary: pd.DataFrame,
    imbalance: float | None = None,
    top: int = RANKS_ON_PAGE,
) -> str:
    """A multi-rank run's section of the page: each kernel's spread over the ranks
    (template ``ranks.html.j2``).

    Parameters
    ----------
    ranks : DataFrame
        :func:`ncuroof.runs.ranks.spread` (:data:`ncuroof.schema.RANKS`), longest median time first.
    summary : DataFrame
        The kernel summary (``kernel_key``, ``kernel_label``), for naming the kernels as the
        page's other tables do (``kernel_name`` for a key it lacks).
    imbalance : float, optional
        The ``[ranks].imbalance`` threshold of the flag (a fraction); default the catalog's.
    top : int, default :data:`RANKS_ON_PAGE`
        Kernels listed, the first of ``ranks``; the section counts those left out (all
        are in ``ranks.csv``).

    Returns
    -------
    str
        ``<section id="ranks">``: a sortable table, one row per kernel with ``ranks`` launching
        it, the fastest, median and slowest rank's time [s] (:func:`ncuroof.fmt.time`), the slowest
        rank, ``imbalance`` (slowest / median - 1, in percent), the ranges of
        ``ai_flop_per_byte`` [FLOP/B] and ``roof_fraction`` (:func:`ncuroof.fmt.span`); the rows
        of ``load_imbalance`` kernels have class ``imbalanced`` and say so in the last column.
    """
    if imbalance is None:
        from .. import catalog

        imbalance = catalog.load().thresholds["ranks"]["imbalance"]
    shown = ranks.head(top)
    every = ranks["load_imbalance"].fillna(False).astype(bool).tolist()
    table = _rank_table(shown, summary, every[: len(shown)])
    return render_fragment(
        "ranks.html.j2",
        ranks=int(ranks["ranks"].max()) if len(ranks) else 0,
        threshold=fmt.pct(imbalance),
        flagged=f"{sum(every)} of {fmt.count(len(ranks), 'kernel')} {fmt.agree(sum(every))}",
        shown=_left_out(len(shown), sum(every[len(shown) :]), len(ranks)),
        table=Markup(table),
    )


def _rank_table(shown: pd.DataFrame, summary: pd.DataFrame, flags: list[bool]) -> str:
    """The rank section's table: the kernels named as on the page, the AI and roof-fraction ranges
    (:func:`ncuroof.fmt.span`), the load-imbalanced rows marked."""
    rows = shown.assign(
        kernel_label=shown["kernel_key"].map(labels_by_key(summary)).fillna(shown["kernel_name"]),
        ai_text=[
            fmt.span(lo, hi)
            for lo, hi in zip(shown["ai_flop_per_byte_min"], shown["ai_flop_per_byte_max"])
        ],
        roof_text=[
            fmt.span(lo, hi, fmt.pct)
            for lo, hi in zip(shown["roof_fraction_min"], shown["roof_fraction_max"])
        ],
        flag=["imbalanced" if f else "" for f in flags],
    )
    return html_table(
        rows,
        _RANK_COLUMNS,
        title_col="kernel_key",
        kinds=_RANK_KINDS,
        row_classes=["imbalanced" if f else "" for f in flags],
    )


def _left_out(shown: int, flagged_left: int, n: int) -> str:
    """The section's sentence on how many kernels it lists and how many (load-imbalanced ones among
    them) it leaves out."""
    if shown == n:
        return f"All {fmt.count(n, 'kernel')}, longest median time per rank first."
    left = n - shown
    return (
        f"The {shown} longest of {fmt.count(n, 'kernel')} by median time per rank; {left} more"
        f" ({flagged_left} of them load-imbalanced) {fmt.agree(left)} left out here, all in"
        " ranks.csv."
    )


VIEW = View("ranks", RANKS, _build, option=RANKS_OPTION, section=_section, meta=_ranks.page_meta)
