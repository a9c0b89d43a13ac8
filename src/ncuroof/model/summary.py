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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..parser.csv import function_name
from ..schema import (
    ACHIEVABLE_POINT,
    KERNEL_WORK,
    LEVELS,
    format_sources,
    tensor_columns,
    tensor_paths,
)
from .classify import BINDING_COLUMNS, binding_points, launch_positions, main_precision
from .distinct import distinct_codes, distinct_rows, first_rows, gc_paused, text_codes
from .expect import counted_flop
from .formulas import achievable_roof

__all__ = [
    "aggregate_points",
    "kernel_summary",
    "kernel_keys",
    "kernel_dots",
    "launch_kernels",
    "with_keys",
    "focus_set",
    "grid_size",
    "grid_sizes",
    "keys_of",
    "KEY_CHOICES",
    "FOCUS_SHARE",
    "pair_keys",
    "spelling",
    "FALLBACKS",
    "most_time",
    "kernel_work",
    "kernel_table",
]

#: Default share of GPU time the page focuses on: the fewest kernels that add up to it.
FOCUS_SHARE = 0.95


def _join_unique(col: pd.Series, group: np.ndarray, n: int) -> pd.Series:
    """Per group ``0 .. n - 1`` of ``group`` (the rows' group codes): the distinct non-empty values
    of ``col``, first-seen order, joined with `` / `` ('' where none)."""
    codes, uniques = text_codes(col)  # each distinct value once
    words = np.array([str(u) for u in uniques], dtype=object)
    held = np.flatnonzero(np.append(words != "", False)[codes])  # -1 (missing): the last, False
    first = held[distinct_codes([group[held], codes[held]])[0]]  # first row of each (group, value)
    v = pd.Series(pd.array(words[codes[first]], dtype="str"))
    return v.groupby(group[first], sort=False).agg(" / ".join).reindex(range(n)).fillna("")


#: What identifies "one kernel" (``--match``): ``kernel``, the demangled name (template arguments
#: included, so two CUTLASS instantiations of ``Kernel`` stay apart, else the function name);
#: ``config``, also the launch configuration (grid and block); ``nvtx``, also the NVTX range path;
#: ``launch``, each launch apart (the k-th launch of a kernel, in report order).
KEY_CHOICES = ("kernel", "config", "nvtx", "launch")


def kernel_keys(kernels: pd.DataFrame, by: str = "kernel") -> pd.Series:
    """The one definition of kernel identity: the key every aggregation groups launches by.

    Parameters
    ----------
    kernels : DataFrame
        With ``source``, ``launch_id``, ``kernel_name`` and ``kernel_demangled`` (and ``grid``,
        ``block`` or ``nvtx_range`` for the finer keys).
    by : {'kernel', 'config', 'nvtx', 'launch'}, default 'kernel'
        See :data:`KEY_CHOICES`.

    Returns
    -------
    Series of str
        Same index; a ``category`` of the distinct keys in sorted order (as
        :func:`ncuroof.schema.compact_text` holds ``kernel_key``) where launches repeat their names:
        one copy of each key, however many launches.

    Raises
    ------
    ValueError
        For an unknown ``by``.
    """
    if by in _KEY_COLUMNS and len(kernels):
        # launches of one kernel repeat its names: each distinct row keyed once, taken back as codes
        first, inverse = distinct_rows(kernels, list(_KEY_COLUMNS[by]))
        made = _keys(kernels.iloc[first], by)
        codes, words = pd.factorize(made.array, sort=True)
        dtype = pd.CategoricalDtype(pd.Index(words, dtype="string"))
        keys = pd.Categorical.from_codes(codes[inverse], dtype=dtype)
        return pd.Series(keys, index=kernels.index, name=made.name)
    return _keys(kernels, by)


#: The columns each kernel key of :func:`kernel_keys` reads (``launch`` reads the launch order).
_KEY_COLUMNS = {
    "kernel": ("kernel_demangled", "kernel_name"),
    "config": ("kernel_demangled", "kernel_name", "grid", "block"),
    "nvtx": ("kernel_demangled", "kernel_name", "nvtx_range"),
}


def _keys(kernels: pd.DataFrame, by: str) -> pd.Series:
    """:func:`kernel_keys` of every row of ``kernels``, one at a time."""
    dm = kernels["kernel_demangled"].astype(object)
    name = dm.where(dm.notna() & (dm.astype(str) != ""), kernels["kernel_name"]).astype(str)
    if by == "kernel":
        return name
    if by == "config":
        return (
            name
            + " [grid "
            + kernels["grid"].astype(object).fillna("?").astype(str)
            + ", block "
            + kernels["block"].astype(object).fillna("?").astype(str)
            + "]"
        )
    if by == "nvtx":
        nvtx = kernels["nvtx_range"].astype(object)
        return (
            name
            + " @ "
            + nvtx.where(nvtx.notna() & (nvtx.astype(str) != ""), "no range").astype(str)
        )
    if by == "launch":
        order = pd.DataFrame(
            {
                "s": kernels["source"].to_numpy(),
                "l": kernels["launch_id"].to_numpy(),
                "k": name.to_numpy(),
            },
            index=kernels.index,
        ).sort_values(["s", "l"], kind="stable")
        nth = order.groupby("k", sort=False).cumcount().reindex(kernels.index)
        return name + "#" + nth.astype(str)
    raise ValueError(f"unknown kernel key {by!r}; use one of {', '.join(KEY_CHOICES)}")


_NUM = re.compile(r"\d+")
_CAST = re.compile(r"\((?:(?:un)?signed )?(?:int|long|long long|short|char|bool)\)\s*(-?\d+)")
_LITERAL = re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)
_SPACES = re.compile(r"\s+|\bconst\b")
_LAMBDA = re.compile(r"\{lambda\(([^{}]*?)\)#(\d+)\}")


