"""Compare two analyses: match kernels, say how far each dot moved and what got slower.

Kernels are matched on their function name and aggregated per name (launches counted, time
summed, FLOPs and bytes summed so rates are time-weighted); ``match="launch"`` pairs the launches
of one name in order. Kernels left unmatched are paired by fallbacks that say they were used:
the same base name once template arguments and parameters are stripped, then names that differ
only in their numbers (``sigma_gpp_gpu_34`` → ``sigma_gpp_gpu_35``: OpenACC/OpenMP offload kernels
are named after a source line) when that pairing is unambiguous.

The dot of a kernel at a level is (AI = FLOPs / bytes of the level, FLOP/s = FLOPs / time), FLOPs
summed over every precision; its roof fraction is FLOP/s over min(compute roof, AI × bandwidth
roof) with the compute roof of the precision that does most of its FLOPs ([KPG §2.9]).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .parser.csv import function_name
from .schema import LEVELS, PRECISIONS

__all__ = ["aggregate", "match", "compare", "movement", "warnings", "plot_compare", "MOVE_THRESHOLD"]

#: Relative change below which AI or roof fraction counts as unchanged.
MOVE_THRESHOLD = 0.05
_NUM = re.compile(r"\d+")


def aggregate(kernels: pd.DataFrame, by_launch: bool = False) -> pd.DataFrame:
    """One row per kernel name (or per name and launch ordinal): totals, dots and roof fractions.

    Parameters
    ----------
    kernels : DataFrame
        A kernels table (:data:`ncuroof.schema.KERNELS`); launches whose ``status`` is not ``ok``
        count for time but not for dots.
    by_launch : bool, default False
        Key each launch as ``name#k`` (k-th launch of that name, in launch order).

    Returns
    -------
    DataFrame
        Index ``key``; columns ``kernel_name``, ``kernel_demangled``, ``launches``, ``time_s`` [s],
        ``flop`` [FLOP], ``flop_per_s`` [FLOP/s], per level ``<level>_bytes`` [B],
        ``<level>_ai_flop_per_byte`` [FLOP/B], ``<level>_roof_fraction`` [1], ``precision`` (the
        one with most FLOPs) and ``bound`` (the bound of most of the time).
    """
    k = kernels.copy()
    k["key"] = k["kernel_name"].astype(str)
    if by_launch:
        k = k.sort_values(["source", "launch_id"], kind="stable")
        k["key"] = k["key"] + "#" + k.groupby("key").cumcount().astype(str)
    ok = (k["status"] == "ok").to_numpy()
    work = {p: np.where(ok, np.nan_to_num(k[f"{p}_flop"].to_numpy(float)), 0.0) for p in (*PRECISIONS, "tensor")}
    k["_flop"] = sum(work.values())
    for p, w in work.items():
        k[f"_{p}"] = w
    for lv in LEVELS:
        k[f"_{lv}"] = np.where(ok, k[f"{lv}_bytes"].to_numpy(float), np.nan)
    # A damaged record's duration is not a measurement (ncuroof.parser.validate): left out, warned about.
    k["_t"] = np.where(k["status"] == "corrupt_record", 0.0, np.nan_to_num(k["time_s"].to_numpy(float)))
    g = k.groupby("key", sort=False)
    out = pd.DataFrame({
        "kernel_name": g["kernel_name"].first(),
        "kernel_demangled": g["kernel_demangled"].first(),
        "launches": g.size(),
        "time_s": g["_t"].sum(),
        "flop": g["_flop"].sum(),
    })
    ok_time = k["_t"].where(ok, 0.0).groupby(k["key"], sort=False).sum()
    out["flop_per_s"] = np.where(ok_time > 0, out["flop"] / ok_time.where(ok_time > 0, 1.0), np.nan)
    totals = {p: g[f"_{p}"].sum() for p in work}
    out["precision"] = pd.DataFrame(totals).idxmax(axis=1).where(out["flop"] > 0, "")
    peak_cols = {p: f"peak_{p}_flop_per_s" for p in PRECISIONS}
    tensor_peaks = [c for c in k.columns if c.startswith("peak_tensor_")]
    k["_peak_tensor"] = k[tensor_peaks].max(axis=1) if tensor_peaks else np.nan
    peak = {p: g[c].median() for p, c in peak_cols.items()} | {"tensor": g["_peak_tensor"].median()}
    peak_flop = np.array([peak[p].get(key, np.nan) if p else np.nan for key, p in out["precision"].items()], dtype=float)
    for lv in LEVELS:
        b = g[f"_{lv}"].sum(min_count=1)
        out[f"{lv}_bytes"] = b
        ai = np.where(b > 0, out["flop"] / b.where(b > 0, 1.0), np.nan)
        out[f"{lv}_ai_flop_per_byte"] = np.where(out["flop"] > 0, ai, np.nan)
        bw = g[f"peak_{lv}_bytes_per_s"].median().to_numpy(float)
        roof = np.fmin(peak_flop, ai * bw)
        roof = np.where(np.isnan(peak_flop) | np.isnan(ai * bw), np.nan, roof)
        out[f"{lv}_roof_fraction"] = np.where(roof > 0, out["flop_per_s"] / np.where(roof > 0, roof, 1.0), np.nan)
    bound_time = k.groupby(["key", "bound"], sort=False)["_t"].sum().reset_index()
    top = bound_time.sort_values("_t", ascending=False, kind="stable").drop_duplicates("key").set_index("key")["bound"]
    out["bound"] = top.reindex(out.index).fillna("unknown")
    out.index.name = "key"
    return out


def _fallback_pairs(before: list[str], after: list[str], key) -> dict[str, str]:  # noqa: ANN001
    """Pair names whose ``key(name)`` is equal and unique on both sides."""
    kb: dict[str, list[str]] = {}
    ka: dict[str, list[str]] = {}
    for n in before:
        kb.setdefault(key(n), []).append(n)
    for n in after:
        ka.setdefault(key(n), []).append(n)
    return {b[0]: ka[k][0] for k, b in kb.items() if len(b) == 1 and len(ka.get(k, [])) == 1}


def match(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Pair the rows of two :func:`aggregate` tables.

    Parameters
    ----------
    before, after : DataFrame
        From :func:`aggregate`.

    Returns
    -------
    DataFrame
        Columns ``key_before``, ``key_after`` (empty on the side a kernel is missing from),
        ``match`` (``name``, ``base name``, ``numbers differ``, ``only_before``, ``only_after``).
    """
    pairs = [(k, k, "name") for k in before.index if k in after.index]
    left = [k for k in before.index if k not in after.index]
    right = [k for k in after.index if k not in before.index]

    def suffix(k: str) -> str:
        return k[k.index("#"):] if "#" in k else ""

    for how, keyfn in (("base name", lambda k: function_name(k.split("#")[0]) + suffix(k)),
                       ("numbers differ", lambda k: _NUM.sub("#", k.split("#")[0]) + suffix(k))):
        found = _fallback_pairs(left, right, keyfn)
        pairs += [(b, a, how) for b, a in found.items()]
        left = [k for k in left if k not in found]
        right = [k for k in right if k not in found.values()]
    pairs += [(k, "", "only_before") for k in left] + [("", k, "only_after") for k in right]
    return pd.DataFrame(pairs, columns=["key_before", "key_after", "match"])


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


