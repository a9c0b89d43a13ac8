"""A speed of light that holds for any kernel: the roofline bound with mixed pipes, the unit bound,
and the busiest SM pipe.

Three lower bounds on a launch's duration, all from what ncu measured:

* **Roofline bound** [Williams et al., CACM 52(4), 2009; KPG §2.9]: FLOPs / roof per precision and
  bytes / roof per memory level. Precisions that run on one pipe (``metrics/pipes.toml``
  ``[[precision_pipes]]``, per compute capability) share its issue slots, so their times add;
  pipes and memory levels run in parallel, so the bound is the largest total.
* **Unit bound**: ncu's Compute (SM) and Memory throughputs (``sm__throughput``,
  ``gpu__compute_memory_throughput``, % of peak over the elapsed cycles) are each the busiest
  sub-unit of its side. A unit busy a fraction f of the launch time T does f × T of work at its
  peak rate, so with the same instructions and bytes the launch needs at least
  T × max(SM, memory) [NCU-SEC SpeedOfLight.section; ROOFLINE_SPEC §8.2]. It holds for work the
  FP roofline does not count (integer, address, SFU, load/store instructions).
* The time at the roof is the larger; ``time_at_roof_bound`` says which set it.

The hot pipe is the largest pipe of ncu's ``breakdown:sm__throughput`` (``metrics/pipes.toml``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import PipeCatalog
from ..schema import LEVELS, PRECISIONS, tensor_columns, tensor_paths
from .distinct import coded_text, per_distinct, text_array

__all__ = [
    "hot_pipe",
    "hot_pipe_codes",
    "roofline_time",
    "unit_time",
    "apply_speed_of_light",
    "instruction_verdict",
    "sm_busier",
    "launch_floor",
]

#: Values of the ``time_at_roof_bound`` column ('' when the launch has no bound).


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.full(len(df), np.nan)
    if df[name].dtype == np.float64:
        return df[name].to_numpy()
    return pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _nanmax(stack: list[np.ndarray], n: int) -> np.ndarray:
    """Element-wise max ignoring NaN; NaN where every entry is NaN."""
    if not stack:
        return np.full(n, np.nan)
    a = np.vstack(stack)
    have = np.isfinite(a).any(axis=0)
    return np.where(have, np.max(np.where(np.isfinite(a), a, -np.inf), axis=0), np.nan)


def _nansum(stack: list[np.ndarray], n: int) -> np.ndarray:
    """Element-wise sum ignoring NaN; NaN where every entry is NaN."""
    if not stack:
        return np.full(n, np.nan)
    a = np.vstack(stack)
    return np.where(np.isfinite(a).any(axis=0), np.nansum(a, axis=0), np.nan)


def hot_pipe(
    raw: pd.DataFrame, pipes: PipeCatalog, cc: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The busiest SM pipe of each launch and its utilisation.

    Parameters
    ----------
    raw : DataFrame
        The raw table (ncu metric columns, ``%`` values as ncu stores them).
    pipes : PipeCatalog
        ``metrics/pipes.toml``: pipe names, metric bases, CC ranges and the suffix families.
    cc : ndarray of float
        Compute capability per launch (NaN when unknown: every pipe is allowed).

    Returns
    -------
    (ndarray of str, ndarray of float)
        ``hot_pipe``: the display name of the pipe with the largest
        ``<base><suffix>`` value ('' when the launch has none), and ``hot_pipe_frac``: that value
        / 100 (NaN when none). Per launch the first suffix family
        (``.avg.pct_of_peak_sustained_elapsed``, the sm__throughput breakdown; else ``…_active``,
        ncu's HighPipeUtilization rule) with any value is used; families are never mixed. Source:
        [NCU-SEC] SpeedOfLight.section, HighPipeUtilization.py.
    """
    code, frac = hot_pipe_codes(raw, pipes, cc)
    return np.array(["", *(p.name for p in pipes.pipes)], dtype=object)[code + 1], frac


