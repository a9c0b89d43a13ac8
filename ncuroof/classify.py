"""Say what bounds each launch: memory, compute, latency or unknown, with the reason.

Rules (thresholds from ``metrics/thresholds.toml``):

1. **latency** — ncu's SOLBottleneck rule ([NCU-SEC] ``SpeedOfLight.py``; ROOFLINE_SPEC §8.2):
   Compute (SM) throughput and Memory throughput both below 60 % of peak. Under one wave per SM
   the note says "small grid".
2. **memory / compute** — the roofline ([KPG §2.9], hierarchical reading of [YANG-CCPE]): take
   the precision with the most work; among its levels the binding one has the lowest attainable
   roof min(P, AI × B); the launch is memory bound when that level's AI is below its ridge.
3. Without FLOP counters or roofs, but with SpeedOfLight throughputs: the larger of the two
   (flagged in the notes as coming from throughputs only).
4. Otherwise **unknown**.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import fmt
from .catalog import Catalog
from .schema import parse_cell

__all__ = ["classify", "binding_points", "main_precision"]


def _sol_reason(sm: float, mem: float) -> str:
    return f"SM throughput {fmt.pct(sm)}, memory throughput {fmt.pct(mem)} of peak"


def main_precision(points: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``, the precision with the most FLOPs (the first in point order on a tie).

    Parameters
    ----------
    points : DataFrame
        A points table or aggregated dots (:func:`ncuroof.summary.aggregate_points`), with
        ``keys``, ``precision`` and ``flop``.
    keys : list of str
        The grouping columns (``["source", "launch_id"]`` per launch, ``["kernel_key"]`` per kernel).

    Returns
    -------
    DataFrame
        ``keys`` and ``precision``, one row per group.
    """
    work = points.groupby(keys + ["precision"], sort=False)["flop"].max().reset_index()
    return work.loc[work.groupby(keys, sort=False)["flop"].idxmax(), keys + ["precision"]]


def binding_points(points: pd.DataFrame, keys: list[str] | tuple[str, ...] = ("source", "launch_id")) -> pd.DataFrame:
    """The one binding-point rule: at the precision with the most FLOPs (:func:`main_precision`),
    the level with the lowest attainable roof min(P, AI × B) [KPG §2.9; YANG-CCPE]; points without
    a roof are left out, so a group whose main precision has no roof has no binding point.

    :func:`classify` (per launch), :func:`ncuroof.summary.kernel_summary` and through it
    ``compare`` (per kernel), the diagnosis and the page all call this.

    Parameters
    ----------
    points : DataFrame
        A points table or aggregated dots.
    keys : sequence of str, default ('source', 'launch_id')
        What a group is: a launch, or ``("kernel_key",)`` for a kernel.

    Returns
    -------
    DataFrame
        ``keys``, ``precision``, ``level``, ``ai_flop_per_byte``, ``flop_per_s``,
        ``ridge_flop_per_byte``, ``roof_flop_per_s``, ``roof_fraction``, ``peak_flop_per_s``,
        ``peak_bytes_per_s``, ``bound``; groups without a binding point are absent.
    """
    keys = list(keys)
    cols = keys + ["precision", "level", "ai_flop_per_byte", "flop_per_s", "ridge_flop_per_byte", "roof_flop_per_s",
                   "roof_fraction", "peak_flop_per_s", "peak_bytes_per_s", "bound"]
    if points.empty:
        return pd.DataFrame(columns=cols)
    p = points.merge(main_precision(points, keys), on=keys + ["precision"])
    p = p[np.isfinite(p["roof_flop_per_s"].to_numpy(float))]
    if p.empty:
        return pd.DataFrame(columns=cols)
    return p.loc[p.groupby(keys, sort=False)["roof_flop_per_s"].idxmin(), cols].reset_index(drop=True)


