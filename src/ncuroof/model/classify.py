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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import Catalog
from ..schema import work_unit
from .distinct import (
    coded_text,
    distinct_codes,
    factorize_objects,
    gc_paused,
    per_distinct,
    text_codes,
)
from .roofs import objects

__all__ = [
    "classify",
    "binding_points",
    "main_precision",
    "BINDING_COLUMNS",
    "join_launches",
    "launch_positions",
]


def _sol_reason(sm: float, mem: float) -> str:
    return f"SM throughput {fmt.pct(sm)}, memory throughput {fmt.pct(mem)} of peak"


def main_precision(points: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``, the precision with the most FLOPs (the first in point order on a tie).

    Parameters
    ----------
    points : DataFrame
        A points table or aggregated dots (:func:`ncuroof.model.summary.aggregate_points`), with
        ``keys``, ``precision`` and ``flop``.
    keys : list of str
        The grouping columns (``["source", "launch_id"]`` per launch,
        ``["kernel_key"]`` per kernel).

    Returns
    -------
    DataFrame
        ``keys`` and ``precision``, one row per group.
    """
    # a rate-only input has no counts (no duration): within a group the rates rank
    # the same way (one time)
    flop = (
        points["flop"].where(points["flop"].notna(), points["flop_per_s"])
        if "flop_per_s" in points.columns
        else points["flop"]
    )
    work = (
        points.assign(flop=flop)
        .groupby(keys + ["precision"], sort=False)["flop"]
        .max()
        .reset_index()
    )
    return work.loc[work.groupby(keys, sort=False)["flop"].idxmax(), keys + ["precision"]]


#: The columns of :func:`binding_points` after the group keys.
BINDING_COLUMNS = [
    "precision",
    "level",
    "ai_flop_per_byte",
    "flop_per_s",
    "ridge_flop_per_byte",
    "roof_flop_per_s",
    "roof_fraction",
    "peak_flop_per_s",
    "peak_bytes_per_s",
    "bound",
    "achievable_flop_per_s",
    "achievable_bytes_per_s",
    "achievable_flop_source",
    "achievable_bytes_source",
    "achievable_roof_flop_per_s",
    "achievable_roof_fraction",
    "peak_flop_source",
    "peak_bytes_source",
    "main_precision",
]


@gc_paused
def binding_points(
    points: pd.DataFrame, keys: list[str] | tuple[str, ...] = ("source", "launch_id")
) -> pd.DataFrame:
    """The one binding-point rule: at the precision with the most FLOPs (:func:`main_precision`),
    the level with the lowest attainable roof min(P, AI × B) [KPG §2.9; YANG-CCPE]. Points without
    a roof are left out; where the main precision has none at any level, the group is placed at
    the roofed precision with the most FLOPs instead (``precision`` then differs from
    ``main_precision``), and a group without any roofed point has no binding point.

    :func:`classify` (per launch), :func:`ncuroof.model.summary.kernel_summary` and through it
    ``compare`` (per kernel), the diagnosis and the page all call this.

    Parameters
    ----------
    points : DataFrame
        A points table or aggregated dots (with their ``achievable_*`` columns, when present).
    keys : sequence of str, default ('source', 'launch_id')
        What a group is: a launch, or ``("kernel_key",)`` for a kernel.

    Returns
    -------
    DataFrame
        ``keys``, then :data:`BINDING_COLUMNS`: ``precision`` (where the group is placed),
        ``level``, ``ai_flop_per_byte``, ``flop_per_s``, ``ridge_flop_per_byte``,
        ``roof_flop_per_s``, ``roof_fraction``, ``peak_flop_per_s``, ``peak_bytes_per_s``,
        ``bound``, the binding point's achievable roofs and fraction (NaN or empty where none),
        the sources of its peak roofs and ``main_precision``; groups without a
        binding point are absent.
    """
    keys = list(keys)
    cols = keys + BINDING_COLUMNS
    # A group key left empty makes no group; a point of no precision binds none (as before).
    live = points[[*keys, "precision"]].notna().all(axis=1).to_numpy()
    p = points if live.all() else points[live]
    roof = p["roof_flop_per_s"].to_numpy(float)
    roofed = np.isfinite(roof)
    if not roofed.any():
        return pd.DataFrame(columns=cols)
    g = distinct_codes([pd.factorize(p[c], use_na_sentinel=False)[0] for c in keys])[1]
    pc = pd.factorize(p["precision"], use_na_sentinel=False)[0]
    flop = p["flop"].to_numpy(float)
    if (
        "flop_per_s" in p.columns
    ):  # a rate-only input has no counts: within a group rates rank alike
        flop = np.where(np.isnan(flop), p["flop_per_s"].to_numpy(float), flop)
    groups = int(g.max()) + 1
    main = _most_work(g, pc, flop, groups)
    placed = np.where(_any_of(g[roofed & (pc == main[g])], groups), main, -1)
    elsewhere = _most_work(g[roofed], pc[roofed], flop[roofed], groups)
    placed = np.where(placed >= 0, placed, elsewhere)
    cand = np.flatnonzero(roofed & (pc == placed[g]))
    best = _first_min(g[cand], roof[cand], groups)
    have = best >= 0  # groups in order of their first candidate point, as a groupby would give
    chosen = cand[best[have][np.argsort(_first_min(g[cand], 0 * roof[cand], groups)[have])]]
    out = p[[c for c in cols if c in p.columns]].iloc[chosen].reset_index(drop=True)
    out["main_precision"] = p["precision"].iloc[_first_at(g, pc, main)[g[chosen]]].array
    return out.reindex(columns=cols)  # a table without achievable roofs: NaN


def _most_work(g: np.ndarray, pc: np.ndarray, flop: np.ndarray, groups: int) -> np.ndarray:
    """Per group code, the precision code with the most FLOPs (:func:`main_precision`'s rule: the
    largest per-precision maximum, the first precision to appear on a tie); -1
    for an absent group."""
    pair_first, pair = distinct_codes([g, pc])
    most = pd.Series(np.nan_to_num(flop, nan=-np.inf)).groupby(pair, sort=False).max().to_numpy()
    order = np.lexsort((np.arange(len(most)), -most, g[pair_first]))  # by group, most work first
    out = np.full(groups, -1, dtype=np.int64)
    lead = order[::-1]  # the last write per group wins: write in reverse so the first one stays
    out[g[pair_first][lead]] = pc[pair_first][lead]
    return out


def _any_of(g: np.ndarray, groups: int) -> np.ndarray:
    """Per group code 0 .. groups - 1: whether it occurs in ``g``."""
    seen = np.zeros(groups, dtype=bool)
    seen[g] = True
    return seen


def join_launches(
    left: pd.DataFrame, right: pd.DataFrame, keys: Sequence[str] = ("source", "launch_id")
) -> pd.DataFrame:
    """``left.merge(right, on=keys, how="left")`` for a ``right`` with at most one row per key
    (binding points: one per launch), by integer codes instead of a hash join of text keys.

    Parameters
    ----------
    left, right : DataFrame
        Both with the ``keys`` columns; no other column in common.

    Returns
    -------
    DataFrame
        ``left``'s rows in order (a new RangeIndex) and columns, then ``right``'s other columns: the
        matching row's values, NaN where none matches (an integer column then becomes float, a
        boolean one object, as in a merge). A ``right`` with a repeated key, or columns in common,
        goes through :meth:`pandas.DataFrame.merge` itself.
    """
    at = launch_positions(right, left, keys)
    if at is None or set(left.columns) & set(right.columns) != set(keys):
        return left.merge(right, on=list(keys), how="left")
    rest = right.drop(columns=list(keys)).reset_index(drop=True).reindex(at)
    return pd.concat([left.reset_index(drop=True), rest.reset_index(drop=True)], axis=1)


def launch_positions(
    table: pd.DataFrame, rows: pd.DataFrame, keys: Sequence[str] = ("source", "launch_id")
) -> np.ndarray | None:
    """Where each row of ``rows`` is in ``table``, matched on ``keys`` by integer codes (missing
    keys match each other, as in a merge).

    Parameters
    ----------
    table, rows : DataFrame
        Both with the ``keys`` columns.

    Returns
    -------
    ndarray of int64 or None
        Per row of ``rows``, the position of the row of ``table`` with its keys, -1 where none;
        None when ``table`` repeats a key.
    """
    n = len(table)
    codes = [
        np.concatenate(_shared_codes(table[c], rows[c]))
        if isinstance(table[c].dtype, pd.StringDtype)  # a file name: one, compared not hashed
        else pd.factorize(pd.concat([table[c], rows[c]], ignore_index=True), use_na_sentinel=False)[
            0
        ]
        for c in keys
    ]
    code = distinct_codes(codes)[1]
    if (np.bincount(code[:n]) > 1).any():
        return None
    pos = np.full(int(np.max(code, initial=-1)) + 1, -1, dtype=np.int64)
    pos[code[:n]] = np.arange(n)
    return pos[code[n:]]


def _shared_codes(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``a`` and of ``b`` as codes of one numbering (each column coded alone, then
    their distinct values matched; missing values alike, as in a merge)."""
    code_a, words_a = text_codes(a)
    code_b, words_b = text_codes(b)
    at = pd.Index(words_a, dtype=object).get_indexer(pd.Index(words_b, dtype=object))
    new = at < 0
    at[new] = len(words_a) + np.arange(int(new.sum()))
    missing = len(words_a) + len(words_b)
    at = np.append(at, missing)  # code -1 (missing) of b: the last
    return np.where(code_a < 0, missing, code_a), at[code_b]