def spelling(demangled: str) -> str:
    """A demangled name with the demanglers' differences of spelling removed.

    ncu and Nsight Systems write ``(anonymous namespace)`` as ``<unnamed>``, integer template
    arguments as casts (``(int)4``, ``(bool)0``), ``float *`` and lambdas
    ``[lambda(int) (instance 1)]``; the Itanium demangler PyTorch's profiler uses
    (``__cxa_demangle``) writes ``4``, ``4ul``, ``false``, ``float const*`` and ``{lambda(int)#1}``.
    Both become ``<unnamed>``, ``4``, ``0``, ``float*`` and ``[lambda(int)(instance1)]`` here,
    ``const`` and blanks dropped.

    Parameters
    ----------
    demangled : str
        A demangled kernel name.

    Returns
    -------
    str
        The name in the one spelling (a key for matching, not for display).
    """
    s = _LAMBDA.sub(
        r"[lambda(\1) (instance \2)]", demangled.replace("(anonymous namespace)", "<unnamed>")
    )
    s = _LITERAL.sub(r"\1", _CAST.sub(r"\1", s))
    s = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", s))
    return _SPACES.sub("", s)


def _suffix(r: Any) -> str:
    """What a finer kernel key (``--match config/nvtx/launch``) adds to the name."""
    name = (
        r.kernel_demangled
        if isinstance(r.kernel_demangled, str) and r.kernel_demangled
        else r.kernel_name
    )
    return r.kernel_key[len(name) :] if r.kernel_key.startswith(name) else ""


def _name(r: Any) -> str:
    return (
        r.kernel_demangled
        if isinstance(r.kernel_demangled, str) and r.kernel_demangled
        else r.kernel_name
    )


#: Fallbacks of :func:`pair_keys`, in the order they are tried: the same name in one spelling
#: (:func:`spelling`), the same base name (template arguments and parameters stripped), the same
#: base name and launch configuration (a ``config`` column: grid and block of most launches, for
#: instantiations the demanglers spell too differently), function names that differ only in their
#: numbers (OpenACC/OpenMP kernels named after a source line).
FALLBACKS: dict[str, Callable[[Any], str]] = {
    "spelling": lambda r: spelling(_name(r)) + _suffix(r),
    "base name": lambda r: function_name(_name(r)) + _suffix(r),
    "base name and configuration": lambda r: (
        function_name(_name(r)) + _suffix(r) + " " + str(getattr(r, "config", ""))
    ),
    "numbers differ": lambda r: _NUM.sub("#", r.kernel_name) + _suffix(r),
}


def _fallback_pairs(
    left: pd.DataFrame, right: pd.DataFrame, key: Callable[[Any], str]
) -> dict[str, str]:
    """Pair kernel keys whose ``key(row)`` is equal and unique on both sides."""
    kb = pd.Series(
        [key(r) for r in left.itertuples(index=False)],
        index=left["kernel_key"].to_numpy(),
        dtype=object,
    )
    ka = pd.Series(
        [key(r) for r in right.itertuples(index=False)],
        index=right["kernel_key"].to_numpy(),
        dtype=object,
    )
    ub, ua = kb[~kb.duplicated(keep=False)], ka[~ka.duplicated(keep=False)]
    back = pd.Series(ua.index, index=ua.to_numpy())
    return {b: back[v] for b, v in ub.items() if v in back.index}


def pair_keys(
    left: pd.DataFrame,
    right: pd.DataFrame,
    fallbacks: Sequence[str] = ("spelling", "base name"),
    unmatched: tuple[str, str] = ("only_left", "only_right"),
    by_hand: Sequence[tuple[str, str]] = (),
) -> pd.DataFrame:
    """Pair the kernels of two tables of kernel identities (two runs, or a run and its timeline).

    Pairs given ``by_hand`` come first (``match`` ``by hand``); the other kernels pair on their
    ``kernel_key``; those left pair by the ``fallbacks`` (:data:`FALLBACKS`), each said in
    ``match``, when the pairing is unambiguous (the fallback's key unique on both sides).

    Parameters
    ----------
    left, right : DataFrame
        One row per kernel: ``kernel_key``, ``kernel_name`` (function name), ``kernel_demangled``.
    fallbacks : sequence of str, default ('spelling', 'base name')
        Keys of :data:`FALLBACKS`, tried in this order.
    unmatched : (str, str)
        The ``match`` of a kernel found only on the left, only on the right.
    by_hand : sequence of (str, str)
        ``(left key, right key)`` pairs decided by the user (``compare --pair``);
        each key at most once.

    Returns
    -------
    DataFrame
        ``key_left``, ``key_right`` (empty on the side a kernel is missing from), ``match``
        (``name``, a fallback's name, or one of ``unmatched``).
    """
    pairs = [(b, a, "by hand") for b, a in by_hand]
    left = left[~left["kernel_key"].isin({b for b, _ in by_hand})]
    right = right[~right["kernel_key"].isin({a for _, a in by_hand})]
    right_keys = set(right["kernel_key"])
    pairs += [(k, k, "name") for k in left["kernel_key"] if k in right_keys]
    lo = left[~left["kernel_key"].isin(right_keys)]
    ro = right[~right["kernel_key"].isin(set(left["kernel_key"]))]
    for how in fallbacks:
        found = _fallback_pairs(lo, ro, FALLBACKS[how])
        pairs += [(b, a, how) for b, a in found.items()]
        lo = lo[~lo["kernel_key"].isin(set(found))]
        ro = ro[~ro["kernel_key"].isin(set(found.values()))]
    pairs += [(k, "", unmatched[0]) for k in lo["kernel_key"]] + [
        ("", k, unmatched[1]) for k in ro["kernel_key"]
    ]
    return pd.DataFrame(pairs, columns=["key_left", "key_right", "match"])


def keys_of(kernels: pd.DataFrame, by: str = "kernel") -> pd.Series:
    """The ``kernel_key`` column the analysis set once (:func:`ncuroof.model.analysis.build`), else
    :func:`kernel_keys` of ``kernels`` by ``by``."""
    if "kernel_key" in kernels.columns and kernels["kernel_key"].notna().all():
        key = kernels["kernel_key"]
        return key if isinstance(key.dtype, pd.CategoricalDtype) else key.astype(str)
    return kernel_keys(kernels, by)


