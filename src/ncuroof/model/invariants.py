"""Verdict invariants: the words of a verdict never contradict the numbers of its row.

:func:`violations` checks a launch table (one row per launch) or a kernel summary (one row per
kernel) after the diagnosis and returns every row whose text breaks one of these rules (codes in
:data:`INVARIANTS`). The words are matched by key phrases, never whole sentences, so the rules hold
whatever the exact wording:

* ``claims_absent``: no text (evidence, advice, flags, notes, speed-of-light note) calls a quantity
  missing that the row holds (SpeedOfLight throughputs, FLOPs, bytes, duration, roofs).
* ``memory_advice_sm_busier``: no memory verdict or coalescing advice where ncu's SpeedOfLight rule
  names the SM as the busier unit (SM >= ``[sol].latency_bound`` and >= ``[sol].balanced`` above
  memory; :func:`ncuroof.model.speed_of_light.sm_busier`).
* ``near_roof_below_threshold``: no "near the roof" class below ``[sol].no_bound`` of the roof (the
  achievable roof's fraction when there is one; the SpeedOfLight throughput without a point).
* ``saving_under_floor``: no time at the roof below the launch floor of its GPU (the floor capped
  at the launch's own time) and no saving larger than the launch time minus that floor.
* ``unclassified_without_fix``: every "not classified" says what is missing ("missing: ...") and
  names the option or command that fixes it; never "re-profile" when only the roofs are missing.
* ``occupancy_contradicted``: no "well below the theoretical" when achieved occupancy is at least
  ``[diagnosis].occupancy_well_below`` of the theoretical, and no "tail of partial waves" when the
  grid runs at most one wave.
* ``idle_lanes_unnamed``: a classified launch with blocks below a warp names its idle lanes.
* ``level_order_unflagged``: a level below the level under it (L1 < L2, L2 < DRAM by more than
  ``[evidence].level_order_slack``), or a level at 0 B over a level with bytes, carries the
  ``levels out of order`` note.
* ``foreign_file_cited``: no text cites a file other than the row's own input (issue 44: the
  launch floor cited another report's kernel on another GPU).
* ``advice_wrong_pipe``: advice names as busiest a pipe that is not the row's ``hot_pipe``, or says
  "raise FMA share" while the hot pipe is none of ``[diagnosis].fp_pipes``.
* ``level_roof_unexplained``: a level with bytes and no roof says why (``no <LEVEL> roof`` or
  ``no roofs``).
* ``more_blocks_for_idle_grid``: no "launch more blocks" where the warps launched execute fewer
  than ``[diagnosis].little_work_warp_inst`` warp instructions each (the grid is larger than the
  work, or may be).
* ``memory_unit_unnamed``: no "near the best this algorithm allows" where the unit behind the
  memory SpeedOfLight counts instructions issued (``metrics/pipes.toml`` ``issue = true``).
* ``uncoalesced_at_roof``: no "only moving fewer bytes helps" as the lever of a row whose global
  loads or stores exceed ``metrics/limiters.toml`` [uncoalesced].max_sectors_per_request sectors
  per request (issue 50 class 1: wasted sectors are not bytes the kernel needs).
* ``stalls_unnamed``: no "read ncu's warp-stall reasons" where the row holds the reason ncu's
  CPIStall rule reports (issue 50 class 6).
* ``launch_bound_unsaid``: a launch with fewer blocks than SMs and no longer than
  [launch_bound].max_time_s leads its advice with launch latency (issue 50 class 7).
* ``fence_unnamed``: a membar or barrier top stall above [fence].share of the cycles between issues
  and [fence].lead x the next names the fence or barrier in the advice (issue 50 class 2).
* ``l2_writes_left_out``: no L2 below DRAM under a reads-only definition (not ``<id>+writes``)
  whose notes say L2 writes are held (issue 50 class 8).
* ``kernel_verdict_no_launch_has`` and ``geometry_no_launch_had`` (:func:`kernel_violations`): a
  kernel's diagnosis and advice are one of its launches', its waves per SM some launch's (issue 50
  classes 3 and 4).
* ``sparse_peak_for_dense_work``: no tensor aggregate path's work against a peak above its dense
  (``op_…_sparsity_off``) children's when the launch ran no sparse MMA of that datatype.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..catalog import Catalog
from ..catalog import load as load_catalog
from ..schema import cell_text, tensor_columns, tensor_paths
from .formulas import cc_number
from .speed_of_light import launch_floor
from .summary import grid_sizes, keys_of

__all__ = ["INVARIANTS", "kernel_violations", "violations"]

#: Invariant codes and what each forbids.
INVARIANTS = {
    "claims_absent": "a text calls a quantity missing that the row holds",
    "memory_advice_sm_busier": (
        "memory verdict or coalescing advice where ncu's rule names the SM as the busier unit"
    ),
    "near_roof_below_threshold": "'near the roof' below the near-roof threshold",
    "saving_under_floor": "a time at the roof or a saving that puts the launch under its floor",
    "unclassified_without_fix": (
        "'not classified' without what is missing and the fix, or re-profile where --gpu fixes it"
    ),
    "occupancy_contradicted": (
        "'well below the theoretical' when achieved occupancy is at the theoretical"
    ),
    "idle_lanes_unnamed": "blocks below a warp with no word about the idle lanes",
    "sparse_peak_for_dense_work": "tensor work with sparse ops 0 against a sparsity-on peak",
    "level_order_unflagged": "a level below the level under it with nothing said",
    "foreign_file_cited": "a text cites a file that is not the row's own input",
    "advice_wrong_pipe": "advice names a pipe that is not the hot one",
    "level_roof_unexplained": "a level with bytes and no roof, with nothing said",
    "more_blocks_for_idle_grid": "'launch more blocks' where most warps launched do no work",
    "memory_unit_unnamed": "'near the best' where memory throughput is instruction issue",
    "uncoalesced_at_roof": "'only moving fewer bytes helps' where the accesses are uncoalesced",
    "stalls_unnamed": "'read ncu's warp-stall reasons' where the row holds them",
    "launch_bound_unsaid": "a tiny launch of fewer blocks than SMs not called launch-bound first",
    "fence_unnamed": "a fence- or barrier-dominated launch whose advice names neither",
    "kernel_verdict_no_launch_has": "a kernel's diagnosis or advice that none of its launches has",
    "l2_writes_left_out": "L2 below DRAM under a reads-only definition while writes are held",
    "geometry_no_launch_had": "a kernel's waves per SM that none of its launches had",
}

#: (quantity, phrases that call it absent): a phrase is a regex matched case-sensitively.
_ABSENT = {
    "sol": (r"no SpeedOfLight", r"missing:[^;]*SpeedOfLight"),
    "sm": (r"no SM throughput", r"missing:[^;]*SM throughput"),
    "mem": (r"no memory throughput", r"missing:[^;]*memory throughput"),
    "flop": (r"no FLOP counters", r"missing:[^;]*FLOP counters", r"no FP work counted"),
    "bytes": (r"no (?:FLOP counters (?:and|or) )?memory traffic", r"missing:[^;]*memory traffic"),
    "time": (r"no duration", r"missing:[^;]*duration"),
    "roof": (r"no roofs", r"missing:[^;]*roofs"),
}

_FIX = r"--gpu|--peak-flops|--peak-bandwidth|ncuroof profile|ncu --|\.ncu-rep"


def _num(t: pd.DataFrame, col: str) -> np.ndarray:
    if col not in t.columns:
        return np.full(len(t), np.nan)
    return pd.to_numeric(t[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _text(t: pd.DataFrame, cols: tuple[str, ...]) -> pd.Series:
    """The row's words: the given columns joined, list cells (flags) as their text."""
    parts = []
    for c in cols:
        if c not in t.columns:
            continue
        s = t[c]
        parts.append(
            s.map(lambda v, c=c: cell_text(c, v))
            if c in ("flags", "notes")
            else s.astype(object).where(s.notna(), "").astype(str)
        )
    if not parts:
        return pd.Series("", index=t.index)
    out = parts[0]
    for p in parts[1:]:
        out = out + " | " + p
    return out


