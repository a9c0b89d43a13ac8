"""Plotly figures of the roofline. Functions take DataFrames and return ``go.Figure``; saving
is left to the caller (:mod:`ncuroof.render.page`).

:func:`plot_roofline` draws the whole application on one hierarchical roofline: a sloped roof per
memory level, a flat roof per precision (the achievable roofs beside them, dashed), the ridge
points, and one dot per kernel and level (or per launch and level) whose area is its share of GPU
time, the dots of one kernel joined into its L1→L2→DRAM intensity trail. Every view is complete:
each shown dot has the flat roof of its precision drawn, the memory roofs run up to the view's
highest compute roof, the axes hold every dot and ridge point, and a view that cannot draw a roof
says why in its note. Every view the page offers (precision, levels, dot groups, colour by
kernel or by bound, focus or all kernels) is in the figure as traces whose ``meta["when"]`` says
in which states of the page's view they show (:mod:`ncuroof.render.viewcontract`, the one place that
rule lives); the arguments choose the initial state and the page's controls switch it in the
browser. Other charts (``charts=``, :mod:`ncuroof.views`) join the figure as options of
its ``chart`` control.

The figure holds: sloped roofs (one per level, B/s from ``peak_bytes_per_s``, running up to the
highest compute roof the precision view shows) and flat roofs (one per precision, FLOP/s from
``peak_flop_per_s``), medians over launches, labelled on the chart (non-report roofs tagged with
their source); beside them, dashed, the achievable roofs of the points' ``achievable_flop_per_s``/
``achievable_bytes_per_s`` (roles ``roof_mem_achievable``, ``roof_flop_achievable``, shown in the
``achievable`` state); a note per precision view naming the roofs it cannot draw and why; axis
ranges holding every dot of every view with its largest marker, every roof and every ridge point;
ridge points (peak FLOP/s / peak B/s, [KPG §2.9]); dots at (AI [FLOP/B], achieved FLOP/s) with
area proportional to the time share, one trace per (dot group, precision view, focus subset,
level), ``Scattergl`` when a group has more than :data:`SCATTERGL_THRESHOLD` dots in a view;
trails joining each kernel's dots, one trace per subset of levels. Each trace's ``meta`` names its
``role`` (``roof_mem``, ``roof_flop``, ``ridge``, ``dots``, ``trail``, ``key_level``,
``key_bound``, ``key_kernel``; the other charts' own roles).

The figure draws the model's tables and computes no analysis: the kernel summary and the
launches' bounds come from :mod:`ncuroof.model` (:func:`ncuroof.plot_roofline` makes them for a
points table given alone).

The figure is built in parts: :func:`_chart` (roofs, views, axis ranges), :func:`_roof_traces`,
:func:`_ridge_traces`, :func:`_group_traces` per dot group of :data:`DOT_GROUPS`,
:func:`_key_traces` (legend), :func:`_draw` (all of them on the figure), :func:`_contract`
(controls and initial view).
"""

from __future__ import annotations

import functools
import html
import importlib.util
import itertools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import catalog as _catalog
from .. import fmt
from .._lazy import LazyModule
from ..catalog import precision_title
from ..model.summary import FOCUS_SHARE, aggregate_points, keys_of, with_keys
from ..schema import LEVELS, work_unit
from .viewcontract import Chart, Control, ViewContract, ViewState, add_charts, apply_view

go = LazyModule("plotly.graph_objects")  # imported when a figure is drawn

__all__ = [
    "plot_roofline",
    "precision_title",
    "level_subsets",
    "SCATTERGL_THRESHOLD",
    "MAX_LAUNCH_DOTS",
    "longest_launches",
    "LEVEL_COLORS",
    "speed_of_light_chart",
    "BOUND_COLORS",
    "KERNEL_COLORS",
    "OTHER_COLOR",
    "kernel_color",
    "DotGroup",
    "DOT_GROUPS",
    "CUSTOMDATA",
    "customdata_fields",
    "OWN_CHART",
    "roofs",
    "precision_views",
    "main_precisions",
    "precision_when",
]

#: Above this many dots in one view the dots are drawn with WebGL (``Scattergl``).
SCATTERGL_THRESHOLD = 1000
#: The per-launch dots show at most this many launches, the longest (the page of a 100,000-launch
#: report stays a few MB; every launch is in launches.csv and points.csv).
MAX_LAUNCH_DOTS = 10_000

#: Colour of each bound class (colour by bound).
BOUND_COLORS = {
    "memory": "#1f77b4",
    "compute": "#d62728",
    "latency": "#9467bd",
    "unknown": "#7f7f7f",
}
#: Colours of the kernels, largest time first: plotly's Dark24, the 14 far from the roofs' colours
#: (:data:`LEVEL_COLORS`, L1/L2/DRAM; RGB distance > 100) first, the blues, greens and reds after (a
#: kernel in a roof's colour read as a level, issue 54); later kernels are grey.
KERNEL_COLORS = (
    "#E15F99",
    "#DA16FF",
    "#B68100",
    "#750D86",
    "#511CFB",
    "#FB00D1",
    "#FC0080",
    "#B2828D",
    "#A777F1",
    "#620042",
    "#DA60CA",
    "#6C4516",
    "#0D2A63",
    "#222A2A",
    "#EB663B",
    "#00A08B",
    "#6C7C32",
    "#778AAE",
    "#862A16",
    "#1616A7",
    "#AF0038",
    "#2E91E5",
    "#1CA71C",
    "#FB0D0D",
)
OTHER_COLOR = "#b0b0b0"
_LEVEL_SYMBOL = {"l1": "circle", "l2": "square", "dram": "diamond"}
#: Each level's dot area against its share of GPU time: a kernel's L1 circle is drawn last and
#: half the area, so that it shows inside its L2 square where their AIs are close (issue 54:
#: AI 31.8 against 32.0 hid the circle under the square).
_LEVEL_AREA = {"l1": 0.5, "l2": 1.0, "dram": 1.0}
#: The charts' plotly template, and the trace types drawn (the only ones of its ``data`` kept).
TEMPLATE = "plotly_white"
_DRAWN = ("scatter", "scattergl")

#: How the axes write their tick numbers: SI prefixes through P, E, Z (plotly's "SI" stops at T and
#: writes a tensor roof's 10^15 as a power of ten beside "100T"; "SI extended": plotly.js 3.2).
AXIS_NUMBERS = "SI extended"

#: Colour of each memory level (roof labels here, the instruction roofline of
#: :mod:`ncuroof.views`).
LEVEL_COLORS = {"l1": "#1f77b4", "l2": "#2ca02c", "dram": "#d62728"}
_MAX_DOT_PX = 36.0
_MIN_DOT_PX = 6.0
#: The narrowest plot area the x-axis margins are sized for [px], and the figure's vertical margins
#: (top + bottom, the legend below) [px]: axis ranges leave room for the largest dot.
_MIN_PLOT_WIDTH_PX = 600.0
_MARGIN_PX = 220
_NAME_CHARS = 200
#: Kernels with a colour key in the legend (largest first); the page's tables give
#: every kernel's colour.
_KEYED_KERNELS = 6
#: The view control's text for the figure's own chart when other charts are added (``charts=``).
OWN_CHART = "Kernels (FLOP roofline)"


def kernel_color(kid: int) -> str:
    """Colour of the ``kid``-th kernel (by time, 0 = largest) in the colour-by-kernel view."""
    return KERNEL_COLORS[kid] if 0 <= kid < len(KERNEL_COLORS) else OTHER_COLOR


def level_subsets(levels: list[str]) -> list[tuple[str, ...]]:
    """Every subset of ``levels`` with at least two members, in :data:`LEVELS` order
    (trail variants)."""
    ordered = [lv for lv in LEVELS if lv in levels]
    return [c for r in range(2, len(ordered) + 1) for c in itertools.combinations(ordered, r)]


def _short(name: str, limit: int = _NAME_CHARS) -> str:
    """A demangled name for a hover label, as HTML: at most ``limit`` characters, wrapped at
    spaces into lines of at most 90 (a word longer than that is cut), each line escaped, so that
    the ``<br>`` between them is the only markup (issue 54: ``const<br> float *`` was shown as
    text, and names broke mid-word)."""
    import textwrap

    text = name if len(name) <= limit else name[: limit - 1] + "…"
    lines = textwrap.wrap(text, 90, break_on_hyphens=False) or [text]
    return "<br>".join(html.escape(line) for line in lines)


