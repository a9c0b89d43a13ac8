"""The production-timeline view (``--timeline``): production vs profiled time per kernel and the
kernels ncu did not profile (``timeline.csv``), a section of the page and the summary's first lines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from .. import fmt
from ..model.analysis import Analysis
from ..model.production import Production
from ..render.page import html_table, labels_by_key, render_fragment
from ..schema import TIMELINE_KERNEL
from .base import Request, View

__all__ = ["VIEW", "time_basis", "timeline_section", "TIMELINE_ON_PAGE"]


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    return a.production.table if a.production is not None else None


def _section(t: pd.DataFrame, a: Analysis) -> str:
    return timeline_section(a.production, a.summary) if a.production is not None else ""


#: Kernels listed in each table of the production-timeline section (all are in ``timeline.csv``).
TIMELINE_ON_PAGE = 15


def time_basis(production: Production | None) -> dict[str, Any] | None:
    """The page header's time basis with a timeline (:func:`ncuroof.render.page.render_html`
    ``basis``), else None.

    Parameters
    ----------
    production : Production, optional
        :func:`ncuroof.model.production.join`.

    Returns
    -------
    dict or None
        ``total_s``: the timeline's kernel time on its device [s], the shares' denominator;
        ``text``: one sentence with the trace, the device, that time, the coverage (share of it
        whose kernels have a roofline point) and the idle share (no kernel
        running: 1 - busy / span).
    """
    if production is None:
        return None
    p = production
    gpu = f" ({p.gpu_name})" if p.gpu_name else ""
    text = (
        f"Time basis: production timeline {p.path.name}, device {p.device}{gpu}:"
        f" {fmt.time(p.total_s)} of kernel time; {fmt.pct(p.coverage, 1)} of it in kernels with a"
        f" roofline point; GPU idle {fmt.pct(p.idle_share, 1)} of the {fmt.time(p.span_s)} timeline"
        " (no kernel running: no roofline can help there)."
    )
    return {"total_s": p.total_s, "text": text}


_UNPROFILED_COLUMNS = [
    ("kernel_name", "kernel"),
    ("production_launches", "launches"),
    ("production_time_s", "production time"),
    ("production_share", "share"),
    ("op", "operator"),
    ("ncu_filter", "ncu filter"),
]

_DURATION_COLUMNS = [
    ("kernel_label", "kernel"),
    ("production_launches", "production launches"),
    ("profiled_launches", "profiled launches"),
    ("production_time_per_launch_s", "production per launch"),
    ("profiled_time_per_launch_s", "profiled per launch"),
    ("duration_ratio", "production / profiled"),
    ("flag", "differs"),
]

_TIMELINE_KINDS = {
    "kernel_name": "name",
    "kernel_label": "name",
    "production_launches": "int",
    "profiled_launches": "int",
    "production_time_s": "time",
    "production_share": "pct",
    "production_time_per_launch_s": "time",
    "profiled_time_per_launch_s": "time",
    "duration_ratio": "num",
    "op": "text",
    "ncu_filter": "text",
    "flag": "text",
}


def timeline_section(
    production: Production, summary: pd.DataFrame, top: int = TIMELINE_ON_PAGE
) -> str:
    """The page's section on the production timeline (template ``timeline.html.j2``).

    Parameters
    ----------
    production : Production
        :func:`ncuroof.model.production.join`.
    summary : DataFrame
        The kernel summary (``kernel_key``, ``kernel_label``), to name profiled
        kernels as the page does.
    top : int, default :data:`TIMELINE_ON_PAGE`
        Rows of each table.

    Returns
    -------
    str
        ``<section id="timeline">``: the time basis; the ``top`` biggest kernels ncu did not profile
        by production time with their share and ``-k 'regex:...'`` filter; per profiled kernel of
        the timeline, production and profiled time per launch and their ratio, the rows of
        ``duration_differs`` kernels marked.
    """
    t = production.table
    un = t[t["match"] == "unprofiled"]
    both = t[(t["production_launches"] > 0) & (t["profiled_launches"] > 0)]
    differs = int(t["duration_differs"].sum())
    unprofiled = (
        html_table(un.head(top), _UNPROFILED_COLUMNS, kinds=_TIMELINE_KINDS) if len(un) else ""
    )
    return render_fragment(
        "timeline.html.j2",
        basis=(time_basis(production) or {}).get("text", ""),
        unprofiled=Markup(unprofiled),
        unprofiled_note=(
            f"{fmt.count(len(un), 'kernel')}, {fmt.pct(un['production_share'].sum(), 1)} of"
            " production kernel time"
        )
        + (f"; the {top} biggest shown." if len(un) > top else "."),
        durations=Markup(_duration_table(both.head(top), summary)),
        flagged=(
            f"{differs} of {fmt.count(len(both), 'kernel')}"
            f" {fmt.agree(differs, 'differs', 'differ')}"
        ),
        band=f"[{1 / (1 + production.differs):.2f}, {1 + production.differs:.2f}]",
    )


def _duration_table(shown: pd.DataFrame, summary: pd.DataFrame) -> str:
    """The profiled kernels' production and profiled time per launch, ``duration_differs`` rows
    marked; empty without rows."""
    if not len(shown):
        return ""
    shown = shown.assign(
        kernel_label=lambda d: d["kernel_key"].map(labels_by_key(summary)).fillna(d["kernel_name"]),
        flag=lambda d: np.where(d["duration_differs"], "yes", ""),
    )
    return html_table(
        shown,
        _DURATION_COLUMNS,
        title_col="kernel_key",
        kinds=_TIMELINE_KINDS,
        row_classes=["imbalanced" if f else "" for f in shown["duration_differs"]],
    )


#: Unprofiled kernels and kernels whose production duration differs named in the terminal summary.
_TIMELINE_LINES = 3


def _lead(t: pd.DataFrame, a: Analysis) -> list[str]:
    """The summary's first lines with a timeline: the time basis, the biggest kernels ncu did not
    profile with their filter, the kernels whose production duration per launch differs from
    ncu's."""
    if a.production is None:
        return []
    lines = [time_basis(a.production)["text"]]
    # one line per function name: several timeline rows (kernels of one name,
    # devices) would repeat it
    unprofiled = (
        t[t["match"] == "unprofiled"]
        .groupby("kernel_name", sort=False)
        .agg(production_share=("production_share", "sum"), ncu_filter=("ncu_filter", "first"))
        .sort_values("production_share", ascending=False, kind="stable")
    )
    for name, r in unprofiled.head(_TIMELINE_LINES).iterrows():
        lines.append(
            f"not profiled: {name}, {fmt.pct(r['production_share'], 1)} of production kernel time;"
            f" ncu {r['ncu_filter']}"
        )
    for r in t[t["duration_differs"]].head(_TIMELINE_LINES).itertuples(index=False):
        lines.append(
            f"{r.kernel_name}: {fmt.time(r.production_time_per_launch_s)} per launch in production,"
            f" {fmt.time(r.profiled_time_per_launch_s)} under ncu ({fmt.g(r.duration_ratio)}x)"
        )
    return lines


VIEW = View("timeline", TIMELINE_KERNEL, _build, section=_section, lead=_lead)
