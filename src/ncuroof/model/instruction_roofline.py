"""The instruction roofline [DING]: warp instructions per second against the instruction issue roof,
with one memory wall per level in transactions per second.

N. Ding, S. Williams, "An Instruction Roofline Model for GPUs", PMBS 2019, §III: performance is
warp GIPS (warp instructions / time); instruction intensity is warp instructions per transaction
of a level (32 B sectors); the roof is SMs × warp schedulers per SM × 1 warp instruction per cycle
× clock; a level's wall is its bandwidth / 32 B. Kernels whose work is not floating point (hashing,
random numbers, index arithmetic) sit on this chart where the FLOP roofline has no dot.
Metric names: ``metrics/instruction_roofline.toml``. A launch whose report lacks the SM count or the
clock gets the issue roof of its datasheet entry (``metrics/gpus.toml``: SMs × 4 × boost clock),
labelled ``datasheet`` in ``peak_warp_inst_source``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import catalog as _catalog
from ..schema import INSTRUCTION_POINTS, LEVELS, empty
from .distinct import per_distinct

__all__ = ["instruction_points", "issue_roofs"]


def issue_roofs(
    kernels: pd.DataFrame,
    gpus: _catalog.GpuCatalog | None = None,
    schedulers_per_sm: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each launch's instruction issue roof [warp inst/s] and where it comes from.

    Parameters
    ----------
    kernels : DataFrame
        The launch table: ``peak_warp_inst_per_s`` (the report's SMs × schedulers × measured
        clock, :mod:`ncuroof.model.formulas`), ``datasheet_gpu``, ``device_name``.
    gpus : GpuCatalog, optional
        The datasheet catalog (default :func:`ncuroof.catalog.load_gpus`), read only when some
        launch lacks the report's roof.
    schedulers_per_sm : float, optional
        Warp schedulers per SM (default ``metrics/instruction_roofline.toml``, 4).

    Returns
    -------
    (ndarray of float, ndarray of str)
        The roof: the report's where finite, else the datasheet entry's SMs × schedulers × boost
        clock [DING §III] (the entry the roofs used, ``datasheet_gpu``, else the one matching
        ``device_name``), else NaN; and ``report``, ``datasheet`` or ``""`` per launch.
    """
    peak = (
        kernels["peak_warp_inst_per_s"].to_numpy(float)
        if "peak_warp_inst_per_s" in kernels.columns
        else np.full(len(kernels), np.nan)
    )
    source = np.where(np.isfinite(peak), "report", "").astype(object)
    lacking = np.flatnonzero(~np.isfinite(peak))
    if not len(lacking):
        return peak, source
    gpus = gpus if gpus is not None else _catalog.load_gpus()
    if schedulers_per_sm is None:
        ins = _catalog.load().instruction
        if (
            ins is None
        ):  # no metrics/instruction_roofline.toml: no schedulers per SM to build a roof from
            return peak, source
        schedulers_per_sm = ins.schedulers_per_sm
    peak = peak.copy()
    cols = ["datasheet_gpu", "device_name"]

    def roof(row: tuple[object, object]) -> float:  # the entry the roofs used, else the device's
        gpu = gpus.entry(*row)
        return np.nan if gpu is None else gpu.sms * schedulers_per_sm * gpu.boost_hz

    # the catalog is searched once per distinct (datasheet entry, device name), not per launch
    got = per_distinct(kernels.reindex(columns=cols).iloc[lacking], cols, roof).astype(float)
    hit = np.isfinite(got)
    peak[lacking[hit]], source[lacking[hit]] = got[hit], "datasheet"
    return peak, source


