"""The operator roofline of a PyTorch trace alone (issue 41): a page with each operator at its
analytic intensity under the device's datasheet roofs, its table, and the lines of the terminal
summary. Everything is labelled ``analytic (from shapes)``: no number here comes from ncu."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import fmt
from ..model.analytic import BEYOND_ROOF, family_coverage
from ..schema import ANALYTIC_SOURCE, COMM_SOURCE, IDLE_SOURCE, MOVED_SOURCE
from . import page
from .figure import new_figure

__all__ = ["figure", "page_html", "section_html", "finding", "summary_text"]

#: Operators listed on the page and in the terminal summary.
TOP = 25


def _roof_lines(t: pd.DataFrame, bandwidth: float, x: tuple[float, float]) -> list[go.Scatter]:
    """The DRAM roof and each compute roof the rows use, as lines over ``x`` (AI range)."""
    traces = []
    roofs = t.loc[t["roof_flop_per_s"] > 0, ["roof", "roof_flop_per_s"]].drop_duplicates("roof")
    top = float(roofs["roof_flop_per_s"].max()) if len(roofs) else bandwidth * x[1]
    low = float(roofs["roof_flop_per_s"].min()) if len(roofs) else top
    xs = np.geomspace(min(x[0], low / bandwidth / 4), max(x[1], top / bandwidth * 4), 64)
    traces.append(
        go.Scatter(
            x=xs,
            y=np.minimum(xs * bandwidth, top),
            mode="lines",
            name="DRAM (datasheet)",
            line={"color": "#555", "width": 2},
            hoverinfo="name",
        )
    )
    for r in roofs.itertuples():
        ridge = r.roof_flop_per_s / bandwidth
        xr = xs[xs >= ridge]
        traces.append(
            go.Scatter(
                x=[ridge, *xr],
                y=[r.roof_flop_per_s] * (len(xr) + 1),
                mode="lines",
                name=f"{r.roof} {fmt.si(r.roof_flop_per_s, 'FLOP/s')} (datasheet)",
                line={"dash": "dot"},
                hoverinfo="name",
            )
        )
    return traces


def _label(t: pd.DataFrame) -> list[str]:
    return [
        f"{fmt.printable(o, layout=False)[:80]} {fmt.printable(d, layout=False)[:120]}"
        for o, d in zip(t["op"], t["input_dims"])
    ]


def figure(t: pd.DataFrame, title: str) -> go.Figure:
    """Operators with a formula and FLOPs at (analytic AI, achieved FLOP/s), sized by GPU time,
    under the DRAM roof and the compute roofs they use; with counted work (``--timeline`` and a
    report) a second marker at the measured intensity (ncu's counted FLOPs over its DRAM bytes,
    at counted FLOP/s): the analytic dot is the useful work, the gap the wasted work and the
    excess traffic.

    Parameters
    ----------
    t : DataFrame
        :data:`ncuroof.schema.ANALYTIC_OPS` rows.
    title : str
        The figure's title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    dots = t[
        (t["flop"] > 0)
        & (t["time_s"] > 0)
        & (t["ai_flop_per_byte"] > 0)
        & ~t["flag"].astype(str).str.contains(BEYOND_ROOF, regex=False)
    ]
    bw = (
        float(t["dram_bytes_per_s"].dropna().iloc[0])
        if t["dram_bytes_per_s"].notna().any()
        else 1e12
    )
    ai = dots["ai_flop_per_byte"].to_numpy(float)
    xs = np.concatenate([ai, dots["measured_ai_flop_per_byte"].to_numpy(float)])
    xs = xs[np.isfinite(xs) & (xs > 0)]
    lo, hi = (float(xs.min()) / 4, float(xs.max()) * 4) if len(xs) else (1e-2, 1e4)
    fig = new_figure(_roof_lines(t, bw, (lo, hi)))
    size = 8 + 30 * np.sqrt(dots["time_s"].to_numpy(float) / max(float(t["time_s"].max()), 1e-30))
    fig.add_trace(
        go.Scatter(
            x=ai,
            y=dots["flop_per_s"],
            mode="markers",
            name=f"operator, {ANALYTIC_SOURCE}",
            marker={
                "size": size,
                "color": np.where(dots["bound"] == "memory", "#1f77b4", "#d62728"),
            },
            text=_label(dots),
            hovertemplate="%{text}<br>AI %{x:.3g} FLOP/B<br>%{y:.3g} FLOP/s<extra></extra>",
        )
    )
    measured = _measured_trace(dots)
    if measured is not None:
        fig.add_trace(measured)
    fig.update_layout(
        title=title,
        height=640,
        xaxis={"type": "log", "title": "arithmetic intensity [FLOP/B], analytic (from shapes)"},
        yaxis={"type": "log", "title": "achieved [FLOP/s]: FLOPs / GPU time in the trace"},
    )
    return fig


