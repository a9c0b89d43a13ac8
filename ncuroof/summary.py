"""Per-kernel aggregation: one dot per kernel name, precision and level, and one summary row per
kernel name, with the share of GPU time, the bound and the time saved at the roof.

Repeated launches of one kernel are aggregated the way a roofline of the whole application
needs them: time, FLOPs and bytes are summed, so the aggregate FLOP/s and B/s are the
time-weighted means of the launches' rates and the aggregate AI is total FLOPs over total bytes.
Roofs (which differ between launches only through the clock ncu measured) are time-weighted
means.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .expect import counted_flop
from .schema import LEVELS

__all__ = ["aggregate_points", "kernel_summary", "kernel_keys", "with_keys", "focus_set", "grid_size", "grid_sizes", "binding_points",
           "FOCUS_SHARE"]

#: Default share of GPU time the page focuses on: the fewest kernels that add up to it.
FOCUS_SHARE = 0.95


def _join_unique(p: pd.DataFrame, keys: list[str], col: str) -> pd.Series:
    """Per group of ``keys``: the distinct non-empty values of ``col``, first-seen order, joined with `` / ``."""
    v = p[keys + [col]].copy()
    v[col] = v[col].astype(object).where(v[col].notna(), "").astype(str)
    v = v[v[col] != ""].drop_duplicates()
    return v.groupby(keys, sort=False)[col].agg(" / ".join)


def kernel_keys(kernels: pd.DataFrame) -> pd.Series:
    """What identifies "one kernel" when launches are aggregated: the demangled name (template
    arguments included, so two CUTLASS instantiations of ``Kernel`` stay apart), else the
    function name.

    Parameters
    ----------
    kernels : DataFrame
        With ``kernel_name`` and ``kernel_demangled``.

    Returns
    -------
    Series of str
        Same index.
    """
    dm = kernels["kernel_demangled"].astype(object)
    return dm.where(dm.notna() & (dm.astype(str) != ""), kernels["kernel_name"]).astype(str)


def with_keys(points: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """``points`` with a ``kernel_key`` column (:func:`kernel_keys` of each point's launch)."""
    keys = kernels[["source", "launch_id"]].assign(kernel_key=kernel_keys(kernels).to_numpy())
    return points.merge(keys, on=["source", "launch_id"], how="left")


def aggregate_points(points: pd.DataFrame, by: str = "kernel_name") -> pd.DataFrame:
    """Aggregate a points table per (kernel, precision, level).

    Parameters
    ----------
    points : DataFrame
        The points table (:data:`ncuroof.schema.POINTS`), one row per (launch, precision, level).
    by : str, default 'kernel_name'
        Column identifying a kernel (``kernel_key`` from :func:`with_keys` keeps template
        instantiations apart).

    Returns
    -------
    DataFrame
        One row per (``by``, ``precision``, ``level``) with ``kernel_name``, ``launches`` (launches with
        this point), ``time_s`` [s], ``flop`` [FLOP] and ``bytes`` [B] summed;
        ``ai_flop_per_byte`` = flop / bytes [FLOP/B]; ``flop_per_s`` = flop / time_s and
        ``bytes_per_s`` = bytes / time_s (time-weighted means of the launches' rates);
        ``peak_flop_per_s`` and ``peak_bytes_per_s`` time-weighted over launches (NaN if any
        launch lacks the roof); ``ridge_flop_per_byte``, ``roof_flop_per_s`` = min(peak FLOP/s,
        AI × peak B/s), ``roof_fraction`` and ``bound`` (memory when AI < ridge) as in
        :func:`ncuroof.calculator.compute_points` [KPG §2.9]; ``estimated`` (any launch
        estimated); ``definition``, ``peak_flop_source``, ``peak_bytes_source`` (distinct values
        joined with `` / ``).
    """
    cols = [*dict.fromkeys([by, "kernel_name"]), "precision", "level", "launches", "time_s", "flop", "bytes", "ai_flop_per_byte", "flop_per_s",
            "bytes_per_s", "peak_flop_per_s", "peak_bytes_per_s", "ridge_flop_per_byte", "roof_flop_per_s", "roof_fraction",
            "bound", "estimated", "definition", "peak_flop_source", "peak_bytes_source"]
    if points.empty:
        return pd.DataFrame(columns=cols)
    p = points.copy()
    t = p["time_s"].to_numpy(float)
    p["_wf"] = p["peak_flop_per_s"].to_numpy(float) * t
    p["_wb"] = p["peak_bytes_per_s"].to_numpy(float) * t
    keys = [by, "precision", "level"]
    p["_nf"] = p["peak_flop_per_s"].isna()
    p["_nb"] = p["peak_bytes_per_s"].isna()
    g = p.groupby(keys, sort=False)
    out = pd.DataFrame({
        **({"kernel_name": g["kernel_name"].first()} if by != "kernel_name" else {}),
        "launches": g.size(),
        "time_s": g["time_s"].sum(),
        "flop": g["flop"].sum(),
        "bytes": g["bytes"].sum(),
        # A launch without the roof makes the aggregate roof NaN.
        "_wf": g["_wf"].sum(min_count=1).where(~g["_nf"].any()),
        "_wb": g["_wb"].sum(min_count=1).where(~g["_nb"].any()),
        "estimated": g["estimated"].any(),
    })
    for col in ("definition", "peak_flop_source", "peak_bytes_source"):
        out[col] = _join_unique(p, keys, col).reindex(out.index).fillna("")
    out = out.reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        t = out["time_s"].to_numpy(float)
        flop = out["flop"].to_numpy(float)
        by = out["bytes"].to_numpy(float)
        out["ai_flop_per_byte"] = np.where(by > 0, flop / by, np.nan)
        out["flop_per_s"] = np.where(t > 0, flop / t, np.nan)
        out["bytes_per_s"] = np.where(t > 0, by / t, np.nan)
        out["peak_flop_per_s"] = np.where(t > 0, out["_wf"].to_numpy(float) / t, np.nan)
        out["peak_bytes_per_s"] = np.where(t > 0, out["_wb"].to_numpy(float) / t, np.nan)
        ridge = out["peak_flop_per_s"] / out["peak_bytes_per_s"]
        roof = np.minimum(out["peak_flop_per_s"], out["ai_flop_per_byte"] * out["peak_bytes_per_s"])
        out["ridge_flop_per_byte"] = ridge
        out["roof_flop_per_s"] = roof
        out["roof_fraction"] = out["flop_per_s"] / roof
    out["bound"] = np.where(ridge.isna(), "", np.where(out["ai_flop_per_byte"] < ridge, "memory", "compute"))
    return out[cols]


def focus_set(time_s: pd.Series, share: float = FOCUS_SHARE) -> pd.Series:
    """Which kernels make up ``share`` of the time: the fewest, largest first.

    Parameters
    ----------
    time_s : Series
        Time per kernel [s], any order.
    share : float, default :data:`FOCUS_SHARE`
        Fraction of the total, in (0, 1]; 1 keeps every kernel.

    Returns
    -------
    Series of bool
        Same index: True for the kernels kept. A kernel is kept while the time of the larger
        kernels before it is below ``share`` of the total; kernels without a time are dropped
        unless ``share`` is 1.
    """
    t = time_s.fillna(0.0).astype(float)
    total = float(t.sum())
    if share >= 1 or total <= 0:
        return pd.Series(True, index=time_s.index)
    order = t.sort_values(ascending=False, kind="stable")
    before = order.cumsum() - order
    keep = (before < share * total) & (order > 0)
    return keep.reindex(time_s.index)


def kernel_summary(kernels: pd.DataFrame, points: pd.DataFrame, focus: float = FOCUS_SHARE) -> pd.DataFrame:
    """One row per kernel: time, share, main precision, bound, distance to the roof, saving.

    A kernel is a distinct demangled name (:func:`kernel_keys`): repeated launches are
    aggregated, template instantiations are not.

    Parameters
    ----------
    kernels : DataFrame
        The classified kernels table (:data:`ncuroof.schema.KERNELS`).
    points : DataFrame
        Its points table.
    focus : float, default :data:`FOCUS_SHARE`
        Share of GPU time whose kernels get ``in_focus`` (:func:`focus_set`).

    Returns
    -------
    DataFrame
        Sorted by ``time_s`` descending, columns ``kernel_key``, ``kernel_name``, ``kernel_label``
        (the function name, numbered ``name (2)`` when instantiations share it),
        ``kernel_demangled``, ``launches``, ``time_s`` [s] (sum over launches), ``time_share``
        (of all launches' time), ``in_focus``, ``precision`` (most FLOPs over all launches;
        empty without work), ``bound`` (the classified bound of most of its time), ``level``
        (binding level: the one with the lowest aggregate roof at the main precision),
        ``ai_flop_per_byte`` and ``flop_per_s`` of that dot, ``roof_fraction`` (of that dot, as
        in :func:`aggregate_points`), ``time_at_roof_s`` and ``saving_s`` [s] (sums over
        launches of the kernels columns, NaN when no launch has them), ``saving_share`` (saving
        over all launches' time), ``nvtx_range`` (the most common); of the binding dot also
        ``ridge_flop_per_byte``, ``peak_flop_per_s``, ``peak_bytes_per_s``; then
        ``sm_throughput_frac``, ``memory_throughput_frac``, ``occupancy_frac`` and
        ``theoretical_occupancy_frac`` (time-weighted over launches),
        ``waves_per_sm``, ``blocks`` and ``threads_per_block`` (medians), ``clock_spread``
        ((max − min) / median SM clock over launches), ``tensor_flop`` (sum), ``device_name``,
        ``expected_flop`` and ``expected_dram_bytes`` (sums, ``--expect``), ``dram_ai_flop_per_byte``
        (all counted FLOPs over DRAM bytes), ``hot_pipe`` and ``time_at_roof_bound`` (the value
        with the most launch time) and ``hot_pipe_frac`` (time-weighted).
    """
    used = ["source", "launch_id", "kernel_name", "kernel_demangled", "nvtx_range", "device_name", "grid", "block", "time_s",
            "sm_clock_hz", "time_at_roof_s", "saving_s", "bound", "sm_throughput_frac", "memory_throughput_frac",
            "occupancy_frac", "theoretical_occupancy_frac", "waves_per_sm", "tensor_flop", "expected_flop",
            "expected_dram_bytes", "fp64_flop", "fp32_flop", "fp16_flop", "dram_bytes", "hot_pipe", "hot_pipe_frac",
            "time_at_roof_bound"]
    k = kernels[[c for c in used if c in kernels.columns]].copy()
    k["kernel_key"] = kernel_keys(k)
    k["_t"] = k["time_s"].fillna(0.0)
    total = float(k["_t"].sum())
    g = k.groupby("kernel_key", sort=False)
    out = pd.DataFrame({
        "kernel_name": g["kernel_name"].first(),
        "kernel_demangled": g["kernel_demangled"].first(),
        "launches": g.size(),
        "time_s": g["time_s"].sum(min_count=1),
        "time_at_roof_s": g["time_at_roof_s"].sum(min_count=1),
        "saving_s": g["saving_s"].sum(min_count=1),
        "nvtx_range": g["nvtx_range"].agg(lambda s: s.dropna().mode().iat[0] if s.notna().any() else ""),
    })
    # SpeedOfLight throughputs and occupancy time-weighted over the launches that have them; geometry.
    for col in ("sm_throughput_frac", "memory_throughput_frac", "occupancy_frac", "theoretical_occupancy_frac", "hot_pipe_frac"):
        if col not in k.columns:
            k[col] = np.nan
        v = k[col].to_numpy(float)
        w = np.where(np.isfinite(v), k["_t"].to_numpy(float), 0.0)
        k[f"_w{col}"] = np.nan_to_num(v) * w
        k[f"_t{col}"] = w
        num, den = g[f"_w{col}"].sum(), g[f"_t{col}"].sum()
        out[col] = (num / den.where(den > 0)).where(den > 0)
    k["_blocks"] = grid_sizes(k["grid"])
    k["_threads"] = grid_sizes(k["block"])
    out["waves_per_sm"] = g["waves_per_sm"].median()
    out["blocks"] = g["_blocks"].median()
    out["threads_per_block"] = g["_threads"].median()
    clk = g["sm_clock_hz"]
    out["clock_spread"] = (clk.max() - clk.min()) / clk.median()
    out["tensor_flop"] = g["tensor_flop"].sum(min_count=1)
    out["expected_flop"] = g["expected_flop"].sum(min_count=1)
    out["expected_dram_bytes"] = g["expected_dram_bytes"].sum(min_count=1)
    k["_counted"] = counted_flop(k)
    dram = g["dram_bytes"].sum(min_count=1)
    out["dram_ai_flop_per_byte"] = g["_counted"].sum(min_count=1) / dram.where(dram > 0)
    out["device_name"] = g["device_name"].first()
    out["time_share"] = out["time_s"] / total if total > 0 else np.nan
    out["saving_share"] = out["saving_s"] / total if total > 0 else np.nan
    bound_time = k.groupby(["kernel_key", "bound"], sort=False)["_t"].sum().reset_index()
    out["bound"] = (bound_time.sort_values("_t", ascending=False, kind="stable").drop_duplicates("kernel_key")
                    .set_index("kernel_key")["bound"].reindex(out.index).fillna("unknown"))
    out["hot_pipe"] = _most_time(k, "hot_pipe").reindex(out.index).fillna("")
    out["time_at_roof_bound"] = _most_time(k, "time_at_roof_bound").reindex(out.index).fillna("")
    dots = aggregate_points(with_keys(points, k), by="kernel_key") if len(points) else pd.DataFrame()
    main = pd.Series("", index=out.index, dtype=object)
    bcols = ["level", "ai_flop_per_byte", "flop_per_s", "roof_fraction", "ridge_flop_per_byte", "peak_flop_per_s",
             "peak_bytes_per_s"]
    binding = pd.DataFrame(index=out.index, columns=bcols, dtype=object)
    if len(dots):
        work = dots.groupby(["kernel_key", "precision"], sort=False)["flop"].max().reset_index()
        main.update(work.loc[work.groupby("kernel_key")["flop"].idxmax()].set_index("kernel_key")["precision"])
        d = dots.merge(main.rename("precision").rename_axis("kernel_key").reset_index(), on=["kernel_key", "precision"])
        roofed = d[np.isfinite(d["roof_flop_per_s"].to_numpy(float))]
        if len(roofed):
            pick = roofed.loc[roofed.groupby("kernel_key")["roof_flop_per_s"].idxmin()].set_index("kernel_key")
            binding.update(pick[bcols])
    out["precision"] = main
    out["level"] = binding["level"].fillna("")
    for c in bcols[1:]:
        out[c] = pd.to_numeric(binding[c], errors="coerce")
    out = out.rename_axis("kernel_key").reset_index()
    out = out.sort_values("time_s", ascending=False, na_position="last", kind="stable").reset_index(drop=True)
    nth = out.groupby("kernel_name", sort=False).cumcount() + 1
    shared = out.groupby("kernel_name", sort=False)["kernel_name"].transform("size") > 1
    out["kernel_label"] = np.where(shared, out["kernel_name"] + " (" + nth.astype(str) + ")", out["kernel_name"])
    out["in_focus"] = focus_set(out["time_s"], focus)
    cols = ["kernel_key", "kernel_name", "kernel_label", "kernel_demangled", "launches", "time_s", "time_share", "in_focus",
            "precision", "bound", "level", "ai_flop_per_byte", "flop_per_s", "roof_fraction", "time_at_roof_s", "saving_s",
            "saving_share", "nvtx_range", "ridge_flop_per_byte", "peak_flop_per_s", "peak_bytes_per_s", "sm_throughput_frac",
            "memory_throughput_frac", "occupancy_frac", "theoretical_occupancy_frac", "waves_per_sm", "blocks", "threads_per_block", "clock_spread", "tensor_flop",
            "device_name", "expected_flop", "expected_dram_bytes", "dram_ai_flop_per_byte", "hot_pipe", "hot_pipe_frac",
            "time_at_roof_bound"]
    return out[cols]


def _most_time(k: pd.DataFrame, col: str) -> pd.Series:
    """Per ``kernel_key``: the non-empty value of ``col`` with the most launch time (``_t``)."""
    if col not in k.columns:
        return pd.Series(dtype=object)
    v = k[["kernel_key", "_t"]].assign(_v=k[col].astype(object).where(k[col].notna(), "").astype(str))
    v = v[v["_v"] != ""].groupby(["kernel_key", "_v"], sort=False)["_t"].sum().reset_index()
    return v.sort_values("_t", ascending=False, kind="stable").drop_duplicates("kernel_key").set_index("kernel_key")["_v"]


def grid_sizes(dims: pd.Series) -> pd.Series:
    """:func:`grid_size` of each cell, parsed once per distinct value."""
    sizes = {v: grid_size(v) for v in dims.dropna().unique()}
    return dims.map(sizes).astype(float)


def binding_points(points: pd.DataFrame) -> pd.DataFrame:
    """Per launch, the binding point: at the precision with most FLOPs, the level with the
    lowest attainable roof (points without a roof left out).

    Parameters
    ----------
    points : DataFrame
        The points table.

    Returns
    -------
    DataFrame
        ``source``, ``launch_id``, ``precision``, ``level``, ``ai_flop_per_byte``,
        ``ridge_flop_per_byte``, ``roof_fraction``, ``bound``; launches without a roofed point
        are absent.
    """
    cols = ["source", "launch_id", "precision", "level", "ai_flop_per_byte", "ridge_flop_per_byte", "roof_fraction", "bound"]
    if points.empty:
        return pd.DataFrame(columns=cols)
    main = points.loc[points.groupby(["source", "launch_id"])["flop"].idxmax(), ["source", "launch_id", "precision"]]
    p = points.merge(main, on=["source", "launch_id", "precision"])
    p = p[np.isfinite(p["roof_flop_per_s"].to_numpy(float))]
    if p.empty:
        return pd.DataFrame(columns=cols)
    return p.loc[p.groupby(["source", "launch_id"])["roof_flop_per_s"].idxmin(), cols]


def grid_size(text: object) -> float:
    """``'(16, 16, 1)'`` -> 256.0; NaN when not a dimension triple."""
    if not isinstance(text, str):
        return np.nan
    nums = re.findall(r"\d+", text)
    return float(np.prod([int(n) for n in nums])) if nums else np.nan


def levels_present(points: pd.DataFrame) -> list[str]:
    """The memory levels that have points, in :data:`ncuroof.schema.LEVELS` order."""
    have = set(points["level"]) if len(points) else set()
    return [lv for lv in LEVELS if lv in have]