def instruction_points(
    kernels: pd.DataFrame, sector_bytes: float = 32.0, gpus: _catalog.GpuCatalog | None = None
) -> pd.DataFrame:
    """One instruction-roofline point per (launch, level) where the report has the counters.

    Parameters
    ----------
    kernels : DataFrame
        The launch table: ``warp_inst`` [inst], ``<level>_transactions`` [sector],
        ``peak_warp_inst_per_s`` [inst/s], ``peak_<level>_bytes_per_s`` [B/s], ``time_s`` [s],
        ``status``.
    sector_bytes : float, default 32
        Bytes per transaction (``metrics/instruction_roofline.toml``).
    gpus : GpuCatalog, optional
        The datasheet catalog for launches without the report's issue roof (:func:`issue_roofs`).

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.INSTRUCTION_POINTS` columns: x = ``inst_per_transaction`` =
        warp_inst / transactions, y = ``warp_inst_per_s`` = warp_inst / time_s;
        ``peak_warp_inst_per_s`` and ``peak_warp_inst_source`` from :func:`issue_roofs`;
        ``peak_transactions_per_s`` = bandwidth roof / ``sector_bytes``;
        ``roof_warp_inst_per_s`` = min(issue roof, x × wall) [DING §III]; ``bound`` memory when
        x is below the elbow (issue roof / wall), else instruction. Launches that failed or lack
        instructions, time or transactions of a level get no point there.
    """
    # damaged records are not plotted
    ok = (~kernels["status"].isin(["failed_measurement", "corrupt_record"])).to_numpy()
    t = kernels["time_s"].to_numpy(float)
    inst = (
        kernels["warp_inst"].to_numpy(float)
        if "warp_inst" in kernels.columns
        else np.full(len(kernels), np.nan)
    )
    issue = (
        issue_roofs(kernels, gpus) if len(kernels) else (np.array([]), np.array([], dtype=object))
    )
    frames = []
    for lv in LEVELS:
        col = f"{lv}_transactions"
        if col not in kernels.columns:
            continue
        txn = kernels[col].to_numpy(float)
        keep = ok & (inst > 0) & (txn > 0) & (t > 0)
        if keep.any():
            rows = np.flatnonzero(keep)
            frames.append(_level_points(kernels, lv, rows, inst, txn, t, issue, sector_bytes))
    if not frames:
        return empty(INSTRUCTION_POINTS)
    return _in_plot_order(pd.concat(frames, ignore_index=True))


def _level_points(
    kernels: pd.DataFrame,
    lv: str,
    i: np.ndarray,
    inst: np.ndarray,
    txn: np.ndarray,
    t: np.ndarray,
    issue: tuple[np.ndarray, np.ndarray],
    sector_bytes: float,
) -> pd.DataFrame:
    """The points of level ``lv`` for the launches at positions ``i``: x, y, roofs and bound."""
    peak, peak_source = issue
    x = inst[i] / txn[i]
    wall = kernels[f"peak_{lv}_bytes_per_s"].to_numpy(float)[i] / sector_bytes
    roof = np.fmin(peak[i], x * wall)  # fmin: a missing wall or issue roof leaves the other
    y = inst[i] / t[i]
    with np.errstate(divide="ignore", invalid="ignore"):
        elbow = peak[i] / wall
    return pd.DataFrame(
        {
            "source": kernels["source"].to_numpy()[i],
            "launch_id": kernels["launch_id"].to_numpy()[i],
            "kernel_name": kernels["kernel_name"].to_numpy()[i],
            "level": lv,
            "time_s": t[i],
            "warp_inst": inst[i],
            "transactions": txn[i],
            "inst_per_transaction": x,
            "warp_inst_per_s": y,
            "peak_warp_inst_per_s": peak[i],
            "peak_warp_inst_source": peak_source[i],
            "peak_transactions_per_s": wall,
            "roof_warp_inst_per_s": roof,
            "roof_fraction": np.where(roof > 0, y / np.where(roof > 0, roof, 1.0), np.nan),
            "bound": np.where(np.isfinite(elbow), np.where(x < elbow, "memory", "instruction"), ""),
        }
    )


def _in_plot_order(out: pd.DataFrame) -> pd.DataFrame:
    """The points sorted by source, launch and level (DRAM, L2, L1), with the schema's columns."""
    order = {lv: n for n, lv in enumerate(LEVELS)}
    out = out.sort_values(
        ["source", "launch_id", "level"],
        key=lambda s: s.map(order) if s.name == "level" else s,
        kind="stable",
    )
    return (
        out[list(INSTRUCTION_POINTS)]
        .reset_index(drop=True)
        .astype({n: c.dtype for n, c in INSTRUCTION_POINTS.items()})
    )