def _held(t: pd.DataFrame) -> dict[str, np.ndarray]:
    """What each row holds, per quantity of :data:`_ABSENT` (rows without the
    columns hold nothing)."""
    cols = list(t.columns)

    def any_of(names: list[str], test: Any) -> np.ndarray:
        if not names:
            return np.zeros(len(t), dtype=bool)
        a = np.vstack([_num(t, c) for c in names])
        with np.errstate(invalid="ignore"):
            return test(a).any(axis=0)

    sm, mem = (
        np.isfinite(_num(t, "sm_throughput_frac")),
        np.isfinite(_num(t, "memory_throughput_frac")),
    )
    return {
        "sol": sm | mem,
        "sm": sm,
        "mem": mem,
        "time": np.isfinite(_num(t, "time_s")) & (_num(t, "time_s") > 0),
        "flop": any_of(
            [c for c in cols if c.endswith("_flop") and not c.startswith(("expected", "peak"))],
            lambda a: a > 0,
        ),
        "bytes": any_of(
            [c for c in cols if c.endswith("_bytes") and c.split("_")[0] in ("dram", "l2", "l1")],
            lambda a: a > 0,
        ),
        "roof": any_of(
            [c for c in cols if c.startswith("peak_") and c.endswith("_per_s")], np.isfinite
        ),
    }


