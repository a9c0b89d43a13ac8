"""The NVTX phases view (``--group-by nvtx[:DEPTH]``): launches aggregated by NVTX range path
(``phases.csv``), one time-weighted dot per phase at DRAM on a chart of the page's chart control.
:func:`phase_chart` also draws the PyTorch operators of ``--group-by op``
(:mod:`ncuroof.views.ops`)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from .._lazy import LazyModule
from ..catalog import precision_title
from ..model import phases as _phases
from ..model.analysis import Analysis
from ..model.formulas import flop_columns
from ..render.figure import (
    customdata_fields,
    log_range,
    main_precisions,
    precision_views,
    precision_when,
    roofs,
)
from ..render.viewcontract import Chart
from ..schema import PHASES
from .base import Option, Request, View

go = LazyModule("plotly.graph_objects")  # imported when a chart is drawn

__all__ = ["VIEW", "GROUP_BY", "phase_chart", "PHASE_CUSTOMDATA"]


def _group_by(value: str) -> str:
    """``parse``: ``nvtx[:DEPTH]`` (:func:`ncuroof.model.phases.parse_group_by`) or
    :data:`ncuroof.model.phases.BY_OPERATOR`, as given; ValueError otherwise."""
    if value != _phases.BY_OPERATOR:
        _phases.parse_group_by(value)
    return value


#: ``--group-by``: this view's (``nvtx``) and the operators view's (``op``) option.
GROUP_BY = Option(
    "group_by",
    "Also aggregate launches by NVTX range path (its first DEPTH ranges): phases.csv with time,"
    " FLOPs, bytes, AI, bound and time at the roof per phase; launches outside every range are the"
    f" phase 'no range'. {_phases.BY_OPERATOR}: one dot per PyTorch operator of the --timeline"
    " trace (ops.csv).",
    str | None,
    metavar=f"nvtx[:DEPTH]|{_phases.BY_OPERATOR}",
    parse=_group_by,
)


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    if req["group_by"] in (None, _phases.BY_OPERATOR):
        return None
    return _phases.phase_table(a.launches, _phases.parse_group_by(req["group_by"]))


def _chart(t: pd.DataFrame, a: Analysis) -> Chart | None:
    return phase_chart(t, a.points, a.summary) if len(t) else None


#: Columns of a phase dot's ``customdata``, in order: its hover template names them
#: (:func:`ncuroof.render.figure.customdata_fields`); ``flop`` is the precision view's. Numbers
#: only, as the roofline's dots (NaN stays NaN; plotly would show a missing value in
#: a mixed array as 0).
PHASE_CUSTOMDATA = ("launches", "time_s", "time_share", "flop", "time_at_roof_s")


def _phase_dots(phases: pd.DataFrame, view: str) -> pd.DataFrame:
    """The phases with FLOPs of a precision view and DRAM bytes, at that view: ``flop`` the view's
    column (:func:`ncuroof.model.formulas.flop_columns`; all counted FLOPs in ``main``), ``x`` and
    ``y`` the table's AI and FLOP/s scaled by its share of ``flop`` (same bytes, same time)."""
    col = "flop" if view == "main" else flop_columns(phases.columns).get(view, "")
    flop = phases[col] if col in phases.columns else pd.Series(np.nan, index=phases.index)
    share = flop / phases["flop"]
    d = phases.assign(
        flop=flop, x=phases["dram_ai_flop_per_byte"] * share, y=phases["flop_per_s"] * share
    )
    return d[(d["flop"] > 0) & (d["dram_bytes"] > 0)]


def _phase_trace(d: pd.DataFrame, view: str, label: str) -> go.Scatter:
    """The dots of one precision view: labelled on the chart (``text``), area by time share, hover
    from :data:`PHASE_CUSTOMDATA` under the phase and its bound (``hovertext``)."""
    work = "all counted FLOPs" if view == "main" else f"{precision_title(view)} FLOPs"
    hover = customdata_fields(
        "%{hovertext}<br>%{@launches:.0f} launches, %{@time_s:.3s}s (%{@time_share:.0%})<br>"
        + work
        + " %{@flop:.4s}FLOP: AI %{x:.3g} FLOP/B at DRAM, %{y:.3s}FLOP/s<br>"
        "at its speed of light %{@time_at_roof_s:.3s}s<extra></extra>",
        PHASE_CUSTOMDATA,
    )
    return go.Scatter(
        x=d["x"],
        y=d["y"],
        mode="markers+text",
        name=f"{label}: {work}",
        textposition="top center",
        text=d["phase"]
        .where(d["phase"].str.len() < 40, "…" + d["phase"].str[-38:])
        .map(html.escape),
        hovertext=d["phase"].map(html.escape) + " · " + d["bound"].astype(str) + "-bound",
        customdata=d[list(PHASE_CUSTOMDATA)].to_numpy(float),
        hovertemplate=hover,
        meta=dict(role="phase_dots", precision=view, when={"precision": view}),
        marker=dict(
            size=10 + 30 * np.sqrt(d["time_share"].fillna(0).to_numpy(float)),
            color="#9467bd",
            line=dict(width=1, color="#333"),
        ),
    )