def _first_min(g: np.ndarray, value: np.ndarray, groups: int) -> np.ndarray:
    """Per group code, the position in ``g`` of its smallest ``value`` (the first on a tie;
    -1 where absent)."""
    order = np.lexsort((np.arange(len(g)), value, g))
    out = np.full(groups, -1, dtype=np.int64)
    out[g[order[::-1]]] = order[::-1]
    return out


def _first_at(g: np.ndarray, pc: np.ndarray, main: np.ndarray) -> np.ndarray:
    """Per group code, the position of its first point at precision ``main`` of that group."""
    at = np.flatnonzero(pc == main[g])
    out = np.full(len(main), -1, dtype=np.int64)
    out[g[at[::-1]]] = at[::-1]
    return out


def _roofline_reason(r: Any) -> str:
    cmp = "<" if r.bound == "memory" else ">="
    unit = work_unit(str(r.precision))
    text = (
        f"{r.bound} bound: {str(r.precision).upper()} at {str(r.level).upper()} (binding level), AI"
        f" {fmt.g(r.ai_flop_per_byte)} {unit}/B {cmp} ridge {fmt.g(r.ridge_flop_per_byte)}"
        f" {unit}/B, {fmt.pct(float(r.roof_fraction))} of roof"
    )
    if np.isfinite(r.achievable_roof_fraction):
        text += f" ({fmt.pct(float(r.achievable_roof_fraction))} of the achievable roof)"
    return text