def hot_pipe_codes(
    raw: pd.DataFrame, pipes: PipeCatalog, cc: np.ndarray, memory: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`hot_pipe` as the index of the pipe in ``pipes.pipes`` (-1 where none) and its
    utilisation: the largest finite value of the first suffix family with one, the first pipe of
    the catalog on a tie. ``memory``: the units of the memory breakdown
    (``pipes.memory_units``) instead of the pipes."""
    n = len(raw)
    code, frac = np.full(n, -1, dtype=np.int64), np.full(n, np.nan)
    for suffix in pipes.suffixes:
        top, best = np.full(n, -np.inf), np.full(n, -1, dtype=np.int64)
        for j, p in enumerate(pipes.memory_units if memory else pipes.pipes):
            v = np.full(n, np.nan)
            for base in p.metrics:
                v = np.where(np.isnan(v), _col(raw, base + suffix), v)
            ok = np.isfinite(v)
            if p.cc_min is not None:
                ok &= ~(cc < p.cc_min - 1e-9)
            if p.cc_max is not None:
                ok &= ~(cc > p.cc_max + 1e-9)
            up = ok & ((v > top) | (best < 0))  # strictly larger: the first pipe keeps a tie
            top, best = np.where(up, v, top), np.where(up, j, best)
        take = np.isnan(frac) & (best >= 0)
        code, frac = np.where(take, best, code), np.where(take, top / 100.0, frac)
    return code, frac


def _time(k: pd.DataFrame, work_col: str, peak_col: str) -> np.ndarray:
    work, peak = _col(k, work_col), _col(k, peak_col)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((work > 0) & (peak > 0), work / np.where(peak > 0, peak, 1.0), np.nan)


def _work_times(k: pd.DataFrame) -> dict[str, np.ndarray]:
    """FLOPs / roof per precision and for tensor work (paths of one family summed: they share
    the tensor pipe)."""
    n = len(k)
    out = {p: _time(k, f"{p}_flop", f"peak_{p}_flop_per_s") for p in PRECISIONS}
    agg: list[np.ndarray] = []
    ops: list[np.ndarray] = []
    for path in tensor_paths(k.columns):
        t = tensor_columns(path)
        (ops if path.startswith("op_") else agg).append(_time(k, t.flop, t.peak))
    a, o = _nansum(agg, n), _nansum(ops, n)
    out["tensor"] = np.where(np.isfinite(a), a, o)
    return out


def roofline_time(kernels: pd.DataFrame, pipes: PipeCatalog, cc: np.ndarray) -> np.ndarray:
    """The roofline lower bound on each launch's duration, with precisions sharing a pipe added.

    Parameters
    ----------
    kernels : DataFrame
        ``<p>_flop`` [FLOP] and ``peak_<p>_flop_per_s`` [FLOP/s] per precision,
        ``tensor_<path>_flop`` and ``peak_tensor_<path>_flop_per_s`` per tensor datapath,
        ``<level>_bytes`` [B] and ``peak_<level>_bytes_per_s`` [B/s] per level, ``status``.
    pipes : PipeCatalog
        The precision-to-pipe table per compute capability (``metrics/pipes.toml``).
    cc : ndarray of float
        Compute capability per launch; where no table entry applies, every
        precision is its own pipe.

    Returns
    -------
    ndarray of float
        Seconds: max(max over pipes of Σ_{p on pipe} FLOP_p / roof_p, max over levels of
        bytes_l / roof_l) [Williams et al. 2009; ncu HighPipeUtilization.py for the sharing]. NaN
        where the status is not ``ok`` or no term has work and a roof. Tensor datapaths of one
        family (the ``src_*`` aggregates, else the ``op_*`` paths) add on the tensor pipe.
    """
    n = len(kernels)
    work = _work_times(kernels)
    levels = [_time(kernels, f"{lv}_bytes", f"peak_{lv}_bytes_per_s") for lv in LEVELS]
    compute = np.full(n, np.nan)
    cc_key = np.where(np.isfinite(cc), cc, -1.0)
    for value in np.unique(cc_key):
        rows = cc_key == value
        table = pipes.pipe_of(value) if value >= 0 else {}
        groups: dict[str, list[np.ndarray]] = {}
        for prec, t in work.items():
            groups.setdefault(table.get(prec, prec), []).append(t)
        totals = [_nansum(ts, n) for ts in groups.values()]
        compute = np.where(rows, _nanmax(totals, n), compute)
    t = _nanmax([compute, *levels], n)
    ok = (kernels["status"] == "ok").to_numpy()
    return np.where(ok, t, np.nan)


def unit_time(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The unit bound: ``time_s`` × max(``sm_throughput_frac``, ``memory_throughput_frac``).

    Parameters
    ----------
    kernels : DataFrame
        ``time_s`` [s], ``sm_throughput_frac`` and ``memory_throughput_frac`` [1] (ncu's
        ``sm__throughput`` / ``gpu__compute_memory_throughput``
        ``.avg.pct_of_peak_sustained_elapsed`` / 100).

    Returns
    -------
    (ndarray of float, ndarray of str)
        Seconds (NaN without a duration or both throughputs), and which side set it:
        ``sm_units`` or ``memory_units`` ('' when NaN). A unit busy f of the time needs at
        least f × T at its peak: [NCU-SEC] SpeedOfLight.section (each throughput is the
        busiest sub-unit of its side).
    """
    value, side = _unit_codes(kernels)
    return value, np.asarray(_SIDES, dtype=object)[side]


#: Which side set a launch's unit bound, by code ('': none).
_SIDES = ("", "sm_units", "memory_units")
#: A launch's ``time_at_roof_bound``, by code: the sides', then these.
_BOUND_WORDS = (*_SIDES, "roofline", "launch_floor")


def _unit_codes(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unit_time` with the side as a code into :data:`_SIDES`."""
    t = _col(kernels, "time_s")
    sm, mem = _col(kernels, "sm_throughput_frac"), _col(kernels, "memory_throughput_frac")
    frac = _nanmax([sm, mem], len(kernels))
    value = t * frac
    side = np.where(np.nan_to_num(sm, nan=-1.0) >= np.nan_to_num(mem, nan=-1.0), 1, 2)
    return value, np.where(np.isnan(frac) | ~np.isfinite(value), 0, side)


def _note(
    roof: float, unit: float, side: str, frac: float, pipe: str, pipe_frac: float, disagree: float
) -> str:
    """One sentence when the two bounds differ by more than ``disagree`` (else '')."""
    if not (np.isfinite(roof) and np.isfinite(unit) and roof > 0 and unit > 0):
        return ""
    if unit > disagree * roof:
        unit_name = "SM" if side == "sm_units" else "memory"
        busy = (
            f" (busiest pipe {pipe} {fmt.pct(pipe_frac)})"
            if side == "sm_units" and pipe and np.isfinite(pipe_frac)
            else ""
        )
        counts = (
            "FP work only, not integer, address, load/store or SFU instructions"
            if side == "sm_units"
            else (
                "bytes against the L1/L2/DRAM bandwidth roofs only, not the busiest memory unit"
                " (tags, wavefronts, queues)"
            )
        )
        return (
            f"speed of light: the {unit_name} was busy {fmt.pct(frac)} of the launch{busy}, so with"
            f" the same instructions and bytes it cannot run faster than {fmt.time(unit)},"
            f" {unit / roof:.1f}x the roofline's {fmt.time(roof)}, which counts {counts}"
        )
    if roof > disagree * unit:
        return (
            f"speed of light: the roofline bound {fmt.time(roof)} is {roof / unit:.1f}x what the"
            f" busiest unit's share of the time ({fmt.time(unit)}) allows: a roof is likely below"
            " what this GPU reaches (datasheet/user roof, or the clock)"
        )
    return ""


def launch_floor(
    cc: np.ndarray, spec: dict, own_shortest: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The shortest time any launch takes on each launch's GPU, and how that number was measured.

    Parameters
    ----------
    cc : ndarray of float
        Compute capability per launch (NaN when unknown).
    spec : dict
        ``metrics/thresholds.toml`` [launch_floor]: ``default_s`` and ``default_method`` (the floor
        of any GPU and how it was measured), and ``shortest`` (per compute capability, the
        shortest launch measured: ``s``).
    own_shortest : ndarray of float, optional
        Per launch, the shortest launch of the same GPU in the input itself [s] (NaN: none).

    Returns
    -------
    (ndarray of float, ndarray of str)
        Seconds: min(``default_s``, the architecture's shortest launch, the input's own shortest
        launch on that GPU) (a launch that short happened, so the floor is not above it), and the
        method of that number: never a file name (issue 44: an H100 row cited another report's
        kernel on a GeForce RTX 2070 SUPER).
    """
    default, method = float(spec["default_s"]), str(spec["default_method"])
    floor = np.full(len(cc), default)
    text = np.full(len(cc), method, dtype=object)
    for key, entry in spec.get("shortest", {}).items():
        rows = np.isclose(cc, float(key)) & (float(entry["s"]) < default)
        floor[rows] = float(entry["s"])
        text[rows] = f"launch floor: the shortest gpu__time_duration measured on CC {key}"
    if own_shortest is not None:
        with np.errstate(invalid="ignore"):
            own = (own_shortest > 0) & (own_shortest < floor)
        floor = np.where(own, own_shortest, floor)
        text[own] = "launch floor: this input's shortest launch on this GPU (gpu__time_duration)"
    return floor, text


def apply_speed_of_light(
    kernels: pd.DataFrame,
    pipes: PipeCatalog,
    cc: np.ndarray,
    disagree: float = 2.0,
    floor: tuple[np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Fill ``time_at_roof_s``, ``time_at_roof_bound``, ``saving_s`` and ``speed_of_light_note``.

    Parameters
    ----------
    kernels : DataFrame
        The launch table with roofs filled; ``hot_pipe``/``hot_pipe_frac`` are quoted when present.
    pipes : PipeCatalog
        ``metrics/pipes.toml``.
    cc : ndarray of float
        Compute capability per launch.
    disagree : float, default 2.0
        ``metrics/thresholds.toml`` [speed_of_light].disagree.
    floor : (ndarray, ndarray), optional
        :func:`launch_floor`: seconds and source per launch (none: no floor).

    Returns
    -------
    DataFrame
        A copy with ``time_at_roof_s`` [s] = max(:func:`roofline_time`, :func:`unit_time`, floor)
        where a bound exists, the floor never above the launch's own ``time_s``,
        ``time_at_roof_bound`` (``roofline``, ``sm_units``, ``memory_units``, ``launch_floor`` or
        ''), ``saving_s`` [s] = max(``time_s`` − ``time_at_roof_s``, 0) and ``speed_of_light_note``
        (one sentence when the two bounds differ by more than ``disagree``, else '').
    """
    k = kernels.copy(deep=False)
    roof = roofline_time(k, pipes, cc)
    unit, side = _unit_codes(k)
    use_unit = np.isfinite(unit) & ~(roof >= unit)
    t = np.where(use_unit, unit, roof)
    bound = np.where(use_unit, side, np.where(np.isfinite(roof), 3, 0))  # into _BOUND_WORDS
    time_s = _col(k, "time_s")
    floor_s, floor_src = (
        floor if floor is not None else (np.full(len(k), np.nan), np.full(len(k), "", dtype=object))
    )
    # a launch shorter than the floor shows the floor is lower on its GPU
    floor_s = np.fmin(floor_s, time_s)
    use_floor = np.isfinite(t) & (floor_s > t)
    t = np.where(use_floor, floor_s, t)
    k["time_at_roof_s"] = t
    k["time_at_roof_bound"] = coded_text(np.where(use_floor, 4, bound), list(_BOUND_WORDS))
    k["saving_s"] = np.where(
        np.isfinite(t) & np.isfinite(time_s), np.maximum(time_s - t, 0.0), np.nan
    )
    notes = _bound_notes(k, roof, unit, pd.Categorical.from_codes(side, _SIDES), disagree)
    held = np.maximum(_finite_or_zero(roof), _finite_or_zero(unit))
    _put_floor_notes(notes, use_floor, floor_s, floor_src, held)
    k["speed_of_light_note"] = text_array(notes)
    return k


def _bound_notes(
    k: pd.DataFrame, roof: np.ndarray, unit: np.ndarray, side: pd.Categorical, disagree: float
) -> np.ndarray:
    """Per launch, :func:`_note` on its roofline and unit bounds (computed once
    per distinct row)."""
    sm, mem = _col(k, "sm_throughput_frac"), _col(k, "memory_throughput_frac")
    frac = _nanmax([sm, mem], len(k))
    col = k["hot_pipe"] if "hot_pipe" in k.columns else pd.Series("", index=k.index, dtype=object)
    # a text column stays one: its distinct values found by Arrow, not object by object
    text = isinstance(col.dtype, pd.StringDtype)
    pipe = col.fillna("").array if text else col.astype(object).fillna("").to_numpy()
    pfrac = _col(k, "hot_pipe_frac")
    args = pd.DataFrame(
        {"roof": roof, "unit": unit, "side": side, "frac": frac, "pipe": pipe, "pfrac": pfrac}
    )
    return np.asarray(
        per_distinct(args, list(args.columns), lambda r: _note(*r, disagree)), dtype=object
    )


def _put_floor_notes(
    notes: np.ndarray,
    use_floor: np.ndarray,
    floor_s: np.ndarray,
    floor_src: np.ndarray,
    bound: np.ndarray,
) -> None:
    """Replace, in place, the notes of the launches held at the floor with :func:`_floor_note`."""
    at = np.flatnonzero(np.asarray(use_floor, dtype=bool))
    if len(at):  # each distinct (floor, source, bound) written once
        args = pd.DataFrame({"f": floor_s[at], "s": floor_src[at], "b": bound[at]})
        notes[at] = per_distinct(args, ["f", "s", "b"], lambda r: _floor_note(*r))


def _finite_or_zero(a: np.ndarray) -> np.ndarray:
    """``a`` with NaN and inf replaced by 0."""
    return np.where(np.isfinite(a), a, 0.0)


def _floor_note(floor_s: float, source: str, bound: float) -> str:
    """The note of a launch whose speed of light is the launch floor."""
    return (
        f"speed of light: no launch finishes faster than about {fmt.time(floor_s)} (launch and"
        f" drain; {source}), above the roofline and unit bounds ({fmt.time(bound)})"
    )


def sm_busier(sm: float, mem: float, sol: dict) -> bool:
    """ncu's SpeedOfLight rule says the SM is the busier unit ("High Compute Throughput").

    Parameters
    ----------
    sm, mem : float
        ``sm_throughput_frac`` and ``memory_throughput_frac`` [1].
    sol : dict
        ``metrics/thresholds.toml`` [sol]: ``latency_bound`` (0.60), ``balanced`` (0.10).

    Returns
    -------
    bool
        SM >= ``latency_bound`` and SM − memory >= ``balanced`` ([NCU-SEC] SpeedOfLight.py;
        ROOFLINE_SPEC §8.2; above 80 % ncu says "High Throughput" of the busier unit, the same
        side). False when either is missing.
    """
    return bool(
        np.isfinite(sm)
        and np.isfinite(mem)
        and sm >= float(sol["latency_bound"])
        and sm - mem >= float(sol["balanced"]) - 1e-12
    )


def instruction_verdict(
    f: dict, sol: dict, instruction: dict, pipes: PipeCatalog | None
) -> tuple[str, str, str] | None:
    """The "instruction-bound (non-FP work)" class of one kernel or launch, or None
    when it does not apply.

    Parameters
    ----------
    f : dict
        ``bound`` (classify's), ``precision``, ``level``, ``roof_fraction``, ``sm_throughput_frac``,
        ``memory_throughput_frac``, ``hot_pipe``, ``hot_pipe_frac``.
    sol : dict
        ``metrics/thresholds.toml`` [sol] (``no_bound``: "near the roof").
    instruction : dict
        ``metrics/thresholds.toml`` [instruction]: ``sm_min``, ``ratio``.
    pipes : PipeCatalog or None
        For what runs on the hot pipe and what to try.

    Returns
    -------
    (str, str, str) or None
        ``("instruction_bound", evidence, advice)`` when the FP roofline says memory bound, or
        compute bound below ``no_bound`` of the roof, or has no point (no FP work), while the SM
        throughput is at least ``sm_min`` and at least ``ratio`` × the memory throughput
        ([NCU-SEC] SpeedOfLight.py compares the same two numbers). The advice is about
        instruction count, never coalescing.
    """
    sm, mem = fmt.num(f.get("sm_throughput_frac")), fmt.num(f.get("memory_throughput_frac"))
    if not (np.isfinite(sm) and np.isfinite(mem)):
        return None
    bound, frac = f.get("bound"), fmt.num(f.get("roof_fraction"))
    by_ratio = sm >= float(instruction["sm_min"]) and sm >= float(instruction["ratio"]) * mem
    by_ncu = bound == "memory" and sm_busier(sm, mem, sol)
    if not (by_ratio or by_ncu):
        return None
    has_point = np.isfinite(frac) and bool(f.get("level"))
    if bound not in ("memory", "compute") or (
        bound == "compute" and has_point and frac >= float(sol["no_bound"])
    ):
        return None
    pipe, pfrac = str(f.get("hot_pipe") or ""), float(f.get("hot_pipe_frac", np.nan))
    busy = (
        f"busiest pipe {pipe} {fmt.pct(pfrac)}"
        if pipe and np.isfinite(pfrac)
        else "no pipe metrics"
    )
    why = _instruction_why(sm, mem, by_ratio, sol, instruction)
    fp = _fp_roofline_says(f, bound, frac, has_point)
    evidence = f"SM {fmt.pct(sm)}, memory {fmt.pct(mem)} of peak throughput ({why}); {busy}; {fp}"
    return "instruction_bound", evidence, _instruction_advice(pipe, sm, pipes)


def _instruction_why(sm: float, mem: float, by_ratio: bool, sol: dict, instruction: dict) -> str:
    """Which test found the SM busy: the ``ratio`` over memory, or ncu's High Compute Throughput."""
    if by_ratio:
        return f"SM >= {float(instruction['ratio']):g}x memory"
    return (
        f"SM busier than memory by {fmt.plain(round(100 * (sm - mem)))} points (>="
        f" {fmt.plain(100 * float(sol['balanced']))}) above"
        f" {fmt.pct(float(sol['latency_bound']))}: ncu's High Compute Throughput"
    )


def _fp_roofline_says(f: dict, bound: object, frac: float, has_point: bool) -> str:
    """What the FP roofline shows for the kernel: its point's share of the roof, or why none."""
    if has_point:
        return (
            f"the FP roofline has {str(f.get('precision') or '').upper()} at"
            f" {str(f.get('level')).upper()} {fmt.pct(frac)} of its roof ({bound}-bound)"
        )
    if f.get("has_flop"):
        return "no FP roofline point (FLOPs but no roof for them)"
    return "no FP work counted"


def _instruction_advice(pipe: str, sm: float, pipes: PipeCatalog | None) -> str:
    """What to try on an instruction-bound kernel: fewer instructions, on its busiest pipe first."""
    spec = next((p for p in pipes.pipes if p.name == pipe), None) if pipes is not None else None
    advice = (
        "the SM is busy with instructions the FP roofline does not count: cut instructions, not"
        " bytes (coalescing will not help)"
    )
    if spec is not None:
        advice += f"; the busiest pipe, {pipe}, runs {spec.does}: {spec.advice}"
    advice += (
        "; check integer and address arithmetic, predication and divergent branches, and SFU use"
        " (ncu's InstructionStats section lists the mix); with these instructions the launch can"
        f" get at most {1 / sm:.1f}x faster"
    )
    return advice
