"""Plotly figures of the roofline. Functions take DataFrames and return ``go.Figure``; saving
is left to the caller (:mod:`ncuroof.report`).

:func:`plot_roofline` draws the whole application on one hierarchical roofline: a sloped roof per
memory level, a flat roof per precision, the ridge points, and one dot per kernel and level (or
per launch and level) whose area is its share of GPU time, the dots of one kernel joined into its
L1→L2→DRAM intensity trail. Every view the page offers (precision, levels, per-kernel or
per-launch dots, colour by kernel or by bound, focus or all kernels) is in the figure as traces
whose ``meta`` says which view they belong to; the arguments choose which are visible, and the
page's controls (:mod:`ncuroof.report`) switch between them in the browser.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import catalog as _catalog
from .classify import binding_points
from .schema import LEVELS, precision_title
from .summary import FOCUS_SHARE, aggregate_points, kernel_summary, with_keys

__all__ = ["plot_roofline", "precision_title", "level_subsets", "SCATTERGL_THRESHOLD", "BOUND_COLORS", "KERNEL_COLORS"]

#: Above this many dots in one view the dots are drawn with WebGL (``Scattergl``).
SCATTERGL_THRESHOLD = 1000

#: Colour of each bound class (colour by bound).
BOUND_COLORS = {"memory": "#1f77b4", "compute": "#d62728", "latency": "#9467bd", "unknown": "#7f7f7f"}
#: Colours of the kernels, largest time first (plotly's Dark24); later kernels are grey.
KERNEL_COLORS = ("#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#B68100", "#750D86", "#EB663B", "#511CFB",
                 "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE", "#862A16", "#A777F1", "#620042",
                 "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038", "#222A2A")
OTHER_COLOR = "#b0b0b0"
_LEVEL_SYMBOL = {"l1": "circle", "l2": "square", "dram": "diamond"}
_LEVEL_COLOR = {"l1": "#1f77b4", "l2": "#2ca02c", "dram": "#d62728"}
_PRECISION_DASH = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
_MAX_DOT_PX = 36.0
_MIN_DOT_PX = 6.0
_NAME_CHARS = 200


def level_subsets(levels: list[str]) -> list[tuple[str, ...]]:
    """Every subset of ``levels`` with at least two members, in :data:`LEVELS` order (trail variants)."""
    ordered = [lv for lv in LEVELS if lv in levels]
    return [c for r in range(2, len(ordered) + 1) for c in itertools.combinations(ordered, r)]


def _si(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _short(name: str, limit: int = _NAME_CHARS) -> str:
    """A demangled name for a hover label: at most ``limit`` characters, wrapped every 90."""
    text = name if len(name) <= limit else name[: limit - 1] + "…"
    return "<br>".join(text[i:i + 90] for i in range(0, len(text), 90))


def _kernels_from_points(points: pd.DataFrame) -> pd.DataFrame:
    """A minimal kernels table for a points table given alone (one row per launch)."""
    k = points.drop_duplicates(["source", "launch_id"])[["source", "launch_id", "kernel_name", "time_s"]].copy()
    k["kernel_demangled"] = k["kernel_name"]
    k["nvtx_range"] = ""
    k["time_at_roof_s"] = np.nan
    k["saving_s"] = np.nan
    k = k.merge(binding_points(points)[["source", "launch_id", "bound"]], on=["source", "launch_id"], how="left")
    k["bound"] = k["bound"].replace("", np.nan).fillna("unknown")
    return k


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


def _views(points: pd.DataFrame, main: pd.Series) -> list[tuple[str, str]]:
    """Precision views: ``main`` (each kernel at the precision of most of its FLOPs), then every
    precision with work, most FLOPs first."""
    work = points.groupby("precision")["flop"].sum().sort_values(ascending=False)
    views = [("main", "Each kernel's main precision")] if len(work) > 1 else []
    return views + [(p, precision_title(p)) for p in work.index]


def _kernel_colorscale(n: int) -> list[list[Any]]:
    """A stepped colorscale over [0, n]: kernel i (marker colour i + 0.5) gets KERNEL_COLORS[i],
    kernels past the palette get OTHER_COLOR."""
    scale: list[list[Any]] = []
    for i, c in enumerate(KERNEL_COLORS[: min(n, len(KERNEL_COLORS))]):
        scale += [[i / n, c], [(i + 1) / n, c]]
    if n > len(KERNEL_COLORS):
        scale += [[len(KERNEL_COLORS) / n, OTHER_COLOR], [1.0, OTHER_COLOR]]
    return scale


def _bound_colorscale(bounds: list[str]) -> list[list[Any]]:
    """A stepped colorscale over [0, n]: kernel i gets the colour of its bound (runs merged)."""
    n = max(len(bounds), 1)
    scale: list[list[Any]] = []
    i = 0
    while i < len(bounds):
        j = i
        while j + 1 < len(bounds) and bounds[j + 1] == bounds[i]:
            j += 1
        c = BOUND_COLORS.get(bounds[i], BOUND_COLORS["unknown"])
        scale += [[i / n, c], [(j + 1) / n, c]]
        i = j + 1
    return scale or [[0, BOUND_COLORS["unknown"]], [1, BOUND_COLORS["unknown"]]]


def _trail(dots: pd.DataFrame, levels: tuple[str, ...], key: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """x and y of the polylines joining each kernel's (or launch's) dots at ``levels``, in level
    order, NaN between polylines; groups with one dot are left out."""
    order = {lv: i for i, lv in enumerate(LEVELS)}
    sel = dots[dots["level"].isin(levels)].copy()
    if sel.empty:
        return np.array([]), np.array([])
    sel["_g"] = sel.groupby(key + ["precision"], sort=False).ngroup()
    sel["_o"] = sel["level"].map(order)
    sel = sel.sort_values(["_g", "_o"], kind="stable")
    sizes = sel.groupby("_g")["_g"].transform("size").to_numpy()
    sel = sel[sizes >= 2]
    if sel.empty:
        return np.array([]), np.array([])
    g = pd.factorize(sel["_g"])[0]
    pos = np.arange(len(sel)) + g  # one gap after each group
    n = len(sel) + g.max() + 1
    x = np.full(n, np.nan)
    y = np.full(n, np.nan)
    x[pos] = sel["ai_flop_per_byte"].to_numpy(float)
    y[pos] = sel["flop_per_s"].to_numpy(float)
    return x[:-1], y[:-1]


def _dot_frame(points: pd.DataFrame, summ: pd.DataFrame, kernels: pd.DataFrame, per_launch: bool) -> pd.DataFrame:
    """The dots of one mode with the per-kernel facts the figure needs."""
    info = summ.set_index("kernel_key")
    pts = with_keys(points, kernels)
    if per_launch:
        d = pts.copy()
        d["launches"] = 1
        b = kernels[["source", "launch_id", "bound"]].rename(columns={"bound": "kbound"})
        d = d.merge(b, on=["source", "launch_id"], how="left")
        d["kbound"] = d["kbound"].fillna("unknown")
    else:
        d = aggregate_points(pts, by="kernel_key")
        d["launch_id"] = -1
        d["kbound"] = info["bound"].reindex(d["kernel_key"]).to_numpy()
        d["time_s"] = info["time_s"].reindex(d["kernel_key"]).to_numpy()
    for col, src in (("kid", "kid"), ("in_focus", "in_focus"), ("main", "precision"), ("label", "kernel_label"),
                     ("demangled", "kernel_demangled")):
        d[col] = info[src].reindex(d["kernel_key"]).to_numpy()
    d["in_focus"] = d["in_focus"].astype(bool)
    return d


def plot_roofline(points: pd.DataFrame, kernels: pd.DataFrame | None = None, title: str = "Hierarchical roofline", *,
                  precision: str = "main", levels: list[str] | None = None, per_launch: bool = False,
                  color: str = "kernel", focus: float = FOCUS_SHARE, show_all: bool = False,
                  summary: pd.DataFrame | None = None) -> go.Figure:
    """Draw the whole application on one log-log hierarchical roofline.

    Parameters
    ----------
    points : DataFrame
        The points table (:data:`ncuroof.schema.POINTS`), one row per (launch, precision, level).
    kernels : DataFrame, optional
        Its classified kernels table (:data:`ncuroof.schema.KERNELS`): time shares count every
        launch, colours by bound use its ``bound``, hover gives the demangled name. Without it,
        shares count only the launches with points and the bound is the binding point's.
    title : str, optional
        Figure title.
    precision : str, default 'main'
        Visible precision view: ``'main'`` (every kernel at the precision of most of its FLOPs,
        with the roofs of those precisions) or one precision (``fp32``, ``tensor:<path>``).
    levels : list of str, optional
        Visible memory levels (default: all that have points).
    per_launch : bool, default False
        One dot per launch instead of one per kernel name (launches aggregated: time, FLOPs and
        bytes summed, so rates are time-weighted; :func:`ncuroof.summary.aggregate_points`).
    color : {'kernel', 'bound'}, default 'kernel'
        Colour dots by kernel (largest time first, :data:`KERNEL_COLORS`) or by the kernel's
        classified bound (:data:`BOUND_COLORS`).
    focus : float, default 0.95
        Show the fewest kernels that make up this share of GPU time (:func:`ncuroof.summary.focus_set`).
    show_all : bool, default False
        Also show the kernels outside the focus set.
    summary : DataFrame, optional
        :func:`ncuroof.summary.kernel_summary` of the same data with the same ``focus``, when
        the caller has it already (kernel colours follow its order); computed otherwise.

    Returns
    -------
    plotly.graph_objects.Figure
        Sloped roofs (one per level, B/s from ``peak_bytes_per_s``) and flat roofs (one per
        precision, FLOP/s from ``peak_flop_per_s``), medians over launches and labelled on the
        chart (non-report roofs tagged with their source); ridge points (peak FLOP/s / peak B/s,
        [KPG §2.9]); dots at (AI [FLOP/B], achieved FLOP/s) with area proportional to the time
        share, one trace per (view, mode, focus subset, level), ``Scattergl`` when a mode has
        more than :data:`SCATTERGL_THRESHOLD` dots; trails joining each kernel's dots, one trace
        per subset of levels. Each trace's ``meta`` names its ``role`` (``roof_mem``,
        ``roof_flop``, ``ridge``, ``dots``, ``trail``, ``key_level``, ``key_bound``,
        ``key_kernel``) and view; ``layout.meta`` lists the views, levels, focus counts and the
        dot colours per colouring, for the page's controls.

    Raises
    ------
    ValueError
        For an unknown ``precision``, ``color`` or level.
    """
    if color not in ("kernel", "bound"):
        raise ValueError(f"color must be 'kernel' or 'bound', not {color!r}")
    fig = go.Figure()
    fig.update_layout(
        title=title,
        xaxis=dict(type="log", title="Arithmetic intensity [FLOP/byte]", exponentformat="SI"),
        yaxis=dict(type="log", title="Performance [FLOP/s]", exponentformat="SI"),
        legend=dict(groupclick="toggleitem", itemsizing="constant"),
        template="plotly_white",
        height=680,
        margin=dict(t=60, b=90),
        hoverlabel=dict(align="left"),
    )
    if points.empty:
        fig.add_annotation(text="No roofline points: the input has no FLOP counters or no memory traffic.",
                           showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
        fig.update_layout(meta=dict(views=[], levels=[], state={}, focus={}))
        return fig
    if kernels is None:
        kernels = _kernels_from_points(points)
    summ = (kernel_summary(kernels, points, focus=focus) if summary is None else summary).reset_index(drop=True)
    summ["kid"] = np.arange(len(summ))
    present = [lv for lv in LEVELS if lv in set(points["level"])]
    shown_levels = present if levels is None else [lv for lv in LEVELS if lv in levels]
    if levels is not None and set(levels) - set(LEVELS):
        raise ValueError(f"unknown level(s) {sorted(set(levels) - set(LEVELS))}; use {', '.join(LEVELS)}")
    views = _views(points, summ["precision"])
    view_ids = [v for v, _ in views]
    if precision not in view_ids:
        if precision == "main" and view_ids:
            precision = view_ids[0]
        else:
            raise ValueError(f"no precision view {precision!r}; the points have {', '.join(view_ids)}")
    cat = _catalog.load()
    compute, memory, source = _roofs(points)
    main_precisions = sorted(set(summ["precision"]) - {""})
    total_time = float(np.nansum(kernels["time_s"].to_numpy(float)))

    # Axis ranges from every dot of every view and every ridge point.
    ai = points["ai_flop_per_byte"].to_numpy(float)
    ridges = [c / m for c in compute.values() for m in memory.values() if m > 0]
    xs = np.concatenate([ai[np.isfinite(ai) & (ai > 0)], np.asarray(ridges, dtype=float)])
    x_lo = 10 ** math.floor(math.log10(xs.min()) - 0.5)
    x_hi = 10 ** math.ceil(math.log10(xs.max()) + 0.5)
    p_max = max(compute.values()) if compute else float(points["flop_per_s"].max()) * 2
    b_max = max(memory.values()) if memory else None
    ys = points["flop_per_s"].to_numpy(float)
    ys = ys[np.isfinite(ys) & (ys > 0)]
    y_lo = 10 ** math.floor(math.log10(min(ys.min(), p_max)) - 0.5) if len(ys) else p_max / 1e4

    def prec_visible(p: str) -> bool:
        return p == precision or (precision == "main" and p in main_precisions)

    # Roofs.
    for lv in LEVELS:
        if lv not in memory:
            continue
        bw = memory[lv]
        label = f"{lv.upper()} {_si(bw, 'B/s')}{_tag(source.get(lv, ''))}"
        x_start = max(x_lo, y_lo / bw) * 1.2  # where the roof enters the chart, so its label shows
        fig.add_trace(go.Scatter(
            x=[x_start, p_max / bw], y=[x_start * bw, p_max], mode="lines+text", text=[label, ""],
            textposition="top right", textfont=dict(size=11, color=_LEVEL_COLOR[lv]),
            line=dict(color=_LEVEL_COLOR[lv], width=2), visible=lv in shown_levels,
            name=f"{lv.upper()} roof {_si(bw, 'B/s')}{_tag(source.get(lv, ''))}", legendgroup="roofs", legendgrouptitle_text="Roofs",
            hovertemplate=(f"{lv.upper()} bandwidth roof: {_si(bw, 'B/s')} ({source.get(lv, '') or 'unknown source'})"
                           "<extra></extra>"),
            meta=dict(role="roof_mem", level=lv),
        ))
    for i, (prec, peak) in enumerate(sorted(compute.items(), key=lambda kv: -kv[1])):
        label = f"{precision_title(prec)} {_si(peak, 'FLOP/s')}{_tag(source.get(prec, ''))}"
        x_start = peak / b_max if b_max else x_lo
        fig.add_trace(go.Scatter(
            x=[x_start, x_hi], y=[peak, peak], mode="lines+text", text=["", label], textposition="top left",
            textfont=dict(size=11, color="#333"), visible=prec_visible(prec),
            line=dict(color="#444", width=2, dash=_PRECISION_DASH[i % len(_PRECISION_DASH)]),
            name=f"{precision_title(prec)} roof {_si(peak, 'FLOP/s')}{_tag(source.get(prec, ''))}", legendgroup="roofs",
            hovertemplate=(f"{precision_title(prec)} compute roof: {_si(peak, 'FLOP/s')} ({source.get(prec, '') or 'unknown source'})"
                           "<extra></extra>"),
            meta=dict(role="roof_flop", precision=prec),
        ))
        rl = [lv for lv in LEVELS if lv in memory]
        fig.add_trace(go.Scatter(
            x=[peak / memory[lv] for lv in rl], y=[peak] * len(rl), mode="markers",
            marker=dict(symbol="x-thin", size=11, line=dict(width=2, color="#444")), visible=prec_visible(prec),
            name=f"{precision_title(prec)} ridge points", legendgroup="ridges", legendgrouptitle_text="Ridge points",
            customdata=[lv.upper() for lv in rl],
            hovertemplate=f"ridge point {precision_title(prec)} / %{{customdata}}: AI %{{x:.3g}} FLOP/B<extra></extra>",
            meta=dict(role="ridge", precision=prec, levels=rl),
        ))

    # Dots and trails, per mode (kernel, launch), view, focus subset and level.
    n_kern = max(len(summ), 1)
    kernel_scale = _kernel_colorscale(n_kern)
    bound_scale = _bound_colorscale(list(summ["bound"]))
    counts: dict[str, int] = {}
    for mode in ("kernel", "launch"):
        d = _dot_frame(points, summ, kernels, per_launch=(mode == "launch"))
        share = d["time_s"].to_numpy(float) / total_time if total_time > 0 else np.full(len(d), np.nan)
        d["share"] = share
        max_share = float(np.nanmax(share)) if np.isfinite(share).any() else 1.0
        sizeref = 2.0 * max_share / _MAX_DOT_PX ** 2 if max_share > 0 else 1.0
        per_view = {v: (d[d["precision"] == d["main"]] if v == "main" else d[d["precision"] == v]) for v in view_ids}
        big = max(len(f) for f in per_view.values()) > SCATTERGL_THRESHOLD
        scatter = go.Scattergl if big else go.Scatter
        for view, frame in per_view.items():
            for subset in ("focus", "rest"):
                sub = frame[frame["in_focus"] == (subset == "focus")]
                counts[f"{mode}/{view}/{subset}"] = len(sub)
                if sub.empty:
                    continue
                visible_base = (mode == ("launch" if per_launch else "kernel") and view == precision
                                and (subset == "focus" or show_all))
                # Per-launch trails only while the dots are few enough to read them.
                for subset_levels in level_subsets(present) if (mode == "kernel" or not big) else []:
                    tx, ty = _trail(sub, subset_levels, ["kernel_key"] if mode == "kernel" else ["source", "launch_id"])
                    if not len(tx):
                        continue
                    fig.add_trace(scatter(
                        x=tx.astype(np.float32), y=ty.astype(np.float32), mode="lines", line=dict(color="rgba(90,90,90,0.45)", width=1),
                        hoverinfo="skip", showlegend=False,
                        visible=visible_base and tuple(shown_levels) == subset_levels,
                        meta=dict(role="trail", mode=mode, view=view, subset=subset, levels=list(subset_levels)),
                    ))
                for lv in present:
                    dots = sub[sub["level"] == lv]
                    if dots.empty:
                        continue
                    kid = dots["kid"].to_numpy(float)
                    custom = np.column_stack([
                        kid, dots["launches"].to_numpy(float), dots["time_s"].to_numpy(float), dots["share"].to_numpy(float),
                        dots["flop"].to_numpy(float), dots["bytes"].to_numpy(float), dots["roof_flop_per_s"].to_numpy(float),
                        dots["roof_fraction"].to_numpy(float), dots["launch_id"].to_numpy(float),
                        dots["bytes_per_s"].to_numpy(float),
                    ]).astype(np.float32)
                    precs = list(dict.fromkeys(dots["precision"]))
                    formula = "; ".join(f"{precision_title(p)} FLOPs = {cat.formula(p)}" for p in precs)
                    defs = " / ".join(dict.fromkeys(x for x in dots["definition"] if x))
                    srcs = " / ".join(dict.fromkeys(f"{s or '?'}" for s in dots["peak_flop_source"]))
                    bsrcs = " / ".join(dict.fromkeys(f"{s or '?'}" for s in dots["peak_bytes_source"]))
                    est = " (estimated)" if dots["estimated"].any() else ""
                    if mode == "kernel":
                        names = np.array([f"<b>{n}</b><br>{_short(dm)}" if isinstance(dm, str) and dm and dm != n else f"<b>{n}</b>"
                                          for n, dm in zip(dots["label"], dots["demangled"])], dtype=object)
                        head = "%{text}<br>%{customdata[1]:.0f} launch(es) · "
                    else:
                        names = dots["label"].astype(str).to_numpy(dtype=object)
                        head = "<b>%{text}</b> · launch %{customdata[8]:.0f}<br>"
                    fig.add_trace(scatter(
                        # float32 halves the page; 7 significant digits are more than a chart needs.
                        x=dots["ai_flop_per_byte"].to_numpy(np.float32), y=dots["flop_per_s"].to_numpy(np.float32),
                        mode="markers",
                        marker=dict(symbol=_LEVEL_SYMBOL[lv], size=dots["share"].fillna(0.0).to_numpy(np.float32), sizemode="area",
                                    sizeref=sizeref, sizemin=_MIN_DOT_PX, color=(kid + 0.5).astype(np.float32), cmin=0, cmax=n_kern,
                                    colorscale=kernel_scale if color == "kernel" else bound_scale, showscale=False,
                                    opacity=0.85, line=dict(width=1, color="white")),
                        text=names, hovertext=dots["kbound"].astype(str).to_numpy(dtype=object),
                        customdata=custom, showlegend=False, name=f"{lv.upper()} dots",
                        visible=visible_base and lv in shown_levels,
                        hovertemplate=(
                            head + "time %{customdata[2]:.3s}s, %{customdata[3]:.1%} of GPU time<br>"
                            + f"{'/'.join(precision_title(p) for p in precs)}{est}: %{{customdata[4]:.4s}}FLOP · "
                            + f"{lv.upper()}: %{{customdata[5]:.4s}}B<br>"
                            + f"AI %{{x:.3g}} FLOP/B at {lv.upper()}<br>"
                            + "achieved %{y:.3s}FLOP/s, %{customdata[9]:.3s}B/s<br>"
                            + "roof %{customdata[6]:.3s}FLOP/s: <b>%{customdata[7]:.1%} of roof</b><br>"
                            + "bound: %{hovertext}<br>"
                            + f"<span style='font-size:10px'>{formula}<br>{lv.upper()} bytes = {cat.formula(lv, defs)} ({defs})<br>"
                            + f"roofs: compute {srcs}, {lv.upper()} {bsrcs}</span><extra></extra>"
                        ),
                        meta=dict(role="dots", mode=mode, view=view, subset=subset, level=lv),
                    ))

    # Legend keys: marker symbol per level, colour per bound or per kernel.
    for lv in present:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{lv.upper()} dots",
                                 marker=dict(symbol=_LEVEL_SYMBOL[lv], color="#666", size=10), legendgroup="keys",
                                 legendgrouptitle_text="Dots", visible=lv in shown_levels,
                                 meta=dict(role="key_level", level=lv)))
    for b in ("memory", "compute", "latency", "unknown"):
        if (summ["bound"] == b).any():
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{b} bound", legendgroup="bounds",
                                     legendgrouptitle_text="Colour: bound", marker=dict(color=BOUND_COLORS[b], size=10),
                                     visible=color == "bound", meta=dict(role="key_bound")))
    named = summ[summ["kid"] < min(10, len(KERNEL_COLORS))]
    for r in named.itertuples(index=False):
        label = r.kernel_label if len(r.kernel_label) <= 40 else r.kernel_label[:39] + "…"
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label, legendgroup="kernels",
                                 legendgrouptitle_text="Colour: kernel", marker=dict(color=KERNEL_COLORS[r.kid], size=10),
                                 visible=color == "kernel", meta=dict(role="key_kernel")))

    used = set(source.values())
    explain = []
    if "report" in used:
        explain.append("roofs = ncu peak_sustained × the clock ncu measured (base clock under --clock-control base)")
    if "datasheet" in used:
        explain.append("(datasheet) = GPU datasheet at boost clock")
    if "user" in used:
        explain.append("(user) = --peak-flops/--peak-bandwidth")
    fig.add_annotation(
        text="; ".join(explain) or "no roofs in the input", showarrow=False, xref="paper", yref="paper", x=0, y=-0.13,
        xanchor="left", font=dict(size=11, color="#666"),
    )
    left_out = summ[~summ["in_focus"]]
    meta: dict[str, Any] = dict(
        views=[[v, label] for v, label in views],
        levels=present,
        main_precisions=main_precisions,
        state=dict(precision=precision, levels=shown_levels, mode="launch" if per_launch else "kernel", color=color,
                   all=bool(show_all)),
        focus=dict(share=focus, kept=int(summ["in_focus"].sum()), left_out=len(left_out),
                   left_out_share=float(left_out["time_share"].sum()) if len(left_out) else 0.0),
        counts=counts,
        colorscales=dict(kernel=kernel_scale, bound=bound_scale),
    )
    fig.update_layout(meta=meta)
    fig.update_xaxes(range=[math.log10(x_lo), math.log10(x_hi)])
    fig.update_yaxes(range=[math.log10(y_lo), math.log10(p_max) + 0.4])
    return fig