def _placed_note(r: Any) -> str:
    """Where a launch whose main precision has no roof was placed
    (:func:`binding_points`), else ''."""
    if (
        not isinstance(r.main_precision, str)
        or not isinstance(r.precision, str)
        or r.main_precision == r.precision
    ):
        return ""
    return (
        f"placed at {r.precision.upper()} on the roofline: no source has a roof for its main"
        f" precision {r.main_precision.upper()} (pass --peak-flops"
        f" {'tensor' if r.main_precision.startswith('tensor') else r.main_precision}=VALUE)"
    )


def _latency_reason(r: Any, latency: float, small: float) -> str:
    text = (
        f"latency bound: {_sol_reason(r.sm_throughput_frac, r.memory_throughput_frac)}, both below"
        f" {fmt.pct(latency)} (ncu SOLBottleneck rule)"
    )
    return text + (
        f", small grid: {r.waves_per_sm:.2f} waves per SM" if r.waves_per_sm < small else ""
    )


def _sol_only_reason(r: Any) -> str:
    sm, mem = fmt.num(r.sm_throughput_frac), fmt.num(r.memory_throughput_frac)
    b = "compute" if np.nan_to_num(sm, nan=-1.0) >= np.nan_to_num(mem, nan=-1.0) else "memory"
    return (
        f"{b} bound from SpeedOfLight throughputs only ({_sol_reason(sm, mem)}): no roofline point"
    )


def _dram_only(
    k: pd.DataFrame, candidates: np.ndarray, near: float
) -> tuple[np.ndarray, np.ndarray]:
    """Launches with bytes and a duration but no FLOPs (no roofline point) and no SpeedOfLight:
    their DRAM bandwidth against the DRAM roof, bytes / time / roof (issue 33). Returns (fraction,
    NaN elsewhere) and the mask of those at or above ``near`` ([sol].no_bound, ncu's "well
    utilized"): memory-bound whatever their FLOPs."""
    frac = np.where(
        candidates,
        dram_roof_fraction(k["dram_bytes_per_s"].to_numpy(float), k["peak_dram_bytes_per_s"]),
        np.nan,
    )
    return frac, np.isfinite(frac) & (frac >= near)


