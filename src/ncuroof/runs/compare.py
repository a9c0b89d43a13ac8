"""Compare two analyses: match kernels, say how far each dot moved, what work
changed, and gate CI on it.

A comparison is a join of the two runs' kernel summaries
(:func:`ncuroof.model.summary.kernel_summary`, the page's own aggregation and binding point), so a
kernel's AI and roof fraction before and after are those of its row on each page; beside them the
kernel's work and traffic (FLOPs per precision, bytes per level, summed over its launches like the
summary's time). Kernels are matched on their kernel identity
(:func:`ncuroof.model.summary.kernel_keys`: the demangled name, or finer keys with ``--match``; the
k-th launch of each kernel with ``--match launch``) by :func:`ncuroof.model.summary.pair_keys`:
pairs given by hand (``--pair``) first, then equal keys, then fallbacks that say they were used: the
same base name once template arguments and parameters are stripped, then names that differ only in
their numbers (``sigma_gpp_gpu_34`` → ``sigma_gpp_gpu_35``: OpenACC/OpenMP offload kernels are named
after a source line) when that pairing is unambiguous. A kernel left in one run only gets a likely
partner in the other (:func:`partners`), suggested, never paired.

The CI gate (:func:`gate`) judges matched kernels: a matched kernel, or the matched kernels' total,
slower by more than the threshold fails it; kernels in one run only fail it only when asked
(``fail_on_new``, ``fail_on_gone``), except an unpaired kernel whose likely partner is slower
(a rename is not a removal) unless ``allow_unmatched``; a time it cannot know (no duration) never
passes it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tomllib

from .. import fmt
from ..errors import InputError
from ..model.formulas import compute_points
from ..model.summary import kernel_summary, keys_of, most_time, pair_keys
from ..parser.files import read_bounded
from ..parser.patterns import UserPattern
from ..schema import BOUNDS, COMPARE, COMPARE_TRAIL, LEVELS, PRECISIONS

__all__ = [
    "match",
    "join",
    "compare",
    "totals",
    "gate",
    "Gate",
    "slower",
    "movement",
    "warnings",
    "work",
    "partners",
    "resolve_pairs",
    "resolve_pairs_ok",
    "read_pair_file",
    "series",
    "change",
    "thresholds",
    "headline",
    "fmt_name",
    "WORK_PRECISIONS",
]

#: Precisions whose work compare.csv carries (``<p>_flop_before``/``_after``).
WORK_PRECISIONS = (*PRECISIONS, "tensor")


@functools.cache
def thresholds() -> dict[str, float]:
    """``[compare]`` of ``metrics/thresholds.toml``: ``move`` (a relative change below it counts as
    none), ``partner_work`` and ``partner_time`` (:func:`partners`)."""
    from ..catalog import load

    t = load().thresholds["compare"]
    return {k: float(t[k]) for k in ("move", "partner_work", "partner_time")}


def __getattr__(name: str) -> float:
    """``MOVE_THRESHOLD``: the relative change below which AI, roof fraction, work, traffic or
    throughput counts as unchanged (``[compare].move`` of ``metrics/thresholds.toml``),
    read when first asked.
    """
    if name == "MOVE_THRESHOLD":
        return thresholds()["move"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SIDE = [
    "kernel_name",
    "kernel_label",
    "launches",
    "time_s",
    "flop_per_s",
    "bound",
    "precision",
    "level",
    "ai_flop_per_byte",
    "roof_fraction",
    "achievable_roof_fraction",
    *(f"{lv}_{m}" for lv in LEVELS for m in ("ai_flop_per_byte", "roof_fraction")),
]
_WORK = [*(f"{p}_flop" for p in WORK_PRECISIONS), *(f"{lv}_bytes" for lv in LEVELS)]


def work(kernels: pd.DataFrame, by: str = "kernel") -> pd.DataFrame:
    """Per kernel: its time, work and traffic summed over its launches, and its
    launch configuration.

    Parameters
    ----------
    kernels : DataFrame
        A launch table (:data:`ncuroof.schema.LAUNCHES`).
    by : str, default 'kernel'
        Kernel identity when ``kernels`` has no ``kernel_key``
        (:func:`ncuroof.model.summary.keys_of`).

    Returns
    -------
    DataFrame
        Indexed by ``kernel_key``: ``time_s`` [s] (NaN unless every launch has a duration: a partial
        sum would hide a slowdown), ``<p>_flop`` [FLOP] for :data:`WORK_PRECISIONS`,
        ``<level>_bytes`` [B] (NaN where no launch has the counter), ``grid`` and ``block``
        of most of the time, ``time_cv`` (the launch durations' std / mean; NaN for one launch).
    """
    k = kernels.reindex(columns=["time_s", "grid", "block", *_WORK]).assign(
        kernel_key=keys_of(kernels, by).to_numpy()
    )
    g = k.groupby("kernel_key", sort=False)
    t = k["time_s"].to_numpy(float)
    known = pd.Series(np.isfinite(t), index=k.index).groupby(k["kernel_key"], sort=False).all()
    out = pd.DataFrame(
        {
            "time_s": g["time_s"].sum(min_count=1).where(known),
            "time_cv": (g["time_s"].std(ddof=1) / g["time_s"].mean()).where(known),
            **{c: g[c].sum(min_count=1) for c in _WORK},
        }
    )
    timed = k.assign(_t=np.nan_to_num(t))
    for col in ("grid", "block"):
        out[col] = most_time(timed, col).reindex(out.index).fillna("")
    return out


def match(
    before: pd.DataFrame, after: pd.DataFrame, pairs: Sequence[tuple[str, str]] = ()
) -> pd.DataFrame:
    """Pair the kernels of two kernel summaries: :func:`ncuroof.model.summary.pair_keys` with the
    ``pairs`` given by hand and its fallbacks ``base name`` and ``numbers differ`` (columns
    ``key_before``, ``key_after``, ``match``)."""
    return pair_keys(
        before, after, ("base name", "numbers differ"), ("only_before", "only_after"), by_hand=pairs
    ).rename(columns={"key_left": "key_before", "key_right": "key_after"})


def movement(
    ai_before: float,
    ai_after: float,
    frac_before: float,
    frac_after: float,
    threshold: float | None = None,
) -> str:
    """Which way a dot moved: ``more reuse`` (AI up), ``better utilization`` (roof fraction up),
    ``both``, ``worse`` (both down), mixed (``more reuse, lower utilization``, …), ``none``, or
    ``unknown`` when a value is missing. Changes under ``threshold`` (default
    ``MOVE_THRESHOLD``) count as none.
    """
    threshold = thresholds()["move"] if threshold is None else threshold

    def step(a: float, b: float) -> int | None:
        if not (np.isfinite(a) and np.isfinite(b)) or a <= 0:
            return None
        r = b / a - 1
        return 0 if abs(r) < threshold else (1 if r > 0 else -1)

    x, y = step(ai_before, ai_after), step(frac_before, frac_after)
    if x is None and y is None:
        return "unknown"
    x, y = x or 0, y or 0
    names = {
        (0, 0): "none",
        (1, 0): "more reuse",
        (0, 1): "better utilization",
        (1, 1): "both",
        (-1, -1): "worse",
        (-1, 0): "less reuse",
        (0, -1): "lower utilization",
        (1, -1): "more reuse, lower utilization",
        (-1, 1): "less reuse, better utilization",
    }
    return names[(x, y)]


def _movement(row: Any) -> tuple[str, str]:
    """(level, :func:`movement` there): the after run's binding level, else the before run's, else
    DRAM, L2, L1, the first where the movement is known; ('', 'unknown') when none."""
    for lv in dict.fromkeys([row.level_after, row.level_before, "dram", "l2", "l1"]):
        if lv not in LEVELS:
            continue
        mv = movement(
            getattr(row, f"{lv}_ai_flop_per_byte_before"),
            getattr(row, f"{lv}_ai_flop_per_byte_after"),
            getattr(row, f"{lv}_roof_fraction_before"),
            getattr(row, f"{lv}_roof_fraction_after"),
        )
        if mv != "unknown":
            return lv, mv
    return "", "unknown"


def _ratio(b: float, a: float) -> float:
    """a / b - 1; NaN unless both are finite and b > 0."""
    return a / b - 1 if np.isfinite(a) and np.isfinite(b) and b > 0 else np.nan


def change(row: Any, threshold: float | None = None) -> str:
    """What moved between before and after, with the numbers: ``FP64 work −47 %, throughput +4 %``.

    Work per precision (:data:`WORK_PRECISIONS`), traffic per level and launches are named when they
    changed by ``threshold`` or more (``same work and traffic`` when none did); the throughput
    (FLOP/s of the kernel's precision at its binding dot) is always given when known on both sides,
    so "did less work" reads apart from "did the work faster". Work a side has no
    counter for is left out.

    Parameters
    ----------
    row : namedtuple
        A row of :func:`join` (before its ``change`` column).
    threshold : float, optional
        Default ``MOVE_THRESHOLD``.

    Returns
    -------
    str
        ``''`` for a kernel in one run only.
    """
    if not (row.launches_before and row.launches_after):
        return ""
    threshold = thresholds()["move"] if threshold is None else threshold
    parts, known = [], 0
    for name, cols in [(f"{p.upper()} work", f"{p}_flop") for p in WORK_PRECISIONS] + [
        (f"{lv.upper()} traffic", f"{lv}_bytes") for lv in reversed(LEVELS)
    ]:
        b, a = getattr(row, f"{cols}_before"), getattr(row, f"{cols}_after")
        if not (np.isfinite(b) and np.isfinite(a)):
            continue
        known += 1
        if b == 0 and a == 0:
            continue
        if b == 0:
            parts.append(f"{name} new ({fmt.si(a)})")
        elif abs(a / b - 1) >= threshold:
            parts.append(f"{name} {fmt.change(a / b - 1)}")
    if row.launches_before != row.launches_after:
        parts.append(f"launches {row.launches_before} → {row.launches_after}")
    parts = parts or ["same work and traffic" if known else "work and traffic unknown"]
    if row.precision_before and row.precision_after and row.precision_before != row.precision_after:
        parts.append(f"precision {row.precision_before} → {row.precision_after}")
    elif np.isfinite(r := _ratio(row.flop_per_s_before, row.flop_per_s_after)):
        parts.append(f"throughput {fmt.change(r)}")
    return ", ".join(parts)


def join(
    before: pd.DataFrame,
    after: pd.DataFrame,
    kernels: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    by: str = "kernel",
    pairs: Sequence[tuple[str, str]] = (),
) -> pd.DataFrame:
    """The comparison table (:data:`ncuroof.schema.COMPARE`): two kernel summaries
    joined on matched kernels.

    Every rate is the page's own (:func:`ncuroof.model.summary.kernel_summary`): a kernel's AI and
    roof fraction before and after equal its row in each page's kernel table; work, traffic and
    time are the sums over its launches (:func:`work`).

    Parameters
    ----------
    before, after : DataFrame
        Kernel summaries of the two runs, made with the same kernel identity.
    kernels : (DataFrame, DataFrame), optional
        The two launch tables, for the work, traffic and configuration columns (NaN without).
    by : str, default 'kernel'
        The kernel identity the summaries were made with.
    pairs : sequence of (str, str)
        ``(before key, after key)`` pairs given by hand (:func:`resolve_pairs`).

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.COMPARE` columns: ``status`` (matched, only_before, only_after),
        ``match`` (how), per side the summary's columns, work and traffic; ``speedup`` (before /
        after time), ``time_delta_s``; ``movement_level`` and ``movement`` there, with that level's
        AI and roof fraction; ``change`` (:func:`change`); ``partner`` (:func:`partners`). A time
        that is not known is NaN, never 0. Sorted by the time the change saved or cost, largest
        first, then kernels of unknown time.
    """
    # Speedups compare ncu's durations: with a timeline (--timeline) time_s is production's, the
    # same run on both sides.
    before, after = (
        s.assign(time_s=s["profiled_time_s"]) if "profiled_time_s" in s.columns else s
        for s in (before, after)
    )
    pairs_t = match(before, after, pairs)
    k_before, k_after = kernels if kernels else (None, None)
    out = pairs_t.join(_side(before, k_before, by, "before"), on="key_before").join(
        _side(after, k_after, by, "after"), on="key_after"
    )
    matched = ((pairs_t["key_before"] != "") & (pairs_t["key_after"] != "")).to_numpy()
    _fill_sides(out)
    _identity_and_time(out, matched)
    _movement_columns(out, matched)
    out["change"] = [change(r) for r in out.itertuples(index=False)]
    out["partner"] = partners(out)
    order = (
        out["time_delta_s"]
        .abs()
        .sort_values(ascending=False, kind="stable", na_position="last")
        .index
    )
    return out.loc[order, list(COMPARE)].reset_index(drop=True)


def _side(summary: pd.DataFrame, k: pd.DataFrame | None, by: str, side: str) -> pd.DataFrame:
    """One run's columns by kernel key, suffixed ``_<side>``: its summary's, its work, traffic and
    configuration (:func:`work`; NaN without the launch table ``k``) and, with ``k``, the time
    summed over its launches."""
    t = summary.set_index("kernel_key")[_SIDE]
    w = (
        work(k, by).reindex(t.index)
        if k is not None
        else pd.DataFrame(index=t.index, columns=["time_s", "time_cv", "grid", "block", *_WORK])
    )
    if k is not None:
        t = t.assign(time_s=w["time_s"])
    return t.join(w.drop(columns="time_s")).add_suffix(f"_{side}")


def _fill_sides(out: pd.DataFrame) -> None:
    """The side of a kernel in one run only, in place: 0 launches, '' text, NaN numbers."""
    for side in ("before", "after"):
        out[f"launches_{side}"] = out[f"launches_{side}"].fillna(0).astype(int)
        for c in ("bound", "precision", "level", "kernel_name", "kernel_label", "grid", "block"):
            out[f"{c}_{side}"] = out[f"{c}_{side}"].astype(object).fillna("").astype(str)
        for c in _WORK:
            out[f"{c}_{side}"] = pd.to_numeric(out[f"{c}_{side}"], errors="coerce")


def _identity_and_time(out: pd.DataFrame, matched: np.ndarray) -> None:
    """In place: the kernel's key, name and label (the before run's when it has one), ``status``,
    ``speedup`` (before / after time, matched kernels with both times) and ``time_delta_s``."""
    out["kernel_key"] = np.where(out["key_before"] != "", out["key_before"], out["key_after"])
    out["kernel_name"] = np.where(
        out["key_before"] != "", out["kernel_name_before"], out["kernel_name_after"]
    )
    out["kernel_label"] = np.where(
        out["key_before"] != "", out["kernel_label_before"], out["kernel_label_after"]
    )
    out["status"] = np.where(matched, "matched", out["match"])
    tb, ta = out["time_s_before"].to_numpy(float), out["time_s_after"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["speedup"] = np.where(matched & (ta > 0) & np.isfinite(tb), tb / ta, np.nan)
    out["time_delta_s"] = np.where(matched, ta - tb, np.where(out["key_before"] != "", -tb, ta))
    out["time_noise_frac"] = np.where(matched, _noise(out), np.nan)


def _noise(out: pd.DataFrame) -> np.ndarray:
    """2 sigma of the relative change of a kernel's mean launch time, from its launches' spread
    in each run: 2 x sqrt(cv_b^2 / n_b + cv_a^2 / n_a) (NaN with fewer than two launches in a
    run, or no spread known)."""
    cv = {s: pd.to_numeric(out.get(f"time_cv_{s}"), errors="coerce") for s in ("before", "after")}
    n = {s: out[f"launches_{s}"].to_numpy(float) for s in ("before", "after")}
    with np.errstate(divide="ignore", invalid="ignore"):
        var = sum(cv[s].to_numpy(float) ** 2 / n[s] for s in ("before", "after"))
    ok = (n["before"] >= 2) & (n["after"] >= 2)
    return np.where(ok, 2.0 * np.sqrt(var), np.nan)


def _movement_columns(out: pd.DataFrame, matched: np.ndarray) -> None:
    """``movement_level``, ``movement`` and the AI and roof fraction at that level, in place. A
    kernel in one run only has its binding dot's there (and no movement)."""
    moved = [
        _movement(r) if m else ("", "")
        for r, m in zip(out.itertuples(index=False), matched, strict=True)
    ]
    lv = np.array([m[0] for m in moved], dtype=object)
    for side in ("before", "after"):
        lv = np.where(~matched & (out[f"launches_{side}"] > 0), out[f"level_{side}"], lv)
    out["movement_level"] = lv.astype(str)
    out["movement"] = [m[1] for m in moved]
    for side in ("before", "after"):
        for m in ("ai_flop_per_byte", "roof_fraction"):
            vals = np.full(len(out), np.nan)
            for level in LEVELS:
                at = (out["movement_level"] == level).to_numpy()
                vals[at] = out.loc[at, f"{level}_{m}_{side}"].to_numpy(float)
            out[f"movement_{m}_{side}"] = vals


def _flop(rows: pd.DataFrame, side: str) -> np.ndarray:
    """All counted FLOPs of each row on one side (NaN where no precision has a count)."""
    return (
        rows[[f"{p}_flop_{side}" for p in WORK_PRECISIONS]].sum(axis=1, min_count=1).to_numpy(float)
    )


def _close(x: np.ndarray, y: np.ndarray, tol: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x > 0) & (y > 0) & (np.abs(y / x - 1) <= tol)


#: Above this many (gone, new) kernel pairs :func:`partners` weighs only pairs of
#: the same configuration.
_MAX_CANDIDATES = 1_000_000


def partners(table: pd.DataFrame) -> list[str]:
    """The likely partner of each kernel found in one run only: a suggestion, never a pairing.

    Candidates are the other run's unmatched kernels with the same grid and block, or with FLOPs
    (all precisions; without FLOPs on either, DRAM bytes) within ``[compare].partner_work`` of
    ``metrics/thresholds.toml`` (a rewrite keeps the work, a rename keeps both). A candidate's rank:
    criteria met (configuration, work, time within ``partner_time``), then the closest work, then
    the closest time; pairs are taken best first, each kernel once. Above a million (gone, new)
    pairs only those of the same configuration are weighed (memory stays bounded).

    Parameters
    ----------
    table : DataFrame
        :func:`join`'s rows (``status``, ``kernel_key``,
        ``grid``/``block``/work/``time_s`` per side).

    Returns
    -------
    list of str
        Per row: the partner's ``kernel_key`` in the other run, ``''`` when none (and
        for matched kernels).
    """
    out = [""] * len(table)
    gone = np.flatnonzero((table["status"] == "only_before").to_numpy())
    new = np.flatnonzero((table["status"] == "only_after").to_numpy())
    if not len(gone) or not len(new):
        return out
    b, a = table.iloc[gone], table.iloc[new]
    cand = _ranked(b, a, *_candidates(b, a), thresholds())
    taken_b, taken_a = set(), set()
    for r in cand.sort_values(
        ["n", "dw", "dt"], ascending=[False, True, True], kind="stable"
    ).itertuples(index=False):
        if r.b in taken_b or r.a in taken_a:
            continue
        taken_b.add(r.b)
        taken_a.add(r.a)
        out[gone[r.b]], out[new[r.a]] = a["kernel_key"].iat[r.a], b["kernel_key"].iat[r.b]
    return out


def _candidates(b: pd.DataFrame, a: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(in b, in a)`` of the (gone, new) pairs to weigh: every pair, or above
    :data:`_MAX_CANDIDATES` those of the same grid and block."""
    if len(b) * len(a) <= _MAX_CANDIDATES:
        bi, ai = (
            g.ravel() for g in np.meshgrid(np.arange(len(b)), np.arange(len(a)), indexing="ij")
        )
        return bi, ai
    both = pd.DataFrame(
        {"c": (b["grid_before"] + "|" + b["block_before"]).to_numpy(), "bi": np.arange(len(b))}
    ).merge(
        pd.DataFrame(
            {
                "c": (a["grid_after"] + "|" + a["block_after"]).to_numpy(),
                "ai": np.arange(len(a)),
            }
        ),
        on="c",
    )
    both = both[both["c"] != "|"].head(_MAX_CANDIDATES)
    return both["bi"].to_numpy(int), both["ai"].to_numpy(int)


def _ranked(
    b: pd.DataFrame, a: pd.DataFrame, bi: np.ndarray, ai: np.ndarray, lim: dict[str, float]
) -> pd.DataFrame:
    """The candidate pairs with the same configuration or work: ``b``, ``a`` (positions), ``n``
    (criteria met: configuration, work, time), ``dw`` and ``dt`` (|log ratio| of work and time)."""
    gb, ga = (
        (b["grid_before"] + "|" + b["block_before"]).to_numpy(),
        (a["grid_after"] + "|" + a["block_after"]).to_numpy(),
    )
    config = (gb[bi] == ga[ai]) & (b["grid_before"].to_numpy()[bi] != "")
    fb, fa = _flop(b, "before")[bi], _flop(a, "after")[ai]
    no_flop = ~(fb > 0) | ~(fa > 0)
    wb = np.where(no_flop, b["dram_bytes_before"].to_numpy(float)[bi], fb)
    wa = np.where(no_flop, a["dram_bytes_after"].to_numpy(float)[ai], fa)
    tb, ta = b["time_s_before"].to_numpy(float)[bi], a["time_s_after"].to_numpy(float)[ai]
    same_work, same_time = _close(wb, wa, lim["partner_work"]), _close(tb, ta, lim["partner_time"])
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = pd.DataFrame(
            {
                "b": bi,
                "a": ai,
                "n": config.astype(int) + same_work + same_time,
                "dw": np.nan_to_num(np.abs(np.log(wa / wb)), nan=np.inf),
                "dt": np.nan_to_num(np.abs(np.log(ta / tb)), nan=np.inf),
            }
        )
    return cand[config | same_work]


def _side_keys(spec: str, summary: pd.DataFrame, side: str, where: str) -> str:
    """The one kernel key of ``summary`` that ``spec`` names (kernel_name, demangled name, key or
    ``regex:PATTERN`` searched in those); InputError naming ``where`` when none or several."""
    names = (
        summary[["kernel_key", "kernel_name", "kernel_demangled"]]
        .astype(object)
        .fillna("")
        .astype(str)
    )
    if spec.startswith("regex:"):
        rx = UserPattern(spec[len("regex:") :], f"{where} regex:")
        hit = pd.Series([rx.any(row) for row in names.itertuples(index=False)], index=names.index)
    else:
        hit = (names == spec).any(axis=1)
    keys = list(dict.fromkeys(names.loc[hit, "kernel_key"]))
    if len(keys) != 1:
        shown = list(dict.fromkeys(names.loc[hit, "kernel_name"]))
        found = (
            "no kernel"
            if not keys
            else (
                f"{len(keys)} kernels"
                f" ({', '.join(fmt_name(k) for k in shown[:3])}{', …' if len(shown) > 3 else ''})"
            )
        )
        raise InputError(
            f"{spec!r} names {found} of the {side} run; give one kernel's name, demangled name or a"
            " regex:PATTERN that matches one",
            where,
        )
    return keys[0]


def fmt_name(name: str, limit: int = 60) -> str:
    """A kernel name shortened to ``limit`` characters for a message."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def resolve_pairs(
    specs: Sequence[tuple[str, str]],
    before: pd.DataFrame,
    after: pd.DataFrame,
    where: str = "--pair",
) -> list[tuple[str, str]]:
    """Kernel keys of the pairs given by hand (``--pair OLD=NEW``, ``--pair-file``).

    Parameters
    ----------
    specs : sequence of (str, str)
        Each side a kernel's function name (``kernel_name``), its demangled name, its kernel key or
        ``regex:PATTERN`` (searched in those); it must name exactly one kernel of its run.
    before, after : DataFrame
        The kernel summaries.
    where : str, default '--pair'
        What the messages name.

    Returns
    -------
    list of (str, str)
        ``(before key, after key)``.

    Raises
    ------
    InputError
        A side naming no kernel or several, or a kernel in two pairs.
    """
    out = [
        (_side_keys(b, before, "before", where), _side_keys(a, after, "after", where))
        for b, a in specs
    ]
    for i, side in enumerate(("before", "after")):
        keys = [p[i] for p in out]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise InputError(
                f"the {side} kernel {fmt_name(dup)!r} is in two pairs; pair each kernel once", where
            )
    return out


def read_pair_file(path: str | Path) -> list[tuple[str, str]]:
    """The pairs of a ``--pair-file``: TOML with ``[[pair]]`` tables of ``before``
    and ``after`` strings.

    Raises
    ------
    InputError
        The file is unreadable, not TOML, or a ``[[pair]]`` lacks a string ``before`` or ``after``.
    """
    fix = 'write [[pair]] tables with before = "..." and after = "..."'
    raw = read_bounded(path, f"pass a TOML file: {fix}", "option_file_bytes")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(
            f'cannot read the pair file ({exc}); write [[pair]] tables with before = "..." and'
            ' after = "..."',
            path,
        ) from exc
    pairs = data.get("pair", [])
    if (
        not isinstance(pairs, list)
        or not pairs
        or not all(
            isinstance(p, dict)
            and isinstance(p.get("before"), str)
            and isinstance(p.get("after"), str)
            for p in pairs
        )
    ):
        raise InputError(
            'needs [[pair]] tables, each with before = "OLD" and after = "NEW" (strings)', path
        )
    return [(p["before"], p["after"]) for p in pairs]


def compare(
    before: pd.DataFrame,
    after: pd.DataFrame,
    by_launch: bool = False,
    match: str = "kernel",
    pairs: Sequence[tuple[str, str]] = (),
) -> pd.DataFrame:
    """Compare two launch tables: :func:`join` of their kernel summaries.

    Parameters
    ----------
    before, after : DataFrame
        Kernels (launch) tables of the two runs.
    by_launch : bool, default False
        Pair the k-th launch of each kernel instead of aggregating (``match='launch'``).
    match : str, default 'kernel'
        Kernel identity (:data:`ncuroof.model.summary.KEY_CHOICES`).
    pairs : sequence of (str, str)
        Pairs by hand, as :func:`resolve_pairs` takes them.

    Returns
    -------
    DataFrame
        See :func:`join`.
    """
    by = "launch" if by_launch else match
    ks = [k.drop(columns=["kernel_key"], errors="ignore") for k in (before, after)]
    sides = [kernel_summary(k, compute_points(k), by=by) for k in ks]
    return join(
        *sides, kernels=(ks[0], ks[1]), by=by, pairs=resolve_pairs(pairs, *sides) if pairs else ()
    )


def totals(table: pd.DataFrame, before: pd.DataFrame, after: pd.DataFrame) -> dict[str, float]:
    """The headline: speedup over matched kernels, beside each whole run's GPU time.

    Parameters
    ----------
    table : DataFrame
        From :func:`join`.
    before, after : DataFrame
        Launch tables.

    Returns
    -------
    dict
        ``speedup`` (matched before / matched after time), ``matched_time_s_before``/``_after`` [s]
        (over the matched kernels whose time is known on both sides), ``matched_kernels``,
        ``matched_known`` (those with both times); per run ``time_s_before``/``_after`` [s] (the
        launches with a duration; NaN when none has one), ``unknown_launches_<side>`` (launches
        without a duration), ``kernels_<side>``; ``share_<bound>`` of the after run's time for each
        of :data:`ncuroof.schema.BOUNDS` (NaN without time).
    """
    out: dict[str, float] = {}
    for side, k in (("before", before), ("after", after)):
        t = k["time_s"].to_numpy(float)
        out[f"time_s_{side}"] = (
            float(t[np.isfinite(t)].sum()) if np.isfinite(t).any() else float("nan")
        )
        out[f"unknown_launches_{side}"] = int((~np.isfinite(t)).sum())
        out[f"kernels_{side}"] = int((table[f"launches_{side}"] > 0).sum())
    m = table[table["status"] == "matched"]
    tb, ta = m["time_s_before"].to_numpy(float), m["time_s_after"].to_numpy(float)
    known = m[
        np.isfinite(tb) & np.isfinite(ta) & (tb > 0) & (ta > 0)
    ]  # a duration of 0 is no measurement
    mb, ma = (
        float(known[f"time_s_{s}"].sum()) if len(known) else float("nan")
        for s in ("before", "after")
    )
    sigma = (
        pd.to_numeric(known["time_noise_frac"], errors="coerce").fillna(0.0)
        / 2
        * known["time_s_before"]
        if len(known) and "time_noise_frac" in known.columns
        else pd.Series(dtype=float)
    )
    out["matched_noise_frac"] = (
        float(2 * np.sqrt((sigma**2).sum()) / mb) if len(known) and mb > 0 else float("nan")
    )
    out.update(
        matched_kernels=len(m),
        matched_known=len(known),
        matched_time_s_before=mb,
        matched_time_s_after=ma,
        speedup=mb / ma if ma > 0 else float("nan"),
    )
    ta = out["time_s_after"]
    t_after = (
        pd.Series(np.nan_to_num(after["time_s"].to_numpy(float)))
        .groupby(after["bound"].to_numpy())
        .sum()
    )
    for b in BOUNDS:
        out[f"share_{b}"] = float(t_after.get(b, 0.0) / ta) if ta > 0 else float("nan")
    return out


def headline(tot: dict[str, float]) -> str:
    """``speedup 1.02x over 3 matched kernels (1.2 ms -> 1.18 ms); whole runs: 1.5 ms before (4
    kernels), 1.2 ms after (3 kernels)``; a run with launches of unknown time says how many."""

    def run(side: str) -> str:
        n, unknown = int(tot[f"kernels_{side}"]), int(tot[f"unknown_launches_{side}"])
        extra = f", {fmt.count(unknown, 'launch')} of unknown time" if unknown else ""
        return f"{fmt.time(tot[f'time_s_{side}'])} {side} ({fmt.count(n, 'kernel')}{extra})"

    n = int(tot["matched_kernels"])
    sp = f"{tot['speedup']:.2f}x" if np.isfinite(tot["speedup"]) else "n/a"
    known = (
        "" if tot["matched_known"] == n else f", {int(tot['matched_known'])} with both times known"
    )
    return (
        f"speedup {sp} over {fmt.count(n, 'matched kernel')}{known}"
        f" ({fmt.time(tot['matched_time_s_before'])} -> {fmt.time(tot['matched_time_s_after'])});"
        f" whole runs: {run('before')}, {run('after')}"
    )


@dataclass
class Gate:
    """The CI gate's verdict (:data:`ncuroof.schema.COMPARE_GATE`, :func:`gate`)."""

    verdict: str  #: pass, fail or unknown
    exit_code: int  #: 0 pass, 1 fail, 2 unknown (the gate cannot judge)
    threshold_pct: float  #: allowed growth of a matched kernel's time [%]
    headline: str  #: :func:`headline`
    failures: list[str] = field(default_factory=list)  #: why it failed, one line each
    unknown: list[str] = field(default_factory=list)  #: what it could not judge, one line each
    notes: list[str] = field(
        default_factory=list
    )  #: kernels in one run only and likely partners (not failures)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a plain dict (the :data:`ncuroof.schema.COMPARE_GATE` fields)."""
        return asdict(self)


def _label(r: Any) -> str:
    """A row's label (its own run's: a kernel in one run only is labelled there)."""
    return fmt_name(r.kernel_label)


def _one_run(
    table: pd.DataFrame, fail_on_new: bool, fail_on_gone: bool
) -> tuple[list[str], list[str]]:
    """(failures, notes): kernels in one run only, with their time; failures when asked."""
    fails, notes = [], []
    keys = dict(zip(table["kernel_key"], table.itertuples(index=False), strict=True))
    for status, side, word, fail in (
        ("only_after", "after", "new", fail_on_new),
        ("only_before", "before", "gone", fail_on_gone),
    ):
        for r in table[table["status"] == status].itertuples(index=False):
            line = (
                f"{word}: {_label(r)} ({side} run only): {fmt.time(getattr(r, f'time_s_{side}'))}, "
                f"{fmt.count(getattr(r, f'launches_{side}'), 'launch')}"
            )
            (fails if fail else notes).append(line)
            if r.partner and status == "only_before":
                p = keys[r.partner]
                notes.append(
                    f"likely partner: {_label(r)} (before) -> {_label(p)} (after), "
                    f"{fmt.time(r.time_s_before)} -> {fmt.time(p.time_s_after)}; pair them with "
                    f"--pair '{r.kernel_name}={p.kernel_name}'"
                )
    return fails, notes


def _renamed(table: pd.DataFrame, limit: float) -> list[str]:
    """Failures: an unpaired kernel whose likely partner (:func:`partners`) is slower by
    more than ``limit``."""
    keys = dict(zip(table["kernel_key"], table.itertuples(index=False), strict=True))
    out = []
    for r in table[(table["status"] == "only_before") & (table["partner"] != "")].itertuples(
        index=False
    ):
        p = keys[r.partner]
        if (
            np.isfinite(r.time_s_before)
            and r.time_s_before > 0
            and np.isfinite(p.time_s_after)
            and p.time_s_after > limit * r.time_s_before
        ):
            out.append(
                f"slower, likely renamed: {_label(r)} -> {_label(p)}: {fmt.time(r.time_s_before)}"
                f" -> {fmt.time(p.time_s_after)}"
                f" ({fmt.change(p.time_s_after / r.time_s_before - 1)}); pair them with --pair"
                f" '{r.kernel_name}={p.kernel_name}' or pass --allow-unmatched"
            )
    return out


def _unknown(table: pd.DataFrame, tot: dict[str, float]) -> tuple[list[str], list[str]]:
    """(what the gate cannot judge, notes): an empty run, no kernel in both runs, a matched kernel
    whose time is known in one run only, no matched kernel known in both; a kernel without a
    duration in either run (a launch ncu failed to measure each time) is a note, not judged."""
    out = [
        f"the {side} run has no kernels: nothing to judge"
        for side in ("before", "after")
        if not tot[f"kernels_{side}"]
    ]
    m = table[table["status"] == "matched"]
    if not out and not len(m):
        out.append(
            "no kernel is in both runs: nothing to judge (pair renamed kernels with --pair OLD=NEW)"
        )
    # a duration of 0 or less is no measurement (a hand-edited saved table): unknown,
    # never infinitely fast
    known = {
        s: (lambda t: np.isfinite(t) & (t > 0))(m[f"time_s_{s}"].to_numpy(float))
        for s in ("before", "after")
    }
    for side, other in (("before", "after"), ("after", "before")):
        bad = m[~known[side] & known[other]]
        if len(bad):
            names = ", ".join(_label(r) for r in bad.head(5).itertuples(index=False)) + (
                ", …" if len(bad) > 5 else ""
            )
            out.append(
                f"time unknown {side}: {fmt.count(len(bad), 'matched kernel')} without a duration"
                f" in the {side} run ({names}): the gate cannot pass on unknown times"
            )
    neither = m[~known["before"] & ~known["after"]]
    if len(m) and len(neither) == len(m):
        out.append(
            "time unknown: no matched kernel has a duration in both runs"
            f" ({fmt.count(len(m), 'matched kernel')}): the gate cannot pass on unknown times"
        )
        return out, []
    return out, [
        f"not judged: {_label(r)}: no duration in either run"
        for r in neither.itertuples(index=False)
    ]


def _slower_matched(
    table: pd.DataFrame, tot: dict[str, float], limit: float
) -> tuple[list[str], list[str]]:
    """(failures, notes): a line per matched kernel whose time grew past ``limit`` x its time
    before, and one for the matched total (:func:`totals`) when it did; a growth within the
    launches' own spread (``time_noise_frac``) is a note "within noise", not a failure."""
    m = table[table["status"] == "matched"]
    tb, ta = m["time_s_before"].to_numpy(float), m["time_s_after"].to_numpy(float)
    slow = m[np.isfinite(tb) & np.isfinite(ta) & (tb > 0) & (ta > limit * tb)]
    grew = (slow["time_s_after"] / slow["time_s_before"] - 1).to_numpy(float)
    noise = (
        pd.to_numeric(slow["time_noise_frac"], errors="coerce").to_numpy(float)
        if "time_noise_frac" in slow.columns
        else np.full(len(slow), np.nan)
    )
    within = np.isfinite(noise) & (grew <= noise) if len(slow) else np.zeros(0, bool)
    fails, notes = [], []
    for r, g, n, w in zip(slow.itertuples(index=False), grew, noise, within):
        line = (
            f"{fmt_name(r.kernel_label)}: {fmt.time(r.time_s_before)} ->"
            f" {fmt.time(r.time_s_after)} (+{100 * g:.1f}%)"
        )
        if w:
            notes.append(f"within noise: {line}; its launches' spread allows ±{100 * n:.1f}%")
        else:
            fails.append(f"slower: {line}")
    mb, ma = tot["matched_time_s_before"], tot["matched_time_s_after"]
    total_noise = tot.get("matched_noise_frac", float("nan"))
    if ma > limit * mb:
        line = (
            f"total of {fmt.count(int(tot['matched_known']), 'matched kernel')} "
            f"{fmt.time(mb)} -> {fmt.time(ma)}"
        )
        if np.isfinite(total_noise) and ma / mb - 1 <= total_noise:
            notes.append(
                f"within noise: {line}; the launches' spread allows ±{100 * total_noise:.1f}%"
            )
        else:
            fails.append(f"slower: {line}")
    return fails, notes


def gate(
    table: pd.DataFrame,
    tot: dict[str, float],
    pct: float,
    *,
    fail_on_new: bool = False,
    fail_on_gone: bool = False,
    allow_unmatched: bool = False,
) -> Gate:
    """The CI gate: did a matched kernel, or the matched total, get slower by more
    than ``pct`` percent?

    Parameters
    ----------
    table : DataFrame
        From :func:`join`.
    tot : dict
        From :func:`totals`.
    pct : float
        Allowed growth in percent (0: any growth fails).
    fail_on_new, fail_on_gone : bool, default False
        Fail on kernels found only in the after (new) or only in the before (gone) run; otherwise
        they are notes with their time.
    allow_unmatched : bool, default False
        Do not fail on an unpaired kernel whose likely partner (:func:`partners`) is slower by more
        than ``pct``: without it a rename never hides a slowdown.

    Returns
    -------
    Gate
        ``fail`` (exit 1) with a line per offender when anything failed; else ``unknown`` (exit 2)
        when a run has no kernels, no kernel is in both runs, a matched kernel's time is known in
        one run only, or no matched kernel's time is known in both (unknown is not fast); else
        ``pass`` (exit 0). A matched kernel without a duration in either run (ncu failed to
        measure it both times) is a note, not judged.
    """
    limit = 1 + pct / 100
    fails, quiet = _slower_matched(table, tot, limit)
    one_fails, notes = _one_run(table, fail_on_new, fail_on_gone)
    notes = quiet + notes
    renamed = _renamed(table, limit)
    fails += one_fails + ([] if allow_unmatched else renamed)
    notes += (
        [
            line.replace("; pair them with", " (allowed by --allow-unmatched); pair them with")
            for line in renamed
        ]
        if allow_unmatched
        else []
    )
    unknown, unjudged = _unknown(table, tot)
    notes += unjudged
    verdict, code = ("fail", 1) if fails else (("unknown", 2) if unknown else ("pass", 0))
    return Gate(verdict, code, float(pct), headline(tot), fails, unknown, notes)


def slower(table: pd.DataFrame, tot: dict[str, float], pct: float) -> list[str]:
    """The gate's failures and what it could not judge (:func:`gate` with its defaults), one line
    each; empty when it passes."""
    g = gate(table, tot, pct)
    return g.failures + g.unknown


def warnings(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """Reasons the two runs may not be comparable point for point.

    Parameters
    ----------
    before, after : DataFrame
        Kernels tables.

    Returns
    -------
    list of str
        Differences in GPU, ncu version, clock control (``clock_control``: the reports' clock
        status and ``ncuroof profile``'s record), SM clock (median over launches, > 5 %: was
        ``--clock-control`` the same?) and metric set (which launches have roofline metrics,
        which traffic definitions and roof sources were used), and damaged records
        (status ``corrupt_record``) on either side.
    """
    out = []

    def values(k: pd.DataFrame, col: str) -> set[str]:
        return set(k[col].dropna().astype(str)) - {""}

    for col, what in (
        ("device_name", "GPU"),
        ("ncu_version", "ncu version"),
        ("cc", "compute capability"),
        ("clock_control", "clock control"),
    ):
        x, y = values(before, col), values(after, col)
        if x and y and x != y:
            out.append(
                f"different {what}: {', '.join(sorted(x))} before, {', '.join(sorted(y))} after"
            )
    cb, ca = before["sm_clock_hz"].median(), after["sm_clock_hz"].median()
    if np.isfinite(cb) and np.isfinite(ca) and abs(ca / cb - 1) > 0.05:
        out.append(
            f"SM clock differs: {cb / 1e6:.0f} MHz before, {ca / 1e6:.0f} MHz after (same"
            " --clock-control?)"
        )
    for side, k in (("before", before), ("after", after)):
        if n := int((k["status"] == "corrupt_record").sum()):
            out.append(
                f"{n} launch{'es' if n > 1 else ''} {side}"
                f" {'are damaged records' if n > 1 else 'is a damaged record'} (status"
                " corrupt_record, see launches.csv notes): not plotted, their numbers are not"
                " measurements; the input is damaged"
            )
    for col, what in (
        ("status", "metric set"),
        ("dram_definition", "DRAM traffic definition"),
        ("l2_definition", "L2 traffic definition"),
        ("peak_source", "roof source"),
    ):
        x, y = values(before, col), values(after, col)
        if x != y:
            out.append(
                f"different {what}: {', '.join(sorted(x)) or 'none'} before,"
                f" {', '.join(sorted(y)) or 'none'} after"
            )
    return out


def _trail_ids(
    summaries: Sequence[pd.DataFrame], pairs: Sequence[Sequence[tuple[str, str]]]
) -> list[dict[str, tuple[int, str]]]:
    """Per run: kernel key -> (trail id, how it was matched to the previous run). A kernel matched
    (:func:`match`) to one of the previous run continues its trail; any other starts a new one."""
    out: list[dict[str, tuple[int, str]]] = [
        {k: (i, "first") for i, k in enumerate(summaries[0]["kernel_key"])}
    ]
    n = len(out[0])
    for i in range(1, len(summaries)):
        ids: dict[str, tuple[int, str]] = {}
        for r in match(summaries[i - 1], summaries[i], pairs[i - 1]).itertuples(index=False):
            if not r.key_after:
                continue
            if r.key_before:
                ids[r.key_after] = (out[-1][r.key_before][0], r.match)
            else:
                ids[r.key_after], n = (n, "new"), n + 1
        out.append(ids)
    return out


def series(
    summaries: Sequence[pd.DataFrame],
    kernels: Sequence[pd.DataFrame],
    names: Sequence[str],
    by: str = "kernel",
    pairs: Sequence[tuple[str, str]] = (),
) -> pd.DataFrame:
    """Each kernel's trail through several runs, in order (:data:`ncuroof.schema.COMPARE_TRAIL`).

    Consecutive runs are matched like two (:func:`match`: names, fallbacks, and each pair by hand
    whose sides name one kernel of those two runs); a matched kernel continues its trail.

    Parameters
    ----------
    summaries, kernels : sequence of DataFrame
        Each run's kernel summary and launch table, in run order.
    names : sequence of str
        Each run's name (its input).
    by : str, default 'kernel'
        The kernel identity of the summaries.
    pairs : sequence of (str, str)
        Pairs by hand (:func:`resolve_pairs`); each must resolve between at least one pair
        of consecutive runs.

    Returns
    -------
    DataFrame
        One row per (trail, run the kernel is in), ordered by trail then run: time, work and
        traffic (:func:`work`), the binding dot, the AI and roof fraction at the trail's level (the
        binding level in its last run), speedups against the trail's first and previous rows.

    Raises
    ------
    InputError
        A pair that names one kernel in no two consecutive runs.
    """
    ids = _trail_ids(summaries, _pair_steps(summaries, pairs))
    rows = [
        row
        for run, (s, k) in enumerate(zip(summaries, kernels, strict=True))
        for row in _trail_rows(run, names[run], s, work(k, by), ids[run])
    ]
    if not rows:
        return pd.DataFrame(columns=list(COMPARE_TRAIL))
    out = pd.DataFrame(rows).sort_values(["trail", "run"], kind="stable").reset_index(drop=True)
    return _trail_columns(out).reindex(columns=list(COMPARE_TRAIL))


def _pair_steps(
    summaries: Sequence[pd.DataFrame], pairs: Sequence[tuple[str, str]]
) -> list[list[tuple[str, str]]]:
    """Per pair of consecutive runs, the pairs by hand resolved between them
    (:func:`resolve_pairs`); InputError for a pair that names one kernel in no two
    consecutive runs."""
    steps = [
        [
            resolve_pairs([spec], summaries[i - 1], summaries[i])[0]
            for spec in pairs
            if resolve_pairs_ok(spec, summaries[i - 1], summaries[i])
        ]
        for i in range(1, len(summaries))
    ]
    unused = [
        f"{b}={a}"
        for b, a in pairs
        if not any(
            resolve_pairs_ok((b, a), summaries[i - 1], summaries[i])
            for i in range(1, len(summaries))
        )
    ]
    if unused:
        raise InputError(
            f"names one kernel in no two consecutive runs: {', '.join(unused)}", "--pair"
        )
    return steps


#: The kernel summary's columns a trail row carries.
_TRAIL_SUMMARY = (
    "kernel_name",
    "kernel_label",
    "launches",
    "flop_per_s",
    "precision",
    "level",
    "ai_flop_per_byte",
    "roof_fraction",
    *(f"{lv}_{m}" for lv in LEVELS for m in ("ai_flop_per_byte", "roof_fraction")),
)


def _trail_rows(
    run: int,
    name: str,
    summary: pd.DataFrame,
    w: pd.DataFrame,
    ids: dict[str, tuple[int, str]],
) -> list[dict[str, Any]]:
    """One run's rows of the trail table: per kernel of ``ids`` (key -> trail id, how matched), its
    summary row (:data:`_TRAIL_SUMMARY`) and its work and traffic ``w`` (:func:`work`)."""
    t = summary.set_index("kernel_key")
    return [
        {
            "trail": trail,
            "run": run,
            "run_name": name,
            "kernel_key": key,
            "match": how,
            **{c: t.loc[key][c] for c in _TRAIL_SUMMARY},
            **w.loc[key].to_dict(),
        }
        for key, (trail, how) in ids.items()
    ]


def _trail_columns(out: pd.DataFrame) -> pd.DataFrame:
    """The trail table's own columns, in place: ``trail_level`` (:func:`_trail_level`), the AI and
    roof fraction there, and the speedups against the trail's first and previous rows."""
    out["trail_level"] = out.groupby("trail", sort=False)["trail"].transform(
        lambda ix: _trail_level(out.loc[ix.index])
    )
    for m in ("ai_flop_per_byte", "roof_fraction"):
        out[f"trail_{m}"] = [
            getattr(r, f"{r.trail_level}_{m}") for r in out.itertuples(index=False)
        ]
    t = out["time_s"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["speedup_vs_first"] = (
            out.groupby("trail")["time_s"].transform(lambda v: v.iloc[0]).to_numpy(float) / t
        )
        out["speedup_vs_previous"] = out.groupby("trail")["time_s"].shift(1).to_numpy(float) / t
    return out


def _trail_level(rows: pd.DataFrame) -> str:
    """The one level a trail is drawn at: the kernel's binding level in its last run, else DRAM, L2,
    L1, the first where every run of the trail has an AI; else that binding
    level (DRAM without one).
    """
    last = rows["level"].iat[-1] if rows["level"].iat[-1] in LEVELS else "dram"
    for lv in dict.fromkeys([last, "dram", "l2", "l1"]):
        if np.isfinite(rows[f"{lv}_ai_flop_per_byte"].to_numpy(float)).all():
            return lv
    return last


def resolve_pairs_ok(spec: tuple[str, str], before: pd.DataFrame, after: pd.DataFrame) -> bool:
    """Whether a pair by hand names one kernel in each of two runs (:func:`resolve_pairs`)."""
    try:
        resolve_pairs([spec], before, after)
    except InputError:
        return False
    return True