def _measured_trace(dots: pd.DataFrame) -> go.Scatter | None:
    """The second marker of the operators ``dots`` with counted work: at the measured intensity
    (ncu's counted FLOPs over its DRAM bytes) and counted FLOP/s; None when none has."""
    measured = dots[dots["measured_ai_flop_per_byte"] > 0]
    if not len(measured):
        return None
    return go.Scatter(
        x=measured["measured_ai_flop_per_byte"],
        y=measured["counted_flop"] / measured["time_s"],
        mode="markers",
        name="measured (ncu: counted FLOPs / DRAM bytes)",
        marker={"symbol": "diamond-open", "size": 10, "color": "#2ca02c"},
        text=_label(measured),
        hovertemplate="%{text}<br>measured AI %{x:.3g} FLOP/B<br>%{y:.3g} FLOP/s<extra></extra>",
    )


def finding(r: Any) -> str:
    """One row in words: ``memory-bound at M=1 rows: AI 1 FLOP/B against a ridge of 295 FLOP/B
    (tensor_bf16); M=512 would reach AI 410 FLOP/B; 3% of the roof, ...``."""
    if r.work_source == IDLE_SOURCE:
        return f"the device ran nothing for {fmt.time(r.time_s)} of the trace's span"
    if r.work_source == COMM_SOURCE:
        return (
            f"{fmt.si(r.compulsory_bytes, 'B')} in {fmt.time(r.time_s)} over"
            f" {fmt.g(r.group_size)} ranks: algbw {fmt.si(r.algbw_bytes_per_s, 'B/s')}, busbw"
            f" {fmt.si(r.busbw_bytes_per_s, 'B/s')} (nccl-tests)"
        )
    if r.work_source == MOVED_SOURCE:
        rate = r.compulsory_bytes / r.time_s if r.time_s > 0 else math.nan
        roof = (
            f", {fmt.pct(r.roof_fraction)} of the DRAM roof"
            if math.isfinite(r.roof_fraction)
            else f" ({r.note})"
        )
        moved = fmt.si(r.compulsory_bytes, "B")
        return f"{moved} in {fmt.time(r.time_s)}: {fmt.si(rate, 'B/s')}{roof}"
    if r.work_source != ANALYTIC_SOURCE or not math.isfinite(r.compulsory_bytes):
        return f"{r.flag or 'no formula'}: {fmt.time(r.time_s)} of GPU time kept, no work counted"
    where = (
        f"AI {fmt.g(r.ai_flop_per_byte)} FLOP/B against a ridge of {fmt.g(r.ridge_flop_per_byte)}"
        f" FLOP/B ({r.roof})"
        if math.isfinite(r.ridge_flop_per_byte)
        else f"AI {fmt.g(r.ai_flop_per_byte)} FLOP/B, no compute roof"
    )
    at, _, would = str(r.note).partition("; ")  # 'at M=1 rows; M=512 would reach AI 410 FLOP/B'
    text = (
        f"{r.bound}-bound{' ' + at if at else ''}: {where}{'; ' + would if would else ''};"
        f" {fmt.pct(r.roof_fraction)} of the roof, {fmt.time(r.time_at_roof_s)} at the roof of"
        f" {fmt.time(r.time_s)}"
    )
    ratio = getattr(r, "counted_over_analytic", math.nan)
    if math.isfinite(ratio):
        text += f"; counted/analytic FLOPs {fmt.g(ratio)}"
    return text + (f" [{r.flag}]" if r.flag else "")


def _coverage_line(t: pd.DataFrame, most: int = 6) -> str:
    """The kernels' time by operator family and the share of it with a formula, most time first
    (:func:`ncuroof.model.analytic.family_coverage`)."""
    fams = family_coverage(t).head(most)
    parts = [
        f"{fmt.printable(r.family, layout=False)} {fmt.pct(r.time_share)}"
        + (
            " (formula)"
            if r.formula_share >= 0.995
            else " (no formula)"
            if r.formula_share <= 0.005
            else f" ({fmt.pct(r.formula_share)} with a formula)"
        )
        for r in fams.itertuples()
    ]
    return "kernel time by family: " + ", ".join(parts)


