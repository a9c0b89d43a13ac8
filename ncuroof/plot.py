"""Plotly figures of the roofline. Functions take DataFrames and return ``go.Figure``; saving
is left to the caller (:mod:`ncuroof.report`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .schema import LEVELS

__all__ = ["plot_roofline", "precision_title", "SCATTERGL_THRESHOLD"]

#: Above this many points the figure uses WebGL markers.
SCATTERGL_THRESHOLD = 1000

_LEVEL_STYLE = {"l1": ("circle", "#1f77b4"), "l2": ("square", "#2ca02c"), "dram": ("diamond", "#d62728")}
_PRECISION_DASH = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]


def precision_title(precision: str) -> str:
    """Display name of a precision: ``fp32`` -> ``FP32``, ``tensor:src_fp16`` -> ``Tensor src_fp16``."""
    if precision.startswith("tensor:"):
        return "Tensor " + precision.split(":", 1)[1]
    return precision.upper()


def _si(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _roofs(points: pd.DataFrame) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """Median roof per precision and per level over the points (launches may differ in clock),
    and the source of each roof (``report``, ``datasheet``, ``user``; the most common one)."""
    compute = points.groupby("precision")["peak_flop_per_s"].median().dropna().to_dict()
    memory = points.groupby("level")["peak_bytes_per_s"].median().dropna().to_dict()
    source: dict[str, str] = {}
    for key, col, src in (("precision", "peak_flop_per_s", "peak_flop_source"), ("level", "peak_bytes_per_s", "peak_bytes_source")):
        have = points[points[col].notna()]
        source.update(have.groupby(key)[src].agg(lambda s: s.mode().iat[0] if len(s.mode()) else "").to_dict())
    return compute, memory, source


def _tag(source: str) -> str:
    return f" ({source})" if source and source != "report" else ""


def plot_roofline(points: pd.DataFrame, title: str = "Hierarchical roofline") -> go.Figure:
    """Draw a log-log hierarchical roofline of the given points.

    Parameters
    ----------
    points : DataFrame
        The points table (:data:`ncuroof.schema.POINTS`): one marker per row at
        (``ai_flop_per_byte``, ``flop_per_s``). Roofs are the median ``peak_flop_per_s`` per
        precision and ``peak_bytes_per_s`` per level over the rows (each launch's roofs are at
        the clock ncu measured for it; the medians are what the chart draws); roofs whose
        ``peak_flop_source``/``peak_bytes_source`` is not ``report`` are labelled with it.
    title : str, optional
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
        One sloped roof per memory level, one flat roof per precision, a marker at each ridge
        point, one marker trace per level (``Scattergl`` above :data:`SCATTERGL_THRESHOLD`
        points). Hover gives kernel, launch, precision, level, AI, FLOP/s, % of roof and time.
    """
    fig = go.Figure()
    fig.update_layout(
        title=title,
        xaxis=dict(type="log", title="Arithmetic intensity [FLOP/byte]"),
        yaxis=dict(type="log", title="Performance [FLOP/s]"),
        legend=dict(groupclick="toggleitem"),
        template="plotly_white",
        height=650,
    )
    if points.empty:
        fig.add_annotation(text="No roofline points: the input has no FLOP counters or no memory traffic.",
                           showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
        return fig

    compute, memory, source = _roofs(points)
    ai = points["ai_flop_per_byte"].to_numpy(float)
    ridges = [c / m for c in compute.values() for m in memory.values() if m > 0]
    xs = np.concatenate([ai[np.isfinite(ai) & (ai > 0)], np.asarray(ridges, dtype=float)])
    x_lo = 10 ** math.floor(math.log10(xs.min()) - 0.5)
    x_hi = 10 ** math.ceil(math.log10(xs.max()) + 0.5)
    p_max = max(compute.values()) if compute else float(points["flop_per_s"].max()) * 2
    b_max = max(memory.values()) if memory else None

    for lv in LEVELS:
        if lv not in memory:
            continue
        bw = memory[lv]
        x_end = p_max / bw
        fig.add_trace(go.Scatter(
            x=[x_lo, x_end], y=[x_lo * bw, p_max], mode="lines", line=dict(color=_LEVEL_STYLE[lv][1], width=2),
            name=f"{lv.upper()} roof {_si(bw, 'B/s')}{_tag(source.get(lv, ''))}", legendgroup="roofs", legendgrouptitle_text="Roofs",
            hovertemplate=f"{lv.upper()} bandwidth roof: {_si(bw, 'B/s')}{_tag(source.get(lv, ''))}<extra></extra>",
        ))
    for i, (prec, peak) in enumerate(sorted(compute.items(), key=lambda kv: -kv[1])):
        x_start = peak / b_max if b_max else x_lo
        fig.add_trace(go.Scatter(
            x=[x_start, x_hi], y=[peak, peak], mode="lines",
            line=dict(color="#444", width=2, dash=_PRECISION_DASH[i % len(_PRECISION_DASH)]),
            name=f"{precision_title(prec)} roof {_si(peak, 'FLOP/s')}{_tag(source.get(prec, ''))}", legendgroup="roofs",
            hovertemplate=f"{precision_title(prec)} compute roof: {_si(peak, 'FLOP/s')}{_tag(source.get(prec, ''))}<extra></extra>",
        ))
        rx = [peak / memory[lv] for lv in LEVELS if lv in memory]
        rl = [lv for lv in LEVELS if lv in memory]
        fig.add_trace(go.Scatter(
            x=rx, y=[peak] * len(rx), mode="markers", marker=dict(symbol="x-thin", size=10, line=dict(width=2, color="#444")),
            name=f"{precision_title(prec)} ridge points", legendgroup="ridges", legendgrouptitle_text="Ridge points", showlegend=True,
            customdata=rl, hovertemplate=f"ridge {precision_title(prec)}/%{{customdata}}: %{{x:.3g}} FLOP/B<extra></extra>",
        ))

    scatter = go.Scattergl if len(points) > SCATTERGL_THRESHOLD else go.Scatter
    for lv in LEVELS:
        sel = points[points["level"] == lv]
        if sel.empty:
            continue
        symbol, color = _LEVEL_STYLE[lv]
        frac = sel["roof_fraction"].to_numpy(float)
        custom = np.column_stack([
            sel["kernel_name"].astype(str), sel["launch_id"].astype(str), [precision_title(p) for p in sel["precision"]],
            np.where(np.isfinite(frac), np.char.mod("%.1f%%", 100 * np.nan_to_num(frac)), "n/a"),
            [_si(t, "s") for t in sel["time_s"]], [_si(v, "FLOP/s") for v in sel["flop_per_s"]],
            np.where(sel["estimated"].to_numpy(bool), " (estimated)", ""),
        ])
        fig.add_trace(scatter(
            x=sel["ai_flop_per_byte"], y=sel["flop_per_s"], mode="markers",
            marker=dict(symbol=symbol, color=color, size=10, line=dict(width=1, color="white")),
            name=f"{lv.upper()} points", legendgroup="points", legendgrouptitle_text="Kernels at level",
            customdata=custom,
            hovertemplate=(
                "<b>%{customdata[0]}</b><br>launch %{customdata[1]} · %{customdata[2]}%{customdata[6]} · "
                + lv.upper() + "<br>AI %{x:.3g} FLOP/B<br>%{customdata[5]}, %{customdata[3]} of roof"
                "<br>time %{customdata[4]}<extra></extra>"
            ),
        ))
    used = set(source.values())
    explain = []
    if "report" in used:
        explain.append("roofs = ncu peak_sustained × the clock ncu measured (base clock under --clock-control base)")
    if "datasheet" in used:
        explain.append("(datasheet) = GPU datasheet at boost clock")
    if "user" in used:
        explain.append("(user) = --peak-flops/--peak-bandwidth")
    fig.add_annotation(
        text="; ".join(explain) or "no roofs in the input",
        showarrow=False, xref="paper", yref="paper", x=0, y=-0.12, xanchor="left", font=dict(size=11, color="#666"),
    )
    fig.update_xaxes(range=[math.log10(x_lo), math.log10(x_hi)])
    return fig