def _tag(source: str) -> str:
    return f" ({source})" if source and source != "report" else ""


# --- dot groups -------------------------------------------------------------------------------


def _kernel_names(dots: pd.DataFrame) -> np.ndarray:
    """Hover head of per-kernel dots: label, demangled name when it differs, launches."""
    esc = html.escape  # names are text: plotly would render <b>, <br>, <a> in them as formatting
    return np.array(
        [
            (
                f"<b>{esc(str(n))}</b><br>{_short(dm)}<br>{fmt.count(int(c), 'launch')}"
                if isinstance(dm, str) and dm and dm != n
                else f"<b>{esc(str(n))}</b><br>{fmt.count(int(c), 'launch')}"
            )
            for n, dm, c in zip(dots["label"], dots["demangled"], dots["launches"])
        ],
        dtype=object,
    )


def _launch_names(dots: pd.DataFrame) -> np.ndarray:
    """Hover head of per-launch dots: the label, escaped once per distinct label
    (a string array)."""
    codes, labels = pd.factorize(dots["label"].astype(str), use_na_sentinel=False)
    return np.array([html.escape(str(v)) for v in labels], dtype=str)[codes]


@dataclass(frozen=True)
class DotGroup:
    """What one dot stands for in a value of the page's ``mode`` state (the "Dots" control).

    Attributes
    ----------
    id : str
        The ``mode`` value (``kernel``, ``launch``).
    label : str
        The control's text for it.
    trail_key : tuple of str
        Columns identifying one trail (the dots of one group member across levels).
    names : callable
        Dots frame -> the hover text's head per dot (HTML).
    head : str
        Hover template before the numbers (``%{text}`` is the name from ``names``, ``%{@column}`` a
        :data:`CUSTOMDATA` column, :func:`customdata_fields`).
    """

    id: str
    label: str
    trail_key: tuple[str, ...]
    names: Callable[[pd.DataFrame], np.ndarray]
    head: str


#: The dot groups, in control order. A new group (e.g. NVTX phases) is one more entry here and a
#: frame for it in :func:`plot_roofline`'s ``dots`` (columns as :func:`_dot_frames` makes).
DOT_GROUPS = (
    DotGroup("kernel", "per kernel", ("kernel_key",), _kernel_names, "%{text} · "),
    DotGroup(
        "launch",
        "per launch",
        ("source", "launch_id"),
        _launch_names,
        "<b>%{text}</b> · launch %{@launch_id:.0f}<br>",
    ),
)


#: The per-kernel facts of each dot, from the summary row of its ``kernel_key`` unless the dot
#: frame has them: (dot column, summary column).
_FACTS = (
    ("kid", "kid"),
    ("in_focus", "in_focus"),
    ("main", "precision"),
    ("label", "kernel_label"),
    ("demangled", "kernel_demangled"),
    ("kbound", "bound"),
)


def _dot_frames(
    points: pd.DataFrame,
    kernels: pd.DataFrame,
    summ: pd.DataFrame,
    given: Mapping[str, pd.DataFrame] | None,
) -> dict[str, pd.DataFrame]:
    """The dots of every group, with the per-kernel facts the figure needs: ``kid`` (colour
    index), ``in_focus``, ``main`` precision, ``label``, ``demangled`` and ``kbound`` from the
    summary row of each dot's ``kernel_key`` (unless the frame has them), ``launch_id`` (-1 when
    aggregated).

    ``given`` may hold precomputed frames: ``kernel`` = :func:`ncuroof.model.summary.kernel_dots`,
    ``launch`` = :func:`ncuroof.model.summary.with_keys` (default: :func:`_launch_dots`); other keys
    are further dot groups of :data:`DOT_GROUPS` (aggregated dots with a ``kernel_key``, or
    their own facts columns).
    """
    given = dict(given or {})
    kern = given.get("kernel")
    if kern is None:  # every launch, before the per-launch dots are cut to the longest
        kern = aggregate_points(with_keys(points, kernels), by="kernel_key")
    launch = given.get("launch")
    if launch is None:
        launch = _launch_dots(points, kernels)
    frames = {**given, "kernel": kern.assign(launch_id=-1), "launch": launch.assign(launches=1)}
    info = summ.set_index("kernel_key")
    return {gid: _with_facts(gid, d, kernels, info) for gid, d in frames.items()}


def _with_facts(
    gid: str, d: pd.DataFrame, kernels: pd.DataFrame, info: pd.DataFrame
) -> pd.DataFrame:
    """One group's dots with the :data:`_FACTS` columns: a launch's own classified bound (per
    launch), a kernel's time and share from the summary (the area counts all its launches, those
    without points too; the summary's time basis)."""
    d = d.copy()
    if gid == "launch" and "kbound" not in d.columns:
        d = d.merge(
            kernels[["source", "launch_id", "bound"]].rename(columns={"bound": "kbound"}),
            on=["source", "launch_id"],
            how="left",
        )
    need = {col: src for col, src in _FACTS if col not in d.columns}
    if gid == "kernel":
        need.update(time_s="time_s", share="time_share")
    if need:  # a frame with its own facts (another dot group) needs no kernel_key
        codes, keys = pd.factorize(d["kernel_key"], use_na_sentinel=False)
        rows = info.reindex(keys)  # the summary row of each distinct key, then per dot by its code
        for col, src in need.items():
            d[col] = rows[src].to_numpy()[codes]
    if "launch_id" not in d.columns:
        d["launch_id"] = -1
    for col in ("achievable_roof_flop_per_s", "achievable_roof_fraction"):
        if col not in d.columns:  # tables from before achievable roofs
            d[col] = np.nan
    d["kbound"] = d["kbound"].fillna("unknown")
    d["in_focus"] = d["in_focus"].astype(bool)
    return d


def longest_launches(points: pd.DataFrame, kernels: pd.DataFrame, most: int) -> pd.DataFrame:
    """The rows of ``points`` (any table with ``source`` and ``launch_id``) of the ``most`` longest
    launches of ``kernels`` (all of them when there are no more): what the page draws per launch."""
    if len(kernels) <= most:
        return points
    longest = kernels[["source", "launch_id"]].take(_longest(kernels, most))
    return points[_launch_positions(points, longest) >= 0]


def _longest(kernels: pd.DataFrame, most: int) -> np.ndarray:
    """Row positions of the ``most`` longest launches of ``kernels``, longest first (ties: the
    first listed; ``DataFrame.nlargest(most, "time_s", keep="first")``'s rows), found on the time
    column alone: the other columns are taken only where needed, for those rows."""
    return kernels["time_s"].reset_index(drop=True).nlargest(most, keep="first").index.to_numpy()


def _launch_positions(rows: pd.DataFrame, launches: pd.DataFrame) -> np.ndarray:
    """Position in ``launches`` of each row's launch (``source``, ``launch_id``; the first such
    launch), -1 where it is not there: one hash lookup per row on an integer key."""
    sources = pd.Index(pd.unique(launches["source"]))
    ids = launches["launch_id"].to_numpy(np.int64)
    lo, span = (int(ids.min()), int(ids.max() - ids.min()) + 1) if len(ids) else (0, 1)

    def key(frame: pd.DataFrame) -> np.ndarray:
        codes, names = pd.factorize(frame["source"], use_na_sentinel=False)  # few distinct
        code = sources.get_indexer(names)[codes]
        lid = frame["launch_id"].to_numpy(np.int64) - lo
        return np.where((code >= 0) & (lid >= 0) & (lid < span), code * span + lid, -1)

    at = pd.Series(np.arange(len(launches)), index=key(launches))
    at = at[~at.index.duplicated()]
    return at.reindex(key(rows)).fillna(-1).to_numpy(np.int64)