def dram_roof_fraction(dram_bytes_per_s: Any, peak_dram_bytes_per_s: Any) -> np.ndarray:
    """DRAM bandwidth against the DRAM roof, bytes / time / roof: the verdict of a launch with
    bytes and a duration but no roofline point and no SpeedOfLight (issue 33).

    Parameters
    ----------
    dram_bytes_per_s, peak_dram_bytes_per_s : array_like
        Achieved DRAM bandwidth and the DRAM roof [B/s], per launch.

    Returns
    -------
    ndarray
        The fraction [0-1, may exceed 1], NaN without a positive roof or a finite bandwidth.
    """
    bps, roof = np.asarray(dram_bytes_per_s, float), np.asarray(peak_dram_bytes_per_s, float)
    with np.errstate(invalid="ignore"):
        return np.where((roof > 0) & np.isfinite(bps), bps / np.where(roof > 0, roof, 1.0), np.nan)


def _dram_reason(frac: float, near: float) -> str:
    if frac >= near:
        return (
            f"memory bound: DRAM traffic at {fmt.pct(frac)} of the DRAM roof (bytes / time / roof;"
            " no FLOP counters for a roofline point)"
        )
    return (
        f"DRAM traffic at {fmt.pct(frac)} of the DRAM roof (bytes / time / roof), below"
        f" {fmt.pct(near)}: not DRAM-bound; without FLOP counters or SpeedOfLight the compute side"
        " cannot be judged (collect ncu --set roofline)"
    )


@gc_paused
def classify(
    kernels: pd.DataFrame,
    points: pd.DataFrame,
    catalog: Catalog,
    bind: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Fill the ``bound`` column of the launch table and append the reason to ``notes``.

    Vectorised over launches; the roofline verdict is the binding point of
    :func:`ncuroof.model.summary.binding_points` (the one rule the page and ``compare`` use too).

    Parameters
    ----------
    kernels : DataFrame
        Kernels table from :func:`ncuroof.model.formulas.compute_launches`.
    points : DataFrame
        Its points table (:func:`ncuroof.model.formulas.compute_points`).
    catalog : Catalog
        For the thresholds in ``metrics/thresholds.toml``.
    bind : DataFrame, optional
        ``binding_points(points)`` when the caller has it (it is computed once per analysis and
        handed on to :func:`ncuroof.model.diagnose.diagnose_launches`); computed here if None.

    Returns
    -------
    DataFrame
        A copy of ``kernels`` with ``bound`` in {memory, compute, latency, unknown} and the
        numbers behind each verdict in ``notes``; ``roof_fraction`` and
        ``achievable_roof_fraction`` of each launch's binding point (NaN without one, and for
        damaged or failed launches).
    """
    sol = catalog.thresholds["sol"]
    out = kernels.copy(
        deep=False
    )  # columns shared until replaced (copy-on-write): no copy of the whole table
    live = (~out["status"].isin(["failed_measurement", "corrupt_record"])).to_numpy()
    bind = join_launches(
        out[["source", "launch_id"]], binding_points(points) if bind is None else bind
    )
    v = _Verdicts.of(out, bind, live, sol)
    out["bound"] = v.bound
    for col in ("roof_fraction", "achievable_roof_fraction"):
        out[col] = np.where(live, pd.to_numeric(bind[col], errors="coerce").to_numpy(float), np.nan)
    text = _reasons(out, bind, v, sol)
    placed = np.full(len(out), "", dtype=object)
    moved = live & (
        bind["main_precision"].notna() & (bind["main_precision"] != bind["precision"])
    ).to_numpy(bool)
    moves = ["precision", "main_precision"]
    placed[moved] = per_distinct(bind.loc[moved, moves], moves, _placed_note)
    out["notes"] = _with_reasons(out["notes"].to_numpy(dtype=object), text, placed)
    return out


def _with_reasons(notes: np.ndarray, text: np.ndarray, placed: np.ndarray) -> list[list[str]]:
    """Each launch's notes (a new list) and then its bound reason and placement note where it has
    them; the reasons of each distinct pair are gathered once."""
    first, pair = distinct_codes(
        [
            factorize_objects(text)[0],
            factorize_objects(placed)[0],
        ]
    )
    extras = objects([[x for x in (text[i], placed[i]) if x] for i in first])
    if set(map(type, notes)) <= {list}:  # each a new list, without a Python call per launch
        return list(map(list.__add__, notes, extras[pair] if len(extras) else []))
    return [[*old, *extras[c]] for old, c in zip(notes, pair.tolist(), strict=True)]


#: A launch's bound, in the order of :class:`_Verdicts`' codes.
_BOUNDS = ("latency", "memory", "compute", "unknown")


@dataclass
class _Verdicts:
    """Which rule decides each launch's bound (masks over launches) and the bound it gives."""

    is_lat: np.ndarray
    is_roof: np.ndarray
    is_sol: np.ndarray
    unknown: np.ndarray
    lone: np.ndarray
    dram_frac: np.ndarray
    bound: Any

    @classmethod
    def of(
        cls, out: pd.DataFrame, bind: pd.DataFrame, live: np.ndarray, sol: dict[str, Any]
    ) -> _Verdicts:
        """Latency (both SpeedOfLight throughputs low), the roofline's binding point, ncu's
        SpeedOfLight alone, DRAM traffic alone, else unknown, in that order of preference."""
        sm, mem = (
            out["sm_throughput_frac"].to_numpy(float),
            out["memory_throughput_frac"].to_numpy(float),
        )
        latency, no_bound = float(sol["latency_bound"]), float(sol["no_bound"])
        has_sol = np.isfinite(sm) & np.isfinite(mem)
        is_lat = live & has_sol & (sm < latency) & (mem < latency)
        is_roof = live & ~is_lat & bind["bound"].isin(["memory", "compute"]).to_numpy()
        # One throughput alone above no_bound is ncu's "High Throughput" of that unit
        # (ROOFLINE_SPEC §8.2).
        lone = np.isfinite(sm) != np.isfinite(mem)
        one_high = lone & (
            (np.nan_to_num(sm, nan=-1.0) >= no_bound) | (np.nan_to_num(mem, nan=-1.0) >= no_bound)
        )
        is_sol = live & ~is_lat & ~is_roof & (has_sol | one_high)
        sm_side = np.nan_to_num(sm, nan=-1.0) >= np.nan_to_num(mem, nan=-1.0)
        dram_frac, is_dram = _dram_only(out, live & ~is_lat & ~is_roof & ~is_sol, no_bound)
        compute = (bind["bound"] == "compute").to_numpy(dtype=bool, na_value=False)
        bound = coded_text(  # codes into _BOUNDS: no Python string per launch
            np.select([is_lat, is_roof, is_sol, is_dram], [0, 1 + compute, 1 + sm_side, 1], 3),
            list(_BOUNDS),
        )
        unknown = live & ~is_lat & ~is_roof & ~is_sol
        return cls(is_lat, is_roof, is_sol, unknown, lone, dram_frac, bound)