def with_keys(points: pd.DataFrame, kernels: pd.DataFrame, by: str = "kernel") -> pd.DataFrame:
    """``points`` with a ``kernel_key`` column (:func:`keys_of` each point's launch)."""
    key = keys_of(kernels, by)
    at = launch_positions(kernels, points)
    if at is None:  # a launch listed twice: the merge repeats its points
        keys = kernels[["source", "launch_id"]].assign(kernel_key=key.to_numpy())
        return points.merge(keys, on=["source", "launch_id"], how="left")
    return points.assign(kernel_key=key.array.take(at, allow_fill=True)).reset_index(drop=True)


@gc_paused
def kernel_dots(kernels: pd.DataFrame, points: pd.DataFrame, by: str = "kernel") -> pd.DataFrame:
    """One dot per (kernel, precision, level): :func:`aggregate_points` over :func:`kernel_keys`.

    Parameters
    ----------
    kernels : DataFrame
        The kernels (per-launch) table.
    points : DataFrame
        Its points table.
    by : str, default 'kernel'
        Kernel identity, see :data:`KEY_CHOICES`.

    Returns
    -------
    DataFrame
        The :func:`aggregate_points` columns with ``kernel_key`` first.
    """
    key = keys_of(kernels, by)
    at = launch_positions(kernels, points)
    if at is None or points.empty:  # a launch listed twice: the merge repeats its points
        return aggregate_points(with_keys(points, kernels, by), by="kernel_key")
    codes, words = pd.factorize(key.array, use_na_sentinel=True)  # per launch, not per point
    dots = _aggregate(points, "kernel_key", (np.append(codes, -1)[at], words))
    return dots[["kernel_key", "kernel_name", *_DOT_COLUMNS]]