def compare(before: pd.DataFrame, after: pd.DataFrame, by_launch: bool = False) -> pd.DataFrame:
    """The comparison table: one row per matched (or unmatched) kernel key.

    Parameters
    ----------
    before, after : DataFrame
        Kernels tables of the two runs.
    by_launch : bool, default False
        Pair launches in order within a name instead of aggregating per name.

    Returns
    -------
    DataFrame
        ``kernel_name`` (before's, else after's), ``kernel_name_after``, ``status`` (matched,
        only_before, only_after), ``match``, ``launches_before/_after``, ``time_s_before/_after``,
        ``speedup`` (before / after time), ``flop_per_s_before/_after``, per level
        ``<level>_ai_flop_per_byte_before/_after`` and ``<level>_roof_fraction_before/_after``,
        ``bound_before/_after``, ``movement`` (at DRAM, else the outermost level both have) and
        ``time_delta_s`` (after − before). Sorted by the time the change saved or cost, largest first.
    """
    a, b = aggregate(before, by_launch), aggregate(after, by_launch)
    pairs = match(a, b)
    rows = []
    cols = ["launches", "time_s", "flop_per_s", "bound", *(f"{lv}_{m}" for lv in LEVELS for m in ("ai_flop_per_byte", "roof_fraction"))]
    for kb, ka, how in pairs.itertuples(index=False):
        rb = a.loc[kb] if kb else None
        ra = b.loc[ka] if ka else None
        row = {"kernel_name": (rb if rb is not None else ra)["kernel_name"],
               "kernel_name_after": ra["kernel_name"] if ra is not None else "",
               "status": "matched" if kb and ka else how, "match": how}
        for c in cols:
            row[f"{c}_before"] = rb[c] if rb is not None else (0 if c in ("launches", "time_s") else np.nan)
            row[f"{c}_after"] = ra[c] if ra is not None else (0 if c in ("launches", "time_s") else np.nan)
        tb, ta = row["time_s_before"], row["time_s_after"]
        row["speedup"] = tb / ta if kb and ka and ta > 0 else np.nan
        row["time_delta_s"] = ta - tb
        mv = "unknown"
        if kb and ka:
            for lv in ("dram", "l2", "l1"):
                mv = movement(row[f"{lv}_ai_flop_per_byte_before"], row[f"{lv}_ai_flop_per_byte_after"],
                              row[f"{lv}_roof_fraction_before"], row[f"{lv}_roof_fraction_after"])
                if mv != "unknown":
                    break
        row["movement"] = mv if kb and ka else ""
        rows.append(row)
    out = pd.DataFrame(rows)
    for side in ("before", "after"):
        out[f"bound_{side}"] = out.pop(f"bound_{side}").fillna("")
    order = out["time_delta_s"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order].reset_index(drop=True)


