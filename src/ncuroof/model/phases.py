"""NVTX phases: launches aggregated by their NVTX range path
(``ncuroof analyze --group-by nvtx[:DEPTH]``).

A phase is the ``nvtx_range`` of a launch (push/pop and start/end ranges active at launch,
outermost first, joined by `` > ``; :mod:`ncuroof.parser.ncu_rep`), cut to its first ``DEPTH``
ranges. Launches outside every range form the phase ``no range``. Time, FLOPs and bytes are
summed, so the phase's FLOP/s is the time-weighted mean of its launches' rates and its AI is total
FLOPs over total DRAM bytes, as for kernels (:mod:`ncuroof.model.summary`).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..schema import LEVELS, PHASES, PRECISIONS
from .expect import counted_flop
from .formulas import flop_columns

__all__ = ["NO_RANGE", "SEPARATOR", "BY_OPERATOR", "parse_group_by", "phase_of", "phase_table"]

#: The phase of launches outside every NVTX range.
NO_RANGE = "no range"
#: How :mod:`ncuroof.parser` joins nested ranges.
SEPARATOR = " > "
#: The ``--group-by`` value for one dot per PyTorch operator of a timeline
#: (:func:`ncuroof.model.production.op_table`), beside ``nvtx[:DEPTH]`` (:func:`parse_group_by`).
BY_OPERATOR = "op"

_GROUP_BY = re.compile(r"^nvtx(?::([1-9][0-9]*))?$")


def parse_group_by(text: str) -> int | None:
    """Read a ``--group-by`` value: ``nvtx`` (the whole path) or ``nvtx:DEPTH``.

    Parameters
    ----------
    text : str
        ``nvtx`` or ``nvtx:N`` with N >= 1.

    Returns
    -------
    int or None
        The depth; None for the whole path.

    Raises
    ------
    ValueError
        For any other text (one line saying what is accepted).
    """
    m = _GROUP_BY.match(text.strip())
    if m is None:
        raise ValueError(
            f"--group-by {text!r}: use nvtx (whole NVTX path), nvtx:DEPTH (its first DEPTH ranges,"
            f" DEPTH >= 1) or {BY_OPERATOR} (PyTorch operators of a --timeline trace)"
        )
    return int(m.group(1)) if m.group(1) else None


def phase_of(nvtx_range: pd.Series, depth: int | None = None) -> pd.Series:
    """The phase of each launch.

    Parameters
    ----------
    nvtx_range : Series of str
        The launch table's ``nvtx_range`` (None/NaN/'' outside every range).
    depth : int, optional
        Keep the first ``depth`` ranges of the path; None keeps all.

    Returns
    -------
    Series of str
        Same index: the (cut) path, or :data:`NO_RANGE`.
    """
    s = nvtx_range.astype(object).where(nvtx_range.notna(), "").astype(str)
    if depth is not None:
        s = s.map(lambda p: SEPARATOR.join(p.split(SEPARATOR)[:depth]))
    return s.where(s != "", NO_RANGE)


def _weighted(k: pd.DataFrame, col: str, t: np.ndarray, key: pd.Series) -> pd.Series:
    v = k[col].to_numpy(float) if col in k.columns else np.full(len(k), np.nan)
    w = np.where(np.isfinite(v), t, 0.0)
    num = pd.Series(np.nan_to_num(v) * w, index=k.index).groupby(key, sort=False).sum()
    den = pd.Series(w, index=k.index).groupby(key, sort=False).sum()
    return (num / den.where(den > 0)).where(den > 0)


def phase_table(kernels: pd.DataFrame, depth: int | None = None) -> pd.DataFrame:
    """One row per NVTX phase: time, FLOPs, bytes, AI, bound and time at the roof.

    Parameters
    ----------
    kernels : DataFrame
        The classified launch table (:data:`ncuroof.schema.LAUNCHES`).
    depth : int, optional
        Cut the NVTX paths to their first ``depth`` ranges (:func:`phase_of`).

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.PHASES` columns, longest phase first, then a
        ``tensor_<path>_flop`` column per tensor datapath column of ``kernels``
        (:func:`ncuroof.model.formulas.flop_columns`): sums of ``time_s``, FLOPs per precision and
        tensor datapath, ``flop`` (all counted FLOPs, :func:`ncuroof.model.expect.counted_flop`),
        bytes per level, ``time_at_roof_s`` and ``saving_s`` (NaN where no launch has them);
        ``flop_per_s`` = flop / time_s; ``dram_ai_flop_per_byte`` = flop / dram_bytes [Williams et
        al., CACM 52(4), 2009]; ``bound`` of most of the time; SpeedOfLight
        throughputs time-weighted.
    """
    k = kernels
    key = phase_of(k["nvtx_range"], depth).rename("phase")
    t = k["time_s"].fillna(0.0).to_numpy(float)
    paths = [c for p, c in flop_columns(k.columns).items() if p not in PRECISIONS]  # tensor
    sums = _summed_columns(paths)
    work = [c for c in sums if c != "time_s"]
    damaged = (
        k["status"].isin(["failed_measurement", "corrupt_record"]).to_numpy()
    )  # their counters are not summed
    k = k.assign(flop=counted_flop(k))
    k.loc[damaged, work] = np.nan
    g = k.groupby(key, sort=False)
    out = pd.DataFrame(
        {
            "launches": g.size(),
            "kernels": g["kernel_demangled"].nunique(dropna=False),
            **{c: g[c].sum(min_count=1) for c in sums},
        }
    )
    total = float(t.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        out["time_share"] = out["time_s"] / total if total > 0 else np.nan
        out["saving_share"] = out["saving_s"] / total if total > 0 else np.nan
        out["flop_per_s"] = out["flop"] / out["time_s"].where(out["time_s"] > 0)
        out["dram_ai_flop_per_byte"] = out["flop"] / out["dram_bytes"].where(out["dram_bytes"] > 0)
    out["bound"] = _bound_of_most_time(k["bound"], t, key).reindex(out.index).fillna("unknown")
    for col in ("sm_throughput_frac", "memory_throughput_frac"):
        out[col] = _weighted(k, col, t, key)
    out = out.rename_axis("phase").reset_index()
    out = out.sort_values("time_s", ascending=False, na_position="last", kind="stable").reset_index(
        drop=True
    )
    return out[[*PHASES, *paths]].astype({name: c.dtype for name, c in PHASES.items()})


def _summed_columns(paths: list[str]) -> list[str]:
    """The columns a phase sums: time, FLOPs per precision and tensor datapath (``paths``), all
    counted FLOPs, bytes per level, time at the roof and saving."""
    return [
        "time_s",
        *(f"{p}_flop" for p in PRECISIONS),
        "tensor_flop",
        *paths,
        "flop",
        *(f"{lv}_bytes" for lv in LEVELS),
        "time_at_roof_s",
        "saving_s",
    ]


def _bound_of_most_time(bound: pd.Series, t: np.ndarray, key: pd.Series) -> pd.Series:
    """Per phase (``key``), the bound of most of its time ``t`` (s)."""
    bound_time = (
        pd.DataFrame({"phase": key, "bound": bound.astype(str), "_t": t})
        .groupby(["phase", "bound"], sort=False)["_t"]
        .sum()
    )
    top = (
        bound_time.reset_index()
        .sort_values("_t", ascending=False, kind="stable")
        .drop_duplicates("phase")
        .set_index("phase")
    )
    return top["bound"]