#: The columns of a dot after its kernel's (:func:`aggregate_points`).
_DOT_COLUMNS = (
    "precision",
    "level",
    "launches",
    "time_s",
    "flop",
    "bytes",
    "ai_flop_per_byte",
    "flop_per_s",
    "bytes_per_s",
    "peak_flop_per_s",
    "peak_bytes_per_s",
    "ridge_flop_per_byte",
    "roof_flop_per_s",
    "roof_fraction",
    "bound",
    "estimated",
    "definition",
    "peak_flop_source",
    "peak_bytes_source",
    *ACHIEVABLE_POINT,
)


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
        One row per (``by``, ``precision``, ``level``) with ``kernel_name``, ``launches`` (launches
        with this point), ``time_s`` [s], ``flop`` [FLOP] and ``bytes`` [B] summed;
        ``ai_flop_per_byte`` = flop / bytes [FLOP/B]; ``flop_per_s`` = flop / time_s and
        ``bytes_per_s`` = bytes / time_s (time-weighted means of the launches' rates);
        ``peak_flop_per_s`` and ``peak_bytes_per_s`` time-weighted over launches (NaN if any launch
        lacks the roof); ``ridge_flop_per_byte``, ``roof_flop_per_s`` = min(peak FLOP/s, AI × peak
        B/s), ``roof_fraction`` and ``bound`` (memory when AI < ridge) as in
        :func:`ncuroof.model.formulas.compute_points` [KPG §2.9]; ``estimated`` (any launch
        estimated); ``definition``, ``peak_flop_source``, ``peak_bytes_source`` (distinct values
        joined with `` / ``); the achievable roofs likewise
        (:data:`ncuroof.schema.ACHIEVABLE_POINT`, :func:`ncuroof.model.formulas.achievable_roof`).
    """
    cols = [*dict.fromkeys([by, "kernel_name"]), *_DOT_COLUMNS]
    if points.empty:
        return pd.DataFrame(columns=cols)
    return _aggregate(points, by)[cols]


def _aggregate(points: pd.DataFrame, by: str, coded: tuple[np.ndarray, Any] | None = None):
    """:func:`aggregate_points`' dots of a non-empty ``points`` (its columns, not yet in order);
    ``coded``: the points' codes of ``by`` and the distinct values they number, when ``points``
    has no ``by`` column."""
    # a table without achievable roofs (or rates): NaN
    p = points.reindex(
        columns=list(
            dict.fromkeys([*points.columns, *ACHIEVABLE_POINT, "flop_per_s", "bytes_per_s"])
        )
    )
    out = _dot_sums(p, by, [by, "precision", "level"], coded)
    _dot_rates(out)
    return out


#: The roofs of a dot, time-weighted over its launches.
_DOT_ROOFS = (
    "peak_flop_per_s",
    "peak_bytes_per_s",
    "achievable_flop_per_s",
    "achievable_bytes_per_s",
)


def _dot_sums(
    p: pd.DataFrame, by: str, keys: list[str], coded: tuple[np.ndarray, Any] | None
) -> pd.DataFrame:
    """Per group of ``keys`` (``coded``: see :func:`_aggregate`): launches, summed time, work and
    traffic, time-weighted roofs (NaN when a launch lacks one), plain means for rate-only inputs,
    and the distinct text of the definitions and roof sources; the group keys as columns."""
    p, first, group, heads = _dot_groups(p, keys, coded)
    t = p["time_s"].to_numpy(float)
    roofs = _DOT_ROOFS
    for i, col in enumerate(roofs):
        p[f"_w{i}"] = p[col].to_numpy(float) * t
        p[f"_n{i}"] = p[col].isna()
    g = p.groupby(group, sort=False)
    out = pd.DataFrame(
        {
            **heads,
            **(
                {"kernel_name": _firsts(p["kernel_name"], g, group, len(first))}
                if by != "kernel_name"
                else {}
            ),
            "launches": g.size(),
            "_timed": g["time_s"].count(),
            **{f"_mean_{c}": g[c].mean() for c in ("flop_per_s", "bytes_per_s", *roofs)},
            "time_s": g["time_s"].sum(),
            "flop": g["flop"].sum(),
            "bytes": g["bytes"].sum(),
            # A launch without the roof makes the aggregate roof NaN.
            **{
                f"_w{i}": g[f"_w{i}"].sum(min_count=1).where(~g[f"_n{i}"].any())
                for i in range(len(roofs))
            },
            "estimated": g["estimated"].any(),
        }
    )
    for col in (
        "definition",
        "peak_flop_source",
        "peak_bytes_source",
        "achievable_flop_source",
        "achievable_bytes_source",
    ):
        out[col] = _join_unique(p[col], group, len(first))
    return out.reset_index(drop=True)


def _dot_groups(
    p: pd.DataFrame, keys: list[str], coded: tuple[np.ndarray, Any] | None
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, dict[str, Any]]:
    """The rows of ``p`` with every key (``groupby`` drops the others), the first row of each
    group of ``keys`` and each row's group (first-seen order, as ``groupby(sort=False)``, from the
    keys' integer codes), and the keys' values per group."""
    codes = [text_codes(p[k])[0] for k in keys[1 if coded else 0 :]]
    codes = [coded[0], *codes] if coded else codes
    held = np.logical_and.reduce([c >= 0 for c in codes])
    if not held.all():
        p, codes = p[held].reset_index(drop=True), [c[held] for c in codes]
    first, group = distinct_codes(codes)
    heads = {k: p[k].array.take(first) for k in keys[1 if coded else 0 :]}
    if coded:
        heads = {keys[0]: coded[1].take(codes[0][first]), **heads}
    return p, first, group, heads


def _dot_rates(out: pd.DataFrame) -> None:
    """A dot's AI, rates, roofs, ridge, attainable roof, fractions and bound from its sums (in
    place), as :func:`ncuroof.model.formulas.compute_points` places a launch [KPG §2.9]."""
    roofs = _DOT_ROOFS
    with np.errstate(divide="ignore", invalid="ignore"):
        t = out["time_s"].to_numpy(float)
        flop = out["flop"].to_numpy(float)
        by = out["bytes"].to_numpy(float)
        out["ai_flop_per_byte"] = np.where(by > 0, flop / by, np.nan)
        out["flop_per_s"] = np.where(t > 0, flop / t, np.nan)
        out["bytes_per_s"] = np.where(t > 0, by / t, np.nan)
        for i, col in enumerate(roofs):
            out[col] = np.where(t > 0, out[f"_w{i}"].to_numpy(float) / t, np.nan)
        _rate_only_dots(out, roofs)
        ridge = out["peak_flop_per_s"] / out["peak_bytes_per_s"]
        roof = np.minimum(out["peak_flop_per_s"], out["ai_flop_per_byte"] * out["peak_bytes_per_s"])
        out["ridge_flop_per_byte"] = ridge
        out["roof_flop_per_s"] = roof
        out["roof_fraction"] = out["flop_per_s"] / roof
        out["achievable_roof_flop_per_s"] = achievable_roof(
            *(out[c].to_numpy(float) for c in ("ai_flop_per_byte", *roofs))
        )
        out["achievable_roof_fraction"] = out["flop_per_s"] / out["achievable_roof_flop_per_s"]
    out["bound"] = np.where(
        ridge.isna(), "", np.where(out["ai_flop_per_byte"] < ridge, "memory", "compute")
    )


def _rate_only_dots(out: pd.DataFrame, roofs: tuple[str, ...]) -> None:
    """Dots whose launches have no duration (a rate-only export): their rates and roofs are the
    launches' plain means (no time to weight by), their time, FLOPs and bytes unknown (in place)."""
    rate_only = (out["_timed"] == 0).to_numpy()
    if not rate_only.any():
        return
    for col in ("time_s", "flop", "bytes"):
        out[col] = np.where(rate_only, np.nan, out[col].to_numpy(float))
    for col in ("flop_per_s", "bytes_per_s", *roofs):
        out[col] = np.where(
            rate_only, out[f"_mean_{col}"].to_numpy(float), out[col].to_numpy(float)
        )
    fps, bps = out["flop_per_s"].to_numpy(float), out["bytes_per_s"].to_numpy(float)
    out["ai_flop_per_byte"] = np.where(
        rate_only,
        np.where(bps > 0, fps / np.where(bps > 0, bps, 1.0), np.nan),
        out["ai_flop_per_byte"],
    )


def focus_set(
    time_s: pd.Series, share: float = FOCUS_SHARE, total_s: float | None = None
) -> pd.Series:
    """Which kernels make up ``share`` of the time: the fewest, largest first.

    Parameters
    ----------
    time_s : Series
        Time per kernel [s], any order.
    share : float, default :data:`FOCUS_SHARE`
        Fraction of the total, in (0, 1]; 1 keeps every kernel.
    total_s : float, optional
        The total [s] the share is of: default the sum of ``time_s``; with a production timeline,
        its whole kernel time, unprofiled kernels included (when the kernels here make up less than
        ``share`` of it, all of them are kept).

    Returns
    -------
    Series of bool
        Same index: True for the kernels kept. A kernel is kept while the time of the larger
        kernels before it is below ``share`` of the total; kernels without a time are dropped
        unless ``share`` is 1.
    """
    t = time_s.fillna(0.0).astype(float)
    total = float(t.sum()) if total_s is None else float(total_s)
    if share >= 1 or total <= 0:
        return pd.Series(True, index=time_s.index)
    order = t.sort_values(ascending=False, kind="stable")
    before = order.cumsum() - order
    keep = (before < share * total) & (order > 0)
    return keep.reindex(time_s.index)