def _reasons(
    out: pd.DataFrame, bind: pd.DataFrame, v: _Verdicts, sol: dict[str, Any]
) -> np.ndarray:
    """The note giving each launch's bound and the numbers behind it ('' for damaged or failed
    launches), written once per distinct combination of those numbers."""
    latency, small = float(sol["latency_bound"]), float(sol["small_grid_waves"])
    no_bound = float(sol["no_bound"])
    text = np.full(len(out), "", dtype=object)
    sol_cols = [
        "sm_throughput_frac",
        "memory_throughput_frac",
        "waves_per_sm",
    ]  # only these: iterating Arrow text is slow
    text[v.is_lat] = per_distinct(
        out.loc[v.is_lat, sol_cols], sol_cols, lambda r: _latency_reason(r, latency, small)
    )
    roof_cols = [
        "bound",
        "precision",
        "level",
        "ai_flop_per_byte",
        "ridge_flop_per_byte",
        "roof_fraction",
        "achievable_roof_fraction",
    ]
    text[v.is_roof] = per_distinct(bind.loc[v.is_roof, roof_cols], roof_cols, _roofline_reason)
    text[v.is_sol] = per_distinct(out.loc[v.is_sol, sol_cols], sol_cols, _sol_only_reason)
    _unknown_reasons(text, v, out["sm_throughput_frac"].to_numpy(float))
    finite = np.isfinite(v.dram_frac)
    text[finite] = [_dram_reason(f, no_bound) for f in v.dram_frac[finite]]
    return text


def _unknown_reasons(text: np.ndarray, v: _Verdicts, sm: np.ndarray) -> None:
    """The note of a live launch whose bound is unknown: what it lacks (``text`` set in place)."""
    text[v.unknown & ~v.lone] = "bound unknown: no roofline point and no SpeedOfLight throughputs"
    lone = v.unknown & v.lone
    text[lone] = np.where(
        np.isfinite(sm[lone]),
        "bound unknown: no roofline point, and only the SM throughput of ncu's SpeedOfLight "
        "(its memory throughput is missing)",
        "bound unknown: no roofline point, and only the memory "
        "throughput of ncu's SpeedOfLight (its SM throughput is missing)",
    ).astype(object)