def _launch_dots(points: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """The points of the :data:`MAX_LAUNCH_DOTS` longest launches (all when there are no more), in
    ``points`` order, with their launch's ``kernel_key`` (:func:`ncuroof.model.summary.keys_of`)
    and classified bound (``kbound``); NaN for a point whose launch ``kernels`` lacks."""
    capped = len(kernels) > MAX_LAUNCH_DOTS
    if capped:  # with the analysis's kernel keys (keys_of), only the columns used here
        needed = ["source", "launch_id", "kernel_key", "bound"]
        keyed = set(needed) <= set(kernels.columns) and kernels["kernel_key"].notna().all()
        launches = (kernels[needed] if keyed else kernels).take(_longest(kernels, MAX_LAUNCH_DOTS))
    else:
        launches = kernels
    at = _launch_positions(points, launches)
    if capped:
        points, at = points[at >= 0], at[at >= 0]
    pick = np.where(at >= 0, at, len(launches))  # past the end: the NaN appended below

    def column(values: pd.Series) -> np.ndarray:
        return np.append(values.to_numpy(object), np.nan)[pick]

    return points.reset_index(drop=True).assign(
        kernel_key=column(keys_of(launches)), kbound=column(launches["bound"])
    )


def _group_label(group: DotGroup, kernels: pd.DataFrame) -> DotGroup:
    """``group``, its control label saying how many launches it shows when capped at
    :data:`MAX_LAUNCH_DOTS`."""
    if group.id != "launch" or len(kernels) <= MAX_LAUNCH_DOTS:
        return group
    return replace(group, label=f"per launch (the {MAX_LAUNCH_DOTS:,} longest of {len(kernels):,})")


# --- the chart's frame: roofs, views, axis ranges -------------------------------------------


@dataclass
class _Chart:
    """What every part of the figure reads: the data, the roofs per view and the axis ranges.

    ``tops`` is, per precision view, the FLOP/s the memory roofs run up to (the highest compute
    roof shown there, else the top of the chart); ``notes`` per view says which of its dots have no
    roof drawn and why; ``achievable`` holds the achievable roofs (by precision and level) and
    ``ach_source`` their sources.
    """

    points: pd.DataFrame
    summ: pd.DataFrame
    present: list[str]
    views: list[tuple[str, str]]
    main_precisions: list[str]
    compute: dict[str, float]
    memory: dict[str, float]
    source: dict[str, str]
    achievable: dict[str, float]
    ach_source: dict[str, str]
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    tops: dict[str, float]
    notes: dict[str, str]
    total_time: float
    cat: Any


def _sorted_codes(values: pd.Series) -> tuple[np.ndarray, list[Any]]:
    """Each value's place among the sorted distinct values (-1: missing), and those values: one
    hash pass over the column, the sorting over its few distinct values. A categorical column
    keeps its categories' order (as ``groupby`` does)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(np.intp), list(values.cat.categories)
    codes, names = pd.factorize(values)
    order = np.argsort(np.asarray(names, dtype=object), kind="stable")
    rank = np.empty(len(order) + 1, dtype=np.intp)
    rank[order], rank[-1] = np.arange(len(order)), -1
    return rank[codes], [names[i] for i in order]


def _medians(
    points: pd.DataFrame, key: str, col: str, src: str
) -> tuple[dict[str, float], dict[str, str]]:
    """Median of ``col`` per ``key`` (in sorted order) over the points that have it, and the most
    common ``src`` there (ties: the first in sorted order; '' when none has one)."""
    if col not in points.columns:
        return {}, {}
    vals = points[col].to_numpy(float)
    finite = np.isfinite(vals)
    if not finite.any():  # e.g. no achievable roofs
        return {}, {}
    keys, names = _sorted_codes(points[key])
    have = finite & (keys >= 0)
    codes, vals = keys[have], vals[have]
    present = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    value = {names[c]: float(np.median(vals[codes == c])) for c in present}
    if src not in points.columns:
        return value, {}
    srcs, src_names = _sorted_codes(points[src])
    srcs = srcs[have]
    ok, width = srcs >= 0, max(len(src_names), 1)
    n = np.bincount(codes[ok] * width + srcs[ok], minlength=len(names) * width)
    n = n.reshape(len(names), width)
    return value, {names[c]: str(src_names[n[c].argmax()]) if n[c].any() else "" for c in present}


def roofs(points: pd.DataFrame) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """The roofs of the page's FLOP charts (the roofline and the phase charts): one per precision
    and one per memory level.

    Parameters
    ----------
    points : DataFrame
        The points table (``precision``, ``level``, ``peak_flop_per_s`` [FLOP/s],
        ``peak_bytes_per_s`` [B/s] and their ``peak_flop_source``/``peak_bytes_source``).

    Returns
    -------
    (dict, dict, dict)
        Compute roof per precision [FLOP/s] and bandwidth roof per level [B/s]: the median over the
        points that have one (launches may differ in clock); the source of each roof (``report``,
        ``datasheet``, ``user``; the most common one), keyed by precision and level.
    """
    compute, csrc = _medians(points, "precision", "peak_flop_per_s", "peak_flop_source")
    memory, msrc = _medians(points, "level", "peak_bytes_per_s", "peak_bytes_source")
    return compute, memory, {**csrc, **msrc}


def _achievable(points: pd.DataFrame) -> tuple[dict[str, float], dict[str, str]]:
    """Median achievable roof per precision and per level (``achievable_flop_per_s``,
    ``achievable_bytes_per_s`` of the points; none when the points lack them) and their sources."""
    compute, csrc = _medians(points, "precision", "achievable_flop_per_s", "achievable_flop_source")
    memory, msrc = _medians(points, "level", "achievable_bytes_per_s", "achievable_bytes_source")
    return {**compute, **memory}, {**csrc, **msrc}


def precision_views(points: pd.DataFrame) -> list[tuple[str, str]]:
    """The precision control's views, ``(value, text)``: ``main`` (each kernel at the precision of
    most of its FLOPs; only with more than one precision), then every precision with work in
    ``points``, most FLOPs first."""
    work = points.groupby("precision")["flop"].sum().sort_values(ascending=False)
    views = [("main", "Each kernel's main precision")] if len(work) > 1 else []
    return views + [(p, precision_title(p)) for p in work.index]


def _dot_precisions(view: str, main_precisions: list[str]) -> list[str]:
    """The precisions whose dots a view shows: the kernels' own (``main``) or the view's."""
    return list(main_precisions) if view == "main" else [view]


def _pad(span: float, px: float) -> float:
    """Decades to add on each side of a log axis of ``span`` data decades drawn over ``px`` pixels
    so that a dot of the largest marker radius (:data:`_MAX_DOT_PX` / 2, outline
    included) stays inside.
    """
    r = _MAX_DOT_PX / 2 + 2
    return r * max(span, 1.0) / max(px - 2 * r, r)


def _axis_ranges(
    points: pd.DataFrame, roofs: list[float], bandwidths: list[float], height: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """x (AI) and y (FLOP/s) ranges, in data units, holding every dot of every view (with its
    largest marker), every roof and every ridge point: at least half a decade of margin (0.4 above
    the top roof, room for its label), whole decades but at the top."""
    ai = points["ai_flop_per_byte"].to_numpy(float)
    ridges = [c / m for c in roofs for m in bandwidths if m > 0]
    xs = np.log10(np.concatenate([ai[np.isfinite(ai) & (ai > 0)], np.asarray(ridges, dtype=float)]))
    ys = points["flop_per_s"].to_numpy(float)
    ys = np.log10(np.concatenate([ys[np.isfinite(ys) & (ys > 0)], np.asarray(roofs, dtype=float)]))
    xs, ys = (
        v[np.isfinite(v)] if np.isfinite(v).any() else np.array([-2.0, 3.0]) for v in (xs, ys)
    )  # nothing to hold: a default decade span
    x_pad = max(0.5, _pad(float(xs.max() - xs.min()), _MIN_PLOT_WIDTH_PX))
    y_pad = max(0.5, _pad(float(ys.max() - ys.min()), height - _MARGIN_PX))
    x = (10 ** math.floor(xs.min() - x_pad), 10 ** math.ceil(xs.max() + x_pad))
    return x, (10 ** math.floor(ys.min() - y_pad), 10 ** (ys.max() + max(0.4, y_pad)))


def _view_tops(
    views: list[tuple[str, str]], main: list[str], compute: dict[str, float], y_top: float
) -> dict[str, float]:
    """Per view, the FLOP/s the memory roofs run up to: its highest compute roof, else (no roof
    in the view) the top of the chart."""
    tops = {}
    for v, _ in views:
        shown = [compute[p] for p in _dot_precisions(v, main) if p in compute]
        tops[v] = max(shown) if shown else y_top
    return tops


def _moved_note(summ: pd.DataFrame) -> str:
    """The ``main`` view's sentence on kernels drawn at another precision than their main one
    (summary ``precision`` differs from ``main_precision``: the main one has no roof), or ''."""
    if "main_precision" not in summ.columns:
        return ""
    moved = summ[
        (summ["main_precision"].astype(str) != "")
        & (summ["precision"].astype(str) != "")
        & (summ["main_precision"].astype(str) != summ["precision"].astype(str))
    ]
    if moved.empty:
        return ""
    pairs = sorted(
        {
            (precision_title(a), precision_title(b))
            for a, b in zip(moved["main_precision"], moved["precision"])
        }
    )
    return f"{fmt.count(len(moved), 'kernel')} drawn at another precision with work: " + ", ".join(
        f"{a} has no roof, so at {b}" for a, b in pairs
    )


def _view_notes(
    points: pd.DataFrame,
    views: list[tuple[str, str]],
    main: list[str],
    compute: dict[str, float],
    memory: dict[str, float],
    moved: str = "",
) -> dict[str, str]:
    """Per view, what it cannot draw: a precision with dots but no compute roof, a level with dots
    but no bandwidth roof, and why; in ``main`` also ``moved`` (:func:`_moved_note`). Empty when
    every dot has its roofs."""
    notes = {}
    points = points[["precision", "level"]]  # the rows are filtered per view: only these columns
    for v, _ in views:
        precs = _dot_precisions(v, main)
        shown = points[points["precision"].isin(precs)]
        lacking = [p for p in precs if p not in compute and (shown["precision"] == p).any()]
        levels = [lv for lv in LEVELS if lv not in memory and (shown["level"] == lv).any()]
        parts = [
            f"no {precision_title(p)} roof: no report, datasheet or user value for it (set one with"
            " --peak-flops)"
            for p in lacking
        ]
        if levels:
            parts.append(
                f"no {'/'.join(lv.upper() for lv in levels)} bandwidth roof: none in the report or"
                " datasheet (set one with --peak-bandwidth)"
            )
        if v == "main" and moved:
            parts.append(moved)
        notes[v] = "; ".join(parts)
    return notes


def _chart(
    points: pd.DataFrame, kernels: pd.DataFrame, summ: pd.DataFrame, cat: Any, height: int
) -> _Chart:
    compute, memory, source = roofs(points)
    achievable, ach_source = _achievable(points)
    levels = set(points["level"].unique())
    views = precision_views(points)
    main = main_precisions(summ)
    ach_roofs = [v for k, v in achievable.items() if k not in LEVELS]
    ach_bw = [v for k, v in achievable.items() if k in LEVELS]
    x_range, y_range = _axis_ranges(
        points, list(compute.values()) + ach_roofs, list(memory.values()) + ach_bw, height
    )
    return _Chart(
        points=points,
        summ=summ,
        present=[lv for lv in LEVELS if lv in levels],
        views=views,
        main_precisions=main,
        compute=compute,
        memory=memory,
        source=source,
        achievable=achievable,
        ach_source=ach_source,
        x_range=x_range,
        y_range=y_range,
        tops=_view_tops(views, main, compute, y_range[1]),
        notes=_view_notes(points, views, main, compute, memory, _moved_note(summ)),
        total_time=float(np.nansum(kernels["time_s"].to_numpy(float))),
        cat=cat,
    )


# --- roofs, ridge points, legend keys ---------------------------------------------------------


def main_precisions(summ: pd.DataFrame) -> list[str]:
    """The precisions the ``main`` view draws: the kernel summary's
    ``precision`` values (sorted)."""
    return sorted(set(summ["precision"]) - {""})


def precision_when(prec: str, main: list[str]) -> dict[str, Any]:
    """A precision's roof shows in its own view and, when it is in ``main``
    (:func:`main_precisions`), in ``main``."""
    return {"precision": [prec, "main"] if prec in main else [prec]}


def _by_top(ch: _Chart) -> dict[float, list[str]]:
    """The precision views grouped by the FLOP/s their memory roofs run up to."""
    groups: dict[float, list[str]] = {}
    for v, _ in ch.views:
        groups.setdefault(ch.tops[v], []).append(v)
    return groups


def _memory_roofs(ch: _Chart, lv: str, bw: float, achievable: bool) -> list[go.Scatter]:
    """The sloped roof of one level, one trace per group of views with the same top (it runs up to
    the highest compute roof the view shows); dashed and in the ``achievable`` state
    when ``achievable``.
    """
    (x_lo, _), (y_lo, _) = ch.x_range, ch.y_range
    src = (ch.ach_source if achievable else ch.source).get(lv, "")
    what = "achievable " if achievable else ""
    tag = f" ({src or '?'})" if achievable else _tag(src)
    label = f"{what}{lv.upper()} {fmt.si(bw, 'B/s')}{tag}"
    x_start = max(x_lo, y_lo / bw) * (
        1.2 if not achievable else 2.0
    )  # where the roof enters the chart, so its label shows
    return [
        go.Scatter(
            x=[x_start, top / bw],
            y=[x_start * bw, top],
            mode="lines+text",
            text=[label, ""],
            textposition="top right",
            textfont=dict(size=11, color=LEVEL_COLORS[lv]),
            line=dict(
                color=LEVEL_COLORS[lv],
                width=2 if not achievable else 1.5,
                dash="solid" if not achievable else "dash",
            ),
            name=f"{what}{lv.upper()} roof {fmt.si(bw, 'B/s')}{tag}",
            legendgroup="roofs",
            legendgrouptitle_text="Roofs",
            hovertemplate=(
                f"{what}{lv.upper()} bandwidth roof: {fmt.si(bw, 'B/s')}"
                f" ({src or 'unknown source'})<extra></extra>"
            ),
            meta=dict(
                role="roof_mem_achievable" if achievable else "roof_mem",
                level=lv,
                when={
                    "levels": lv,
                    "precision": views,
                    **({"achievable": True} if achievable else {}),
                },
            ),
        )
        for top, views in _by_top(ch).items()
    ]


def _flat_roof(ch: _Chart, i: int, prec: str, peak: float, achievable: bool) -> go.Scatter:
    """The flat roof of one precision from its ridge with the fastest level; dashed and thinner,
    in the ``achievable`` state, for an achievable roof."""
    x_lo, x_hi = ch.x_range
    bws = [v for k, v in ch.achievable.items() if k in LEVELS] if achievable else []
    b_max = max(bws or list(ch.memory.values()) or [0.0])
    title = precision_title(prec)
    src = (ch.ach_source if achievable else ch.source).get(prec, "")
    what = "achievable " if achievable else ""
    tag = f" ({src or '?'})" if achievable else _tag(src)
    rate = f"{work_unit(prec)}/s"
    return go.Scatter(
        x=[peak / b_max if b_max else x_lo, x_hi],
        y=[peak, peak],
        mode="lines+text",
        text=["", f"{what}{title} {fmt.si(peak, rate)}{tag}"],
        textposition="top left" if not achievable else "bottom left",
        textfont=dict(size=11, color="#333" if not achievable else "#777"),
        # Peak roofs are solid (their precision is in the label): dashed means
        # achievable on this chart.
        line=dict(
            color="#444" if not achievable else "#888",
            width=2 if not achievable else 1.5,
            dash="solid" if not achievable else "dash",
        ),
        name=f"{what}{title} roof {fmt.si(peak, rate)}{tag}",
        legendgroup="roofs",
        hovertemplate=(
            f"{what}{title} compute roof: {fmt.si(peak, rate)}"
            f" ({src or 'unknown source'})<extra></extra>"
        ),
        meta=dict(
            role="roof_flop_achievable" if achievable else "roof_flop",
            precision=prec,
            when={
                **precision_when(prec, ch.main_precisions),
                **({"achievable": True} if achievable else {}),
            },
        ),
    )


def _roof_traces(ch: _Chart) -> list[go.Scatter]:
    """Sloped roofs per level (B/s) and flat roofs per precision (FLOP/s), labelled on the chart;
    the achievable roofs beside them, dashed."""
    traces = [
        t for lv in LEVELS if lv in ch.memory for t in _memory_roofs(ch, lv, ch.memory[lv], False)
    ]
    traces += [
        _flat_roof(ch, i, prec, peak, False)
        for i, (prec, peak) in enumerate(sorted(ch.compute.items(), key=lambda kv: -kv[1]))
    ]
    traces += [
        t
        for lv in LEVELS
        if lv in ch.achievable
        for t in _memory_roofs(ch, lv, ch.achievable[lv], True)
    ]
    traces += [
        _flat_roof(ch, 0, prec, v, True) for prec, v in ch.achievable.items() if prec not in LEVELS
    ]
    return traces


def _ridge_traces(ch: _Chart) -> list[go.Scatter]:
    """Per precision, its ridge points with every level: peak FLOP/s / peak B/s [KPG §2.9]."""
    rl = [lv for lv in LEVELS if lv in ch.memory]
    return [
        go.Scatter(
            x=[peak / ch.memory[lv] for lv in rl],
            y=[peak] * len(rl),
            mode="markers",
            marker=dict(symbol="x-thin", size=11, line=dict(width=2, color="#444")),
            name=f"{precision_title(prec)} ridge points",
            legendgroup="ridges",
            legendgrouptitle_text="Ridge points",
            customdata=[lv.upper() for lv in rl],
            hovertemplate=(
                f"ridge point {precision_title(prec)} / %{{customdata}}: AI %{{x:.3g}}"
                f" {work_unit(prec)}/B<extra></extra>"
            ),
            meta=dict(
                role="ridge",
                precision=prec,
                levels=rl,
                when=precision_when(prec, ch.main_precisions),
            ),
        )
        for prec, peak in sorted(ch.compute.items(), key=lambda kv: -kv[1])
    ]


def _key_traces(ch: _Chart) -> list[go.Scatter]:
    """Legend keys: marker symbol per level, colour per bound or per kernel (the first
    :data:`_KEYED_KERNELS`)."""

    def key(
        name: str, group: str, title: str, marker: dict[str, Any], meta: dict[str, Any]
    ) -> go.Scatter:
        return go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=name,
            legendgroup=group,
            legendgrouptitle_text=title,
            marker=marker,
            meta=meta,
        )

    traces = [
        key(
            f"{lv.upper()} dots",
            "keys",
            "Dots",
            dict(symbol=_LEVEL_SYMBOL[lv], color="#666", size=10),
            dict(role="key_level", when={"levels": lv}),
        )
        for lv in ch.present
    ]
    traces += [
        key(
            f"{b} bound",
            "bounds",
            "Colour: bound",
            dict(color=BOUND_COLORS[b], size=10),
            dict(role="key_bound", when={"color": "bound"}),
        )
        for b in BOUND_COLORS
        if (ch.summ["bound"] == b).any()
    ]
    for r in ch.summ[ch.summ["kid"] < min(_KEYED_KERNELS, len(KERNEL_COLORS))].itertuples(
        index=False
    ):
        label = r.kernel_label if len(r.kernel_label) <= 40 else r.kernel_label[:39] + "…"
        traces.append(
            key(
                html.escape(label),
                "kernels",
                "Colour: kernel",
                dict(color=kernel_color(r.kid), size=10),
                dict(role="key_kernel", when={"color": "kernel"}),
            )
        )
    return traces


def _add_view_notes(fig: go.Figure, ch: _Chart, contract: ViewContract) -> None:
    """When some precision view cannot draw a roof of its dots: a second note on the chart whose
    text each view sets (``contract.layouts["precision"]``), saying which roof is missing and why.
    """
    if not any(ch.notes.values()):
        return
    fig.add_annotation(
        text="",
        showarrow=False,
        xref="paper",
        yref="paper",
        x=0.01,
        y=0.99,
        xanchor="left",
        yanchor="top",
        align="left",
        font=dict(size=12, color="#a40000"),
        name="view_note",
    )
    i = len(fig.layout.annotations) - 1
    contract.layouts["precision"] = {
        v: {f"annotations[{i}].text": ch.notes[v] or " "} for v, _ in ch.views
    }


def _add_axis_units(ch: _Chart, contract: ViewContract) -> None:
    """Per precision view, the axis titles in the unit of its work (:func:`ncuroof.schema.
    work_unit`): OP/s and OP/byte for integer tensor work (issue 54: an INT8 report's axis said
    FLOP/s), FLOP otherwise, "FLOP or OP" for a view mixing them."""
    views = contract.layouts.setdefault("precision", {})
    for v, _ in ch.views:
        units = {work_unit(p) for p in _dot_precisions(v, ch.main_precisions)}
        unit = units.pop() if len(units) == 1 else "FLOP or OP"
        views.setdefault(v, {}).update(
            {
                "xaxis.title.text": f"Arithmetic intensity [{unit}/byte]",
                "yaxis.title.text": f"Performance [{unit}/s]",
            }
        )


def _roof_note(ch: _Chart) -> str:
    """Where the roofs come from, for the line under the chart."""
    used = set(ch.source.values())
    explain = [
        text
        for src, text in (
            (
                "report",
                (
                    "roofs = ncu peak_sustained × the clock ncu measured (base clock under"
                    " --clock-control base)"
                ),
            ),
            (
                "datasheet",
                (
                    "(datasheet) = GPU datasheet, compute roofs scaled from its boost clock to"
                    " the SM clock the launches ran at (as ncu's own roofs are; at boost where no"
                    " clock was measured), DRAM at its bandwidth"
                ),
            ),
            ("user", "(user) = --peak-flops/--peak-bandwidth"),
        )
        if src in used
    ]
    return "; ".join(explain) or "no roofs in the input"


# --- dots and trails --------------------------------------------------------------------------


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
    runs = itertools.groupby(enumerate(bounds), key=lambda ib: ib[1])
    for b, members in runs:
        idx = [i for i, _ in members]
        c = BOUND_COLORS.get(b, BOUND_COLORS["unknown"])
        scale += [[idx[0] / n, c], [(idx[-1] + 1) / n, c]]
    return scale or [[0, BOUND_COLORS["unknown"]], [1, BOUND_COLORS["unknown"]]]


def _group_ids(frame: pd.DataFrame) -> np.ndarray:
    """Per row, the number of its group of equal values in every column, in order of first
    appearance (``groupby(sort=False).ngroup()``); -1 where a value is missing."""
    ids = np.zeros(len(frame), dtype=np.int64)
    for col in frame.columns:
        codes, uniques = pd.factorize(frame[col])
        ids = np.where((ids >= 0) & (codes >= 0), ids * max(len(uniques), 1) + codes, -1)
        ids = np.where(ids >= 0, pd.factorize(ids)[0], -1)  # renumbered: no overflow
    return ids


def _trail(
    dots: pd.DataFrame, levels: tuple[str, ...], key: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """x and y of the polylines joining each kernel's (or launch's) dots at ``levels``, in level
    order, NaN between polylines; groups with one dot (or a missing key) are left out."""
    sel = dots[dots["level"].isin(levels)]
    group = _group_ids(sel[list(dict.fromkeys([*key, "precision"]))])
    rank = {lv: i for i, lv in enumerate(LEVELS)}
    level = np.array([rank[lv] for lv in sel["level"]], dtype=np.int64)
    rows = np.flatnonzero(group >= 0)
    rows = rows[np.argsort(level[rows], kind="stable")]
    rows = rows[np.argsort(group[rows], kind="stable")]  # by group, then level, else row order
    rows = rows[np.bincount(group[rows], minlength=1)[group[rows]] >= 2] if len(rows) else rows
    if not len(rows):
        return np.array([]), np.array([])
    g = np.unique(group[rows], return_inverse=True)[1].reshape(-1)  # 0, 1, ... in this order
    pos = np.arange(len(rows)) + g  # one gap after each group
    x = np.full(len(rows) + g.max() + 1, np.nan)
    y = np.full(len(rows) + g.max() + 1, np.nan)
    x[pos] = sel["ai_flop_per_byte"].to_numpy(float)[rows]
    y[pos] = sel["flop_per_s"].to_numpy(float)[rows]
    return x[:-1], y[:-1]


#: Columns of a dot trace's ``customdata``, in order: declared here only. The hover templates name
#: them (:func:`customdata_fields`) and the view contract carries them to the page's script
#: (:attr:`ncuroof.render.viewcontract.ViewContract.customdata`), which looks
#: their indices up by name.
CUSTOMDATA = (
    "kid",
    "launches",
    "time_s",
    "share",
    "flop",
    "bytes",
    "roof_flop_per_s",
    "roof_fraction",
    "launch_id",
    "bytes_per_s",
    "achievable_roof_flop_per_s",
    "achievable_roof_fraction",
)
_FIELD = re.compile(r"%\{@(\w+)")


def customdata_fields(template: str, columns: Sequence[str] | None = None) -> str:
    """A hover template with each ``%{@column`` written as plotly's ``%{customdata[i]`` (``i`` the
    column's place in ``columns``), so no template counts columns.

    Parameters
    ----------
    template : str
        Plotly hover template; ``%{@time_s:.3s}`` becomes ``%{customdata[2]:.3s}``.
    columns : sequence of str, optional
        The trace's ``customdata`` columns, in order (default :data:`CUSTOMDATA`, looked up at the
        call; the other charts declare their own: :mod:`ncuroof.views`).

    Returns
    -------
    str

    Raises
    ------
    KeyError
        For a column not in ``columns``.
    """
    index = {name: i for i, name in enumerate(CUSTOMDATA if columns is None else columns)}
    return _FIELD.sub(lambda m: f"%{{customdata[{index[m.group(1)]}]", template)


def _hover(ch: _Chart, dots: pd.DataFrame, lv: str, group: DotGroup) -> str:
    """The hover template of one dot trace: time, work, AI, rate, roof, bound and the formulas."""

    def distinct(
        col: str,
    ) -> list[str]:  # in order of appearance; unique() first, as iterating an Arrow column is slow
        return [str(v) if isinstance(v, str) else "" for v in dots[col].unique()]

    precs = distinct("precision")
    unit = "/".join(dict.fromkeys(work_unit(p) for p in precs)) or "FLOP"
    formula = "; ".join(
        f"{precision_title(p)} {work_unit(p)}s = {ch.cat.formula(p)}" for p in precs
    )
    defs = " / ".join(x for x in distinct("definition") if x)
    srcs = " / ".join(dict.fromkeys(s or "?" for s in distinct("peak_flop_source")))
    bsrcs = " / ".join(dict.fromkeys(s or "?" for s in distinct("peak_bytes_source")))
    est = " (estimated)" if dots["estimated"].any() else ""
    return customdata_fields(
        group.head
        + (
            "time unknown (the input has no duration)<br>"
            if not np.isfinite(dots["time_s"].to_numpy(float)).any()
            else "time %{@time_s:.3s}s, %{@share:.1%} of GPU time<br>"
        )
        + f"{'/'.join(precision_title(p) for p in precs)}{est}: %{{@flop:.4s}} {unit} ·"
        f" {lv.upper()}: %{{@bytes:.4s}} B<br>"
        + f"AI %{{x:.3g}} {unit}/B at {lv.upper()}<br>"
        + f"achieved %{{y:.3s}} {unit}/s, %{{@bytes_per_s:.3s}} B/s<br>"
        + f"roof %{{@roof_flop_per_s:.3s}} {unit}/s: <b>%{{@roof_fraction:.1%}} of roof</b><br>"
        + (
            f"achievable roof %{{@achievable_roof_flop_per_s:.3s}} {unit}/s:"
            " %{@achievable_roof_fraction:.1%} of achievable<br>"
            if np.isfinite(dots["achievable_roof_fraction"].to_numpy(float)).any()
            else ""
        )
        + "bound: %{hovertext}<br>"
        + f"<span style='font-size:10px'>{formula}<br>{lv.upper()} bytes ="
        f" {ch.cat.formula(lv, defs)} ({defs})<br>"
        + f"roofs: compute {srcs}, {lv.upper()} {bsrcs}</span><extra></extra>"
    )


def _dot_trace(
    ch: _Chart,
    dots: pd.DataFrame,
    lv: str,
    group: DotGroup,
    scatter: type,
    sizeref: float,
    when: dict[str, Any],
) -> go.Scatter:
    """One trace: the dots of one group, view, focus subset and level; area ∝ share of GPU time,
    colour = kernel index (the colour scale is set by the view's style)."""
    kid = dots["kid"].to_numpy(float)
    return scatter(
        # float32 halves the page; 7 significant digits are more than a chart needs.
        x=dots["ai_flop_per_byte"].to_numpy(np.float32),
        y=dots["flop_per_s"].to_numpy(np.float32),
        mode="markers",
        marker=dict(
            symbol=_LEVEL_SYMBOL[lv],
            size=(dots["share"].fillna(0.0) * _LEVEL_AREA[lv]).to_numpy(np.float32),
            sizemode="area",
            sizeref=sizeref,
            sizemin=_MIN_DOT_PX,
            color=(kid + 0.5).astype(np.float32),
            cmin=0,
            cmax=max(len(ch.summ), 1),
            showscale=False,
            opacity=0.85,
            line=dict(width=1, color="white"),
        ),
        text=group.names(dots),
        hovertext=dots["kbound"].astype(str).to_numpy(dtype=str),
        customdata=dots[list(CUSTOMDATA)].to_numpy(float).astype(np.float32),
        showlegend=False,
        name=f"{lv.upper()} dots",
        hovertemplate=_hover(ch, dots, lv, group),
        meta=dict(
            role="dots",
            mode=group.id,
            level=lv,
            when={**when, "levels": lv},
            unit="/".join(dict.fromkeys(work_unit(str(p)) for p in dots["precision"].unique()))
            or "FLOP",
        ),
    )


def _group_traces(
    ch: _Chart, group: DotGroup, d: pd.DataFrame, counts: dict[str, int]
) -> list[Any]:
    """Dots and trails of one dot group, per precision view, focus subset and level (trails per
    subset of levels; per-launch trails only while the dots are few enough to read them)."""
    if "share" not in d.columns:
        d = d.assign(
            share=d["time_s"].to_numpy(float) / ch.total_time if ch.total_time > 0 else np.nan
        )
    max_share = float(np.nanmax(d["share"])) if np.isfinite(d["share"]).any() else 1.0
    sizeref = 2.0 * max_share / _MAX_DOT_PX**2 if max_share > 0 else 1.0
    per_view = {v: d[d["precision"] == (d["main"] if v == "main" else v)] for v, _ in ch.views}
    big = max(len(f) for f in per_view.values()) > SCATTERGL_THRESHOLD
    scatter = go.Scattergl if big else go.Scatter
    traces: list[Any] = []
    for (view, frame), subset in itertools.product(per_view.items(), ("focus", "rest")):
        sub = frame[frame["in_focus"] == (subset == "focus")]
        counts[f"{group.id}/{view}/{subset}"] = len(sub)
        when = {"mode": group.id, "precision": view, **({"all": True} if subset == "rest" else {})}
        for levels in level_subsets(ch.present) if (group.id == "kernel" or not big) else []:
            tx, ty = _trail(sub, levels, list(group.trail_key))
            if len(tx):
                traces.append(
                    scatter(
                        x=tx.astype(np.float32),
                        y=ty.astype(np.float32),
                        mode="lines",
                        hoverinfo="skip",
                        line=dict(color="rgba(90,90,90,0.45)", width=1),
                        showlegend=False,
                        meta=dict(
                            role="trail", mode=group.id, when={**when, "levels": list(levels)}
                        ),
                    )
                )
        traces += [  # DRAM first, L1 last: on top
            _dot_trace(ch, sub[sub["level"] == lv], lv, group, scatter, sizeref, when)
            for lv in reversed(ch.present)
            if (sub["level"] == lv).any()
        ]
    return traces


# --- the view contract and the figure ---------------------------------------------------------


def _contract(
    ch: _Chart, state: ViewState, groups: list[DotGroup], counts: dict[str, int], focus: float
) -> ViewContract:
    """The page's controls (one per :class:`ViewState` field), the colour scale per colouring, and
    the initial state."""
    controls = [
        Control(
            "precision", "precision", "select", "Precision", [[v, label] for v, label in ch.views]
        ),
        Control("level", "levels", "checkboxes", "Levels", [[lv, lv.upper()] for lv in ch.present]),
        Control("mode", "mode", "radio", "Dots", [[g.id, g.label] for g in groups]),
        Control("color", "color", "radio", "Colour", [["kernel", "kernel"], ["bound", "bound"]]),
    ]
    left = ch.summ[~ch.summ["in_focus"].astype(bool)]
    drawn = (
        int((left["precision"].astype(str) != "").sum())
        if "precision" in left.columns
        else len(left)
    )
    # a control that would add no dot is left out: the focus line below the chart
    # counts those kernels
    if drawn:
        pointless = len(left) - drawn
        controls.append(
            Control(
                "all",
                "all",
                "checkbox",
                f"also the {fmt.count(len(left), 'kernel')} outside the top {fmt.pct(focus)} "
                f"({fmt.pct(left['time_share'].sum(), 1)} of GPU time"
                + (
                    f"; {pointless} of them {fmt.agree(pointless, 'has', 'have')} no roofline point"
                    if pointless
                    else ""
                )
                + ")",
            )
        )
    if ch.achievable:
        controls.append(
            Control(
                "achievable",
                "achievable",
                "checkbox",
                "achievable roofs (dashed, beside the peaks: "
                + ", ".join(sorted(set(ch.ach_source.values()) - {""}) or ["?"])
                + ")",
            )
        )
    n = max(len(ch.summ), 1)
    styles = {
        "color": {
            "kernel": {"dots": {"marker.colorscale": _kernel_colorscale(n)}},
            "bound": {"dots": {"marker.colorscale": _bound_colorscale(list(ch.summ["bound"]))}},
        }
    }
    return ViewContract(
        state=state, controls=controls, styles=styles, counts=counts, customdata=list(CUSTOMDATA)
    )


@dataclass(frozen=True)
class _AskedView:
    """The initial view :func:`plot_roofline` was asked for; ValueError for an unknown ``color``."""

    precision: str
    levels: list[str] | None
    per_launch: bool
    color: str
    show_all: bool

    def __post_init__(self) -> None:
        """Refuse a colouring the page does not offer."""
        if self.color not in ("kernel", "bound"):
            raise ValueError(f"color must be 'kernel' or 'bound', not {self.color!r}")


def _initial_state(ch: _Chart, asked: _AskedView) -> ViewState:
    """The :class:`ViewState` of :func:`plot_roofline`'s arguments, checked."""
    precision, levels = asked.precision, asked.levels
    if levels is not None and set(levels) - set(LEVELS):
        raise ValueError(
            f"unknown level(s) {sorted(set(levels) - set(LEVELS))}; use {', '.join(LEVELS)}"
        )
    view_ids = [v for v, _ in ch.views]
    if precision not in view_ids:
        if precision != "main" or not view_ids:
            raise ValueError(
                f"no precision view {precision!r}; the points have {', '.join(view_ids)}"
            )
        precision = view_ids[0]  # one precision only: its view is the main one
    shown = ch.present if levels is None else [lv for lv in LEVELS if lv in levels]
    return ViewState(
        precision=precision,
        levels=shown,
        mode="launch" if asked.per_launch else "kernel",
        color=asked.color,
        all=bool(asked.show_all),
    )


#: The note above the speed-of-light chart that stands in for an empty roofline.
SOL_NOTE = (
    "No roofline points (the input has no FLOP counters or no memory traffic): ncu's speed of"
    " light instead,\neach kernel's SM against memory throughput; below {pct} % of both is"
    " latency-bound (ncu's SOLBottleneck rule)."
)


def speed_of_light_chart(summary: pd.DataFrame | None, latency_bound: float) -> Chart | None:
    """ncu's SpeedOfLight view as a chart: one dot per kernel at (memory throughput, SM
    throughput) in % of peak, coloured as on the roofline (:data:`KERNEL_COLORS` in summary
    order), with ncu's ``latency_bound`` lines (60 %: ``metrics/thresholds.toml`` ``[sol]``).

    Parameters
    ----------
    summary : DataFrame or None
        The kernel summary: ``kernel_label``, ``time_s`` [s], ``time_share``,
        ``sm_throughput_frac`` and ``memory_throughput_frac`` (ncu's
        ``sm__throughput.avg.pct_of_peak_sustained_elapsed`` and
        ``gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed`` / 100, time-weighted).
    latency_bound : float
        The threshold as a fraction (0.6).

    Returns
    -------
    Chart or None
        None when no kernel has both throughputs.
    """
    if summary is None or not len(summary):
        return None
    sm = pd.to_numeric(summary["sm_throughput_frac"], errors="coerce").to_numpy(float)
    mem = pd.to_numeric(summary["memory_throughput_frac"], errors="coerce").to_numpy(float)
    have = np.isfinite(sm) & np.isfinite(mem)
    if not have.any():
        return None
    traces: list[Any] = _sol_dots(summary, sm, mem, have)
    pct = 100 * latency_bound
    for x, y in (([pct, pct], [0, 100]), ([0, 100], [pct, pct])):
        traces.append(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                line=dict(color="#888", dash="dash", width=1),
                name=f"{pct:g} % (ncu SOLBottleneck)",
                showlegend=x[0] == pct,
                hoverinfo="skip",
                meta={"role": "sol_threshold"},
            )
        )
    layout = {
        "title.text": "Speed of light: SM against memory throughput<br><sup>"
        + html.escape(SOL_NOTE.format(pct=f"{pct:g}")).replace("\n", "<br>")
        + "</sup>",
        "xaxis.type": "linear",
        "xaxis.title.text": "Memory throughput [% of peak]",
        "yaxis.type": "linear",
        "yaxis.title.text": "Compute (SM) throughput [% of peak]",
    }
    return Chart("speed_of_light", "Speed of light", traces, layout)