_SUMMARY_INPUT = [
    "source",
    "launch_id",
    "kernel_name",
    "kernel_demangled",
    "nvtx_range",
    "device_name",
    "grid",
    "block",
    "time_s",
    "sm_clock_hz",
    "time_at_roof_s",
    "saving_s",
    "bound",
    "sm_throughput_frac",
    "memory_throughput_frac",
    "occupancy_frac",
    "theoretical_occupancy_frac",
    "waves_per_sm",
    "tensor_flop",
    "expected_flop",
    "expected_dram_bytes",
    "fp64_flop",
    "fp32_flop",
    "fp16_flop",
    "dram_bytes",
    "hot_pipe",
    "hot_pipe_frac",
    "hot_memory_unit",
    "hot_memory_unit_frac",
    "time_at_roof_bound",
    "speed_of_light_note",
]
_WEIGHTED = (
    "sm_throughput_frac",
    "memory_throughput_frac",
    "occupancy_frac",
    "theoretical_occupancy_frac",
    "hot_pipe_frac",
    "hot_memory_unit_frac",
)
_BINDING = (
    "ai_flop_per_byte",
    "flop_per_s",
    "roof_fraction",
    "ridge_flop_per_byte",
    "peak_flop_per_s",
    "peak_bytes_per_s",
    "achievable_roof_fraction",
    "achievable_flop_per_s",
    "achievable_bytes_per_s",
)


def _mode_or_empty(s: pd.Series) -> str:
    return s.dropna().mode().iat[0] if s.notna().any() else ""


def _totals(k: pd.DataFrame) -> pd.DataFrame:
    """Per kernel key: sums, time-weighted throughputs and occupancy, medians of geometry. Grouped
    on the keys' integer codes (first-seen order, as ``groupby(sort=False)``), indexed by key."""
    codes, keys = pd.factorize(k["kernel_key"], use_na_sentinel=True)
    if (codes < 0).any():  # a launch without a key is in no group, as groupby drops it
        k, codes = k[codes >= 0], codes[codes >= 0]
    k = k.reset_index(drop=True)
    g = k.groupby(codes, sort=False)
    out = pd.DataFrame(
        {
            "kernel_name": _firsts(k["kernel_name"], g, codes, len(keys)),
            "kernel_demangled": _firsts(k["kernel_demangled"], g, codes, len(keys)),
            "launches": g.size(),
        }
    )
    sums = k[list(_SUMMED)].astype(float).groupby(codes, sort=False).sum(min_count=1)
    for c in _SUMMED:
        out[c] = sums[c]
    out["nvtx_range"] = g["nvtx_range"].agg(_mode_or_empty)
    out["device_name"] = _firsts(k["device_name"], g, codes, len(keys))
    t = k["time_s"].fillna(0.0).to_numpy(float)
    _weighted_means(k, t, out, codes)
    _geometry(k, codes, out)
    out["bound"] = _most_time_coded(k["bound"], codes, len(keys), t, "unknown", empty=True)
    for col in ("hot_pipe", "hot_memory_unit", "time_at_roof_bound"):
        out[col] = _most_time_coded(k[col], codes, len(keys), t, "")
    out["speed_of_light_note"] = _longest_launch(k, codes, len(keys), "speed_of_light_note")
    out.index = pd.Index(keys, name="kernel_key")
    return out


#: The launch columns a kernel sums (NaN when no launch has a value).
_SUMMED = (
    "time_s",
    "time_at_roof_s",
    "saving_s",
    "tensor_flop",
    "expected_flop",
    "expected_dram_bytes",
)


def _firsts(col: pd.Series, g: Any, codes: np.ndarray, n: int) -> pd.Series:
    """Per group: the first value of ``col`` that is not missing (``GroupBy.first``), taken at the
    groups' first rows when no value is missing."""
    if col.notna().all():
        return pd.Series(col.array.take(first_rows(codes, n)))
    return g[col.name].first()


def _geometry(k: pd.DataFrame, codes: np.ndarray, out: pd.DataFrame) -> None:
    """Waves, blocks and threads per block of each group's longest launch (a geometry some launch
    had: the median of 290,304 / 68,600 / 68,600 / 274,400 blocks was 171,500, which none had,
    issue 50), the clock's spread and the DRAM AI of the FLOPs ncu counted, per group of
    ``codes`` (``out`` filled in place)."""
    clk = k["sm_clock_hz"].to_numpy(float)
    geometry = {
        "waves_per_sm": k["waves_per_sm"].to_numpy(float),
        "blocks": grid_sizes(k["grid"]).to_numpy(float),
        "threads_per_block": grid_sizes(k["block"]).to_numpy(float),
    }
    top = _top(codes, k["time_s"].to_numpy(float), len(out))
    for c, v in geometry.items():
        out[c] = np.where(top >= 0, np.append(v, np.nan)[top], np.nan)
    med = pd.Series(clk).groupby(codes, sort=False).median().to_numpy()
    per = pd.Series(clk).groupby(codes, sort=False)
    out["clock_spread"] = (per.max() - per.min()).to_numpy() / med
    sums = pd.DataFrame({"counted": counted_flop(k), "dram": k["dram_bytes"].to_numpy(float)})
    sums = sums.groupby(codes, sort=False).sum(min_count=1)
    out["counted_dram_ai_flop_per_byte"] = sums["counted"] / sums["dram"].where(sums["dram"] > 0)


def _weighted_means(k: pd.DataFrame, t: np.ndarray, out: pd.DataFrame, codes: np.ndarray) -> None:
    """The :data:`_WEIGHTED` columns per group of ``codes``: means weighted by launch time ``t``
    over the launches that have a value, NaN where they have no time (``out`` filled in place)."""
    parts = {}
    for col in _WEIGHTED:
        v = k[col].to_numpy(float)
        w = np.where(np.isfinite(v), t, 0.0)
        parts[f"num_{col}"], parts[f"den_{col}"] = np.nan_to_num(v) * w, w
    sums = pd.DataFrame(parts).groupby(codes, sort=False).sum()
    for col in _WEIGHTED:
        num, den = sums[f"num_{col}"], sums[f"den_{col}"]
        out[col] = (num / den.where(den > 0)).where(den > 0)


def _text(col: pd.Series) -> pd.Series:
    """``col`` as text, '' where missing (a text column without a round trip through objects)."""
    if isinstance(col.dtype, pd.StringDtype):
        return col.fillna("").astype(str)
    return col.astype(object).where(col.notna(), "").astype(str)


