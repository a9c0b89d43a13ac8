"""The roofline of the real run: a production timeline joined to the ncu analysis (issue 24).

ncu replays each kernel alone, caches flushed and clocks locked, often on a filtered subset of the
launches (``-c``, ``-k``, NVTX filters): its durations are not production's and its kernels are not
all of the GPU time. A production timeline (a PyTorch profiler trace or an Nsight Systems export,
read by :func:`ncuroof.parser.timeline.read_timeline`) has both. Here its launches get the kernel
identity of the analysis (:func:`ncuroof.model.summary.kernel_keys`, the ``--match`` identity) and
are paired with ncu's kernels (:func:`ncuroof.model.summary.pair_keys`: the same key, else the same
name in one demangler spelling, else the same unambiguous base name and launch configuration; never
the base name alone, which would credit one instantiation's production time to another). The result,
:class:`Production`, gives each kernel its production launches and time beside ncu's
(``timeline.csv``, :data:`ncuroof.schema.TIMELINE_KERNEL`), the time basis of the kernel summary
(:func:`ncuroof.model.summary.kernel_summary` ``production_s``), the coverage of the roofline, the
idle share of the timeline and, for PyTorch traces, one dot per operator (:func:`op_table`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import catalog, fmt
from ..errors import InputError
from ..parser.csv import function_name
from ..schema import OPS, TIMELINE_KERNEL
from . import analytic, phases, summary
from .formulas import flop_columns

__all__ = [
    "Production",
    "NO_OPERATOR",
    "timeline_keys",
    "join",
    "read",
    "op_table",
    "ncu_filter",
    "gpu_warning",
    "operator_work",
]

#: The operator of launches the timeline ties to no PyTorch operator.
NO_OPERATOR = "no operator"
#: ``match`` of kernels found on one side only
#: (:func:`ncuroof.model.summary.pair_keys` ``unmatched``).
_UNMATCHED = ("not_in_timeline", "unprofiled")


@dataclass
class Production:
    """A timeline joined to an analysis (:func:`join`).

    Attributes
    ----------
    table : DataFrame
        One row per kernel identity (:data:`ncuroof.schema.TIMELINE_KERNEL`), most
        production time first.
    launches : DataFrame
        One row per production launch: ``kernel_key`` (ncu's where paired), ``op`` (''
        when unknown), ``duration_s`` [s].
    total_s : float
        The timeline's kernel time on its device [s] (= ``table.production_time_s.sum()``).
    span_s, busy_s : float
        First kernel start to last kernel end, and the time at least one kernel ran [s].
    path : Path
        The timeline file.
    format : str
        ``kineto`` or ``nsys`` (the reader's ``attrs['format']``).
    device : int or None
        The device whose launches were kept.
    gpu_name : str
        That device's name in the timeline ('' when it does not say).
    warnings : list of str
        What the user should know (another GPU than the report's, nothing paired).
    differs : float
        The ``[timeline].duration_differs`` threshold ``table`` was flagged with.
    to_ncu : dict of str to str
        Timeline kernel key -> the paired ncu kernel key (issue 41: counted work of the
        timeline's launches).
    by : str
        ``--match``, the identity the keys were made with (:func:`timeline_keys`).
    shapes : bool
        The timeline is a Kineto trace whose operators carry shapes (the reader's
        ``attrs['shapes']``).
    """

    table: pd.DataFrame
    launches: pd.DataFrame
    total_s: float
    span_s: float
    busy_s: float
    path: Path
    format: str = ""
    device: int | None = None
    gpu_name: str = ""
    warnings: list[str] = field(default_factory=list)
    differs: float = float("nan")
    to_ncu: dict[str, str] = field(default_factory=dict)
    by: str = "kernel"
    shapes: bool = False

    @property
    def coverage(self) -> float:
        """Share of production kernel time whose kernels have a roofline point
        (NaN without time)."""
        t = self.table
        return (
            float(t.loc[t["has_roofline_point"], "production_time_s"].sum() / self.total_s)
            if self.total_s > 0
            else float("nan")
        )

    @property
    def idle_share(self) -> float:
        """Share of the timeline's span with no kernel running: 1 - busy_s / span_s
        (NaN without a span)."""
        return 1.0 - self.busy_s / self.span_s if self.span_s > 0 else float("nan")

    @property
    def weights(self) -> pd.Series:
        """Production time [s] per profiled kernel key: the summary's time basis."""
        t = self.table[self.table["profiled_launches"] > 0]
        return pd.Series(
            t["production_time_s"].to_numpy(float),
            index=t["kernel_key"].to_numpy(),
            name="production_time_s",
        )


def _dims(tl: pd.DataFrame, kind: str) -> pd.Series:
    """``'(x, y, z)'`` as ncu writes grid and block, None where the timeline lacks a dimension."""
    d = [tl[f"{kind}_{a}"].astype("Int64") for a in "xyz"]
    have = d[0].notna() & d[1].notna() & d[2].notna()
    text = "(" + d[0].astype(str) + ", " + d[1].astype(str) + ", " + d[2].astype(str) + ")"
    return text.astype(object).where(have, None)


def _key_input(tl: pd.DataFrame) -> pd.DataFrame:
    """What :func:`ncuroof.model.summary.kernel_keys` reads, for timeline rows (function names
    parsed once per name)."""
    names = tl["kernel_name"].astype(object).fillna("").astype(str)
    functions = {n: function_name(n) for n in names.unique()}
    return pd.DataFrame(
        {
            "source": "timeline",
            "launch_id": tl["start_s"].rank(method="first").fillna(0).astype(int),
            "kernel_name": names.map(functions),
            "kernel_demangled": names,
            "grid": _dims(tl, "grid"),
            "block": _dims(tl, "block"),
            "nvtx_range": tl["nvtx"].astype(object) if "nvtx" in tl.columns else None,
        },
        index=tl.index,
    )


#: The timeline columns a kernel key is made of (all but the start, for ``--match launch``).
_KEY_COLUMNS = ["kernel_name", *(f"{k}_{a}" for k in ("grid", "block") for a in "xyz"), "nvtx"]


def timeline_keys(timeline: pd.DataFrame, by: str = "kernel") -> pd.Series:
    """The kernel identity of each production launch:
    :func:`ncuroof.model.summary.kernel_keys` of the timeline.

    Parameters
    ----------
    timeline : DataFrame
        :data:`ncuroof.schema.TIMELINE_LAUNCH` rows.
    by : str, default 'kernel'
        ``--match``: the name; ``config`` adds grid and block written as ncu writes them; ``nvtx``
        the ``nvtx`` path; ``launch`` the k-th launch in start order.

    Returns
    -------
    Series of str
        Same index. Keys are made once per distinct name, grid, block and NVTX path (a training
        run's millions of launches have a few thousand), except for ``launch``.
    """
    if by == "launch" or timeline.empty:
        return summary.kernel_keys(_key_input(timeline), by)
    codes = (
        timeline.groupby(
            [c for c in _KEY_COLUMNS if c in timeline.columns], dropna=False, sort=False
        )
        .ngroup()
        .to_numpy()
    )
    first = timeline[
        ~pd.Series(codes).duplicated().to_numpy()
    ]  # in code order: ngroup numbers groups as they appear
    keys = summary.kernel_keys(_key_input(first), by).to_numpy()
    return pd.Series(keys[codes], index=timeline.index, dtype=object)


def _config(
    keys: pd.Series, grid: pd.Series, block: pd.Series, launches: pd.Series | int = 1
) -> pd.Series:
    """Per kernel key: the launch configuration ``'grid block'`` of most launches
    (``launches`` per row)."""
    f = pd.DataFrame(
        {
            "kernel_key": keys.to_numpy(),
            "g": grid.astype(object).fillna("?").astype(str).to_numpy(),
            "b": block.astype(object).fillna("?").astype(str).to_numpy(),
            "n": launches.to_numpy() if isinstance(launches, pd.Series) else launches,
        }
    )
    top = (
        f.groupby(["kernel_key", "g", "b"], sort=False)["n"]
        .sum()
        .reset_index()
        .sort_values("n", ascending=False, kind="stable")
        .drop_duplicates("kernel_key")
    )
    return pd.Series((top["g"] + " " + top["b"]).to_numpy(), index=top["kernel_key"].to_numpy())


def _ncu_side(kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per ncu kernel key: names, launch configuration, profiled launches and time."""
    g = kernels.groupby("kernel_key", sort=False)
    out = pd.DataFrame(
        {
            "kernel_name": g["kernel_name"].first(),
            "kernel_demangled": g["kernel_demangled"].first(),
            "profiled_launches": g.size(),
            "profiled_time_s": g["time_s"].sum(),
        }
    )
    out["config"] = _config(kernels["kernel_key"], kernels["grid"], kernels["block"]).reindex(
        out.index
    )
    return out.rename_axis("kernel_key").reset_index()


def _timeline_side(tl: pd.DataFrame) -> pd.DataFrame:
    """One row per timeline key: names, production launches and time, the operator and
    scope of most time."""
    t = tl.assign(_t=tl["duration_s"].to_numpy(float))
    g = t.groupby("kernel_key", sort=False)
    out = pd.DataFrame(
        {
            "timeline_name": g["kernel_name"].first(),
            "production_launches": g.size(),
            "production_time_s": g["_t"].sum(),
        }
    )
    dims = t.groupby(
        ["kernel_key", *(f"{k}_{a}" for k in ("grid", "block") for a in "xyz")],
        dropna=False,
        sort=False,
    ).size()
    dims = dims.rename("n").reset_index()
    out["config"] = _config(
        dims["kernel_key"], _dims(dims, "grid"), _dims(dims, "block"), dims["n"]
    ).reindex(out.index)
    for col in ("op", "scope"):
        out[col] = (
            summary.most_time(t, col).reindex(out.index).fillna("") if col in t.columns else ""
        )
    out = out.rename_axis("kernel_key").reset_index()
    out["kernel_name"] = out["timeline_name"].astype(str).map(function_name)
    out["kernel_demangled"] = out["timeline_name"]
    return out


def ncu_filter(name: str) -> str:
    """The ncu option that profiles the kernels of this function name.

    Parameters
    ----------
    name : str
        A kernel's function name (ncu's ``--kernel-name-base function``).

    Returns
    -------
    str
        ``-k 'regex:^name$'``: regex-escaped and quoted for a POSIX shell (ncu matches ``-k``
        against the function name by default).
    """
    return "-k " + shlex.quote("regex:^" + re.escape(name) + "$")


def _assemble(
    pairs: pd.DataFrame, ncu: pd.DataFrame, tl: pd.DataFrame, dots_keys: set[str], differs: float
) -> pd.DataFrame:
    """The :data:`ncuroof.schema.TIMELINE_KERNEL` rows of the paired keys."""
    out = pairs.merge(
        ncu.add_suffix("_n"), left_on="key_left", right_on="kernel_key_n", how="left"
    ).merge(tl.add_suffix("_t"), left_on="key_right", right_on="kernel_key_t", how="left")
    paired = (out["key_left"] != "").to_numpy()
    t = pd.DataFrame(
        {
            "kernel_key": np.where(paired, out["key_left"], out["key_right"]),
            "kernel_name": np.where(paired, out["kernel_name_n"], out["kernel_name_t"]),
            "timeline_name": out["timeline_name_t"].fillna(""),
            "match": out["match"],
        }
    )
    for col, side in (
        ("production_launches", "_t"),
        ("production_time_s", "_t"),
        ("profiled_launches", "_n"),
        ("profiled_time_s", "_n"),
    ):
        t[col] = out[col + side].fillna(0).to_numpy()
    total = float(t["production_time_s"].sum())
    t["production_share"] = t["production_time_s"] / total if total > 0 else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        for side in ("production", "profiled"):
            n = t[f"{side}_launches"].to_numpy(float)
            t[f"{side}_time_per_launch_s"] = np.where(
                n > 0, t[f"{side}_time_s"].to_numpy(float) / np.where(n > 0, n, 1), np.nan
            )
        t["duration_ratio"] = t["production_time_per_launch_s"] / t[
            "profiled_time_per_launch_s"
        ].where(t["profiled_time_per_launch_s"] > 0)
    r = t["duration_ratio"].to_numpy(float)
    t["duration_differs"] = np.isfinite(r) & ((r > 1 + differs) | (r < 1 / (1 + differs)))
    t["has_roofline_point"] = t["kernel_key"].isin(dots_keys) & paired
    for col in ("op", "scope"):
        t[col] = out[f"{col}_t"].fillna("").to_numpy()
    t["ncu_filter"] = [
        ncu_filter(n) if m == _UNMATCHED[1] else "" for n, m in zip(t["kernel_name"], t["match"])
    ]
    t = t.sort_values(
        ["production_time_s", "profiled_time_s"], ascending=False, kind="stable"
    ).reset_index(drop=True)
    return t[list(TIMELINE_KERNEL)].astype({n: c.dtype for n, c in TIMELINE_KERNEL.items()})


def join(
    kernels: pd.DataFrame,
    dots: pd.DataFrame,
    timeline: pd.DataFrame,
    by: str = "kernel",
    differs: float | None = None,
) -> Production:
    """Join a production timeline to an analysis, kernel identity by kernel identity.

    Parameters
    ----------
    kernels : DataFrame
        The analysis' launch table, ``kernel_key`` set
        (:func:`ncuroof.model.analysis.from_launches`).
    dots : DataFrame
        Its per-kernel dots (:func:`ncuroof.model.summary.kernel_dots`): which kernels
        have a roofline point.
    timeline : DataFrame
        :data:`ncuroof.schema.TIMELINE_LAUNCH` rows of one device; ``attrs`` ``path``, ``format``,
        ``device``, ``gpu_name``, ``span_s``, ``busy_s``
        (:func:`ncuroof.parser.timeline.read_timeline`).
    by : str, default 'kernel'
        ``--match``, the identity of both sides (:func:`timeline_keys`).
    differs : float, optional
        Default ``[timeline].duration_differs`` of ``metrics/thresholds.toml``: ``duration_differs``
        when the production over profiled time per launch is above 1 + ``differs`` or below
        1 / (1 + ``differs``).

    Returns
    -------
    Production
        ``table``: a row per kernel of either side, ``production_time_s`` summing to the timeline's
        kernel time (a kernel ncu did not profile has ``match`` ``unprofiled`` and its
        ``ncu_filter``; one the timeline lacks ``not_in_timeline`` and no production time);
        ``warnings`` when nothing paired.
    """
    if differs is None:
        differs = float(catalog.load().thresholds["timeline"]["duration_differs"])
    tl = timeline.assign(kernel_key=timeline_keys(timeline, by).to_numpy())
    ncu, side = _ncu_side(kernels), _timeline_side(tl)
    # not the base name alone: two instantiations of one template are two kernels (a timeline pairs
    # a profiled kernel only by its name in one spelling, or by its base name and
    # launch configuration)
    pairs = summary.pair_keys(ncu, side, ("spelling", "base name and configuration"), _UNMATCHED)
    table = _assemble(pairs, ncu, side, set(dots["kernel_key"]) if len(dots) else set(), differs)
    prod = _production(table, _timeline_launches(tl, pairs), timeline.attrs, differs)
    paired = (pairs["key_left"] != "") & (pairs["key_right"] != "")
    prod.to_ncu = dict(zip(pairs.loc[paired, "key_right"], pairs.loc[paired, "key_left"]))
    prod.by = by
    prod.shapes = bool(timeline.attrs.get("shapes", False))
    if len(side) and not ((pairs["key_left"] != "") & (pairs["key_right"] != "")).any():
        prod.warnings.append(
            f"timeline {prod.path.name}: none of its {fmt.count(len(side), 'kernel')} is one of the"
            " report's; shares count production time, but no kernel with a roofline point has any"
            " (is it the same program?)"
        )
    return prod


def _timeline_launches(tl: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """The timeline's launches as ``kernel_key`` (the paired ncu kernel's key where there is one),
    ``op`` ('' when none) and ``duration_s``."""
    to_ncu = dict(
        zip(
            pairs["key_right"],
            np.where(pairs["key_left"] != "", pairs["key_left"], pairs["key_right"]),
        )
    )
    op = tl["op"].astype(object).where(tl["op"].notna(), "") if "op" in tl.columns else ""
    return pd.DataFrame(
        {
            "kernel_key": tl["kernel_key"].map(to_ncu),
            "op": op,
            "duration_s": tl["duration_s"].to_numpy(float),
        }
    )


def _production(
    table: pd.DataFrame, launches: pd.DataFrame, a: dict[str, Any], differs: float
) -> Production:
    """The :class:`Production` of the joined ``table`` and ``launches``, with the timeline's
    ``attrs`` ``a`` (span, busy time, path, format, device, GPU name)."""
    return Production(
        table,
        launches,
        float(table["production_time_s"].sum()),
        float(a.get("span_s", np.nan)),
        float(a.get("busy_s", np.nan)),
        Path(a.get("path", "")),
        str(a.get("format", "")),
        a.get("device"),
        str(a.get("gpu_name") or ""),
        differs=differs,
    )


def gpu_warning(gpu_name: str, report_gpus: list[str], path: Path) -> str:
    """A warning when the timeline ran on another GPU than the report ('' when not, or unknown).

    Parameters
    ----------
    gpu_name : str
        The timeline device's name (Kineto ``deviceProperties``, nsys ``TARGET_INFO_GPU``).
    report_gpus : list of str
        The report's ``device_name`` values.
    path : Path
        The timeline, named in the warning.

    Returns
    -------
    str
        One sentence; names compare as the reader chooses a device (without case and a
        leading ``NVIDIA``).
    """
    from ..parser.timeline import same_gpu

    if not gpu_name or not report_gpus or any(same_gpu(gpu_name, g) for g in report_gpus):
        return ""
    return (
        f"timeline {path.name} ran on {gpu_name}, the report on"
        f" {', '.join(sorted(set(report_gpus)))}: production times are another GPU's, so shares and"
        " savings mix two GPUs"
    )


def read(
    path: Path,
    device: int | None,
    report_gpus: list[str],
    progress: Callable[[int], Callable[..., None]] | None = None,
) -> pd.DataFrame:
    """Read a timeline for one device (:func:`ncuroof.parser.timeline.read_timeline`).

    Parameters
    ----------
    path : Path
        A PyTorch profiler trace (``.json``, ``.json.gz``) or an Nsight Systems export
        (``.sqlite``, ``.nsys-rep``).
    device : int, optional
        ``--device``; default: the only device with kernels, else the one named
        like the report's GPU.
    report_gpus : list of str
        The report's device names (to choose the device).
    progress : callable, optional
        Progress-bar factory.

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.TIMELINE_LAUNCH` rows.

    Raises
    ------
    NcuroofError
        A bad or unreadable timeline, or a device to choose (one line naming the file).
    """
    from ..parser.timeline import read_timeline

    tl = read_timeline(
        Path(path),
        device=device,
        progress=progress,
        report_gpu=report_gpus[0] if report_gpus else None,
    )
    if tl.empty:
        raise InputError(
            "has no kernel launches on the chosen device; pass another --device or the trace of"
            " the run",
            path,
        )
    return tl


def from_options(
    kernels: pd.DataFrame,
    dots: pd.DataFrame,
    timeline: Path | None,
    device: int | None,
    by: str,
    thresholds: dict[str, Any],
    progress: Callable[[int], Callable[..., None]] | None = None,
) -> Production | None:
    """:func:`read` and :func:`join` for an analysis (None without a timeline),
    with the GPU warning.

    Parameters
    ----------
    kernels, dots : DataFrame
        The analysis' launch table (``kernel_key`` set) and dots.
    timeline : Path, optional
        ``--timeline``.
    device : int, optional
        ``--device``.
    by : str
        ``--match``.
    thresholds : dict
        ``metrics/thresholds.toml`` (its ``[timeline]`` table).
    progress : callable, optional
        Progress-bar factory ``progress(total) -> advance(n)`` for reading the
        timeline (bytes of a trace).

    Returns
    -------
    Production or None
    """
    if timeline is None:
        return None
    gpus = (
        [str(g) for g in kernels["device_name"].dropna().unique()]
        if "device_name" in kernels.columns
        else []
    )
    tl = read(Path(timeline), device, gpus, progress)
    prod = join(kernels, dots, tl, by, float(thresholds["timeline"]["duration_differs"]))
    warning = gpu_warning(prod.gpu_name, gpus, prod.path)
    prod.warnings[:0] = [warning] if warning else []
    return prod


#: Launch-table columns summed per operator, scaled by the share of the kernel's
#: production time under it.
_WORK = (
    "time_s",
    "fp64_flop",
    "fp32_flop",
    "fp16_flop",
    "tensor_flop",
    "l1_bytes",
    "l2_bytes",
    "dram_bytes",
)


def op_table(kernels: pd.DataFrame, production: Production) -> pd.DataFrame:
    """One row per PyTorch operator (``--group-by op``): the kernels under it, as a phase
    (:func:`ncuroof.model.phases.phase_table`).

    A kernel key whose production launches ran under several operators is split between them by
    its production time: operator O gets the share w = (its production time under O) / (its
    production time) of the kernel's ncu FLOPs, bytes and ncu time, and of its time at the roof and
    saving scaled to production time (:func:`ncuroof.model.summary.kernel_summary`). The shares of a
    kernel add to 1, so the operators' FLOPs, bytes and production time add up to the kernels'.

    Parameters
    ----------
    kernels : DataFrame
        The analysis' launch table (``kernel_key`` set).
    production : Production
        From :func:`join` of a timeline with operators (a PyTorch profiler trace).

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.OPS`, most production time first (then the phase table's
        ``tensor_<path>_flop`` columns): ``flop_per_s`` and ``dram_ai_flop_per_byte`` from ncu's
        work and ncu's time (``profiled_time_s``), the dot's position; ``time_s``, ``time_share``
        (of :attr:`Production.total_s`), ``launches`` and ``kernels`` (distinct kernel keys)
        the production run's.
    """
    per = _operator_shares(kernels, production)
    k = kernels.drop(columns=["nvtx_range"]).merge(
        per[["kernel_key", "op", "w", "scale"]], on="kernel_key"
    )
    # the work (tensor datapaths too) by the operator's share, the times by production over ncu time
    for col in dict.fromkeys(
        [c for c in (*_WORK, *flop_columns(k.columns).values()) if c in k.columns]
    ):
        k[col] = k[col] * k["w"]
    for col in ("time_at_roof_s", "saving_s"):
        k[col] = k[col] * k["scale"]
    work = phases.phase_table(k.rename(columns={"op": "nvtx_range"})).rename(
        columns={"phase": "op", "time_s": "profiled_time_s"}
    )
    g = per.groupby("op", sort=False)
    prod = pd.DataFrame(
        {
            "time_s": g["sum"].sum(),
            "launches": g["size"].sum(),
            "kernels": g["kernel_key"].nunique(),
        }
    )
    out = prod.join(
        work.set_index("op").drop(columns=["launches", "kernels", "time_share", "saving_share"]),
        how="left",
    )
    return _finish_ops(out, work, production.total_s)


def _operator_shares(kernels: pd.DataFrame, production: Production) -> pd.DataFrame:
    """A row per kernel key and operator: production time (``sum``) and launches (``size``) under
    it, ``w`` its share of the key's production time, ``scale`` over the key's ncu time."""
    pl = production.launches.assign(op=production.launches["op"].replace("", NO_OPERATOR))
    per = (
        pl.groupby(["kernel_key", "op"], sort=False)["duration_s"]
        .agg(["sum", "size"])
        .reset_index()
    )
    key_time = per.groupby("kernel_key")["sum"].transform("sum").to_numpy(float)
    profiled = kernels.groupby("kernel_key")["time_s"].sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        per["w"] = np.where(key_time > 0, per["sum"].to_numpy(float) / key_time, 0.0)
        per["scale"] = per["sum"].to_numpy(float) / profiled.reindex(per["kernel_key"]).to_numpy(
            float
        )
    return per


def _finish_ops(out: pd.DataFrame, work: pd.DataFrame, total: float) -> pd.DataFrame:
    """Shares of the production ``total`` (s), unknown bound filled, most time first, typed as
    :data:`ncuroof.schema.OPS` (then the phase table's other columns)."""
    out["time_share"] = out["time_s"] / total if total > 0 else np.nan
    out["saving_share"] = out["saving_s"] / total if total > 0 else np.nan
    out["bound"] = out["bound"].fillna("unknown")
    out = (
        out.rename_axis("op")
        .reset_index()
        .sort_values("time_s", ascending=False, kind="stable")
        .reset_index(drop=True)
    )
    return out[[*OPS, *(c for c in work.columns if c not in OPS)]].astype(
        {n: c.dtype for n, c in OPS.items()}
    )


#: ncu's FLOP columns of the launch table summed into an operator's counted FLOPs.
_COUNTED_FLOP = ("fp64_flop", "fp32_flop", "fp16_flop", "tensor_flop")


def _per_launch(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per ncu kernel key: counted FLOPs and DRAM bytes per profiled launch (NaN where ncu
    counted none)."""
    cols = [c for c in _COUNTED_FLOP if c in kernels.columns]
    k = pd.DataFrame(
        {
            "kernel_key": kernels["kernel_key"].to_numpy(),
            "flop": kernels[cols].sum(axis=1, min_count=1).to_numpy(float) if cols else np.nan,
            "dram": kernels["dram_bytes"].to_numpy(float)
            if "dram_bytes" in kernels.columns
            else np.nan,
        }
    )
    g = k.groupby("kernel_key", sort=False)
    return pd.DataFrame({"flop": g["flop"].mean(), "dram": g["dram"].mean()})


def operator_work(
    kernels: pd.DataFrame,
    production: Production,
    gpus: catalog.GpuCatalog,
    fp32_matmul: str = "fp32",
) -> pd.DataFrame | None:
    """Useful against counted work per operator and input shape (issue 41): the analytic table
    (:func:`ncuroof.model.analytic.operator_table`) of the run's PyTorch trace, each launch given
    the counted FLOPs and DRAM bytes ncu measured per launch of its paired kernel.

    Parameters
    ----------
    kernels : DataFrame
        The analysis' launch table (``kernel_key`` set).
    production : Production
        The Kineto timeline joined to it (:func:`join`): its path, device, key pairs.
    gpus : GpuCatalog
        Datasheets: the report's GPU (else the trace's) gives the roofs.
    fp32_matmul : {'fp32', 'tf32'}
        The roof of FP32 matmul-class operators.

    Returns
    -------
    DataFrame or None
        :data:`ncuroof.schema.ANALYTIC_OPS` with ``counted_flop`` and ``dram_bytes`` (NaN for a
        row with a launch ncu did not profile); None when the trace has no shapes or its GPU no
        datasheet (a warning on ``production`` says so).
    """
    from ..parser.timeline import NoShapesError, read_operator_launches

    if not production.shapes:  # read once more only when its first read saw shapes
        return None
    cat = catalog.load_operators()
    try:
        launches, ops, values = read_operator_launches(
            production.path, frozenset(cat.rules), production.device, absorbs=cat.absorbs
        )
    except NoShapesError:
        return None
    except InputError as exc:  # the timeline itself was read: this optional view only is lost
        production.warnings.append(f"no operator roofline from its shapes: {exc}")
        return None
    names = [str(n) for n in kernels.get("device_name", pd.Series(dtype=object)).dropna()]
    spec = next((g for g in map(gpus.by_device, [*names, production.gpu_name]) if g), None)
    if spec is None:
        production.warnings.append(
            f"timeline {production.path.name}: no datasheet for its GPU, so no operator roofline"
            " (operators.csv) from its shapes"
        )
        return None
    keys = timeline_keys(launches, production.by).map(production.to_ncu)
    rate = _per_launch(kernels)
    launches["counted_flop"] = keys.map(rate["flop"]).to_numpy(float)
    launches["dram_bytes"] = keys.map(rate["dram"]).to_numpy(float)
    return analytic.operator_table(launches, ops, values, cat, spec, fp32_matmul)
