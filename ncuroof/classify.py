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

import math

import numpy as np
import pandas as pd

from .catalog import Catalog

__all__ = ["classify"]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _sol_reason(sm: float, mem: float) -> str:
    return f"SM throughput {_pct(sm)}, memory throughput {_pct(mem)} of peak"


def classify(kernels: pd.DataFrame, points: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """Fill the ``bound`` column of the kernels table and append the reason to ``notes``.

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
    latency = float(sol["latency_bound"])
    small = float(sol["small_grid_waves"])
    out = kernels.copy()
    by_launch = {key: grp for key, grp in points.groupby(["source", "launch_id"], sort=False)} if len(points) else {}
    bounds: list[str] = []
    notes: list[str] = []
    for row in out.itertuples(index=False):
        note = [row.notes] if row.notes else []
        sm, mem = row.sm_throughput_frac, row.memory_throughput_frac
        has_sol = not (math.isnan(sm) or math.isnan(mem))
        bound = "unknown"
        if row.status in ("failed_measurement", "corrupt_record"):
            pass
        elif has_sol and sm < latency and mem < latency:
            bound = "latency"
            reason = f"latency bound: {_sol_reason(sm, mem)}, both below {_pct(latency)} (ncu SOLBottleneck rule)"
            if not math.isnan(row.waves_per_sm) and row.waves_per_sm < small:
                reason += f"; small grid: {row.waves_per_sm:.2f} waves per SM"
            note.append(reason)
        else:
            grp = by_launch.get((row.source, row.launch_id))
            verdict = _roofline_verdict(grp) if grp is not None else None
            if verdict is not None:
                bound, reason = verdict
                note.append(reason)
            elif has_sol:
                bound = "compute" if sm >= mem else "memory"
                note.append(f"{bound} bound from SpeedOfLight throughputs only ({_sol_reason(sm, mem)}): no roofline point")
            else:
                note.append("bound unknown: neither roofline points nor SpeedOfLight throughputs")
        bounds.append(bound)
        notes.append("; ".join(note))
    out["bound"] = bounds
    out["notes"] = notes
    return out


def _roofline_verdict(grp: pd.DataFrame) -> tuple[str, str] | None:
    grp = grp[np.isfinite(grp["roof_flop_per_s"].to_numpy(dtype=float))]
    if grp.empty:
        return None
    work = grp.groupby("precision", sort=False)["flop"].max()
    precision = work.idxmax()
    pts = grp[grp["precision"] == precision]
    binding = pts.loc[pts["roof_flop_per_s"].idxmin()]
    level = str(binding["level"]).upper()
    ai, ridge = float(binding["ai_flop_per_byte"]), float(binding["ridge_flop_per_byte"])
    bound = "memory" if ai < ridge else "compute"
    cmp = "<" if ai < ridge else ">="
    reason = (
        f"{bound} bound: {precision.upper()} at {level} (binding level), AI {ai:.3g} FLOP/B {cmp} ridge {ridge:.3g} FLOP/B, "
        f"{_pct(float(binding['roof_fraction']))} of roof"
    )
    return bound, reason