def _sol_dots(
    summary: pd.DataFrame, sm: np.ndarray, mem: np.ndarray, have: np.ndarray
) -> list[Any]:
    """One dot per kernel of ``summary`` that ``have`` both throughputs, at (``mem``, ``sm``)
    [fractions of peak, shown in %], coloured as on the roofline (:data:`KERNEL_COLORS`)."""
    dots: list[Any] = []
    for i, r in enumerate(summary.itertuples(index=False)):
        if not have[i]:
            continue
        color = KERNEL_COLORS[i] if i < len(KERNEL_COLORS) else OTHER_COLOR
        label = html.escape(fmt.printable(r.kernel_label, layout=False))
        dots.append(
            go.Scatter(
                x=[100 * mem[i]],
                y=[100 * sm[i]],
                mode="markers",
                name=label,
                marker=dict(color=color, size=12, line=dict(width=1, color="#333")),
                hovertemplate=(
                    f"{label}<br>memory %{{x:.1f}} %, SM %{{y:.1f}} % of peak<br>"
                    f"{fmt.kernel_time(r.time_s)}, {fmt.pct(r.time_share, 1)} of GPU time"
                    "<extra></extra>"
                ),
                meta={"role": "sol_dot"},
            )
        )
    return dots


def _empty_figure(
    fig: go.Figure, charts: list[Chart], summary: pd.DataFrame | None = None
) -> go.Figure:
    """The figure without roofline points: a note, and the other charts (the first of them
    shown); ncu's speed-of-light chart first when the summary has the throughputs."""
    latency = _catalog.load().thresholds["sol"]["latency_bound"]
    sol = speed_of_light_chart(summary, latency)
    charts = [sol, *charts] if sol is not None else charts
    fig.add_annotation(
        text="No roofline points: the input has no FLOP counters or no memory traffic.",
        showarrow=False,
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
    )
    contract = ViewContract(state=ViewState())
    add_charts(fig, contract, charts, OWN_CHART)
    if charts:
        contract.state.chart = charts[0].id
    apply_view(fig, contract)
    return fig


