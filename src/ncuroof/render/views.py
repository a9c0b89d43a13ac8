"""Extra views of the roofline page (issue 15): NVTX phases, the instruction roofline and the
speed-of-light notes; on a multi-rank run (issue 12) each kernel's spread over the ranks.

The phase chart and the instruction roofline are :class:`ncuroof.render.viewcontract.Chart`
objects that :func:`ncuroof.render.figure.plot_roofline` adds to the roofline figure as options of
its view contract's ``chart`` control (``charts=``): the page's script switches them as it switches
every other view, and the instruction roofline follows the levels control. The sections below the
chart (:func:`rank_section`, :func:`timeline_section`, :func:`page_sections`) are rendered from
``templates/``; :func:`ncuroof.render.page.render_html` places them (``extra=``). Which charts and
sections a page has is the products registry's (:mod:`ncuroof.products`).
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from .. import fmt
from .._lazy import LazyModule
from ..catalog import precision_title
from ..model.calculator import flop_columns
from ..model.production import Production
from ..schema import LEVELS
from . import page as report
from .figure import (
    LEVEL_COLORS,
    customdata_fields,
    main_precisions,
    precision_views,
    precision_when,
    roofs,
)
from .viewcontract import Chart

go = LazyModule("plotly.graph_objects")  # imported when a chart is drawn

__all__ = [
    "instruction_chart",
    "phase_chart",
    "PHASE_CUSTOMDATA",
    "INSTRUCTION_CUSTOMDATA",
    "page_sections",
    "rank_section",
    "RANKS_ON_PAGE",
    "time_basis",
    "timeline_section",
    "TIMELINE_ON_PAGE",
]

#: Kernels listed in the spread-over-ranks section: the longest by median time per rank.
RANKS_ON_PAGE = 15


def _tw(values: pd.Series, time_s: pd.Series) -> float:
    """Time-weighted mean of the finite ``values`` (NaN when none)."""
    v, t = values.to_numpy(float), time_s.fillna(0.0).to_numpy(float)
    ok = np.isfinite(v) & (t > 0)
    return float(np.sum(v[ok] * t[ok]) / np.sum(t[ok])) if ok.any() else float("nan")


def _x_range(x: np.ndarray, elbows: list[float]) -> np.ndarray:
    finite = [v for v in [*x.tolist(), *elbows] if np.isfinite(v) and v > 0]
    lo, hi = (min(finite) / 10, max(finite) * 10) if finite else (1e-2, 1e3)
    return np.geomspace(lo, hi, 64)


def _issue_roof(ipts: pd.DataFrame) -> tuple[float, str]:
    """The chart's issue roof: time-weighted over the points that have one, and its source
    (``report``, ``datasheet`` or both joined by ``+``; empty when no point has a roof)."""
    peak = _tw(ipts["peak_warp_inst_per_s"], ipts["time_s"])
    have = ipts[np.isfinite(ipts["peak_warp_inst_per_s"].to_numpy(float))]
    return peak, "+".join(sorted(set(have["peak_warp_inst_source"].fillna("").astype(str)) - {""}))


def _instruction_roofs(
    xs: np.ndarray, peak: float, source: str, walls: dict[str, float]
) -> list[Any]:
    """The issue roof (flat, labelled with its source) and each level's wall up to its elbow
    (beyond the chart's x range when there is no issue roof); levels without a wall get none."""
    traces: list[Any] = []
    if np.isfinite(peak):
        label = f"issue roof {fmt.si(peak)} warp inst/s ({source or 'unknown source'}"
        label += ": SMs × 4 schedulers × boost clock)" if source == "datasheet" else ")"
        traces.append(
            go.Scatter(
                x=[xs[0], xs[-1]],
                y=[peak, peak],
                mode="lines+text",
                text=["", label],
                textposition="top left",
                line=dict(color="#444", width=2),
                name=label,
                hoverinfo="skip",
                meta=dict(role="instruction_roof", level="issue", source=source),
            )
        )
    for lv in [lv for lv in LEVELS if np.isfinite(walls.get(lv, np.nan)) and walls[lv] > 0]:
        top = peak if np.isfinite(peak) else xs[-1] * walls[lv]
        x_end = top / walls[lv]
        traces.append(
            go.Scatter(
                x=[xs[0], x_end],
                y=[xs[0] * walls[lv], top],
                mode="lines",
                line=dict(color=LEVEL_COLORS[lv], width=1.5),
                name=f"{lv.upper()} wall {fmt.si(walls[lv], 'sector/s')}",
                hoverinfo="skip",
                meta=dict(role="instruction_roof", level=lv, when={"levels": lv}),
            )
        )
    return traces


#: Columns of an instruction dot's ``customdata``, in order (its hover template names
#: them; numbers only).
INSTRUCTION_CUSTOMDATA = ("launch_id", "roof_fraction")


def _instruction_note(levels: list[str], peak: float, walls: dict[str, float]) -> str:
    """What the instruction roofline cannot draw, and why (empty when it draws every roof)."""
    missing = []
    if not np.isfinite(peak):
        missing.append(
            "no issue roof: the report has no SM count and clock, and no metrics/gpus.toml entry"
            " matched (use --gpu)"
        )
    lacking = [
        lv.upper() for lv in levels if not (np.isfinite(walls.get(lv, np.nan)) and walls[lv] > 0)
    ]
    if lacking:
        missing.append(
            f"no {'/'.join(lacking)} wall: no bandwidth roof for"
            f" {'that level' if len(lacking) == 1 else 'those levels'}"
        )
    return "; ".join(missing)


def instruction_chart(ipts: pd.DataFrame) -> Chart:
    """The instruction roofline [DING]: one dot per (launch, level), the issue roof
    and one wall per level.

    Parameters
    ----------
    ipts : DataFrame
        :func:`ncuroof.model.instruction_roofline.instruction_points`.

    Returns
    -------
    Chart
        ``id`` ``instructions``, following the levels control. Log-log: x warp instructions per
        32 B transaction, y warp instructions per second. The issue roof (time-weighted over the
        points; from the report or, labelled, the datasheet) and a wall per level with a known
        transaction rate, up to its elbow; the title says which of them cannot be drawn and why.
        Traces: ``meta.role`` ``instruction_roof`` (``meta.level`` ``issue`` or the level) and
        ``instruction_dots``; ``meta.when`` their level. Only drawn traces are in the legend.
    """
    peak, source = _issue_roof(ipts)
    walls = {
        lv: _tw(g["peak_transactions_per_s"], g["time_s"])
        for lv, g in ipts.groupby("level", sort=False)
    }
    levels = [lv for lv in LEVELS if lv in walls]
    elbows = [peak / w for w in walls.values() if np.isfinite(peak) and np.isfinite(w) and w > 0]
    xs = _x_range(ipts["inst_per_transaction"].to_numpy(float), elbows)
    traces = _instruction_roofs(xs, peak, source, walls)
    traces += [_instruction_dots(ipts[ipts["level"] == lv], lv) for lv in levels]
    note = _instruction_note(levels, peak, walls)
    return Chart(
        "instructions",
        "Instruction roofline",
        traces,
        fields=("levels",),
        layout={
            "title.text": (
                "Instruction roofline (Ding & Williams, PMBS 2019): warp instructions per second"
                + (f"<br><sup>{html.escape(note)}</sup>" if note else "")
            ),
            "xaxis.title.text": "instruction intensity [warp instructions per 32 B transaction]",
            "yaxis.title.text": "warp instructions / s",
        },
    )


def _instruction_dots(g: pd.DataFrame, lv: str) -> go.Scatter:
    """The instruction points of one level, hover from :data:`INSTRUCTION_CUSTOMDATA`."""
    hover = customdata_fields(
        f"%{{text}} (launch %{{@launch_id:.0f}}) {lv.upper()}<br>%{{x:.4g}} inst/sector,"
        " %{y:.3s} warp inst/s, %{@roof_fraction:.1%} of roof,"
        " %{hovertext}-bound<extra></extra>",
        INSTRUCTION_CUSTOMDATA,
    )
    return go.Scatter(
        x=g["inst_per_transaction"],
        y=g["warp_inst_per_s"],
        mode="markers",
        name=f"{lv.upper()} points",
        marker=dict(color=LEVEL_COLORS[lv], size=9, line=dict(width=1, color="#333")),
        text=g["kernel_name"].astype(str).map(html.escape),
        hovertext=g["bound"].replace("", "unknown"),
        customdata=g[list(INSTRUCTION_CUSTOMDATA)].to_numpy(float),
        hovertemplate=hover,
        meta=dict(role="instruction_dots", level=lv, when={"levels": lv}),
    )


#: Columns of a phase dot's ``customdata``, in order: its hover template names them
#: (:func:`ncuroof.render.figure.customdata_fields`); ``flop`` is the precision view's. Numbers
#: only, as the roofline's dots (NaN stays NaN; plotly would show a missing value in
#: a mixed array as 0).
PHASE_CUSTOMDATA = ("launches", "time_s", "time_share", "flop", "time_at_roof_s")


def _phase_dots(phases: pd.DataFrame, view: str) -> pd.DataFrame:
    """The phases with FLOPs of a precision view and DRAM bytes, at that view: ``flop`` the view's
    column (:func:`ncuroof.model.calculator.flop_columns`; all counted FLOPs in ``main``), ``x`` and
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
    xs = _x_range(
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


def page_sections(summary: pd.DataFrame, products: str = "") -> str:
    """The sections the page adds under the chart (template ``views.html.j2``).

    Parameters
    ----------
    summary : DataFrame
        The kernel summary (``kernel_key``, ``kernel_label``, ``speed_of_light_note``).
    products : str
        HTML of the products' sections (:func:`ncuroof.products.sections`: the production
        timeline's :func:`timeline_section`, a multi-rank run's :func:`rank_section`), put first.

    Returns
    -------
    str
        HTML: ``products``, then the "Speed of light" notes, one per kernel whose roofline and unit
        bounds differ by more than 2x (longest first); empty when there is neither.
    """
    return products + report.render_fragment("views.html.j2", notes=_notes(summary))


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
    return report.render_fragment(
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
        kernel_label=shown["kernel_key"].map(_labels(summary)).fillna(shown["kernel_name"]),
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
    return report.html_table(
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


def _notes(summary: pd.DataFrame) -> list[dict[str, str]]:
    """Per kernel with a ``speed_of_light_note`` (:func:`ncuroof.model.summary.kernel_summary`), in
    summary order: ``label`` and ``note``."""
    return [
        {"label": r.kernel_label, "note": r.speed_of_light_note}
        for r in summary.itertuples(index=False)
        if r.speed_of_light_note
    ]


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
        report.html_table(un.head(top), _UNPROFILED_COLUMNS, kinds=_TIMELINE_KINDS)
        if len(un)
        else ""
    )
    return report.render_fragment(
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


def _labels(summary: pd.DataFrame) -> pd.Series:
    """``kernel_key`` -> ``kernel_label`` of the summary, to name kernels as the page does."""
    if "kernel_label" not in summary.columns:
        return pd.Series(dtype=object)
    return summary.set_index("kernel_key")["kernel_label"]


def _duration_table(shown: pd.DataFrame, summary: pd.DataFrame) -> str:
    """The profiled kernels' production and profiled time per launch, ``duration_differs`` rows
    marked; empty without rows."""
    if not len(shown):
        return ""
    shown = shown.assign(
        kernel_label=lambda d: d["kernel_key"].map(_labels(summary)).fillna(d["kernel_name"]),
        flag=lambda d: np.where(d["duration_differs"], "yes", ""),
    )
    return report.html_table(
        shown,
        _DURATION_COLUMNS,
        title_col="kernel_key",
        kinds=_TIMELINE_KINDS,
        row_classes=["imbalanced" if f else "" for f in shown["duration_differs"]],
    )
