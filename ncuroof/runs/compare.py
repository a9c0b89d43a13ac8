"""Compare two analyses: match kernels, say how far each dot moved and what got slower.

A comparison is a join of the two runs' kernel summaries (:func:`ncuroof.model.summary.kernel_summary`,
the page's own aggregation and binding point), so a kernel's AI and roof fraction before and
after are those of its row on each page. Kernels are matched on their kernel identity
(:func:`ncuroof.model.summary.kernel_keys`: the demangled name, or finer keys with ``--match``; the
k-th launch of each kernel with ``--match launch``). Kernels left unmatched are paired by
fallbacks that say they were used: the same base name once template arguments and parameters
are stripped, then names that differ only in their numbers (``sigma_gpp_gpu_34`` →
``sigma_gpp_gpu_35``: OpenACC/OpenMP offload kernels are named after a source line) when that
pairing is unambiguous.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import fmt
from ..model.calculator import compute_points
from ..model.summary import kernel_summary, pair_keys
from ..schema import BOUNDS, LEVELS

__all__ = ["match", "join", "compare", "totals", "slower", "movement", "warnings", "plot_compare", "MOVE_THRESHOLD"]

#: Relative change below which AI or roof fraction counts as unchanged.
MOVE_THRESHOLD = 0.05


_SIDE = ["kernel_name", "kernel_label", "launches", "time_s", "flop_per_s", "bound", "precision", "level", "ai_flop_per_byte",
         "roof_fraction", "achievable_roof_fraction", *(f"{lv}_{m}" for lv in LEVELS for m in ("ai_flop_per_byte", "roof_fraction"))]


def match(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Pair the kernels of two kernel summaries: :func:`ncuroof.model.summary.pair_keys` with its fallbacks
    ``base name`` and ``numbers differ`` (columns ``key_before``, ``key_after``, ``match``)."""
    return pair_keys(before, after, ("base name", "numbers differ"), ("only_before", "only_after")).rename(
        columns={"key_left": "key_before", "key_right": "key_after"})


def movement(ai_before: float, ai_after: float, frac_before: float, frac_after: float) -> str:
    """Which way a dot moved: ``more reuse`` (AI up), ``better utilization`` (roof fraction up),
    ``both``, ``worse`` (both down), mixed (``more reuse, lower utilization``, …), ``none``, or
    ``unknown`` when a value is missing. Changes under :data:`MOVE_THRESHOLD` count as none."""
    def change(a: float, b: float) -> int | None:
        if not (np.isfinite(a) and np.isfinite(b)) or a <= 0:
            return None
        r = b / a - 1
        return 0 if abs(r) < MOVE_THRESHOLD else (1 if r > 0 else -1)

    x, y = change(ai_before, ai_after), change(frac_before, frac_after)
    if x is None and y is None:
        return "unknown"
    x, y = x or 0, y or 0
    names = {(0, 0): "none", (1, 0): "more reuse", (0, 1): "better utilization", (1, 1): "both", (-1, -1): "worse",
             (-1, 0): "less reuse", (0, -1): "lower utilization", (1, -1): "more reuse, lower utilization",
             (-1, 1): "less reuse, better utilization"}
    return names[(x, y)]


def _movement(row: Any) -> str:
    """:func:`movement` at DRAM, else the outermost level where it is known."""
    mv = "unknown"
    for lv in ("dram", "l2", "l1"):
        mv = movement(getattr(row, f"{lv}_ai_flop_per_byte_before"), getattr(row, f"{lv}_ai_flop_per_byte_after"),
                      getattr(row, f"{lv}_roof_fraction_before"), getattr(row, f"{lv}_roof_fraction_after"))
        if mv != "unknown":
            break
    return mv