def warnings(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """Reasons the two runs may not be comparable point for point.

    Parameters
    ----------
    before, after : DataFrame
        Kernels tables.

    Returns
    -------
    list of str
        Differences in GPU, ncu version, SM clock (median over launches, > 5 %: was
        ``--clock-control`` the same?) and metric set (which launches have roofline metrics,
        which traffic definitions and roof sources were used), and damaged records
        (status ``corrupt_record``) on either side.
    """
    out = []

    def values(k: pd.DataFrame, col: str) -> set[str]:
        return set(k[col].dropna().astype(str)) - {""}

    for col, what in (("device_name", "GPU"), ("ncu_version", "ncu version"), ("cc", "compute capability")):
        x, y = values(before, col), values(after, col)
        if x and y and x != y:
            out.append(f"different {what}: {', '.join(sorted(x))} before, {', '.join(sorted(y))} after")
    cb, ca = before["sm_clock_hz"].median(), after["sm_clock_hz"].median()
    if np.isfinite(cb) and np.isfinite(ca) and abs(ca / cb - 1) > 0.05:
        out.append(f"SM clock differs: {cb / 1e6:.0f} MHz before, {ca / 1e6:.0f} MHz after (same --clock-control?)")
    for side, k in (("before", before), ("after", after)):
        if n := int((k["status"] == "corrupt_record").sum()):
            out.append(f"{n} launch{'es' if n > 1 else ''} {side} {'are damaged records' if n > 1 else 'is a damaged record'} "
                       "(status corrupt_record, see kernels.csv notes): left out of times and dots; the input is damaged")
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