def _words(col: pd.Series, empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``col``'s codes and its distinct values as text, -1 where missing or (unless ``empty``)
    empty."""
    codes, uniques = text_codes(col)
    words = np.array([str(u) for u in uniques], dtype=object)
    return np.where(np.append((words == "") & (not empty), True)[codes], -1, codes), words


def _top(group: np.ndarray, value: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0 .. n - 1``: the position of its largest ``value`` (NaN last, the first row on
    ties, as a stable descending sort then the first of each group), -1 for a group with no row."""
    order = np.argsort(-value, kind="stable")
    top = np.full(n, -1, dtype=np.int64)
    top[group[order][::-1]] = order[::-1]  # the last write wins: the first in sorted order
    return top


def _most_time_coded(
    col: pd.Series, codes: np.ndarray, n: int, t: np.ndarray, default: str, empty: bool = False
) -> np.ndarray:
    """Per group of ``codes``: the non-empty (with ``empty``: any present) value of ``col`` with the
    most launch time ``t`` [s] (:func:`most_time` on codes), ``default`` where none is; as
    ``str``, with ``empty`` in a string ``col``'s dtype."""
    vals, words = _words(col, empty)
    held = vals >= 0
    first, pair = distinct_codes([codes[held], vals[held]])  # (group, value) in first-seen order
    time = pd.Series(t[held]).groupby(pair, sort=False).sum().to_numpy()
    top = _top(codes[held][first], time, n)
    texts = np.append(words, default)[np.append(vals[held][first], -1)[top]]  # -1: default
    keep = empty and isinstance(col.dtype, pd.StringDtype)
    return pd.array(texts, dtype=col.dtype if keep else "str")


def _longest_launch(k: pd.DataFrame, codes: np.ndarray, n: int, col: str) -> np.ndarray:
    """Per group of ``codes``: the non-empty value of ``col`` of the longest launch (``time_s``)
    that has one, '' where none has."""
    vals, words = _words(k[col])
    held = np.flatnonzero(vals >= 0)
    top = _top(codes[held], k["time_s"].to_numpy(float)[held], n)
    return pd.array(np.append(words, "")[np.append(vals[held], -1)[top]], dtype="str")


def most_time(k: pd.DataFrame, col: str) -> pd.Series:
    """Per ``kernel_key``: the non-empty value of ``col`` with the most launch time (``_t`` [s]); a
    key without one is absent."""
    v = k[["kernel_key", "_t"]].assign(_v=_text(k[col]))
    v = v[v["_v"] != ""].groupby(["kernel_key", "_v"], sort=False)["_t"].sum().reset_index()
    return (
        v.sort_values("_t", ascending=False, kind="stable")
        .drop_duplicates("kernel_key")
        .set_index("kernel_key")["_v"]
    )


def _dot_columns(out: pd.DataFrame, dots: pd.DataFrame) -> pd.DataFrame:
    """Add the main precision, the binding dot (:func:`binding_points`: its precision, level, roofs,
    achievable roofs and their sources) and, per level, the AI and roof fraction of the kernel's
    dot at that precision."""
    idx = out.index
    main = (
        main_precision(dots, ["kernel_key"]).set_index("kernel_key")["precision"]
        if len(dots)
        else pd.Series(dtype=object)
    )
    bind = (
        binding_points(dots, ["kernel_key"]).set_index("kernel_key")
        if len(dots)
        else pd.DataFrame(columns=BINDING_COLUMNS)
    )
    out["main_precision"] = main.reindex(idx).fillna("").astype(str)
    out["precision"] = bind["precision"].reindex(idx).fillna(out["main_precision"]).astype(str)
    out["level"] = bind["level"].reindex(idx).fillna("").astype(str)
    for c in _BINDING:
        out[c] = pd.to_numeric(bind[c].reindex(idx), errors="coerce")
    out["achievable_source"] = [_achievable_source(r) for r in bind.reindex(idx).itertuples()]
    at_main = (
        dots.merge(
            out["precision"].rename_axis("kernel_key").reset_index(), on=["kernel_key", "precision"]
        )
        if len(dots)
        else dots
    )
    for lv in reversed(LEVELS):  # without a binding dot, the y of the outermost level's dot
        d = (
            at_main[at_main["level"] == lv].set_index("kernel_key")
            if len(at_main)
            else pd.DataFrame(columns=_BINDING)
        )
        out[f"{lv}_ai_flop_per_byte"] = pd.to_numeric(
            d["ai_flop_per_byte"].reindex(idx), errors="coerce"
        )
        out[f"{lv}_roof_fraction"] = pd.to_numeric(d["roof_fraction"].reindex(idx), errors="coerce")
        out["flop_per_s"] = out["flop_per_s"].fillna(
            pd.to_numeric(d["flop_per_s"].reindex(idx), errors="coerce")
        )
    return out


def _achievable_source(r: object) -> str:
    """``ceiling_sources``-style text of a binding dot's achievable roofs
    (``dram:measured``), '' when none."""
    items = {}
    if isinstance(getattr(r, "achievable_flop_source", None), str) and r.achievable_flop_source:
        items[str(r.precision).replace(":", "_")] = r.achievable_flop_source
    if isinstance(getattr(r, "achievable_bytes_source", None), str) and r.achievable_bytes_source:
        items[str(r.level)] = r.achievable_bytes_source
    return format_sources(items)


_TILE = re.compile(
    r"GemmShape<\(int\)(\d+), \(int\)(\d+), \(int\)(\d+)>|GemmShape<(\d+), (\d+), (\d+)>"
)
_SHAPE = re.compile(r"(?<![\dx])(\d+x\d+(?:x\d+)?)(?![\dx])")
_SPLIT = re.compile(r"[<>,()\s*&]+")
_NOISE = {"", "int", "bool", "void", "unsigned", "const", "long", "T1", "T2", "Params"}
_FRAGMENT_CHARS = 40


def _template_tokens(demangled: str) -> list[str]:
    """The template arguments of a demangled name as words, namespaces dropped:
    ``f<cutlass::half_t, (int)8>`` -> ``['half_t', '8']``."""
    start = demangled.find("<")
    if start < 0:
        return []
    return [
        t.rsplit("::", 1)[-1]
        for t in _SPLIT.split(demangled[start + 1 :])
        if t.rsplit("::", 1)[-1] not in _NOISE
    ]


def _fragment(demangled: str, others: list[list[str]]) -> str:
    """What tells this instantiation apart: its first tile shape
    (``GemmShape<128, 96, 64>`` -> ``128x96x64``, or a ``128x128`` in its arguments), else its first
    template word the others lack; '' when none.
    """
    m = _TILE.search(demangled)
    if m:
        return "x".join(g for g in m.groups() if g)
    tokens = _template_tokens(demangled)
    m = _SHAPE.search(" ".join(tokens))
    if m:
        return m.group(1)
    theirs = set().union(*map(set, others)) if others else set()
    return next((t for t in tokens if t not in theirs), "")[:_FRAGMENT_CHARS]


def _labels(out: pd.DataFrame) -> pd.Series:
    """The function name; where several kernels share it (CUTLASS instantiations of ``Kernel``),
    with the template fragment that tells them apart (``Kernel<128x96x64>``: the tile shape, else
    the first template word the others lack), numbered ``name (2)`` (in time order) where no
    fragment does. Labels only: the kernel identity (``kernel_key``) is unchanged."""
    names = out["kernel_name"].astype(str)
    labels = names.copy()
    demangled = (
        out["kernel_demangled"]
        if "kernel_demangled" in out.columns
        else pd.Series("", index=out.index)
    )
    for _, idx in out.groupby("kernel_name", sort=False).groups.items():
        if len(idx) < 2:
            continue
        full = [str(v) if isinstance(v, str) else "" for v in demangled.loc[idx]]
        toks = [_template_tokens(d) for d in full]
        frags = [_fragment(d, toks[:i] + toks[i + 1 :]) for i, d in enumerate(full)]
        if all(frags) and len(set(frags)) == len(frags):
            labels.loc[idx] = [f"{names.loc[i]}<{f}>" for i, f in zip(idx, frags)]
        else:
            labels.loc[idx] = [f"{names.loc[i]} ({n})" for n, i in enumerate(idx, 1)]
    dup = labels.duplicated(keep=False)
    if dup.any():  # a fragment label equal to another kernel's name: number every copy
        nth = labels[dup].groupby(labels[dup]).cumcount() + 1
        labels.loc[dup] = labels[dup] + " (" + nth.astype(str) + ")"
    return labels


def _production_basis(out: pd.DataFrame, production_s: pd.Series) -> pd.DataFrame:
    """``out`` (indexed by kernel key) on the production basis: ``time_s`` the production time
    (0 for a kernel the timeline lacks), ``time_at_roof_s`` and ``saving_s`` scaled by production
    over profiled time (Amdahl per kernel: the same fraction of each launch is saved)."""
    prod = pd.to_numeric(production_s.reindex(out.index), errors="coerce").fillna(0.0)
    profiled = out["profiled_time_s"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(profiled > 0, prod.to_numpy(float) / profiled, np.nan)
    return out.assign(
        time_s=prod.to_numpy(float),
        time_at_roof_s=out["time_at_roof_s"] * scale,
        saving_s=out["saving_s"] * scale,
    )


@gc_paused
def kernel_summary(
    kernels: pd.DataFrame,
    points: pd.DataFrame | None = None,
    focus: float = FOCUS_SHARE,
    by: str = "kernel",
    dots: pd.DataFrame | None = None,
    production_s: pd.Series | None = None,
    production_total_s: float | None = None,
) -> pd.DataFrame:
    """One row per kernel: time, share, main precision, bound, binding dot, distance
    to the roof, saving.

    The one aggregation of launches into kernels that the page, the CLI summary and ``compare``
    use: a kernel is a :func:`kernel_keys` key; time, FLOPs and bytes are summed (rates are then
    time-weighted), roofs time-weighted (:func:`aggregate_points`); the binding dot is chosen by
    :func:`binding_points`.

    Parameters
    ----------
    kernels : DataFrame
        The classified launch table (:data:`ncuroof.schema.LAUNCHES`).
    points : DataFrame, optional
        Its points table (needed unless ``dots`` is given).
    focus : float, default :data:`FOCUS_SHARE`
        Share of GPU time whose kernels get ``in_focus`` (:func:`focus_set`).
    by : str, default 'kernel'
        Kernel identity (:data:`KEY_CHOICES`).
    dots : DataFrame, optional
        :func:`kernel_dots` of the same data and ``by``, when already computed.
    production_s : Series, optional
        Production time [s] per kernel key, from a timeline (:func:`ncuroof.model.production.join`):
        the time basis of ``time_s``, the shares, the focus set and the order. ``time_at_roof_s``
        and ``saving_s`` are scaled by production over profiled time; the roofline position, AI and
        roof fraction stay ncu's. Without it the basis is ncu's durations.
    production_total_s : float, optional
        With ``production_s``: the shares' denominator, the timeline's kernel time on its device
        (kernels ncu did not profile included). Default: the sum of ``production_s``.

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.KERNEL_SUMMARY` columns, sorted by ``time_s`` descending;
        ``profiled_time_s`` is ncu's summed duration on either basis.
    """
    from ..schema import KERNEL_SUMMARY

    k = kernels.reindex(columns=_SUMMARY_INPUT)  # a column a partial table lacks is NaN
    k["kernel_key"] = keys_of(kernels, by).array
    if dots is None:
        dots = (
            kernel_dots(kernels, points, by)
            if points is not None and len(points)
            else pd.DataFrame()
        )
    out = _ranked(_dot_columns(_totals(k), dots), k, focus, production_s, production_total_s)
    return out[list(KERNEL_SUMMARY)[: list(KERNEL_SUMMARY).index("diagnosis")]]


def _ranked(
    out: pd.DataFrame,
    k: pd.DataFrame,
    focus: float,
    production_s: pd.Series | None,
    production_total_s: float | None,
) -> pd.DataFrame:
    """The kernels' shares of the total time (ncu's, or the production run's), sorted by time,
    labelled and with the focus set (:func:`kernel_summary`)."""
    out["profiled_time_s"] = out["time_s"]
    total = float(k["time_s"].fillna(0.0).sum())
    if production_s is not None:
        out = _production_basis(out, production_s)
        total = (
            float(production_s.sum()) if production_total_s is None else float(production_total_s)
        )
    out["time_share"] = out["time_s"] / total if total > 0 else np.nan
    out["saving_share"] = out["saving_s"] / total if total > 0 else np.nan
    out = out.rename_axis("kernel_key").reset_index()
    out = out.sort_values("time_s", ascending=False, na_position="last", kind="stable").reset_index(
        drop=True
    )
    out["kernel_label"] = _labels(out)
    out["in_focus"] = focus_set(out["time_s"], focus, total if production_s is not None else None)
    return out


def grid_sizes(dims: pd.Series) -> pd.Series:
    """:func:`grid_size` of each cell, parsed once per distinct value."""
    codes, uniques = pd.factorize(dims, use_na_sentinel=True)
    sizes = np.array([*(grid_size(v) for v in uniques), np.nan], dtype=float)
    return pd.Series(sizes[codes], index=dims.index)  # code -1 (missing) takes the NaN at the end


def grid_size(text: object) -> float:
    """``'(16, 16, 1)'`` -> 256.0; NaN when not a dimension triple."""
    if not isinstance(text, str):
        return np.nan
    nums = re.findall(r"\d+", text)
    return float(np.prod([int(n) for n in nums])) if nums else np.nan


def launch_kernels(points: pd.DataFrame) -> pd.DataFrame:
    """A minimal classified launch table for a points table given alone: one row per launch.

    Parameters
    ----------
    points : DataFrame
        A points table (:data:`ncuroof.schema.POINTS`).

    Returns
    -------
    DataFrame
        ``source``, ``launch_id``, ``kernel_name``, ``time_s`` [s] of each launch,
        ``kernel_demangled`` (the name), ``nvtx_range`` (''), ``time_at_roof_s`` and ``saving_s``
        (NaN: unknown without the launch table), and ``bound`` at the launch's binding point
        (:func:`binding_points`; ``unknown`` without one).
    """
    k = points.drop_duplicates(["source", "launch_id"])[
        ["source", "launch_id", "kernel_name", "time_s"]
    ].copy()
    k["kernel_demangled"] = k["kernel_name"]
    k["nvtx_range"] = ""
    k["time_at_roof_s"] = np.nan
    k["saving_s"] = np.nan
    k = k.merge(
        binding_points(points)[["source", "launch_id", "bound"]],
        on=["source", "launch_id"],
        how="left",
    )
    k["bound"] = k["bound"].replace("", np.nan).fillna("unknown")
    return k


def _work_columns(kernels: pd.DataFrame) -> list[str]:
    """The additive work and traffic columns of a launch table: :data:`KERNEL_WORK` and each tensor
    datapath's FLOPs."""
    names = [c for c, col in KERNEL_WORK.items() if col.unit in ("FLOP", "B")]
    return [c for c in names if c in kernels.columns] + [
        tensor_columns(p).flop for p in tensor_paths(kernels.columns)
    ]


def kernel_work(kernels: pd.DataFrame, key: str = "kernel_key") -> pd.DataFrame:
    """Each kernel's work, traffic and their rates, from its launches
    (:data:`ncuroof.schema.KERNEL_WORK`).

    Parameters
    ----------
    kernels : DataFrame
        A launch table (:data:`ncuroof.schema.LAUNCHES`) with ``key``.
    key : str, default 'kernel_key'
        The kernel identity column.

    Returns
    -------
    DataFrame
        Indexed by ``key``: ``<prec>_flop`` [FLOP] and ``<level>_bytes`` [B] summed over the
        launches (NaN when no launch has the value, never 0), ``tensor_<path>_flop`` per datapath,
        and ``<prec>_flop_per_s`` [FLOP/s], ``<level>_bytes_per_s`` [B/s]: the sum over the summed
        ``time_s`` of the launches that have the value (the time-weighted mean of their rates).
    """
    cols = _work_columns(kernels)
    g = kernels.groupby(key, sort=False)
    out = g[cols].sum(min_count=1)
    time = kernels["time_s"].to_numpy(float)
    for c in cols:
        rate = c + "_per_s"
        if rate in KERNEL_WORK or c.startswith("tensor_"):
            t = pd.Series(
                np.where(np.isfinite(kernels[c].to_numpy(float)), time, np.nan), index=kernels.index
            )
            denom = t.groupby(kernels[key], sort=False).sum(min_count=1).reindex(out.index)
            out[rate] = np.where(denom > 0, out[c] / denom.where(denom > 0, 1.0), np.nan)
    return out


def kernel_table(summary: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """The per-kernel table written as ``kernels.csv`` (:data:`ncuroof.schema.KERNELS`).

    Parameters
    ----------
    summary : DataFrame
        :func:`kernel_summary` then :func:`ncuroof.model.diagnose.diagnose_kernels`: one row per
        kernel, longest first.
    launches : DataFrame
        The launches it was made of, with ``kernel_key``.

    Returns
    -------
    DataFrame
        ``summary``'s rows in its order: its declared columns, then each kernel's work and traffic
        summed over its launches and their time-weighted rates (:func:`kernel_work`), the
        declared ones first, then ``tensor_<path>_flop``/``_flop_per_s`` per datapath with work.
    """
    from ..schema import KERNELS

    work = kernel_work(launches) if len(launches) else pd.DataFrame()
    extra = [c for c in work.columns if c not in summary.columns]
    out = summary.join(work[extra], on="kernel_key") if extra else summary.copy()
    declared = [c for c in KERNELS if c not in out.columns]
    out = out.assign(**{c: np.nan for c in declared})
    order = [*KERNELS, *(c for c in out.columns if c not in KERNELS)]
    return out[order].reset_index(drop=True)