def new_figure(data: Any = None) -> go.Figure:
    """An empty ``go.Figure`` (or one of ``data``'s traces) in :data:`TEMPLATE`: its layout and
    its defaults of the trace types drawn here (:func:`_template`)."""
    return go.Figure(data, layout=dict(template=_template()))


@functools.lru_cache(maxsize=1)
def _template() -> dict[str, Any] | str:
    """:data:`TEMPLATE` from plotly's own file, but for the defaults of trace types never drawn
    here (validating those builds every trace type's validators: 0.1 s of the page of a
    4-launch report); the whole template by name where plotly keeps it elsewhere."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.origin:
        return TEMPLATE
    path = Path(spec.origin).parent / "package_data" / "templates" / f"{TEMPLATE}.json"
    try:
        whole = json.loads(path.read_text(encoding="utf-8"))
        data = whole.get("data", {})
        return {"layout": whole["layout"], "data": {k: data[k] for k in _DRAWN if k in data}}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return TEMPLATE


def _base_layout(fig: go.Figure, title: str, height: int) -> None:
    """The figure's frame: title (plain text, escaped: plotly reads HTML in it),
    log axes, legend."""
    fig.update_layout(
        title=html.escape(title),
        height=height,
        margin=dict(t=50, b=170, r=20),
        hoverlabel=dict(align="left"),
        xaxis=dict(
            type="log", title="Arithmetic intensity [FLOP/byte]", exponentformat=AXIS_NUMBERS
        ),
        yaxis=dict(type="log", title="Performance [FLOP/s]", exponentformat=AXIS_NUMBERS),
        legend=dict(
            groupclick="toggleitem",
            itemsizing="constant",
            orientation="h",
            x=0,
            y=-0.12,
            yanchor="top",
            font=dict(size=11),
            tracegroupgap=4,
        ),
    )


def _draw(
    fig: go.Figure, ch: _Chart, groups: list[DotGroup], frames: dict[str, pd.DataFrame]
) -> dict[str, int]:
    """Add the roofs, ridge points, dots, trails and legend keys, the roofs' source note and the
    axis ranges; return the dots per ``<mode>/<precision view>/<focus|rest>``."""
    counts: dict[str, int] = {}
    fig.add_traces(
        _roof_traces(ch)
        + _ridge_traces(ch)
        + [t for g in groups for t in _group_traces(ch, g, frames[g.id], counts)]
        + _key_traces(ch)
    )
    fig.add_annotation(
        text=_roof_note(ch),
        showarrow=False,
        xref="paper",
        yref="paper",
        x=0,
        y=1.0,
        yanchor="bottom",
        xanchor="left",
        font=dict(size=11, color="#666"),
    )
    fig.update_xaxes(range=[math.log10(v) for v in ch.x_range])
    fig.update_yaxes(range=[math.log10(v) for v in ch.y_range])
    return counts


def plot_roofline(
    points: pd.DataFrame,
    kernels: pd.DataFrame | None = None,
    title: str = "Hierarchical roofline",
    *,
    precision: str = "main",
    levels: list[str] | None = None,
    per_launch: bool = False,
    color: str = "kernel",
    focus: float = FOCUS_SHARE,
    show_all: bool = False,
    summary: pd.DataFrame | None = None,
    dots: Mapping[str, pd.DataFrame] | None = None,
    catalog: _catalog.Catalog | None = None,
    height: int = 800,
    charts: Sequence[Chart] = (),
) -> go.Figure:
    """Draw the whole application on one log-log hierarchical roofline (module docstring).

    Parameters
    ----------
    points : DataFrame
        The points table (:data:`ncuroof.schema.POINTS`), one row per (launch, precision, level).
    kernels, summary : DataFrame
        Its classified launch table (:data:`ncuroof.schema.LAUNCHES`) and their
        :func:`ncuroof.model.summary.kernel_summary` with ``focus`` (kernel colours follow its
        order): the model's, required with points (:func:`ncuroof.plot_roofline` makes both).
    title : str, optional
        Figure title, plain text.
    precision, levels, per_launch, color, show_all
        The initial view (:class:`ncuroof.render.viewcontract.ViewState`): precision view
        (``'main'`` or a precision such as ``fp32``), memory levels (default: all with points),
        one dot per launch (of the :data:`MAX_LAUNCH_DOTS` longest) or per kernel, colour by
        ``'kernel'`` or ``'bound'``, also the kernels outside the focus set.
    focus : float, default 0.95
        The share of GPU time ``summary``'s focus set makes up (the page's text on the rest).
    dots : mapping of str to DataFrame, optional
        Dots per dot group (:func:`_dot_frames`): ``kernel`` =
        :func:`ncuroof.model.summary.kernel_dots`; the missing ones are made from the points.
    catalog : Catalog, optional
        The metric catalog (formulas in the hover text); :func:`ncuroof.catalog.load` otherwise.
    height : int, default 800
        Figure height [px].
    charts : sequence of Chart, optional
        Other charts the ``chart`` control switches to (:func:`ncuroof.views.charts`),
        hidden at first (shown first when there are no points).

    Returns
    -------
    plotly.graph_objects.Figure
        Each trace's ``meta`` names its ``role`` and ``when`` it shows; ``layout.meta["view"]`` is
        the :class:`ncuroof.render.viewcontract.ViewContract` the page's script reads.

    Raises
    ------
    ValueError
        For an unknown ``precision``, ``color`` or level, or points without kernels or summary.
    """
    asked = _AskedView(precision, levels, per_launch, color, show_all)
    return _plot_model(title, points, kernels, summary, asked, focus, dots, catalog, height, charts)


def _plot_model(
    title: str,
    points: pd.DataFrame,
    kernels: pd.DataFrame | None,
    summary: pd.DataFrame | None,
    asked: _AskedView,
    focus: float,
    dots: Mapping[str, pd.DataFrame] | None,
    catalog: _catalog.Catalog | None,
    height: int,
    charts: Sequence[Chart],
) -> go.Figure:
    """The roofline figure of the model's tables with its view contract (a note without points)."""
    fig = new_figure()
    _base_layout(fig, title, height)
    if points.empty:
        return _empty_figure(fig, list(charts), summary)
    if kernels is None or summary is None:
        raise ValueError(
            "plot_roofline draws the model's tables: pass kernels= and summary= (kernel_summary);"
            " ncuroof.plot_roofline makes them from the points"
        )
    summ = summary.reset_index(drop=True).assign(kid=lambda s: np.arange(len(s)))
    ch = _chart(points, kernels, summ, catalog if catalog is not None else _catalog.load(), height)
    state = _initial_state(ch, asked)
    frames = _dot_frames(points, kernels, summ, dots)
    groups = [_group_label(g, kernels) for g in DOT_GROUPS if g.id in frames]
    contract = _contract(ch, state, groups, _draw(fig, ch, groups, frames), focus)
    _add_view_notes(fig, ch, contract)
    _add_axis_units(ch, contract)
    add_charts(fig, contract, list(charts), OWN_CHART)
    apply_view(fig, contract)
    return fig


def time_weighted(values: pd.Series, time_s: pd.Series) -> float:
    """Time-weighted mean of the finite ``values`` (NaN when none)."""
    v, t = values.to_numpy(float), time_s.fillna(0.0).to_numpy(float)
    ok = np.isfinite(v) & (t > 0)
    return float(np.sum(v[ok] * t[ok]) / np.sum(t[ok])) if ok.any() else float("nan")


def log_range(x: np.ndarray, elbows: list[float]) -> np.ndarray:
    """64 log-spaced x values from a decade below to a decade above the finite positive ``x`` and
    ``elbows`` (1e-2 to 1e3 when there are none): the x axis of the other charts' roofs."""
    finite = [v for v in [*x.tolist(), *elbows] if np.isfinite(v) and v > 0]
    lo, hi = (min(finite) / 10, max(finite) * 10) if finite else (1e-2, 1e3)
    return np.geomspace(lo, hi, 64)