def _near_fraction(t: pd.DataFrame) -> np.ndarray:
    """The fraction a "near the roof" class must reach: the achievable roof's where there is one,
    else the roof's, else (no point) the SpeedOfLight throughput of the bound's side."""
    frac, ach = _num(t, "roof_fraction"), _num(t, "achievable_roof_fraction")
    sm, mem = _num(t, "sm_throughput_frac"), _num(t, "memory_throughput_frac")
    memory = (
        t["diagnosis"].astype(str).str.startswith("memory").to_numpy()
        if "diagnosis" in t.columns
        else np.zeros(len(t), bool)
    )
    sol = np.where(memory, mem, sm)
    return np.where(np.isfinite(ach), np.fmax(ach, frac), np.where(np.isfinite(frac), frac, sol))


def violations(table: pd.DataFrame, catalog: Catalog | None = None) -> pd.DataFrame:
    """Every invariant a diagnosed table breaks, one row per (row, invariant).

    Parameters
    ----------
    table : DataFrame
        A diagnosed launch table or kernel summary: ``diagnosis``, ``evidence``, ``advice``, and
        where present ``flags``, ``speed_of_light_note``, ``time_s``, ``time_at_roof_s``,
        ``saving_s``, ``cc``, ``sm_throughput_frac``, ``memory_throughput_frac``, ``roof_fraction``,
        ``achievable_roof_fraction``, ``occupancy_frac``, ``theoretical_occupancy_frac``,
        ``threads_per_block`` or ``block``, FLOP, bytes and roof columns. Checks whose columns
        are absent are skipped.
    catalog : Catalog, optional
        For ``metrics/thresholds.toml`` ([sol], [diagnosis], [launch_floor]);
        default the installed one.

    Returns
    -------
    DataFrame
        ``row`` (the table's index label), ``code`` (a key of :data:`INVARIANTS`) and ``text`` (the
        numbers that break it); empty when the words agree with the numbers.
    """
    catalog = catalog or load_catalog()
    th = catalog.thresholds
    held = _held(table)
    diag = _text_column(table, "diagnosis")
    advice = _text_column(table, "advice")
    unclassified = (diag == "not_classified").to_numpy()
    out = _absent_checks(table, held)
    out += _sol_checks(table, diag, advice, th)
    out += _floor_checks(table, th)
    out += _unclassified_checks(table, advice, unclassified, held)
    out += _occupancy_checks(table, advice, th)
    out += _idle_lanes_checks(table, advice, unclassified)
    out += _sparse_peak_checks(table)
    out += _level_order_checks(table, th)
    out += _foreign_file_checks(table)
    out += _pipe_checks(table, advice, th)
    out += _level_roof_checks(table)
    out += _idle_grid_checks(table, advice, th)
    out += _memory_unit_checks(table, advice, catalog)
    out += _limiter_checks(table, advice, catalog)
    out += _l2_write_checks(table, catalog)
    return pd.DataFrame(out, columns=["row", "code", "text"])


