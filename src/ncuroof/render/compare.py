"""The compare page: both runs on one roofline, an arrow per kernel from its
before-dot to its after-dot.

:func:`plot_compare` draws the roofs of both runs (once, labelled "both runs", when they agree
within :data:`SAME_ROOF`; else each run's, labelled, before dashed), on log axes that hold every dot
and ridge point; each kernel's dots sit at its ``movement_level`` (the level the movement column
speaks of), so the arrow is the movement the table names. Kernels in one run only are marked
(``x`` gone, star new). :func:`compare_page` puts it on the page with the headline, the gate's
verdict and the table.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from .._lazy import LazyModule
from ..catalog import precision_title
from ..schema import BOUNDS, LEVELS
from . import page
from .figure import AXIS_NUMBERS, KERNEL_COLORS, LEVEL_COLORS, new_figure, roofs

go = LazyModule("plotly.graph_objects")  # imported when a figure is drawn

__all__ = [
    "plot_compare",
    "compare_page",
    "plot_trails",
    "trail_page",
    "label_offsets",
    "SAME_ROOF",
    "MAX_ARROWS",
]

#: Roofs of the two runs within this relative difference are drawn once, as both runs'.
SAME_ROOF = 0.01

_SIDES = {
    "before": dict(symbol="circle-open", name="before", color="#555555"),
    "after": dict(symbol="circle", name="after", color="#ff7f0e"),
}
_ONLY = {
    "only_before": ("before", dict(symbol="x", name="only before (gone)", color="#7f7f7f")),
    "only_after": ("after", dict(symbol="star", name="only after (new)", color="#9467bd")),
}


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(abs(b[k] / a[k] - 1) <= SAME_ROOF for k in a if a[k] > 0)


def _run_roofs(
    points_before: pd.DataFrame | None,
    points_after: pd.DataFrame | None,
    precisions: set[str],
    levels: set[str],
    labels: tuple[str, str] = ("before", "after"),
) -> list[tuple[str, str, dict[str, float], dict[str, float]]]:
    """``[(label, dash, compute roof per precision, bandwidth roof per level)]``: one entry ``both
    runs`` (solid) when the runs' roofs agree, else one per run that has roofs (the first dashed).
    """
    runs = []
    for who, dash, pts in ((labels[0], "dash", points_before), (labels[1], "solid", points_after)):
        if pts is None or not len(pts):
            continue
        compute, memory, _ = roofs(pts)
        runs.append(
            (
                who,
                dash,
                {p: v for p, v in compute.items() if p in precisions and v > 0},
                {lv: v for lv, v in memory.items() if lv in levels and v > 0},
            )
        )
    if len(runs) == 2 and _same(runs[0][2], runs[1][2]) and _same(runs[0][3], runs[1][3]):
        return [("both runs", "solid", runs[0][2], runs[0][3])]
    return runs


def _dots(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """``(side, rows with a dot on that side, marker)`` for the matched kernels' two sides and the
    kernels of one run."""
    out = []
    for side, marker in _SIDES.items():
        out.append((side, table[table["status"] == "matched"], marker))
    for status, (side, marker) in _ONLY.items():
        out.append((side, table[table["status"] == status], marker))
    return [
        (
            side,
            rows[
                (rows[f"movement_ai_flop_per_byte_{side}"] > 0) & (rows[f"flop_per_s_{side}"] > 0)
            ],
            marker,
        )
        for side, rows, marker in out
    ]


def _hover(rows: pd.DataFrame, side: str) -> np.ndarray:
    """Customdata: name (escaped), time, speedup, movement, change, level, roof fraction."""
    esc = [html.escape(str(v)) for v in rows["kernel_label"]]
    return (
        np.column_stack(
            [
                esc,
                [fmt.time(t) for t in rows[f"time_s_{side}"]],
                [f"{s:.3g}x" if np.isfinite(s) else "n/a" for s in rows["speedup"]],
                [html.escape(str(m or "-")) for m in rows["movement"]],
                [html.escape(str(c or "-")) for c in rows["change"]],
                [str(lv).upper() for lv in rows["movement_level"]],
                [fmt.pct(f) for f in rows[f"movement_roof_fraction_{side}"]],
            ]
        )
        if len(rows)
        else np.empty((0, 7))
    )


#: The after dots are labelled with their kernel's name when at most this many (issue 54: the
#: compare page's dots had no labels); more would cover each other, the hover names each.
MAX_DOT_LABELS = 25


def _dot_labels(rows: pd.DataFrame) -> list[str]:
    """Each dot's kernel name, shortened so that no two read alike (:func:`fmt.shorten_names`),
    escaped."""
    names = fmt.shorten_names([fmt.printable(n, layout=False) for n in rows["kernel_label"]], 28)
    return [html.escape(n) for n in names]


def _dot_traces(table: pd.DataFrame) -> tuple[list[go.Scatter], list[float], list[float]]:
    traces, xs, ys = [], [], []
    for side, rows, marker in _dots(table):
        x, y = (
            rows[f"movement_ai_flop_per_byte_{side}"].to_numpy(float),
            rows[f"flop_per_s_{side}"].to_numpy(float),
        )
        xs += list(x)
        ys += list(y)
        traces.append(
            go.Scatter(
                x=x,
                y=y,
                mode="markers",
                name=marker["name"],
                meta={"role": "dots", "side": side},
                marker=dict(
                    symbol=marker["symbol"], size=12, color=marker["color"], line=dict(width=2)
                ),
                customdata=_hover(rows, side),
                hovertemplate=(
                    f"<b>%{{customdata[0]}}</b> · {marker['name']}<br>%{{customdata[5]}}: AI"
                    " %{x:.3g} FLOP/B<br>%{y:.3s} FLOP/s, %{customdata[6]} of roof<br>time"
                    " %{customdata[1]} · speedup %{customdata[2]}<br>movement:"
                    " %{customdata[3]}<br>%{customdata[4]}<extra></extra>"
                ),
            )
        )
    return traces, xs, ys


#: The plot area [px] label placement assumes (650 px high less title, buttons and axes; 900 px
#: wide on a 1,280 px window), a label character's width and line height at font size 10 [px], a
#: dot's radius (marker size 12) [px].
_PLOT_PX, _CHAR_PX, _DOT_PX = (900.0, 470.0), (6.0, 13.0), 6.0
#: Where a label's centre may sit from its dot [px, y up], in the order tried: above, right,
#: below, left and the diagonals, near then farther; a thin line joins the label to its dot.
_OFFSETS = [
    (dx * d, dy * d)
    for d in (24.0, 44.0, 70.0)
    for dx, dy in ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))
]


def label_offsets(
    dots: np.ndarray, labelled: list[tuple[int, int]], plot: tuple[float, float] = _PLOT_PX
) -> list[tuple[float, float]]:
    """Where each dot label goes: the offset of :data:`_OFFSETS` whose box covers the least of the
    other dots (with a margin of a radius, so that no label sits as if it were theirs), of the
    labels placed before it and of the space outside the plot (the first such offset).

    Parameters
    ----------
    dots : ndarray, shape (n, 2)
        Every dot drawn [px from the plot's lower-left corner], labelled or not.
    labelled : list of (int, int)
        Per label, in the order placed (the most important first): its dot's row in ``dots`` and
        its length [characters].
    plot : (float, float)
        The plot's width and height [px].

    Returns
    -------
    list of (float, float)
        The label's centre from its dot's [px, y up], per label.
    """
    r, (cw, ch) = 2 * _DOT_PX, _CHAR_PX
    boxes = [(x - r, y - r, x + r, y + r) for x, y in dots]
    out = []
    for i, chars in labelled:
        (x, y), w = dots[i], cw * chars
        others = boxes[:i] + boxes[i + 1 :]
        best = min(_OFFSETS, key=lambda o: _cover(_box(x + o[0], y + o[1], w, ch), others, plot))
        out.append(best)
        boxes.append(_box(x + best[0], y + best[1], w, ch))
    return out


def _box(x: float, y: float, w: float, h: float) -> tuple[float, float, float, float]:
    return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def _cover(
    box: tuple[float, ...], others: list[tuple[float, ...]], plot: tuple[float, float]
) -> float:
    """The area [px²] of ``box`` over the ``others`` and outside the plot."""

    def over(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(
            0.0, min(a[3], b[3]) - max(a[1], b[1])
        )

    area = (box[2] - box[0]) * (box[3] - box[1])
    return sum(over(box, o) for o in others) + area - over(box, (0.0, 0.0, *plot))


def _labels(view: pd.DataFrame, xr: list[float], yr: list[float]) -> list[dict[str, Any]]:
    """The after dots' name labels of one level view (at most :data:`MAX_DOT_LABELS`, in table
    order), each an annotation joined to its dot by a thin line and put clear of the view's other
    dots and labels (:func:`label_offsets`) on the log axes of ranges ``xr``, ``yr`` [decades]."""
    sides = _dots(view)
    after = pd.concat([rows for side, rows, _ in sides if side == "after"])
    if not 0 < len(after) <= MAX_DOT_LABELS:
        return []
    points = [
        (side, math.log10(x), math.log10(y))
        for side, rows, _ in sides
        for x, y in zip(rows[f"movement_ai_flop_per_byte_{side}"], rows[f"flop_per_s_{side}"])
    ]
    px = np.array(
        [
            (
                (x - xr[0]) / (xr[1] - xr[0]) * _PLOT_PX[0],
                (y - yr[0]) / (yr[1] - yr[0]) * _PLOT_PX[1],
            )
            for _, x, y in points
        ]
    )
    rows = [j for j, p in enumerate(points) if p[0] == "after"]  # in the order of ``after``
    names = _dot_labels(after)
    offsets = label_offsets(px, [(j, len(html.unescape(n))) for j, n in zip(rows, names)])
    return [
        dict(
            x=points[j][1],
            y=points[j][2],
            xref="x",
            yref="y",
            ax=dx,
            ay=-dy,
            text=n,
            showarrow=True,
            arrowhead=0,
            arrowwidth=1,
            arrowcolor="#999",
            standoff=_DOT_PX,
            font=dict(size=10, color="#444"),
        )
        for j, n, (dx, dy) in zip(rows, names, offsets)
    ]


#: Arrows drawn at most (the kernels whose time changed most; plotly slows down with
#: thousands of annotations).
MAX_ARROWS = 300


def _arrows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """One arrow annotation per matched kernel whose dot moved, before → after (log axes: positions
    in decades), for the :data:`MAX_ARROWS` whose time changed most."""
    out = []
    m = table[table["status"] == "matched"]
    m = m.loc[
        m["time_delta_s"].abs().sort_values(ascending=False, kind="stable").index[:MAX_ARROWS]
    ]
    for xb, xa, yb, ya in zip(
        m["movement_ai_flop_per_byte_before"],
        m["movement_ai_flop_per_byte_after"],
        m["flop_per_s_before"],
        m["flop_per_s_after"],
        strict=True,
    ):
        if all(np.isfinite(v) and v > 0 for v in (xb, xa, yb, ya)) and (xb, yb) != (xa, ya):
            out.append(
                dict(
                    x=math.log10(xa),
                    y=math.log10(ya),
                    ax=math.log10(xb),
                    ay=math.log10(yb),
                    xref="x",
                    yref="y",
                    axref="x",
                    ayref="y",
                    showarrow=True,
                    arrowhead=3,
                    arrowwidth=1.5,
                    arrowcolor="#555",
                    text="",
                )
            )
    return out


def _roof_traces(
    runs: list[tuple[str, str, dict[str, float], dict[str, float]]], x_lo: float, x_hi: float
) -> list[go.Scatter]:
    """Sloped roofs up to the run's highest compute roof, flat roofs from the run's
    widest bandwidth roof."""
    out = []
    for who, dash, compute, memory in runs:
        top, widest = max(compute.values(), default=np.nan), max(memory.values(), default=np.nan)
        for lv, bw in memory.items():
            x_end = top / bw if np.isfinite(top) else x_hi
            out.append(
                go.Scatter(
                    x=[x_lo, x_end],
                    y=[bw * x_lo, bw * x_end],
                    mode="lines",
                    name=f"{who}: {lv.upper()} {fmt.si(bw, 'B/s')}",
                    line=dict(color=LEVEL_COLORS.get(lv, "#555"), dash=dash, width=2),
                    hoverinfo="name",
                    meta={"role": "roof", "run": who, "level": lv},
                )
            )
        for prec, peak in compute.items():
            x_start = peak / widest if np.isfinite(widest) else x_lo
            out.append(
                go.Scatter(
                    x=[x_start, x_hi],
                    y=[peak, peak],
                    mode="lines",
                    name=f"{who}: {html.escape(precision_title(prec))} {fmt.si(peak, 'FLOP/s')}",
                    line=dict(color="#333", dash=dash, width=2),
                    hoverinfo="name",
                    meta={"role": "roof", "run": who, "precision": prec},
                )
            )
    return out


def plot_compare(
    table: pd.DataFrame,
    points_before: pd.DataFrame | None = None,
    points_after: pd.DataFrame | None = None,
    title: str = "Before → after",
) -> go.Figure:
    """Both runs on one roofline: their roofs, each kernel's dots and an arrow from before to after.

    Parameters
    ----------
    table : DataFrame
        From :func:`ncuroof.runs.compare.join` (:data:`ncuroof.schema.COMPARE`).
    points_before, points_after : DataFrame, optional
        The runs' points tables (:data:`ncuroof.schema.POINTS`), for their roofs
        (:func:`ncuroof.render.figure.roofs`); without them no roof is drawn.
    title : str, optional
        Figure title (escaped).

    Returns
    -------
    plotly.graph_objects.Figure
        Log-log axes, AI at each kernel's ``movement_level`` [FLOP/B] × FLOP/s, ranges holding every
        dot and ridge point; roof traces (``meta.role == 'roof'``, ``meta.run`` ``both runs``,
        ``before`` or ``after``), dot traces (``meta.role == 'dots'``: hollow before, filled after,
        ``x`` only before, star only after; hover as on the analyze page: name, level, AI, FLOP/s,
        roof fraction, time, speedup, movement, change), one arrow annotation per moved matched
        kernel (the :data:`MAX_ARROWS` whose time changed most) and, up to :data:`MAX_DOT_LABELS`
        after dots, a name annotation joined to its dot by a line, clear of the other dots and
        labels (:func:`label_offsets`). With dots at more than one level, a
        level control (``updatemenus``) switches between each kernel's ``movement_level`` and one
        level for all (``meta.view`` of the dot traces), arrows and axis title with it.
    """
    fig = new_figure()
    views = _views(table)
    traces, xs, ys, owner = _view_dots(views)
    levels = {lv for _, _, v in views for lv in v["movement_level"] if lv}
    precisions = set(table["precision_before"]) | set(table["precision_after"])
    runs = _run_roofs(points_before, points_after, precisions, levels - {""})
    _frame(fig, traces, xs, ys, runs, set(views[0][2]["movement_level"]) - {""}, title)
    notes, n_roofs = list(fig.layout.annotations), len(fig.data) - len(traces)
    xr, yr = list(fig.layout.xaxis.range), list(fig.layout.yaxis.range)
    marks = [_arrows(v) + _labels(v, xr, yr) for _, _, v in views]
    fig.update_layout(annotations=notes + marks[0])
    if len(views) > 1:
        fig.update_layout(updatemenus=[_level_control(views, notes, marks, n_roofs, owner)])
    return fig


def _view_dots(
    views: list[tuple[str, str, pd.DataFrame]],
) -> tuple[list[go.Scatter], list[float], list[float], list[int]]:
    """The dot traces of every level view (only the first visible, ``meta.view`` its name), all
    their x and y, and the view index of each trace."""
    traces, xs, ys, owner = [], [], [], []
    for i, (name, _, v) in enumerate(views):
        t, x, y = _dot_traces(v)
        for tr in t:
            tr.visible = i == 0
            tr.meta = {**tr.meta, "view": name}
        traces += t
        xs, ys, owner = xs + x, ys + y, owner + [i] * len(t)
    return traces, xs, ys, owner


def _level_control(
    views: list[tuple[str, str, pd.DataFrame]],
    notes: list[Any],
    marks: list[list[dict[str, Any]]],
    n_roofs: int,
    owner: list[int],
) -> dict[str, Any]:
    """The level control (plotly ``updatemenus`` buttons): per view, its dot traces (the roofs
    always), its arrows and labels (``marks``) after the figure's ``notes`` and its axis title."""
    buttons = [
        dict(
            label=label,
            method="update",
            args=[
                {"visible": [True] * n_roofs + [o == i for o in owner]},
                {
                    "annotations": notes + marks[i],
                    "xaxis.title.text": f"Arithmetic intensity at {label} [FLOP/byte]",
                },
            ],
        )
        for i, (_, label, _) in enumerate(views)
    ]
    return dict(
        type="buttons",
        direction="right",
        x=1,
        xanchor="right",
        y=1.02,
        yanchor="bottom",
        buttons=buttons,
        showactive=True,
    )