def _roofline_reason(r: Any) -> str:
    cmp = "<" if r.bound == "memory" else ">="
    return (f"{r.bound} bound: {str(r.precision).upper()} at {str(r.level).upper()} (binding level), AI {r.ai_flop_per_byte:.3g} "
            f"FLOP/B {cmp} ridge {r.ridge_flop_per_byte:.3g} FLOP/B, {fmt.pct(float(r.roof_fraction))} of roof")


def _latency_reason(r: Any, latency: float, small: float) -> str:
    text = f"latency bound: {_sol_reason(r.sm_throughput_frac, r.memory_throughput_frac)}, both below {fmt.pct(latency)} (ncu SOLBottleneck rule)"
    return text + (f", small grid: {r.waves_per_sm:.2f} waves per SM" if r.waves_per_sm < small else "")


def _sol_only_reason(r: Any) -> str:
    b = "compute" if r.sm_throughput_frac >= r.memory_throughput_frac else "memory"
    return f"{b} bound from SpeedOfLight throughputs only ({_sol_reason(r.sm_throughput_frac, r.memory_throughput_frac)}): no roofline point"


def classify(kernels: pd.DataFrame, points: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """Fill the ``bound`` column of the kernels table and append the reason to ``notes``.

    Vectorised over launches; the roofline verdict is the binding point of
    :func:`ncuroof.summary.binding_points` (the one rule the page and ``compare`` use too).

    Parameters
    ----------
    kernels : DataFrame
        Kernels table from :func:`ncuroof.calculator.compute_kernels`.
    points : DataFrame
        Its points table (:func:`ncuroof.calculator.compute_points`).
    catalog : Catalog
        For the thresholds in ``metrics/thresholds.toml``.

    Returns
    -------
    DataFrame
        A copy of ``kernels`` with ``bound`` in {memory, compute, latency, unknown} and the
        numbers behind each verdict in ``notes``.
    """
    sol = catalog.thresholds["sol"]
    latency, small = float(sol["latency_bound"]), float(sol["small_grid_waves"])
    out = kernels.copy()
    sm, mem = out["sm_throughput_frac"].to_numpy(float), out["memory_throughput_frac"].to_numpy(float)
    has_sol = np.isfinite(sm) & np.isfinite(mem)
    live = (~out["status"].isin(["failed_measurement", "corrupt_record"])).to_numpy()
    bind = out[["source", "launch_id"]].merge(binding_points(points), on=["source", "launch_id"], how="left")
    is_lat = live & has_sol & (sm < latency) & (mem < latency)
    is_roof = live & ~is_lat & bind["bound"].isin(["memory", "compute"]).to_numpy()
    is_sol = live & ~is_lat & ~is_roof & has_sol
    out["bound"] = np.select([is_lat, is_roof, is_sol], ["latency", bind["bound"].astype(object).to_numpy(),
                             np.where(sm >= mem, "compute", "memory")], "unknown")
    text = np.full(len(out), "", dtype=object)
    sol_cols = ["sm_throughput_frac", "memory_throughput_frac", "waves_per_sm"]  # only these: iterating Arrow text is slow
    text[is_lat] = [_latency_reason(r, latency, small) for r in out.loc[is_lat, sol_cols].itertuples(index=False)]
    text[is_roof] = [_roofline_reason(r) for r in bind.loc[is_roof, ["bound", "precision", "level", "ai_flop_per_byte",
                                                                       "ridge_flop_per_byte", "roof_fraction"]].itertuples(index=False)]
    text[is_sol] = [_sol_only_reason(r) for r in out.loc[is_sol, sol_cols].itertuples(index=False)]
    text[live & ~is_lat & ~is_roof & ~is_sol] = "bound unknown: neither roofline points nor SpeedOfLight throughputs"
    out["notes"] = [[*parse_cell("notes", old), t] if t else parse_cell("notes", old)
                    for old, t in zip(out["notes"].to_numpy(dtype=object), text)]
    return out