def join(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The comparison table: two kernel summaries joined on matched kernels.

    Every number is the page's own (:func:`ncuroof.model.summary.kernel_summary`): a kernel's AI and
    roof fraction before and after equal its row in each page's kernel table.

    Parameters
    ----------
    before, after : DataFrame
        Kernel summaries of the two runs, made with the same kernel identity.

    Returns
    -------
    DataFrame
        ``kernel_key``, ``kernel_name`` (before's, else after's), ``kernel_label``,
        ``kernel_name_after``, ``status`` (matched, only_before, only_after), ``match``, for each
        side ``launches``, ``time_s`` [s], ``flop_per_s`` [FLOP/s], ``bound``, ``precision``,
        ``level``, ``ai_flop_per_byte`` [FLOP/B], ``roof_fraction``, ``achievable_roof_fraction``
        (of the achievable roof at the same binding dot, NaN where none) and per level
        ``<level>_ai_flop_per_byte``/``<level>_roof_fraction`` with ``_before``/``_after``;
        ``speedup`` (before / after time), ``time_delta_s`` (after − before) and ``movement`` (at
        DRAM, else the outermost level both have). Sorted by the time the change saved or cost,
        largest first.
    """
    # Speedups compare ncu's durations: with a timeline (--timeline) time_s is production's, the same run on both sides.
    before, after = (s.assign(time_s=s["profiled_time_s"]) if "profiled_time_s" in s.columns else s for s in (before, after))
    pairs = match(before, after)
    b = before.set_index("kernel_key")[_SIDE].add_suffix("_before")
    a = after.set_index("kernel_key")[_SIDE].add_suffix("_after")
    out = pairs.join(b, on="key_before").join(a, on="key_after")
    matched = (pairs["key_before"] != "") & (pairs["key_after"] != "")
    for side in ("before", "after"):
        out[f"launches_{side}"] = out[f"launches_{side}"].fillna(0).astype(int)
        out[f"time_s_{side}"] = out[f"time_s_{side}"].fillna(0.0)
        for c in ("bound", "precision", "level", "kernel_name", "kernel_label"):
            out[f"{c}_{side}"] = out[f"{c}_{side}"].fillna("")
    out["kernel_key"] = np.where(out["key_before"] != "", out["key_before"], out["key_after"])
    out["kernel_name"] = np.where(out["key_before"] != "", out["kernel_name_before"], out["kernel_name_after"])
    out["kernel_label"] = np.where(out["key_before"] != "", out["kernel_label_before"], out["kernel_label_after"])
    out["status"] = np.where(matched, "matched", out["match"])
    ta = out["time_s_after"].to_numpy(float)
    out["speedup"] = np.where(matched & (ta > 0), out["time_s_before"] / np.where(ta > 0, ta, 1.0), np.nan)
    out["time_delta_s"] = out["time_s_after"] - out["time_s_before"]
    out["movement"] = np.where(matched, [_movement(r) for r in out.itertuples(index=False)], "")
    out = out.drop(columns=["key_before", "key_after", "kernel_name_before", "kernel_label_before", "kernel_label_after"])
    order = out["time_delta_s"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order].reset_index(drop=True)


def compare(before: pd.DataFrame, after: pd.DataFrame, by_launch: bool = False, match: str = "kernel") -> pd.DataFrame:
    """Compare two launch tables: :func:`join` of their kernel summaries.

    Parameters
    ----------
    before, after : DataFrame
        Kernels (launch) tables of the two runs.
    by_launch : bool, default False
        Pair the k-th launch of each kernel instead of aggregating (``match='launch'``).
    match : str, default 'kernel'
        Kernel identity (:data:`ncuroof.model.summary.KEY_CHOICES`).

    Returns
    -------
    DataFrame
        See :func:`join`.
    """
    by = "launch" if by_launch else match
    sides = [kernel_summary(k.drop(columns=["kernel_key"], errors="ignore"), compute_points(k), by=by) for k in (before, after)]
    return join(*sides)


def totals(before: pd.DataFrame, after: pd.DataFrame) -> dict[str, float]:
    """GPU time of each run, the speedup and the after run's share of time per bound.

    Parameters
    ----------
    before, after : DataFrame
        Launch tables.

    Returns
    -------
    dict
        ``time_s_before``, ``time_s_after`` [s], ``speedup`` (before / after) and
        ``share_<bound>`` for each of :data:`ncuroof.schema.BOUNDS` (NaN without time).
    """
    tb, ta = float(np.nansum(before["time_s"])), float(np.nansum(after["time_s"]))
    out = {"time_s_before": tb, "time_s_after": ta, "speedup": tb / ta if ta > 0 else float("nan")}
    t_after = pd.Series(np.nan_to_num(after["time_s"].to_numpy(float))).groupby(after["bound"].to_numpy()).sum()
    for b in BOUNDS:
        out[f"share_{b}"] = float(t_after.get(b, 0.0) / ta) if ta > 0 else float("nan")
    return out


def slower(table: pd.DataFrame, tot: dict[str, float], pct: float) -> list[str]:
    """The CI gate: each matched kernel, and the total, whose time grew by more than ``pct`` percent.

    Parameters
    ----------
    table : DataFrame
        From :func:`join`.
    tot : dict
        From :func:`totals`.
    pct : float
        Allowed growth in percent (0: any growth fails).

    Returns
    -------
    list of str
        One line per offender (``slower: NAME: 1.2 ms -> 1.8 ms (+50.0%)``), the total last; empty
        when nothing grew past the limit.
    """
    limit = 1 + pct / 100
    t = table[(table["status"] == "matched") & (table["time_s_after"] > limit * table["time_s_before"])]
    out = [f"slower: {r.kernel_label}: {fmt.time(r.time_s_before)} -> {fmt.time(r.time_s_after)} "
           f"(+{100 * (r.time_s_after / r.time_s_before - 1):.1f}%)" for r in t.itertuples(index=False)]
    if tot["time_s_after"] > limit * tot["time_s_before"]:
        out.append(f"slower: total GPU time {fmt.time(tot['time_s_before'])} -> {fmt.time(tot['time_s_after'])}")
    return out


def warnings(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """Reasons the two runs may not be comparable point for point.

    Parameters
    ----------
    before, after : DataFrame
        Kernels tables.

    Returns
    -------
    list of str
        Differences in GPU, ncu version, clock control (``clock_control``: the reports' clock
        status and ``ncuroof profile``'s record), SM clock (median over launches, > 5 %: was
        ``--clock-control`` the same?) and metric set (which launches have roofline metrics,
        which traffic definitions and roof sources were used), and damaged records
        (status ``corrupt_record``) on either side.
    """
    out = []

    def values(k: pd.DataFrame, col: str) -> set[str]:
        return set(k[col].dropna().astype(str)) - {""}

    for col, what in (("device_name", "GPU"), ("ncu_version", "ncu version"), ("cc", "compute capability"),
                      ("clock_control", "clock control")):
        x, y = values(before, col), values(after, col)
        if x and y and x != y:
            out.append(f"different {what}: {', '.join(sorted(x))} before, {', '.join(sorted(y))} after")
    cb, ca = before["sm_clock_hz"].median(), after["sm_clock_hz"].median()
    if np.isfinite(cb) and np.isfinite(ca) and abs(ca / cb - 1) > 0.05:
        out.append(f"SM clock differs: {cb / 1e6:.0f} MHz before, {ca / 1e6:.0f} MHz after (same --clock-control?)")
    for side, k in (("before", before), ("after", after)):
        if n := int((k["status"] == "corrupt_record").sum()):
            out.append(f"{n} launch{'es' if n > 1 else ''} {side} {'are damaged records' if n > 1 else 'is a damaged record'} "
                       "(status corrupt_record, see kernels.csv notes): not plotted, their numbers are not measurements; the input is damaged")
    for col, what in (("status", "metric set"), ("dram_definition", "DRAM traffic definition"),
                      ("l2_definition", "L2 traffic definition"), ("peak_source", "roof source")):
        x, y = values(before, col), values(after, col)
        if x != y:
            out.append(f"different {what}: {', '.join(sorted(x)) or 'none'} before, {', '.join(sorted(y)) or 'none'} after")
    return out


def plot_compare(table: pd.DataFrame, level: str = "dram", title: str = "Before → after") -> go.Figure:
    """Both runs on one roofline plane with an arrow from each kernel's before-dot to its after-dot.

    Parameters
    ----------
    table : DataFrame
        From :func:`compare`.
    level : {'dram', 'l2', 'l1'}, default 'dram'
        Which level's dots to draw.
    title : str, optional
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
        Log-log axes, AI [FLOP/B] × FLOP/s; hollow markers before, filled after, hover with the
        kernel name, speedup and movement.
    """
    fig = go.Figure()
    fig.update_layout(title=title, template="plotly_white", height=650,
                      xaxis=dict(type="log", title=f"Arithmetic intensity at {level.upper()} [FLOP/byte]"),
                      yaxis=dict(type="log", title="Performance [FLOP/s]"))
    ai_b, ai_a = table[f"{level}_ai_flop_per_byte_before"], table[f"{level}_ai_flop_per_byte_after"]
    y_b, y_a = table["flop_per_s_before"], table["flop_per_s_after"]
    for side, ai, y, symbol in (("before", ai_b, y_b, "circle-open"), ("after", ai_a, y_a, "circle")):
        ok = (ai > 0) & (y > 0)
        sel = table[ok]
        fig.add_trace(go.Scatter(
            x=ai[ok], y=y[ok], mode="markers", name=side, marker=dict(symbol=symbol, size=11, line=dict(width=2)),
            customdata=np.column_stack([sel["kernel_name"].astype(str), sel["speedup"].map(lambda s: f"{s:.2f}x" if np.isfinite(s) else "n/a"),
                                        sel["movement"].astype(str)]),
            hovertemplate=f"<b>%{{customdata[0]}}</b> ({side})<br>AI %{{x:.3g}} FLOP/B<br>%{{y:.3g}} FLOP/s<br>"
                          "speedup %{customdata[1]} · %{customdata[2]}<extra></extra>",
        ))
    for r in table.itertuples(index=False):
        xb, xa, yb, ya = (getattr(r, f"{level}_ai_flop_per_byte_before"), getattr(r, f"{level}_ai_flop_per_byte_after"),
                          r.flop_per_s_before, r.flop_per_s_after)
        if all(np.isfinite(v) and v > 0 for v in (xb, xa, yb, ya)) and (xb, yb) != (xa, ya):
            fig.add_annotation(x=np.log10(xa), y=np.log10(ya), ax=np.log10(xb), ay=np.log10(yb), xref="x", yref="y",
                               axref="x", ayref="y", showarrow=True, arrowhead=3, arrowwidth=1.5, arrowcolor="#555", text="")
    if not len(fig.data[0].x) and not len(fig.data[1].x):
        fig.add_annotation(text=f"No dots at {level.upper()}: the inputs have no FLOP counters or no {level.upper()} traffic.",
                           showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    return fig