def _views(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """The level control's views ``(name, label, table)``: each kernel at its ``movement_level``,
    then every level some kernel has a dot at, outermost first, the ``movement_*`` columns
    set to that level's.
    """
    out = [("movement", "each kernel's level", table)]
    for lv in reversed(LEVELS):
        cols = [f"{lv}_ai_flop_per_byte_{s}" for s in ("before", "after")]
        if not (table[cols].to_numpy(float) > 0).any():
            continue
        out.append(
            (
                lv,
                lv.upper(),
                table.assign(
                    movement_level=np.where(
                        table["launches_before"] + table["launches_after"] > 0, lv, ""
                    ),
                    **{
                        f"movement_{m}_{s}": table[f"{lv}_{m}_{s}"]
                        for m in ("ai_flop_per_byte", "roof_fraction")
                        for s in ("before", "after")
                    },
                ),
            )
        )
    return out if len(out) > 2 else out[:1]


def _frame(
    fig: go.Figure,
    traces: list[go.Scatter],
    xs: list[float],
    ys: list[float],
    runs: list[tuple[str, str, dict[str, float], dict[str, float]]],
    levels: set[str],
    title: str,
) -> None:
    """Roofs, dots, log axes holding every dot and ridge point, and a note where no dot or
    no roof is drawn."""
    ridges = [c / m for _, _, comp, mem in runs for c in comp.values() for m in mem.values()]
    x_all = [v for v in xs + ridges if np.isfinite(v) and v > 0] or [0.1, 10.0]
    x_lo, x_hi = min(x_all) / 4, max(x_all) * 4
    roof_traces = _roof_traces(runs, x_lo, x_hi)
    y_all = [v for v in ys + [y for t in roof_traces for y in t.y] if np.isfinite(v) and v > 0] or [
        1e9,
        1e12,
    ]
    level = next(iter(levels)).upper() if len(levels) == 1 else "each kernel's level"
    fig.add_traces(roof_traces + traces)
    fig.update_layout(
        title=html.escape(title),
        height=650,
        hovermode="closest",
        xaxis=dict(
            type="log",
            exponentformat=AXIS_NUMBERS,
            title=f"Arithmetic intensity at {level} [FLOP/byte]",
            range=[math.log10(x_lo), math.log10(x_hi)],
        ),
        yaxis=dict(
            type="log",
            exponentformat=AXIS_NUMBERS,
            title="Performance [FLOP/s]",
            range=[math.log10(min(y_all) / 2), math.log10(max(y_all) * 2)],
        ),
    )
    if not [x for x in xs if np.isfinite(x) and x > 0]:
        fig.add_annotation(
            text="No dots: the inputs have no FLOP counters or no traffic counters.",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
    if not runs:
        fig.add_annotation(
            text="No roofs: no run has a roof (no peak in the report, no datasheet entry).",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.95,
        )


def plot_trails(
    trail: pd.DataFrame,
    points_first: pd.DataFrame | None = None,
    points_last: pd.DataFrame | None = None,
    title: str = "Kernels through the runs",
) -> go.Figure:
    """Each kernel's trail through several runs on one roofline, the runs numbered along it.

    Parameters
    ----------
    trail : DataFrame
        From :func:`ncuroof.runs.compare.series` (:data:`ncuroof.schema.COMPARE_TRAIL`).
    points_first, points_last : DataFrame, optional
        The first and last runs' points tables: their roofs (once, as both runs', when they agree).
    title : str, optional
        Figure title (escaped).

    Returns
    -------
    plotly.graph_objects.Figure
        Log-log axes, AI at each trail's ``trail_level`` × FLOP/s; one ``lines+markers+text`` trace
        per trail (``meta.role == 'trail'``), its points labelled with the run's number (1 first),
        hover with the kernel, run, time, speedup against the trail's first run,
        level and roof fraction.
    """
    fig = new_figure()
    ok = trail[(trail["trail_ai_flop_per_byte"] > 0) & (trail["flop_per_s"] > 0)]
    traces = [_trail_trace(i, tid, t) for i, (tid, t) in enumerate(ok.groupby("trail", sort=True))]
    levels, precisions = set(ok["trail_level"]), set(ok["precision"])
    runs = _run_roofs(
        points_first, points_last, precisions, levels, labels=("first run", "last run")
    )
    _frame(
        fig, traces, list(ok["trail_ai_flop_per_byte"]), list(ok["flop_per_s"]), runs, levels, title
    )
    return fig


def _trail_trace(i: int, tid: Any, t: pd.DataFrame) -> go.Scatter:
    """The ``i``-th trail (``trail`` id ``tid``, its rows ``t`` in run order): a line through its
    runs, each point labelled with the run's number, coloured by :data:`KERNEL_COLORS`."""
    data = np.column_stack(
        [
            [html.escape(str(v)) for v in t["kernel_label"]],
            [html.escape(str(v)) for v in t["run_name"]],
            [fmt.time(v) for v in t["time_s"]],
            [f"{v:.2f}x" if np.isfinite(v) else "n/a" for v in t["speedup_vs_first"]],
            [str(v).upper() for v in t["trail_level"]],
            [fmt.pct(v) for v in t["trail_roof_fraction"]],
        ]
    )
    return go.Scatter(
        x=t["trail_ai_flop_per_byte"],
        y=t["flop_per_s"],
        mode="lines+markers+text",
        text=[str(r + 1) for r in t["run"]],
        textposition="top center",
        name=html.escape(str(t["kernel_label"].iat[-1])),
        meta={"role": "trail", "trail": int(tid)},
        line=dict(color=KERNEL_COLORS[i % len(KERNEL_COLORS)]),
        marker=dict(size=10),
        customdata=data,
        hovertemplate=(
            "<b>%{customdata[0]}</b><br>run %{text}: %{customdata[1]}<br>%{customdata[4]}:"
            " AI %{x:.3g} FLOP/B<br>%{y:.3s} FLOP/s, %{customdata[5]} of roof<br>time"
            " %{customdata[2]} · %{customdata[3]} the first run's<extra></extra>"
        ),
    )


_TRAIL_TABLE = [
    ("kernel_label", "kernel"),
    ("run", "run"),
    ("run_name", "input"),
    ("match", "match"),
    ("launches", "launches"),
    ("time_s", "time"),
    ("speedup_vs_first", "speedup vs first"),
    ("speedup_vs_previous", "speedup vs previous"),
    *((f"{p}_flop", f"{p.upper()} FLOP") for p in ("fp64", "fp32", "fp16", "tensor")),
    ("dram_bytes", "DRAM bytes"),
    ("trail_level", "level"),
    ("trail_ai_flop_per_byte", "AI"),
    ("trail_roof_fraction", "roof frac"),
]


def trail_page(
    trail: pd.DataFrame,
    points_first: pd.DataFrame | None,
    points_last: pd.DataFrame | None,
    names: list[str],
    warnings: list[str],
    plotlyjs: str | bool = True,
) -> str:
    """The page of several runs (``trail.html``): the runs in order, :func:`plot_trails`, the table
    of each kernel per run.

    Parameters
    ----------
    trail : DataFrame
        From :func:`ncuroof.runs.compare.series`.
    points_first, points_last : DataFrame, optional
        The first and last runs' points tables.
    names : list of str
        The runs, in order.
    warnings : list of str
        Why consecutive runs may not compare point for point.
    plotlyjs : True or 'cdn', default True

    Returns
    -------
    str
        The HTML document.
    """
    meta = {
        "runs": " → ".join(f"{i + 1}. {n}" for i, n in enumerate(names)),
        "warnings": "; ".join(warnings),
    }
    kinds = {
        "kernel_label": "name",
        "time_s": "time",
        "run": "int",
        "launches": "int",
        "trail_roof_fraction": "pct",
        "dram_bytes": "si",
        **{f"{p}_flop": "si" for p in ("fp64", "fp32", "fp16", "tensor")},
    }
    shown = trail.assign(run=trail["run"] + 1)
    fig = plot_trails(trail, points_first, points_last, f"Kernels through {len(names)} runs")
    return page.render_page(
        "ncuroof compare (runs)",
        fig,
        meta,
        "Each kernel per run",
        page.html_table(shown, _TRAIL_TABLE, kinds=kinds),
        plotlyjs,
    )


#: compare.html's kernel table: one column per quantity, before → after in one cell (sorted by the
#: after value; :data:`_PAIRS`), so that it fits a laptop's screen (issue 54: 20 columns scrolled
#: sideways at 1,400 px).
_TABLE = [
    ("kernel_label", "kernel"),
    ("status_text", "status"),
    ("launches_after", "launches"),
    ("time_s_after", "time"),
    ("speedup", "speedup"),
    ("change", "change"),
    ("movement_level", "level"),
    ("movement_ai_flop_per_byte_after", "AI [FLOP/B]"),
    ("movement_roof_fraction_after", "of roof"),
    ("achievable_roof_fraction_after", "of achievable"),
    ("bound_after", "bound"),
    ("movement", "movement"),
    ("partner", "likely partner"),
]
_PAIRS = {c: c.removesuffix("_after") + "_before" for c, _ in _TABLE if c.endswith("_after")}
_KINDS = {
    "kernel_label": "name",
    "partner": "name",
    "time_s_before": "time",
    "time_s_after": "time",
    "launches_before": "int",
    "launches_after": "int",
    **{
        f"{c}_{s}": "pct"
        for c in ("movement_roof_fraction", "achievable_roof_fraction")
        for s in ("before", "after")
    },
}


def compare_cells(r: Any) -> dict[str, str]:
    """One comparison row's cells as text, by header, unescaped (as
    :func:`ncuroof.render.page.summary_cells`: for the terminal, Markdown and notebook)."""
    return {
        "kernel": str(r.kernel_label),
        "status": str(r.status),
        "time before": fmt.time(r.time_s_before) if r.launches_before else "-",
        "time after": fmt.time(r.time_s_after) if r.launches_after else "-",
        "speedup": f"{r.speedup:.3g}x" if r.speedup == r.speedup else "-",
        "change": str(r.change or "-"),
        "level": r.movement_level.upper() or "-",
        "movement": r.movement or "-",
    }


def gate_words(gate: Any) -> str:
    """The gate's verdict for the page: ``passed at --fail-if-slower 5: no matched kernel slower
    by more than 5 %``, or its failures and what it could not judge after the colon."""
    word = {"pass": "passed", "fail": "failed", "unknown": "cannot judge"}.get(
        gate.verdict, gate.verdict
    )
    why = "; ".join(gate.failures + gate.unknown) or (
        f"no matched kernel slower by more than {gate.threshold_pct:g} %"
    )
    return f"{word} at --fail-if-slower {gate.threshold_pct:g}: {why}"


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison table with ``status_text``: the status, and how a matched kernel was
    matched (``matched (name)``)."""
    status, match = table["status"].astype(str), table["match"].astype(str)
    return table.assign(status_text=status.where(status != "matched", status + " (" + match + ")"))


def compare_page(
    result: Any,
    points_before: pd.DataFrame | None,
    points_after: pd.DataFrame | None,
    before: list[Path],
    after: list[Path],
    title: str,
    plotlyjs: str | bool = True,
) -> str:
    """The compare page (``compare.html``): headline, gate verdict, warnings,
    :func:`plot_compare`, the table.

    Parameters
    ----------
    result : ncuroof.api.CompareResult
        The comparison (``table``, ``totals``, ``warnings``, ``gate``).
    points_before, points_after : DataFrame, optional
        The runs' points tables (their roofs).
    before, after : list of Path
        The inputs, named in the header.
    title : str
        Figure title.
    plotlyjs : True or 'cdn', default True
        See :func:`ncuroof.render.page.render_page`.

    Returns
    -------
    str
        The HTML document.
    """
    from ..runs.compare import headline

    tot = result.totals
    gate = result.gate
    meta = {
        "before": ", ".join(fmt.path_text(p) for p in before),
        "after": ", ".join(fmt.path_text(p) for p in after),
        "GPU time": headline(tot),
        "after, share of time": ", ".join(f"{b} {fmt.pct(tot[f'share_{b}'])}" for b in BOUNDS),
        "gate": "" if gate is None else gate_words(gate),
        "warnings": "; ".join(result.warnings),
    }
    fig = plot_compare(result.table, points_before, points_after, title)
    return page.render_page(
        "ncuroof compare",
        fig,
        meta,
        "Kernels",
        page.html_table(_shown(result.table), _TABLE, kinds=_KINDS, pairs=_PAIRS),
        plotlyjs,
    )
