"""Multi-rank runs: one report per MPI rank of one run, merged into each kernel's spread over ranks.

ncu writes one report per process when its ``-o`` holds ``%q{OMPI_COMM_WORLD_RANK}``, ``%h``
(host) or ``%p`` (process ID). Each rank's report is analyzed alone (:mod:`ncuroof.runs.fleet`);
here each kernel's per-rank numbers (its row of that rank's kernel summary) are reduced to min,
median and max over ranks, and a kernel whose slowest rank spends more than ``[ranks].imbalance``
(``metrics/thresholds.toml``, 10 %) more time in it than the median rank is
flagged as load imbalanced.

A rank is named by the number that differs between the file names (the substituted
``%q{...RANK}``), else by ``host:pid`` of the process ncu profiled (stored in the report's first
block header: field 6 holds 1 the process ID, 2 the host, 3 the executable), else by its
position among the inputs. Inputs are recognised as ranks without ``--ranks`` when they are
``.ncu-rep`` reports whose names differ only in one number and whose processes differ.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..model.summary import kernel_summary
from ..schema import RANKS

__all__ = ["process_of", "rank_labels", "looks_like_ranks", "spread"]

_BLOCK_PROCESS = 6
_PROCESS_FIELDS = {1: "pid", 2: "host", 3: "executable"}


def _fields(data: bytes) -> dict[int, object]:
    """The top-level fields of a protobuf message (first occurrence each), parsed
    without a schema."""
    from google.protobuf import empty_pb2
    from google.protobuf.unknown_fields import UnknownFieldSet

    msg = empty_pb2.Empty.FromString(data)
    out: dict[int, object] = {}
    for f in UnknownFieldSet(msg):
        out.setdefault(f.field_number, f.data)
    return out


def process_of(path: str | Path) -> dict[str, object] | None:
    """The process ncu profiled for a ``.ncu-rep`` report: ``pid``, ``host``, ``executable``.

    Parameters
    ----------
    path : path
        A report (``NVR\\0``, u32 header size, header, then [u32 size][block header] ...).

    Returns
    -------
    dict or None
        From the first block header's process message; None for a file that is not a report,
        is too short, or has no process message.
    """
    from google.protobuf.message import DecodeError

    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8 or head[:4] != b"NVR\0":
                return None
            f.seek(8 + struct.unpack("<I", head[4:])[0])
            size = struct.unpack("<I", f.read(4))[0]
            block = _fields(f.read(size))
        raw = block.get(_BLOCK_PROCESS)
        if not isinstance(raw, bytes):
            return None
        proc = _fields(raw)
    except (OSError, struct.error, DecodeError):
        return None
    out = {name: proc.get(num) for num, name in _PROCESS_FIELDS.items()}
    for name in ("host", "executable"):
        if isinstance(out[name], bytes):
            out[name] = out[name].decode("utf-8", "replace")
    return out


def _varying_number(paths: Sequence[Path]) -> list[str] | None:
    """The one number that differs between the file names, when the names differ in nothing else."""
    parts = [re.split(r"(\d+)", p.name) for p in paths]
    if len({len(x) for x in parts}) != 1:
        return None
    varying = [i for i in range(len(parts[0])) if len({x[i] for x in parts}) > 1]
    if len(varying) != 1 or varying[0] % 2 == 0:
        return None
    labels = [str(int(x[varying[0]])) for x in parts]
    return labels if len(set(labels)) == len(labels) else None


def rank_labels(paths: Sequence[str | Path]) -> list[str]:
    """A name per rank: the number varying in the file names, else ``host:pid``, else the position.

    Parameters
    ----------
    paths : sequence of path
        One report per rank.

    Returns
    -------
    list of str
        Distinct labels, in input order.
    """
    ps = [Path(p) for p in paths]
    labels = _varying_number(ps) if len(ps) > 1 else None
    if labels is not None:
        return labels
    procs = [process_of(p) for p in ps]
    names = [f"{q['host']}:{q['pid']}" if q else "" for q in procs]
    if all(names) and len(set(names)) == len(names):
        return names
    return [str(i) for i in range(len(ps))]


def looks_like_ranks(paths: Sequence[str | Path]) -> bool:
    """Whether several inputs are one report per rank of one run: ``.ncu-rep`` reports whose names
    differ in one number only, from different processes (host or process ID) of one executable."""
    ps = [Path(p) for p in paths]
    if len(ps) < 2 or _varying_number(ps) is None:
        return False
    procs = [process_of(p) for p in ps]
    if any(q is None for q in procs):
        return False
    return (
        len({(q["host"], q["pid"]) for q in procs}) == len(procs)  # type: ignore[index]
        and len({q["executable"] for q in procs}) == 1
    )  # type: ignore[index]


def spread(
    kernels: pd.DataFrame,
    points: pd.DataFrame,
    labels: dict[str, str],
    threshold: float,
    by: str = "kernel",
) -> pd.DataFrame:
    """Each kernel's spread over ranks and its load-imbalance flag.

    Parameters
    ----------
    kernels, points : DataFrame
        The concatenated tables of the ranks (:func:`ncuroof.runs.fleet.run`); ``source``
        is the rank's report.
    labels : dict of str to str
        ``source`` -> rank label (:func:`rank_labels`).
    threshold : float
        ``[ranks].imbalance`` of ``metrics/thresholds.toml``: flag when max / median - 1 exceeds it.
    by : str, default 'kernel'
        Kernel identity (:func:`ncuroof.model.summary.kernel_keys`, ``--match``).

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.RANKS`, one row per kernel (``kernel_key``), longest median time
        first. Per rank, a kernel's ``time_s`` is its summed launch time, ``ai_flop_per_byte``
        and ``roof_fraction`` those of its binding dot
        (:func:`ncuroof.model.summary.kernel_summary`); min, median (:func:`numpy.median`: mean of
        the middle two for an even count) and max are over the ranks that launched it. NaN values
        are left out of the statistics. ``imbalance`` = ``time_s_max`` / ``time_s_median`` - 1.
    """
    per_rank = _per_rank(kernels, points, labels, by)
    if not per_rank:
        return pd.DataFrame({n: pd.Series(dtype=c.dtype) for n, c in RANKS.items()})
    t = pd.concat(per_rank, ignore_index=True)
    g = t.groupby("kernel_key", sort=False)
    out = g.agg(kernel_name=("kernel_name", "first"), ranks=("rank", "nunique"))
    for col in ("time_s", "ai_flop_per_byte", "roof_fraction"):
        out = out.join(g[col].agg(["min", "median", "max"]).add_prefix(f"{col}_"))
    by_time = t.dropna(subset=["time_s"])
    out["fastest_rank"] = by_time.loc[by_time.groupby("kernel_key")["time_s"].idxmin()].set_index(
        "kernel_key"
    )["rank"]
    out["slowest_rank"] = by_time.loc[by_time.groupby("kernel_key")["time_s"].idxmax()].set_index(
        "kernel_key"
    )["rank"]
    med = out["time_s_median"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["imbalance"] = np.where(med > 0, out["time_s_max"].to_numpy(float) / med - 1, np.nan)
    out["load_imbalance"] = out["imbalance"].to_numpy(float) > threshold
    out = (
        out.reset_index()
        .sort_values("time_s_median", ascending=False, kind="stable")
        .reset_index(drop=True)
    )
    return out[list(RANKS)].astype({n: c.dtype for n, c in RANKS.items()})


def _per_rank(
    kernels: pd.DataFrame, points: pd.DataFrame, labels: dict[str, str], by: str
) -> list[pd.DataFrame]:
    """Per rank, its kernels' time, AI and roof fraction (:func:`kernel_summary`) and ``rank``."""
    per_rank = []
    for source, k in kernels.groupby("source", sort=False):
        s = kernel_summary(k, points[points["source"] == source], by=by)
        per_rank.append(
            s[["kernel_key", "kernel_name", "time_s", "ai_flop_per_byte", "roof_fraction"]].assign(
                rank=labels.get(str(source), str(source))
            )
        )
    return per_rank


def page_meta(ranks: pd.DataFrame | None) -> dict[str, str]:
    """The page header's line on a multi-rank run: ranks, and the load-imbalanced kernels."""
    if ranks is None:
        return {}
    flagged = ranks[ranks["load_imbalance"]]
    text = (
        f"{int(ranks['ranks'].max()) if len(ranks) else 0} ranks merged; spread per kernel under"
        " the chart and in ranks.csv"
    )
    if len(flagged):
        text += "; load imbalance (slowest rank over the median by): " + ", ".join(
            f"{r.kernel_name} {100 * r.imbalance:.0f}% (rank {r.slowest_rank})"
            for r in flagged.head(5).itertuples(index=False)
        )
    return {"MPI ranks": text}