def _text_column(table: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as text ('' on every row when the table has no such column)."""
    if name in table.columns:
        return table[name].astype(str)
    return pd.Series("", index=table.index)


def _absent_checks(table: pd.DataFrame, held: dict[str, np.ndarray]) -> list[tuple[Any, str, str]]:
    """``claims_absent``: the words say a quantity is missing that the row holds."""
    words = _text(table, ("evidence", "advice", "flags", "notes", "speed_of_light_note"))
    out = []
    for what, phrases in _ABSENT.items():
        said = words.str.contains("|".join(phrases), regex=True).to_numpy()
        for i in np.flatnonzero(said & held[what]):
            out.append(
                (table.index[i], "claims_absent", f"says {what} is missing; the row holds it")
            )
    return out


def _unclassified_checks(
    table: pd.DataFrame, advice: pd.Series, unclassified: np.ndarray, held: dict[str, np.ndarray]
) -> list[tuple[Any, str, str]]:
    """``unclassified_without_fix``: no 'missing:' or fix named, or a re-profile
    --gpu would spare."""
    idx = table.index
    evidence = _text_column(table, "evidence")
    bad = unclassified & ~(
        evidence.str.contains("missing:").to_numpy()
        & advice.str.contains(_FIX, regex=True).to_numpy()
    )
    gpu_fixes = (
        unclassified
        & held["flop"]
        & held["bytes"]
        & ~held["roof"]
        & advice.str.contains("re-profile").to_numpy()
    )
    out = [
        (idx[i], "unclassified_without_fix", "no 'missing:' or no fix named")
        for i in np.flatnonzero(bad)
    ]
    out += [
        (idx[i], "unclassified_without_fix", "re-profile advised where --gpu gives the roofs")
        for i in np.flatnonzero(gpu_fixes)
    ]
    return out


def _occupancy_checks(
    table: pd.DataFrame, advice: pd.Series, th: dict[str, Any]
) -> list[tuple[Any, str, str]]:
    """``occupancy_contradicted``: advice says occupancy is well below theoretical; it is not."""
    occ, theo = _num(table, "occupancy_frac"), _num(table, "theoretical_occupancy_frac")
    with np.errstate(invalid="ignore"):
        at_theo = occ >= float(th["diagnosis"]["occupancy_well_below"]) * theo
    says_below = advice.str.contains(r"well below (?:the )?theoretical", regex=True).to_numpy()
    waves = _num(table, "waves_per_sm")
    tail = advice.str.contains("tail of partial waves").to_numpy()
    with np.errstate(invalid="ignore"):
        one_wave = tail & (waves <= 1.0)
    out = [
        (
            table.index[i],
            "occupancy_contradicted",
            f"a tail of partial waves at {waves[i]:.3g} waves",
        )
        for i in np.flatnonzero(one_wave)
    ]
    return out + [
        (
            table.index[i],
            "occupancy_contradicted",
            f"achieved {occ[i]:.3f} vs theoretical {theo[i]:.3f}",
        )
        for i in np.flatnonzero(at_theo & says_below)
    ]


def _idle_lanes_checks(
    table: pd.DataFrame, advice: pd.Series, unclassified: np.ndarray
) -> list[tuple[Any, str, str]]:
    """``idle_lanes_unnamed``: blocks under a warp (32 threads) with no word about idle lanes."""
    threads = _num(table, "threads_per_block")
    if "block" in table.columns and not np.isfinite(threads).any():
        threads = grid_sizes(table["block"]).to_numpy(float)
    with np.errstate(invalid="ignore"):
        small = (threads < 32) & ~unclassified
    return [
        (table.index[i], "idle_lanes_unnamed", f"blocks of {threads[i]:.0f} threads")
        for i in np.flatnonzero(small & ~advice.str.contains("lanes").to_numpy())
    ]


def _sol_checks(
    table: pd.DataFrame, diag: pd.Series, advice: pd.Series, th: dict[str, Any]
) -> list[tuple[Any, str, str]]:
    """``memory_advice_sm_busier`` and ``near_roof_below_threshold``."""
    sol = th["sol"]
    sm, mem = _num(table, "sm_throughput_frac"), _num(table, "memory_throughput_frac")
    with np.errstate(invalid="ignore"):
        busier = (sm >= float(sol["latency_bound"])) & (sm - mem >= float(sol["balanced"]) - 1e-12)
    memory_words = (
        diag.str.startswith("memory").to_numpy()
        | advice.str.contains("check coalescing").to_numpy()
    )
    out = [
        (
            table.index[i],
            "memory_advice_sm_busier",
            f"SM {sm[i]:.3f}, memory {mem[i]:.3f}, {diag.iat[i]}",
        )
        for i in np.flatnonzero(busier & memory_words)
    ]
    near = diag.str.endswith("near_roof").to_numpy()
    frac = _near_fraction(table)
    with np.errstate(invalid="ignore"):
        low = near & ~(frac >= float(sol["no_bound"]) - 1e-12)
    out += [
        (table.index[i], "near_roof_below_threshold", f"{diag.iat[i]} at {frac[i]:.3f} of the roof")
        for i in np.flatnonzero(low)
    ]
    return out


def _floor_checks(table: pd.DataFrame, th: dict[str, Any]) -> list[tuple[Any, str, str]]:
    """``saving_under_floor`` (launch rows: those with ``cc``)."""
    if "cc" not in table.columns or "time_at_roof_s" not in table.columns:
        return []
    t, tar, saving = _num(table, "time_s"), _num(table, "time_at_roof_s"), _num(table, "saving_s")
    own = None
    if "device_name" in table.columns:
        own = pd.Series(t).groupby(table["device_name"].astype(str).to_numpy()).transform("min")
    floor, _ = launch_floor(
        cc_number(table["cc"]), th["launch_floor"], None if own is None else own.to_numpy()
    )
    floor = np.fmin(floor, t)
    eps = 1e-15
    with np.errstate(invalid="ignore"):
        under = np.isfinite(tar) & (tar < floor - eps)
        too_much = np.isfinite(saving) & np.isfinite(t) & (saving > t - floor + eps)
    return [
        (
            table.index[i],
            "saving_under_floor",
            f"time {t[i]:.4g} s, at the roof {tar[i]:.4g} s, floor {floor[i]:.4g} s",
        )
        for i in np.flatnonzero(under | too_much)
    ]


def _sparse_peak_checks(table: pd.DataFrame) -> list[tuple[Any, str, str]]:
    """``sparse_peak_for_dense_work``: an aggregate tensor path (``tensor_src_…``) with work, no
    sparse ops among its ``op_…_sparsity_on`` children, and a peak above every dense child's."""
    out = []
    for path in tensor_paths(table.columns):
        if path.startswith("op_") or "sparsity" in path:
            continue
        kids = [
            p
            for p in tensor_paths(table.columns, "peak")
            if p.startswith("op_") and p.endswith(f"_{path}_sparsity_off")
        ]
        if not kids:
            continue
        on = [tensor_columns(k[: -len("off")] + "on").flop for k in kids]
        sparse = np.nansum([_num(table, c) for c in on], axis=0)
        dense = np.fmax.reduce([_num(table, tensor_columns(k).peak) for k in kids])
        work, peak = _num(table, tensor_columns(path).flop), _num(table, tensor_columns(path).peak)
        with np.errstate(invalid="ignore"):
            bad = (work > 0) & (sparse == 0) & (peak > dense * (1 + 1e-9))
        out += [
            (
                table.index[i],
                "sparse_peak_for_dense_work",
                f"tensor {path}: peak {peak[i]:.4g}/s, dense peak {dense[i]:.4g}/s, sparse ops 0",
            )
            for i in np.flatnonzero(bad)
        ]
    return out


def _level_order_checks(table: pd.DataFrame, th: dict[str, Any]) -> list[tuple[Any, str, str]]:
    """``level_order_unflagged``: L1 < L2 or L2 < DRAM (a zero under bytes included) with no
    ``levels out of order`` note (launch rows: those with ``notes``)."""
    if "notes" not in table.columns:
        return []
    slack = float(th.get("evidence", {}).get("level_order_slack", 0.0))
    said = _text(table, ("notes",)).str.contains("levels out of order").to_numpy()
    out = []
    for upper, lower in (("l1", "l2"), ("l2", "dram")):
        up, low = _num(table, f"{upper}_bytes"), _num(table, f"{lower}_bytes")
        with np.errstate(invalid="ignore"):
            bad = (low > 0) & (up < low * (1 - slack)) & ~said
        out += [
            (
                table.index[i],
                "level_order_unflagged",
                f"{upper} {up[i]:.4g} B below {lower} {low[i]:.4g} B",
            )
            for i in np.flatnonzero(bad)
        ]
    return out


_FILE = re.compile(r"[\w.+-]+\.(?:ncu-repz?|csv|sqlite|nsys-rep|json(?:\.gz)?|ncuroof)\b")


def _foreign_file_checks(table: pd.DataFrame) -> list[tuple[Any, str, str]]:
    """``foreign_file_cited``: a file name in the row's words that is not its own ``source``."""
    words = _text(table, ("evidence", "advice", "speed_of_light_note"))
    own = (
        table["source"].astype(str).map(lambda p: p.replace("\\", "/").rsplit("/", 1)[-1])
        if "source" in table.columns
        else pd.Series("", index=table.index)
    )
    out = []
    for i, (w, mine) in enumerate(zip(words, own)):
        foreign = [f for f in _FILE.findall(w) if f != mine and f not in mine]
        if foreign:
            out.append((table.index[i], "foreign_file_cited", f"cites {foreign[0]}"))
    return out


def _pipe_checks(
    table: pd.DataFrame, advice: pd.Series, th: dict[str, Any]
) -> list[tuple[Any, str, str]]:
    """``advice_wrong_pipe``: "busiest pipe is X" with X not the row's hot pipe, or "raise FMA
    share" where the hot pipe (with a value) runs no FP work."""
    if "hot_pipe" not in table.columns:
        return []
    hot = table["hot_pipe"].astype(object).where(table["hot_pipe"].notna(), "").astype(str)
    frac = _num(table, "hot_pipe_frac")
    fp = set(th["diagnosis"]["fp_pipes"])
    named = advice.str.extract(r"busiest pipe is (.+?) at ", expand=False)
    out = []
    for i, (a, h, n) in enumerate(zip(advice, hot, named)):
        if isinstance(n, str) and n != h:
            out.append((table.index[i], "advice_wrong_pipe", f"names {n}; the hot pipe is {h}"))
        elif "raise FMA share" in a and h and h not in fp and np.isfinite(frac[i]):
            out.append((table.index[i], "advice_wrong_pipe", f"FMA share; the hot pipe is {h}"))
    return out


def _level_roof_checks(table: pd.DataFrame) -> list[tuple[Any, str, str]]:
    """``level_roof_unexplained``: an ``ok`` launch with bytes at a level, no roof there, and no
    note saying why (launch rows: those with ``notes`` and ``status``)."""
    if "notes" not in table.columns or "status" not in table.columns:
        return []
    words = _text(table, ("notes",))
    ok = (table["status"].astype(str) == "ok").to_numpy()
    out = []
    for lv in ("dram", "l2", "l1"):
        b, peak = _num(table, f"{lv}_bytes"), _num(table, f"peak_{lv}_bytes_per_s")
        said = words.str.contains(f"no {lv.upper()} roof|no roofs", regex=True).to_numpy()
        with np.errstate(invalid="ignore"):
            bad = ok & (b > 0) & ~(peak > 0) & ~said
        out += [
            (table.index[i], "level_roof_unexplained", f"{lv} {b[i]:.4g} B, no roof")
            for i in np.flatnonzero(bad)
        ]
    return out


def _idle_grid_checks(
    table: pd.DataFrame, advice: pd.Series, th: dict[str, Any]
) -> list[tuple[Any, str, str]]:
    """``more_blocks_for_idle_grid``: "launch more blocks" where the warp instructions per
    launched warp (``warp_inst`` / (blocks x ceil(threads per block / 32))) are under
    ``[diagnosis].little_work_warp_inst`` (blocks and threads from ``grid``/``block`` on launch
    rows)."""
    inst, blocks = _num(table, "warp_inst"), _num(table, "blocks")
    threads = _num(table, "threads_per_block")
    if "grid" in table.columns and not np.isfinite(blocks).any():
        blocks = grid_sizes(table["grid"]).to_numpy(float)
    if "block" in table.columns and not np.isfinite(threads).any():
        threads = grid_sizes(table["block"]).to_numpy(float)
    limit = float(th["diagnosis"]["little_work_warp_inst"])
    with np.errstate(invalid="ignore"):
        per_warp = inst / (blocks * np.ceil(threads / 32))
        bad = (per_warp < limit) & advice.str.contains("launch more blocks").to_numpy()
    return [
        (table.index[i], "more_blocks_for_idle_grid", f"{per_warp[i]:.3g} warp instructions/warp")
        for i in np.flatnonzero(bad)
    ]


def _memory_unit_checks(
    table: pd.DataFrame, advice: pd.Series, catalog: Catalog
) -> list[tuple[Any, str, str]]:
    """``memory_unit_unnamed``: "near the best" where ``hot_memory_unit`` is an issue unit."""
    if "hot_memory_unit" not in table.columns or catalog.pipes is None:
        return []
    issue = table["hot_memory_unit"].isin(list(catalog.pipes.issue_units)).to_numpy()
    near = advice.str.contains("near the best").to_numpy()
    return [
        (
            table.index[i],
            "memory_unit_unnamed",
            f"hot memory unit {table['hot_memory_unit'].iat[i]}",
        )
        for i in np.flatnonzero(issue & near)
    ]


def _limiter_checks(
    table: pd.DataFrame, advice: pd.Series, catalog: Catalog
) -> list[tuple[Any, str, str]]:
    """``uncoalesced_at_roof``, ``stalls_unnamed``, ``launch_bound_unsaid`` and
    ``fence_unnamed`` (issue 50), each from the row's own counters and ``metrics/limiters.toml``;
    a check whose columns the table lacks (a kernel summary) is skipped."""
    spec = catalog.limiters
    if not spec or "top_stall" not in table.columns:
        return []
    sectors = np.fmax(
        _num(table, "global_load_sectors_per_request"),
        _num(table, "global_store_sectors_per_request"),
    )
    cpi, top = _num(table, "warp_cycles_per_issue"), _num(table, "top_stall_cycles_per_issue")
    nxt = np.nan_to_num(_num(table, "second_stall_cycles_per_issue"))
    reason = _text_column(table, "top_stall")
    blocks = grid_sizes(table["grid"]).to_numpy(float) if "grid" in table else _num(table, "blocks")
    fence, launch, spr = spec["fence"], spec["launch_bound"], spec["uncoalesced"]
    uncoalesced = float(spr["max_sectors_per_request"]) * (1 + float(spr.get("slack", 0.0)))
    with np.errstate(invalid="ignore"):
        reported = (top > float(fence["share"]) * cpi) & reason.isin(list(spec["stall"])).to_numpy()
        fenced = (
            reported
            & reason.isin(list(fence["reasons"])).to_numpy()
            & (top >= float(fence["lead"]) * nxt)
            & ~(_num(table, "issue_active_frac") >= float(fence["issue_active"]))
        )
        tiny = (blocks < _num(table, "sm_count")) & (
            _num(table, "time_s") <= float(launch["max_time_s"])
        )
    bad = {
        "uncoalesced_at_roof": (sectors > uncoalesced) & advice.str.startswith("at the").to_numpy(),
        "stalls_unnamed": reported & advice.str.contains("read ncu's warp-stall").to_numpy(),
        "launch_bound_unsaid": tiny & ~advice.str.startswith("too few blocks").to_numpy(),
        "fence_unnamed": fenced & ~advice.str.contains("fence|barrier").to_numpy(),
    }
    return [
        (table.index[i], code, f"{reason.iat[i]} {top[i]:.3g} of {cpi[i]:.3g} cycles per issue")
        for code, rows in bad.items()
        for i in np.flatnonzero(rows)
    ]


def _l2_write_checks(table: pd.DataFrame, catalog: Catalog) -> list[tuple[Any, str, str]]:
    """``l2_writes_left_out``: a reads-only L2 definition below DRAM whose notes hold the writes."""
    if "l2_definition" not in table.columns or "notes" not in table.columns:
        return []
    reads_only = table["l2_definition"].astype(str).isin(list(catalog.l2_reads_only)).to_numpy()
    with np.errstate(invalid="ignore"):
        below = _num(table, "l2_bytes") < _num(table, "dram_bytes")
    held = _text(table, ("notes",)).str.contains("L2 writes held").to_numpy()
    return [
        (table.index[i], "l2_writes_left_out", f"L2 {table['l2_bytes'].iat[i]:.4g} B")
        for i in np.flatnonzero(reads_only & below & held)
    ]


def kernel_violations(summary: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """``kernel_verdict_no_launch_has``: kernels whose diagnosis or advice none of their
    launches has (issue 50 class 3: every launch said "grid larger than the work", the kernel
    row "launch more blocks").

    Parameters
    ----------
    summary : DataFrame
        The kernel summary (``kernel_key``, ``diagnosis``, ``advice``).
    launches : DataFrame
        Its launch table (``kernel_key`` or the columns :func:`ncuroof.model.summary.keys_of`
        reads, ``diagnosis``, ``advice``).

    Returns
    -------
    DataFrame
        ``row``, ``code``, ``text`` as :func:`violations`.
    """
    keys = launches["kernel_key"] if "kernel_key" in launches else keys_of(launches)
    held = set(
        zip(
            keys.astype(str),
            launches["diagnosis"].astype(str),
            launches["advice"].astype(str),
        )
    )
    rows = [
        (i, "kernel_verdict_no_launch_has", f"{d}: {str(a)[:60]}")
        for i, k, d, a in zip(
            summary.index,
            summary["kernel_key"].astype(str),
            summary["diagnosis"].astype(str),
            summary["advice"].astype(str),
        )
        if (k, d, a) not in held
    ]
    if "waves_per_sm" in summary.columns and "waves_per_sm" in launches.columns:
        had = set(zip(keys.astype(str), launches["waves_per_sm"].round(9)))
        rows += [
            (i, "geometry_no_launch_had", f"{w:.4g} waves per SM")
            for i, k, w in zip(
                summary.index, summary["kernel_key"].astype(str), summary["waves_per_sm"].round(9)
            )
            if pd.notna(w) and (k, w) not in had
        ]
    return pd.DataFrame(rows, columns=["row", "code", "text"])