def summary_text(
    t: pd.DataFrame, gpu: str, top: int = 10, width: int = 120, attrs: dict | None = None
) -> str:
    """The terminal summary: the device, then the operators of most GPU time, one each, wrapped
    to ``width`` columns (:func:`ncuroof.fmt.wrap`); with a graph capture (``attrs``
    ``graph_kernels``, ``graph_matched``) how many replayed kernels it gave an operator."""
    total = float(t["time_s"].sum())
    kernels = float(t.loc[~t["work_source"].isin([MOVED_SOURCE, IDLE_SOURCE]), "time_s"].sum())
    covered = float(t.loc[t["work_source"].isin([ANALYTIC_SOURCE, COMM_SOURCE]), "time_s"].sum())
    lines = [
        f"{len(t)} operator rows on {fmt.printable(gpu)}, work {ANALYTIC_SOURCE};"
        f" {fmt.pct(covered / kernels if kernels else math.nan)} of {fmt.time(kernels)} kernel time"
        " has a formula; roofs: datasheet at the boost clock"
    ]
    parts = [
        f"{label} {fmt.time(v)}"
        for label, v in (
            ("copies and memsets", float(t.loc[t["work_source"] == MOVED_SOURCE, "time_s"].sum())),
            ("idle", float(t.loc[t["work_source"] == IDLE_SOURCE, "time_s"].sum())),
        )
        if v > 0
    ]
    if parts:
        lines.append(f"GPU time {fmt.time(total)}: kernels {fmt.time(kernels)}, {', '.join(parts)}")
    lines.append(_coverage_line(t))
    replayed = (attrs or {}).get("graph_kernels")
    if replayed is not None:
        matched = int((attrs or {}).get("graph_matched", 0))
        lines.append(
            f"graph replays: {fmt.plain(matched)} of {fmt.plain(replayed)} replayed kernels given"
            " the operator that captured them (--capture)"
        )
    head = t.head(top)
    names = fmt.shorten_names(
        [fmt.printable(f"{r.op} {r.input_dims}".strip(), layout=False) for r in head.itertuples()],
        max(24, min(100, width // 2)),
    )
    for name, r in zip(names, head.itertuples()):
        lines.append(f"{fmt.pct(r.time_share):>4} {name}: {fmt.printable(finding(r))}")
    saving = float(t["saving_s"].sum(skipna=True))
    lines.append(f"time at the roofs would save {fmt.time(saving)} of {fmt.time(total)}")
    return "".join(fmt.wrap(line, width, "      ") + "\n" for line in lines)


_COLUMNS = [
    ("op", "operator"),
    ("input_dims", "input dims"),
    ("input_types", "types"),
    ("calls", "calls"),
    ("launches", "launches"),
    ("time_s", "GPU time"),
    ("time_share", "share"),
    ("precision", "precision"),
    ("flop", "FLOPs (analytic)"),
    ("compulsory_bytes", "compulsory bytes"),
    ("ai_flop_per_byte", "AI [FLOP/B]"),
    ("roof", "roof"),
    ("roof_fraction", "of roof"),
    ("bound", "bound"),
    ("saving_s", "saving"),
    ("counted_over_analytic", "counted/analytic FLOPs"),
    ("dram_over_compulsory", "DRAM/compulsory bytes"),
    ("flag", "flag"),
]
_KINDS = {
    "op": "name",
    "input_dims": "name",
    "input_types": "name",
    "time_s": "time",
    "saving_s": "time",
    "time_share": "pct",
    "roof_fraction": "pct",
    "flop": "si",
    "compulsory_bytes": "si",
    "calls": "int",
    "launches": "int",
}


def page_html(t: pd.DataFrame, fig: go.Figure, meta: dict[str, str], plotlyjs: str | bool) -> str:
    """The standalone page (:func:`ncuroof.render.page.render_page`): header (work source,
    device, roofs), the figure and the sortable operator table.

    Parameters
    ----------
    t : DataFrame
        :data:`ncuroof.schema.ANALYTIC_OPS` rows.
    fig : Figure
        :func:`figure`.
    meta : dict of str
        Header lines (label -> text), escaped by the template.
    plotlyjs : True or 'cdn'
        Embed plotly.js or link the CDN.

    Returns
    -------
    str
        HTML.
    """
    cols = [(c, h) for c, h in _COLUMNS if c in t.columns and not t[c].isna().all()]
    table = page.html_table(t.head(500), cols, kinds=_KINDS)
    return page.render_page(
        f"Operator roofline: {ANALYTIC_SOURCE}",
        fig,
        {k: fmt.printable(v) for k, v in meta.items()},
        f"Operators, most GPU time first ({ANALYTIC_SOURCE}; {min(len(t), 500)} of {len(t)})",
        table,
        plotlyjs,
    )


def section_html(t: pd.DataFrame) -> str:
    """The section of the ncu report's page (``--timeline`` a trace with shapes): the operators
    at their useful (analytic) and measured intensity, and their table with the counted/analytic
    ratios (plotly.js is on the page already)."""
    fig = figure(t, f"PyTorch operators: useful work {ANALYTIC_SOURCE} against ncu's counted work")
    esc = page._escape
    cols = [(c, h) for c, h in _COLUMNS if c in t.columns and not t[c].isna().all()]
    return (
        f"<section><h2>Operators: {esc(ANALYTIC_SOURCE)} against counted</h2>"
        "<p>Each operator's FLOPs and compulsory bytes from its shapes (metrics/operators.toml)"
        " beside ncu's counted FLOPs and DRAM bytes of the kernels it launched: counted/analytic"
        " above 1 is wasted work (masking, padding, recompute), DRAM/compulsory above 1 excess"
        " traffic; a FLOP ratio below 1 is flagged.</p>"
        f"{fig.to_html(full_html=False, include_plotlyjs=False)}"
        f"{page.html_table(t.head(200), cols, kinds=_KINDS)}</section>"
    )