def phase_chart(
    phases: pd.DataFrame,
    points: pd.DataFrame,
    summary: pd.DataFrame,
    chart_id: str = "phases",
    label: str = "NVTX phases",
) -> Chart:
    """One time-weighted dot per NVTX phase at DRAM under the roofline figure's DRAM and compute
    roofs, following its precision control.

    Parameters
    ----------
    phases : DataFrame
        :func:`ncuroof.model.phases.phase_table` (or :func:`ncuroof.model.production.op_table` with
        ``op`` renamed ``phase``).
    points, summary : DataFrame
        The points table and kernel summary the roofline figure draws: the roofs
        (:func:`ncuroof.render.figure.roofs`), the precision views and when each roof shows in them
        (:func:`ncuroof.render.figure.precision_views`,
        :func:`ncuroof.render.figure.precision_when`).
    chart_id, label : str
        The chart's ``id`` and its name (control, title, hover): ``phases``, ``NVTX phases`` by
        default; ``ops``, ``PyTorch operators`` for ``--group-by op``.

    Returns
    -------
    Chart
        ``id`` ``chart_id``, following the ``precision`` field: per precision view, dots at x = the
        view's FLOPs / ``dram_bytes`` [FLOP/B], y = the view's FLOPs / time [FLOP/s] (``main``: all
        counted FLOPs, the table's ``dram_ai_flop_per_byte`` and ``flop_per_s``), marker area by
        time share (``meta.role`` ``phase_dots``, ``meta.when`` the view); per precision with a
        roof, min(its compute roof, AI × the DRAM roof) (``phase_roof``), in the views where the
        figure draws that roof. Phases without FLOPs or DRAM bytes are counted in the title, not
        drawn; the title says when no roof can be drawn.
    """
    compute, memory, _ = roofs(points)
    views = [v for v, _ in precision_views(points)] or ["main"]
    dots = {v: _phase_dots(phases, v) for v in views}
    bw = memory.get("dram", np.nan)
    xs = log_range(
        np.concatenate([d["x"].to_numpy(float) for d in dots.values()]),
        [v / bw for v in compute.values() if bw > 0],
    )
    traces = _phase_roofs(xs, compute, bw, main_precisions(summary))
    has_roof = bool(traces)
    traces += [_phase_trace(d, v, label) for v, d in dots.items()]
    skipped = len(phases) - len(_phase_dots(phases, "main"))
    return Chart(
        chart_id,
        label,
        traces,
        fields=("precision",),
        layout={
            "title.text": _phase_title(label, skipped, has_roof, bw),
            "xaxis.title.text": "arithmetic intensity at DRAM [FLOP/B]",
            "yaxis.title.text": "FLOP/s",
        },
    )


def _phase_roofs(
    xs: np.ndarray, compute: dict[str, float], bw: float, main: Any
) -> list[go.Scatter]:
    """Per precision with a compute roof, min(roof, AI x the DRAM roof) over ``xs``, highest first,
    shown in the precision views where the figure draws that roof; none without a DRAM roof."""
    return [
        go.Scatter(
            x=xs,
            y=np.fmin(peak, xs * bw),
            mode="lines",
            name=f"{precision_title(p)} roof at DRAM",
            line=dict(width=1.5),
            hoverinfo="skip",
            meta=dict(role="phase_roof", precision=p, when=precision_when(p, main)),
        )
        for p, peak in sorted(compute.items(), key=lambda kv: -kv[1])
        if np.isfinite(peak) and np.isfinite(bw)
    ]


def _phase_title(label: str, skipped: int, has_roof: bool, bw: float) -> str:
    """The phase chart's title: what a dot is, the phases not drawn, and why no roof is drawn."""
    why = (
        "no DRAM bandwidth roof"
        if not np.isfinite(bw)
        else "no compute roof of a precision with work"
    )
    roofless = (
        ""
        if has_roof
        else f"<br><sup>no roof: {why} (set one with --peak-bandwidth/--peak-flops)</sup>"
    )
    return (
        f"{label}: one time-weighted dot each (the precision's FLOPs / DRAM bytes; all"
        " counted FLOPs in the main view)"
        + (f"; {skipped} without FLOPs or DRAM bytes not drawn" if skipped else "")
        + roofless
    )


#: Phases the terminal lists (by time; phases.csv holds them all).
_SHOWN = 5


def _lines(t: pd.DataFrame, a: Analysis) -> list[str]:
    """The largest phases by time, one line each (issue 54: ``--group-by nvtx`` wrote phases.csv
    and printed nothing): time and share, bound, DRAM AI and the saving at the roof."""
    top = t.sort_values("time_s", ascending=False, kind="stable").head(_SHOWN)
    out = [
        f"phase {r.phase}: {fmt.time(r.time_s)} ({fmt.pct(r.time_share, 1)} of the time),"
        f" {r.bound or 'unknown'} bound"
        + (
            f", DRAM AI {fmt.g(r.dram_ai_flop_per_byte)} FLOP/B"
            if np.isfinite(r.dram_ai_flop_per_byte)
            else ""
        )
        + f", {fmt.pct(r.saving_share, 1)} of the time to save at the roof"
        for r in top.itertuples(index=False)
    ]
    if len(t) > _SHOWN:
        out.append(f"phases: {len(t) - _SHOWN} more in phases.csv")
    return out


VIEW = View("phases", PHASES, _build, option=GROUP_BY, chart=_chart, lines=_lines)
