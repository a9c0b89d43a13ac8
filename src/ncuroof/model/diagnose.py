"""Diagnosis: for every kernel (and launch), what limits it, how far it is from that limit, what
to try, and whether its point can be trusted.

The class comes from the bound :mod:`ncuroof.model.classify` gave (roofline position at the binding
level, or ncu's SpeedOfLight rule), refined with the roof fraction and the SpeedOfLight
throughputs:

========================  =========================================================================
class                     when
========================  =========================================================================
``memory_near_roof``      memory bound, at least ``[sol].no_bound`` (80 %) of the roof
``memory_below_roof``     memory bound, below that: the access pattern wastes bandwidth
``compute_near_roof``     compute bound, at least 80 % of the roof
``compute_below_roof``    compute bound, below that: instruction mix, dependencies, no tensor cores
``latency_bound``         SM and memory throughput both below ``[sol].latency_bound`` (60 %):
                          latency bound or under-occupied (small grid when < 1 wave)
``balanced``              both throughputs above 60 % and within ``[sol].balanced`` (10 points)
``instruction_bound``     FP roofline memory bound, below the compute roof or without FP work, but
                          the SM throughput >= ``[instruction].sm_min`` and >= ``ratio`` x memory
                          (:func:`ncuroof.model.speed_of_light.instruction_verdict`)
``not_classified``        failed measurement, or no roofline point and no SpeedOfLight values
========================  =========================================================================

After the class, the limiter rules of :mod:`ncuroof.model.limiters` (``metrics/limiters.toml``)
may name a limiter the roofline point hides (launch-bound, fence, uncoalesced, request-bound, tail,
a non-FP pipe): it leads the evidence, replaces the advice and can set the class. A kernel's
verdict is one of its launches' (:func:`diagnose_kernels`), never made anew.

Thresholds are data in ``metrics/thresholds.toml`` ([sol] from ncu's SpeedOfLight rule,
[diagnosis] ncuroof's own); every verdict lists the numbers that produced it. Advice follows the
roofline literature [Williams et al., CACM 52(4), 2009; Yang et al., "Hierarchical Roofline
analysis", 2020]: memory bound at the roof -> move fewer bytes (fuse, tile for reuse, smaller
types); memory bound below it -> fix the access pattern (coalescing); compute bound below the
roof -> instruction mix, tensor cores; latency bound -> more parallelism or occupancy.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import Catalog, GpuCatalog, PipeCatalog, load_gpus, precision_title
from ..catalog import load as load_catalog
from ..schema import (
    KERNEL_SUMMARY,
    flop_name,
    tensor_path,
    work_unit,
)
from .classify import binding_points, dram_roof_fraction, join_launches
from .distinct import (
    categorical,
    distinct_codes,
    distinct_rows,
    gc_paused,
    per_distinct,
    text_array,
)
from .evidence import SPIN_WAIT
from .limiters import LIMITER_COLUMNS, LIMITER_TEXT
from .limiters import apply as apply_limiters
from .speed_of_light import instruction_verdict
from .summary import grid_sizes, keys_of

__all__ = [
    "CLASSES",
    "FLAG_CODES",
    "diagnose_kernels",
    "diagnose_launches",
    "verdict_text",
    "launch_flags",
    "what_if",
]

#: Plausibility flags: code and what it means. A flag cell is a list of (code, text) pairs, the
#: text giving the numbers and the likely cause.
FLAG_CODES = {
    "above_roof": "a point is above its roof",
    "failed_measurement": "ncu stored NaN for the duration or the FLOP counters",
    "corrupt_record": (
        "the input's record of this launch is damaged: values no GPU can produce, or no name and no"
        " values"
    ),
    "inconsistent_read": (
        "the counts and rates read for this launch disagree on its duration: the reader may have"
        " misread it"
    ),
    "na_metrics": "metrics ncu printed as n/a",
    "missing_metrics": "no FLOP counters or memory traffic",
    "no_work": "a duration but no FLOPs and next to no traffic",
    "flop_above_expected": "more FLOPs counted than --expect says",
    "flop_below_expected": "fewer FLOPs counted than --expect says",
    "dram_below_expected": "less DRAM traffic than --expect says the kernel must move",
    "dram_above_expected": "more DRAM traffic than --expect says the kernel must move",
    "clock_differs": "the SM clock varies between launches of the kernel",
    "sources_disagree": (
        "two sources of one quantity (a counter and its SASS opcode table, dram__bytes and read +"
        " write) disagree beyond [evidence] of metrics/thresholds.toml"
    ),
    "l2_reads_only": (
        "L2 bytes are 0 under a reads-only definition (ncu-legacy) while the report's L2 write"
        " counters hold bytes"
    ),
    "levels_out_of_order": (
        "a memory level counts fewer bytes than the level under it (L1 < L2 or L2 < DRAM): its"
        " definition leaves some traffic out"
    ),
    "fp16_moves": (
        "the FP16 FLOPs come from HFMA2.MMA, register moves the compiler emits: probably moves, not"
        " math"
    ),
}

#: Diagnosis classes, in the order of the table above, with their display text.
CLASSES = {
    "memory_near_roof": "memory-bound, near the roof",
    "memory_below_roof": "memory-bound, below the roof",
    "compute_near_roof": "compute-bound, near the roof",
    "compute_below_roof": "compute-bound, below the roof",
    "latency_bound": "latency-bound / under-occupied",
    "balanced": "balanced",
    "instruction_bound": "instruction-bound (non-FP work)",
    "not_classified": "not classified",
}


def verdict_text(diagnosis: object, limiter: object = "") -> str:
    """The words of a verdict wherever a person reads it (page, terminal, Markdown): the
    limiter's (:data:`ncuroof.model.limiters.LIMITER_TEXT`) where a rule named one, else the
    class's (:data:`CLASSES`); '' for neither.

    Parameters
    ----------
    diagnosis : str
        A key of :data:`CLASSES` (the ``diagnosis`` column).
    limiter : str, optional
        The ``limiter`` column ('' or missing when no rule fired).

    Returns
    -------
    str
    """
    if isinstance(limiter, str) and limiter in LIMITER_TEXT:
        return LIMITER_TEXT[limiter]
    return CLASSES.get(diagnosis, diagnosis) if isinstance(diagnosis, str) else ""


def _tensor_ratio(
    f: dict[str, Any], precision: str, gpus: GpuCatalog | None
) -> tuple[float, str] | None:
    """How much higher the GPU's dense FP16/BF16 tensor roof is than its ``precision``
    roof (datasheet; the GPU of :meth:`GpuCatalog.entry`: ``--gpu`` on a CSV without a device
    name too)."""
    if gpus is None or precision not in ("fp32", "fp16"):
        return None
    spec = gpus.entry(f.get("datasheet_gpu"), f.get("device_name"))
    if spec is None:
        return None
    base = spec.flop_per_s.get(precision)
    tensor = spec.tensor.get("bf16") or spec.tensor.get("fp16_fp32acc") or spec.tensor.get("fp16")
    if not base or not tensor:
        return None
    return tensor / base, spec.name


#: The columns :func:`verdict` reads.
_FACTS = (
    "status",
    "bound",
    "precision",
    "level",
    "ai_flop_per_byte",
    "ridge_flop_per_byte",
    "roof_fraction",
    "dram_bytes_per_s",
    "peak_dram_bytes_per_s",
    "sm_throughput_frac",
    "memory_throughput_frac",
    "occupancy_frac",
    "theoretical_occupancy_frac",
    "waves_per_sm",
    "blocks",
    "threads_per_block",
    "warp_inst",
    "tensor_flop",
    "device_name",
    "datasheet_gpu",
    "hot_pipe",
    "hot_pipe_frac",
    "hot_memory_unit",
    "hot_memory_unit_frac",
    "achievable_roof_fraction",
    "achievable_flop_per_s",
    "achievable_bytes_per_s",
    "peak_flop_source",
    "peak_bytes_source",
    "main_precision",
    "has_time",
    "cc",
    "kernel_name",
    "has_flop",
    "has_bytes",
    "has_roof",
    # the limiter rules' (ncuroof.model.limiters)
    *(c for c in LIMITER_COLUMNS if c != "limiter"),
    "short_launch",
    "spin_barrier",
)


def verdict(
    f: dict[str, Any],
    sol: dict[str, Any],
    gpus: GpuCatalog | None = None,
    low_occupancy: float = 0.5,
    instruction: dict[str, Any] | None = None,
    pipes: PipeCatalog | None = None,
    occupancy_gap: float | None = None,
    occupancy_well_below: float | None = None,
) -> tuple[str, str, str]:
    """Class, evidence and advice for one kernel or launch.

    Parameters
    ----------
    f : dict
        ``status``, ``bound`` (classify's), ``precision``, ``level``, ``ai_flop_per_byte``,
        ``ridge_flop_per_byte``, ``roof_fraction``, ``peak_flop_per_s``, ``sm_throughput_frac``,
        ``memory_throughput_frac``, ``occupancy_frac``, ``theoretical_occupancy_frac``,
        ``waves_per_sm``, ``blocks``, ``threads_per_block``,
        ``tensor_flop``, ``device_name``.
    sol : dict
        ``metrics/thresholds.toml`` [sol].
    gpus : GpuCatalog, optional
        For the tensor-core headroom of FP32/FP16 compute-bound kernels.
    low_occupancy : float, default 0.5
        ``metrics/thresholds.toml`` [diagnosis].low_occupancy: below it a latency-bound
        kernel's advice is to raise occupancy.
    instruction : dict, optional
        ``metrics/thresholds.toml`` [instruction] (default: the installed catalog's).
    pipes : PipeCatalog, optional
        ``metrics/pipes.toml``, for the hot pipe's advice (default: the installed catalog's).
    occupancy_gap : float, optional
        ``metrics/thresholds.toml`` [diagnosis].occupancy_gap (default: the installed catalog's):
        achieved occupancy at or above this share of the theoretical is "at the theoretical".
    occupancy_well_below : float, optional
        ``metrics/thresholds.toml`` [diagnosis].occupancy_well_below (default: the installed
        catalog's): only achieved occupancy below this share of the theoretical is "well below".

    Returns
    -------
    (str, str, str)
        A key of :data:`CLASSES`, the numbers behind it, and what to try; idle lanes and a grid
        under one wave (:func:`lanes`) are added to the evidence and advice of
        every classified verdict.
    """
    occupancy = _occupancy_shares(occupancy_gap, occupancy_well_below)
    got = _limited(f, sol, gpus, low_occupancy, instruction, pipes, occupancy, load_catalog())
    return got[0], got[1], got[2]


def _limited(
    f: dict[str, Any],
    sol: dict[str, Any],
    gpus: GpuCatalog | None,
    low_occupancy: float,
    instruction: dict[str, Any] | None,
    pipes: PipeCatalog | None,
    occupancy: tuple[float, float],
    catalog: Catalog,
) -> tuple[str, str, str, str]:
    """:func:`verdict` with its limiter: the roofline/SpeedOfLight verdict, then the limiter
    rules of ``catalog`` (:func:`ncuroof.model.limiters.apply`), then the idle lanes."""
    c = _Context.of(f, sol)
    base = _verdict(c, f, sol, gpus, low_occupancy, instruction, pipes, occupancy)
    cls, ev, advice, limiter = apply_limiters(f, base, catalog)
    if c.lanes and cls != "not_classified":
        ev, advice = _with_lanes(c.lanes, ev, advice)
    return cls, ev, advice, limiter


def _occupancy_shares(gap: float | None, well_below: float | None) -> tuple[float, float]:
    """``occupancy_gap`` and ``occupancy_well_below`` of :func:`verdict`, each the installed
    catalog's ``[diagnosis]`` value where not given."""
    return (
        float(gap if gap is not None else load_catalog().thresholds["diagnosis"]["occupancy_gap"]),
        float(
            well_below
            if well_below is not None
            else load_catalog().thresholds["diagnosis"]["occupancy_well_below"]
        ),
    )


def _with_lanes(idle: str, ev: str, advice: str) -> tuple[str, str]:
    """Evidence and advice with the idle lanes and grid (:func:`lanes`) and their fixes added."""
    if idle not in ev:
        ev += f"; {idle}"
    fixes = [
        x
        for x, ok in (
            (f"blocks of a multiple of {WARP} threads (128-256 are typical)", "lanes" in idle),
            ("enough blocks for a full wave", "wave" in idle),
        )
        if ok
    ]
    return ev, advice + f"; {idle}: use " + " and ".join(fixes)


def _verdict(
    c: _Context,
    f: dict[str, Any],
    sol: dict[str, Any],
    gpus: GpuCatalog | None,
    low_occupancy: float,
    instruction: dict[str, Any] | None,
    pipes: PipeCatalog | None,
    occupancy_gap: tuple[float, float],
) -> tuple[str, str, str]:
    """:func:`verdict` before the lane words (``occupancy_gap``: at-the-theoretical and
    well-below shares)."""
    if f.get("status") in ("failed_measurement", "corrupt_record") or c.bound == "unknown":
        return ("not_classified", *unclassified(f, gpus))
    latency, balanced = float(sol["latency_bound"]), float(sol["balanced"])
    if (both_busy := _balanced(c, latency, balanced)) is not None:
        unit = _issue_unit(f, pipes)
        if unit:  # memory SOL is instruction issue: not "near the best"
            return both_busy[0], both_busy[1] + f"; {unit[0]}", unit[1]
        return both_busy
    if c.bound == "latency":
        return _latency(c, latency, low_occupancy, occupancy_gap)
    inst = instruction_verdict(
        f,
        sol,
        instruction or load_catalog().thresholds["instruction"],
        pipes or load_catalog().pipes,
    )
    if inst is not None:
        return inst
    ev = _bound_evidence(c)
    if c.bound == "memory":
        cls, ev, advice = _memory(c, ev, float(sol["no_bound"]), latency)
        unit = _issue_unit(f, pipes)
        if unit and cls == "memory_below_roof":
            ev, advice = ev + f"; {unit[0]}", unit[1] + f"; {advice}"
        return cls, ev, advice
    cls, ev, advice = _compute(
        c, ev, float(sol["no_bound"]), fmt.num(f.get("tensor_flop")), f, gpus
    )
    if cls == "compute_below_roof":
        advice = advice.replace(_RAISE_FMA, _below_roof_lever(c.prec, f, pipes))
    return cls, ev, advice


def _balanced(c: _Context, latency: float, balanced: float) -> tuple[str, str, str] | None:
    """The "balanced" verdict when SM and memory throughput are both busy and close, else None."""
    if not (
        math.isfinite(c.sm)
        and math.isfinite(c.mem)
        and c.sm >= latency
        and c.mem >= latency
        and abs(c.sm - c.mem) <= balanced
    ):
        return None
    return (
        "balanced",
        (
            f"{c.sol_text}: both above {fmt.pct(latency)} and within {fmt.pct(balanced)} of"
            " each other"
        ),
        (
            "compute and memory are both busy: gains need both fewer instructions and fewer"
            " bytes; near the best this algorithm allows"
        ),
    )


def _issue_unit(f: dict[str, Any], pipes: PipeCatalog | None) -> tuple[str, str] | None:
    """(evidence, advice) where the unit behind the memory SpeedOfLight counts instructions issued,
    not bytes (``metrics/pipes.toml`` [hot_memory_unit], ``issue = true``): the memory side is
    busy with too many memory instructions (issue 44: SGEMM at 98 % memory SOL from
    l1tex__lsuin_requests, L1 bank reads 12.9 %, DRAM 51 %), else None."""
    unit, frac = _word(f.get("hot_memory_unit")), fmt.num(f.get("hot_memory_unit_frac"))
    cat = pipes or load_catalog().pipes
    spec = next((u for u in cat.memory_units if u.name == unit), None)
    if spec is None or unit not in cat.issue_units or not math.isfinite(frac):
        return None
    return (
        f"memory throughput is {unit} at {fmt.pct(frac)}: {spec.does}",
        f"the memory side is busy issuing instructions, not moving bytes: {spec.advice}; then"
        " fewer instructions on the SM side too",
    )


def _bound_evidence(c: _Context) -> str:
    """Evidence of a memory or compute verdict: the roofline point, else SpeedOfLight alone (which
    then sets ``c.frac`` to the bound side's throughput)."""
    if math.isfinite(c.frac) and c.level:
        cmp = "<" if c.bound == "memory" else ">="
        return (
            f"{precision_title(c.prec)} at {c.level}: AI {fmt.g(c.ai)} {work_unit(c.prec)}/B {cmp}"
            f" ridge {fmt.g(c.ridge)}, "
            + (c.achievable_text or f"{fmt.pct(c.frac)} of roof")
            + (f"; {c.placed}" if c.placed else "")
            + (f"; {c.sol_text}" if c.sol_text else "")
            + (f"; {c.shape}" if c.shape else "")
        )
    c.frac = c.mem if c.bound == "memory" else c.sm
    if c.bound == "memory" and not math.isfinite(c.frac) and math.isfinite(c.dram):
        c.frac, c.level = c.dram, "DRAM"  # classify's verdict from DRAM traffic alone
        return (
            f"DRAM traffic at {fmt.pct(c.dram)} of the DRAM roof (bytes / time / roof; no FLOP"
            " counters for a roofline point)"
            + (f"; {c.sol_text}" if c.sol_text else "")
            + (f"; {c.shape}" if c.shape else "")
        )
    return f"{c.sol_text} (no roofline point: from SpeedOfLight only)" + (
        f"; {c.shape}" if c.shape else ""
    )


#: What a kernel name may look like to be quoted in a command (else ``NAME``).
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,79}")


def _gpu_option(f: dict[str, Any], gpus: GpuCatalog | None) -> str:
    """``--gpu a10g``, or ``--gpu NAME`` with the datasheet entries of the launch's
    compute capability."""
    cat = gpus or load_gpus()
    spec = cat.entry(device=f.get("device_name"))
    if spec is not None:
        return f"--gpu {spec.id}"
    cc = str(f.get("cc") or "")
    same = [g.id for g in cat.gpus if cc and g.cc == cc]
    if len(same) == 1:
        return f"--gpu {same[0]}"
    return "--gpu NAME" + (
        f" (CC {cc}: {', '.join(same)})" if same else " (an id in metrics/gpus.toml)"
    )


def _profile_command(f: dict[str, Any]) -> str:
    """The one command that collects the roofline counters for this kernel."""
    name = _word(f.get("kernel_name"))
    k = name if _PLAIN_NAME.fullmatch(name) else "NAME"
    return f"ncuroof profile -k {k} -c 1 -- ./app (ncu --set roofline)"


def unclassified(f: dict[str, Any], gpus: GpuCatalog | None = None) -> tuple[str, str]:
    """Evidence and advice of a "not classified" verdict: exactly what is missing, and the fix.

    Parameters
    ----------
    f : dict
        ``status``, ``has_time`` (or ``time_s``), ``has_flop``, ``has_bytes``, ``has_roof`` (bool:
        any FLOPs, any bytes, any roof), ``sm_throughput_frac``, ``memory_throughput_frac``,
        ``device_name``, ``cc``, ``kernel_name``.
    gpus : GpuCatalog, optional
        For the ``--gpu`` entries of the launch's compute capability (default
        ``metrics/gpus.toml``).

    Returns
    -------
    (str, str)
        Evidence ("missing: ...; present: ...") and the one option or command that fixes it:
        ``--gpu`` when the input has FLOPs and bytes and only the roofs are missing, a re-profile
        with the roofline counters when counters are missing or ncu failed, the ``.ncu-rep`` for a
        damaged export.
    """
    unread = _unread(f)
    if unread is not None:
        return unread
    flop, byts, roof = bool(f.get("has_flop")), bool(f.get("has_bytes")), bool(f.get("has_roof"))
    missing, present = _missing_and_present(f, flop, byts, roof)
    evidence = (
        "missing: " + ", ".join(missing) + ("; present: " + ", ".join(present) if present else "")
    )
    return evidence, _unclassified_fix(f, gpus, flop, byts, roof)


def _unread(f: dict[str, Any]) -> tuple[str, str] | None:
    """Evidence and advice of a failed measurement or a damaged record, else None."""
    status = f.get("status")
    if status == "failed_measurement":
        return (
            "missing: the measurement (ncu stored NaN for the duration or the FLOP counters)",
            f"re-profile it: {_profile_command(f)}",
        )
    if status == "corrupt_record":
        return (
            (
                "missing: a readable record (the input holds values no GPU can produce, named in"
                " notes)"
            ),
            "analyze the .ncu-rep the export came from, or re-profile: " + _profile_command(f),
        )
    return None


def _missing_and_present(
    f: dict[str, Any], flop: bool, byts: bool, roof: bool
) -> tuple[list[str], list[str]]:
    """What an unclassified row lacks and what it holds, in the words of its evidence."""
    sm, mem, t = (
        fmt.num(f.get("sm_throughput_frac")),
        fmt.num(f.get("memory_throughput_frac")),
        fmt.num(f.get("time_s")),
    )
    timed = bool(f["has_time"]) if "has_time" in f else math.isfinite(t)
    missing = [
        x
        for x, ok in (("FLOP counters", flop), ("memory traffic", byts), ("duration", timed))
        if not ok
    ]
    if (flop or byts) and not roof:
        missing.append("roofs (no device name and no peak_sustained metrics)")
    present = [
        x
        for x, ok in (
            ("FLOPs", flop),
            ("bytes", byts),
            ("duration" + (f" {fmt.time(t)}" if math.isfinite(t) else ""), timed),
        )
        if ok
    ]
    if math.isfinite(sm) != math.isfinite(mem):
        have_sm = math.isfinite(sm)
        present.append(
            f"{'SM' if have_sm else 'memory'} throughput {fmt.pct(sm if have_sm else mem)}"
        )
        missing.append(
            "memory throughput (gpu__compute_memory_throughput)"
            if have_sm
            else "SM throughput (sm__throughput)"
        )
    elif not math.isfinite(sm):
        missing.append("SpeedOfLight throughputs")
    if flop and byts and roof:
        missing.insert(0, "a roof for the precision that holds the work")
    return missing, present


def _unclassified_fix(
    f: dict[str, Any], gpus: GpuCatalog | None, flop: bool, byts: bool, roof: bool
) -> str:
    """The one option or command that gives an unclassified row what it lacks."""
    if flop and byts and roof:
        return "pass its roof: --peak-flops PRECISION=FLOP_PER_S (e.g. tensor=...)"
    if flop and byts and not roof:
        return f"pass {_gpu_option(f, gpus)}, or --peak-flops/--peak-bandwidth with the GPU's roofs"
    fix = f"re-profile with the roofline counters: {_profile_command(f)}"
    if byts and not roof:
        fix = f"pass {_gpu_option(f, gpus)} for the DRAM roof; for FLOPs {fix}"
    return fix


def _smaller_types(prec: str) -> str:
    """The smaller-data-type lever for work of precision ``prec``: an FP64 code (science, where
    the accuracy is the point) is pointed at FP32 where accuracy allows, not at bf16/fp8 (issue 50
    class 9)."""
    if prec == "fp64":
        return "fp32 where the accuracy allows (half the bytes of fp64; mixed precision)"
    return "smaller data types (bf16/fp8 move 2-4x fewer bytes)"


def _waves(waves: float) -> str:
    """``0.925 waves``, ``1 wave`` (the noun agrees with the number as printed: "1 waves" was
    issue 50 class 9)."""
    shown = fmt.plain(waves)
    return f"{shown} {'wave' if shown == '1' else 'waves'}"


def _word(value: object) -> str:
    """A text field of a row as words, ``""`` when missing (None, NaN, pd.NA): a NaN is truthy,
    and ``str(nan or "")`` printed "at the NAN roof" (issue 50 class 9)."""
    return value if isinstance(value, str) else ""


@dataclass
class _Context:
    """The numbers one verdict reads, and their text (``shape``: grid and occupancy
    for the evidence)."""

    bound: str
    prec: str
    level: str
    sm: float
    mem: float
    frac: float
    ai: float
    ridge: float
    occ: float
    theo: float
    grid: str
    small_grid: bool
    waves: float
    idle_grid: str
    sol_text: str
    shape: str
    achievable_frac: float = math.nan
    achievable_text: str = ""
    placed: str = ""
    lanes: str = ""
    dram: float = math.nan  # DRAM bandwidth / DRAM roof, for a verdict from traffic alone

    @classmethod
    def of(cls, f: dict[str, Any], sol: dict[str, Any]) -> _Context:
        sm, mem = fmt.num(f.get("sm_throughput_frac")), fmt.num(f.get("memory_throughput_frac"))
        waves, blocks, threads = (
            fmt.num(f.get("waves_per_sm")),
            fmt.num(f.get("blocks")),
            fmt.num(f.get("threads_per_block")),
        )
        grid = _grid_text(waves, blocks, threads)
        occ, theo = fmt.num(f.get("occupancy_frac")), fmt.num(f.get("theoretical_occupancy_frac"))
        occ_text = (
            f"achieved occupancy {fmt.pct(occ)}"
            + (f" (theoretical {fmt.pct(theo)})" if math.isfinite(theo) else "")
            if math.isfinite(occ)
            else ""
        )
        return cls(
            bound=f.get("bound", "unknown"),
            prec=_word(f.get("precision")),
            level=_word(f.get("level")).upper(),
            sm=sm,
            mem=mem,
            frac=fmt.num(f.get("roof_fraction")),
            ai=fmt.num(f.get("ai_flop_per_byte")),
            ridge=fmt.num(f.get("ridge_flop_per_byte")),
            occ=occ,
            theo=theo,
            grid=grid,
            waves=waves,
            idle_grid=_idle_grid(blocks, threads, fmt.num(f.get("warp_inst"))),
            small_grid=math.isfinite(waves) and waves < float(sol["small_grid_waves"]),
            sol_text=_sol_text(sm, mem),
            shape="; ".join(x for x in (grid, occ_text) if x),
            lanes=_lanes(threads),
            dram=float(
                dram_roof_fraction(
                    fmt.num(f.get("dram_bytes_per_s")), fmt.num(f.get("peak_dram_bytes_per_s"))
                )
            ),
            **_achievable(f),
        )


@functools.lru_cache(maxsize=4096)
def _grid_text(waves: float, blocks: float, threads: float) -> str:
    """``0.8 waves per SM (64 blocks of 256 threads)``, or '' without waves: made once per launch
    configuration, which the launches of a kernel repeat."""
    if not math.isfinite(waves):
        return ""
    return f"{_waves(waves)} per SM" + (
        f" ({_count(blocks, 'block')} of {_count(threads, 'thread')})"
        if math.isfinite(blocks) and math.isfinite(threads)
        else ""
    )


@functools.lru_cache(maxsize=4096)
def _lanes(threads: float) -> str:
    """:func:`lanes` of a block size, made once per block size."""
    return lanes(threads)


def _count(n: float, noun: str) -> str:
    """``16,318,464 blocks``, ``1 thread``: a count with thousands separators and the
    noun in agreement."""
    return f"{fmt.plain(n)} {fmt.plural(int(n), noun)}"


#: Threads of a warp (every NVIDIA GPU so far; CUDA's warpSize).
WARP = 32


def lanes(threads: float, blocks: float = math.nan, waves: float = math.nan) -> str:
    """What the block size and the grid leave idle, with the numbers ('' when nothing).

    Parameters
    ----------
    threads : float
        Threads per block (``launch__block_size``; NaN when unknown).
    blocks : float
        Blocks of the grid (``launch__grid_size``).
    waves : float
        ``launch__waves_per_multiprocessor``.

    Returns
    -------
    str
        Blocks below a warp ("blocks of 1 thread: 31 of 32 lanes of every warp idle"), a partial
        last warp per block (its busy lanes and the share of lanes idle), and a grid under one wave
        (its blocks, the share of one wave they fill), joined by "; ". A warp is 32 threads; a
        block of n threads occupies ceil(n / 32) warps, so (32·ceil(n/32) − n) lanes idle.
    """
    out = []
    if math.isfinite(threads) and threads >= 1:
        n = int(threads)
        warps = -(-n // WARP)
        idle = warps * WARP - n
        if n < WARP:
            out.append(
                f"blocks of {_count(n, 'thread')}: {idle} of {WARP} lanes of every warp idle"
            )
        elif idle:
            out.append(
                f"blocks of {n} threads: the last of each block's {warps} warps has"
                f" {n - (warps - 1) * WARP} of {WARP} lanes busy ({fmt.pct(idle / (warps * WARP))}"
                " of lanes idle)"
            )
    if math.isfinite(waves) and 0 < waves < 1:
        out.append(
            f"the grid fills {fmt.pct(waves)} of one wave"
            + (
                f" ({_count(blocks, 'block')}, a full wave is about {fmt.plain(blocks / waves)})"
                if math.isfinite(blocks)
                else ""
            )
        )
    return "; ".join(out)


def _sol_text(sm: float, mem: float) -> str:
    """``SM 68%, memory 42% of peak throughput``; with one of them, that one and what the input
    lacks; '' with none."""
    if math.isfinite(sm) and math.isfinite(mem):
        return f"SM {fmt.pct(sm)}, memory {fmt.pct(mem)} of peak throughput"
    if math.isfinite(sm):
        return f"SM {fmt.pct(sm)} of peak throughput (no memory throughput in the input)"
    if math.isfinite(mem):
        return f"memory {fmt.pct(mem)} of peak throughput (no SM throughput in the input)"
    return ""


def _achievable(f: dict[str, Any]) -> dict[str, Any]:
    """The binding point's achievable-roof fraction and its text (:func:`ncuroof.fmt.achievable`),
    and where the kernel was placed when its main precision has no roof."""
    prec, main = _word(f.get("precision")), _word(f.get("main_precision"))
    placed = (
        f"placed at {precision_title(prec)}: no roof for its main precision {precision_title(main)}"
        if prec and main and prec != main
        else ""
    )
    ach = fmt.num(f.get("achievable_roof_fraction"))
    if not math.isfinite(ach):
        return {"placed": placed}
    level = _word(f.get("level")).upper()
    memory = f.get("bound") == "memory" and math.isfinite(fmt.num(f.get("achievable_bytes_per_s")))
    compute = f.get("bound") == "compute" and math.isfinite(fmt.num(f.get("achievable_flop_per_s")))
    roof = (
        f"{level} bandwidth" if memory else f"{precision_title(prec)} roof" if compute else "roof"
    )
    source = f.get("peak_bytes_source") if f.get("bound") == "memory" else f.get("peak_flop_source")
    return {
        "achievable_frac": ach,
        "placed": placed,
        "achievable_text": fmt.achievable(
            ach, f.get("roof_fraction"), roof, source if isinstance(source, str) else ""
        ),
    }


def _latency(
    c: _Context, latency: float, low_occupancy: float, occupancy_gap: tuple[float, float]
) -> tuple[str, str, str]:
    ev = f"{c.sol_text}, both below {fmt.pct(latency)} (ncu SOLBottleneck rule)" + (
        f"; {c.shape}" if c.shape else ""
    )
    if c.small_grid and c.idle_grid:
        advice = c.idle_grid
    elif c.small_grid:
        advice = (
            f"too little parallel work: {c.grid} cannot fill the GPU; launch more blocks (split the"
            " work, batch small launches, or merge them with CUDA graphs)"
        )
    elif math.isfinite(c.occ) and c.occ < low_occupancy:
        at_theo = math.isfinite(c.theo) and c.occ >= occupancy_gap[0] * c.theo
        near_theo = math.isfinite(c.theo) and c.occ >= occupancy_gap[1] * c.theo
        limit = (
            f"achieved is at the launch's theoretical {fmt.pct(c.theo)}: raise that limit with"
            " fewer registers or less shared memory per block, or other block sizes"
            if at_theo
            else (
                f"the launch allows only {fmt.pct(c.theo)}: use fewer registers or less shared"
                " memory per block, or other block sizes"
                if math.isfinite(c.theo) and c.theo < low_occupancy
                else (
                    f"achieved is close to the theoretical {fmt.pct(c.theo)}"
                    f" ({fmt.pct(c.occ / c.theo)} of it): the launch's own limit binds; raise it"
                    " with fewer registers or less shared memory per block, or other block sizes"
                    if near_theo
                    else f"achieved is well below the theoretical {fmt.pct(c.theo)}: "
                    + _imbalance(c.waves)
                    if math.isfinite(c.theo)
                    else "check the theoretical occupancy (ncu's Occupancy section) for its limiter"
                )
            )
        )
        advice = (
            f"neither unit is busy and only {fmt.pct(c.occ)} of the SM's warps are active: raise"
            f" occupancy; {limit}; then instruction-level parallelism"
        )
    else:
        advice = (
            "neither unit is busy: latency bound; raise instruction-level parallelism and read"
            " ncu's warp-stall reasons (WarpStateStats) for what the warps wait on"
        )
    return "latency_bound", ev, advice


def _idle_grid(blocks: float, threads: float, warp_inst: float) -> str:
    """Advice for a grid whose warps mostly exit after the prologue: fewer warp instructions per
    launched warp than ``[diagnosis].prologue_warp_inst`` means most warps did no work, so the fix
    is a smaller grid (or merging the kernel), not more blocks (issue 44: 4,226 warps launched, 2
    touching memory). Up to ``little_work_warp_inst`` the warps do little work each, and the same
    fix is offered as likely, not certain (issue 50: 37.8 per warp missed a hard cut at 32). ''
    where neither holds or the numbers are missing."""
    if not (math.isfinite(blocks) and math.isfinite(threads) and math.isfinite(warp_inst)):
        return ""
    warps = blocks * math.ceil(threads / WARP)
    th = load_catalog().thresholds["diagnosis"]
    limit, little = float(th["prologue_warp_inst"]), float(th["little_work_warp_inst"])
    if warps <= 0 or warp_inst >= little * warps:
        return ""
    each = (
        f"{_count(warps, 'warp')} launched execute {_count(warp_inst, 'warp instruction')}"
        f" ({fmt.g(warp_inst / warps)} each"
    )
    if warp_inst >= limit * warps:
        return (
            f"the grid may be larger than the work: {each}, under {fmt.plain(little)}), so each"
            " warp does little work and launch overhead weighs: launch fewer threads that each do"
            " more (a grid-stride loop) before launching more blocks"
        )
    return (
        f"the grid is larger than the work: {each}, under the {fmt.plain(limit)} of a prologue"
        " that checks its index and exits), so most warps do no work and launch overhead"
        " dominates: launch a smaller grid sized to the work, or merge this kernel into its"
        " neighbour (more blocks would not help)"
    )


def _imbalance(waves: float) -> str:
    """Why achieved occupancy falls well below the theoretical: a tail of partial waves only where
    the grid runs more than one wave and the last is partial (issue 44: not at exactly 1 wave)."""
    if math.isfinite(waves) and waves > 1 and not math.isclose(waves, round(waves), abs_tol=0.05):
        return f"load imbalance or a tail of partial waves ({_waves(waves)} per SM)"
    if math.isfinite(waves) and waves <= 1.05:
        return (
            "load imbalance within the single wave (warps that finish early or wait at a"
            " barrier, no partial-wave tail)"
        )
    return "load imbalance between blocks or warps that finish early"


def _memory(c: _Context, ev: str, near: float, latency: float) -> tuple[str, str, str]:
    level, frac, ai, ridge = c.level, c.frac, c.ai, c.ridge
    gap = ridge / ai if math.isfinite(ridge) and math.isfinite(ai) and ai > 0 else math.nan
    unit = work_unit(c.prec)
    gap_text = (
        f"AI {fmt.g(ai)} {unit}/B against a ridge of {fmt.g(ridge)}: a {fmt.plain(round(gap))}x gap"
        if math.isfinite(gap) and gap >= 1.5
        else f"AI {fmt.g(ai)} {unit}/B"
        if math.isfinite(ai)
        else ""
    )
    if math.isfinite(frac) and frac >= near:
        advice = (
            f"at the {level or 'memory'} roof: only moving fewer bytes helps"
            + (f" ({gap_text})" if gap_text else "")
            + "; fuse with neighbouring kernels, tile for reuse in shared memory or registers, use"
            f" {_smaller_types(c.prec)}"
        )
        return "memory_near_roof", ev, advice
    if math.isfinite(frac) and frac >= latency and math.isfinite(gap) and gap >= 10:
        advice = (
            f"{fmt.pct(frac)} of the {level or 'memory'} roof: bandwidth is mostly used, the lever"
            f" is reuse ({gap_text}); tile for reuse in shared memory or registers, fuse, use"
            " smaller data types; then check coalescing"
        )
    else:
        advice = (
            f"{fmt.pct(frac)} of the {level or 'memory'} roof: the access pattern wastes bandwidth;"
            " check coalescing (sectors per request), strided or scattered accesses and bank"
            " conflicts, then reduce bytes" + (f" ({gap_text})" if gap_text else "")
        )
    if math.isfinite(c.achievable_frac) and c.achievable_frac >= near:
        advice = (
            f"{fmt.pct(c.achievable_frac)} of the achievable {level or 'memory'} bandwidth: near"
            " what this GPU sustains, so only moving fewer bytes helps"
            + (f" ({gap_text})" if gap_text else "")
            + "; fuse, tile for reuse, use smaller data types"
        )
    if c.small_grid and c.idle_grid:
        advice += f"; also {c.idle_grid}"
    elif c.small_grid:
        advice += f"; also {c.grid}: too few blocks in flight to saturate memory"
    return "memory_below_roof", ev, advice


def _compute(
    c: _Context, ev: str, near: float, tensor: float, f: dict[str, Any], gpus: GpuCatalog | None
) -> tuple[str, str, str]:
    prec, frac = c.prec, c.frac
    ratio = _tensor_ratio(f, prec, gpus) if not (tensor > 0) else None
    if math.isfinite(frac) and frac >= near:
        advice = "at the compute roof: only less work (an algorithmic change) helps"
        if ratio is not None:
            advice += (
                f", or tensor cores: the {ratio[1]} dense BF16/FP16 tensor roof is {ratio[0]:.0f}x"
                f" the {precision_title(prec)} roof"
            )
        return "compute_near_roof", ev, advice
    advice = (
        f"{fmt.pct(frac)} of the {precision_title(prec) or 'compute'} roof: the instruction mix or"
        " dependencies limit it"
    )
    if ratio is not None:
        advice += (
            f"; no tensor-core work: the {ratio[1]} dense BF16/FP16 tensor roof is {ratio[0]:.0f}x"
            " higher"
        )
    advice += _RAISE_FMA
    if c.small_grid:
        advice += f"; also {c.grid}: too few blocks"
    return "compute_below_roof", ev, advice


_RAISE_FMA = "; raise FMA share and ILP, and read ncu's warp-stall reasons"


def _below_roof_lever(prec: str, f: dict[str, Any], pipes: PipeCatalog | None) -> str:
    """What to try below a compute roof: where the busiest pipe is not the one that runs the
    precision's work (``[diagnosis].fp_pipes`` / ``tensor_pipes``), that pipe and the instructions
    to cut (issue 44: an INT8 IMMA kernel at 54 % of its tensor roof with the ALU pipe at 69 % was
    told to raise FMA share); else raise the FMA share (FP) or keep the MMAs fed (tensor)."""
    th = load_catalog().thresholds["diagnosis"]
    tensor = prec.startswith("tensor")
    own = th["tensor_pipes"] if tensor else th["fp_pipes"]
    pipe, pfrac = _word(f.get("hot_pipe")), fmt.num(f.get("hot_pipe_frac"))
    spec = next((p for p in (pipes or load_catalog().pipes).pipes if p.name == pipe), None)
    if spec is not None and pipe not in own and math.isfinite(pfrac):
        return (
            f"; the busiest pipe is {pipe} at {fmt.pct(pfrac)}, not the"
            f" {'tensor' if tensor else 'FP'} pipe: it runs {spec.does}; cut those instructions"
            f" ({spec.advice}), and read ncu's warp-stall reasons"
        )
    if tensor:
        return (
            "; keep the tensor pipe fed: more MMAs in flight per warp (larger tiles, asynchronous"
            " copies overlapping the math), and read ncu's warp-stall reasons"
        )
    return _RAISE_FMA


def launch_flags(
    kernels: pd.DataFrame, points: pd.DataFrame, thresholds: dict[str, Any]
) -> pd.Series:
    """Plausibility flags of each launch (an empty list when none).

    Parameters
    ----------
    kernels : DataFrame
        The launch table.
    points : DataFrame
        Its points table.
    thresholds : dict
        ``metrics/thresholds.toml`` [diagnosis].

    Returns
    -------
    Series of lists of (code, text)
        Indexed like ``kernels``; codes from :data:`FLAG_CODES`. Flags: ``above roof`` (a point over
        ``above_roof`` × its roof, with the likely cause: a datasheet or user roof too low,
        L2-resident data, estimated tensor weighting, sparsity, or the clock),
        ``failed measurement``, ``n/a metrics`` (values ncu stored as n/a), ``no work measured`` (a
        duration but no FLOPs and at most ``no_work_bytes`` at every level).
    """
    out: list[list[tuple[str, str]]] = [[] for _ in range(len(kernels))]
    _above_roof_flags(out, kernels, points, thresholds)
    _status_flags(out, kernels)
    _missing_flags(out, kernels)
    _asked_flags(out, kernels, thresholds)
    _no_work_flags(out, kernels, float(thresholds["no_work_bytes"]))
    return pd.Series(out, index=kernels.index, dtype=object)


_Flags = list[list[tuple[str, str]]]


def _asked_flags(out: _Flags, kernels: pd.DataFrame, thresholds: dict[str, Any]) -> None:
    """Add the ``--expect`` flags (:func:`_expect_flags`) of the launches with an expected work,
    made once per distinct row of the numbers they read (in place)."""
    expected = kernels.reindex(columns=["expected_flop", "expected_dram_bytes"]).to_numpy(float)
    asked = np.isfinite(expected).any(axis=1)
    if asked.any():
        cols = [c for c in _EXPECT_FACTS if c in kernels.columns]
        made = per_distinct(kernels.loc[asked], cols, lambda r: _expect_flags(r, thresholds))
        for i, flags in zip(np.flatnonzero(asked), made, strict=True):
            out[i] += flags


def _above_roof_flags(
    out: _Flags, kernels: pd.DataFrame, points: pd.DataFrame, thresholds: dict[str, Any]
) -> None:
    """Add each launch's ``above_roof`` flags (:func:`_above_roof`), once each (in place)."""
    above = _above_roof(kernels, points, thresholds)
    if not above:
        return
    pos = pd.Series(
        np.arange(len(kernels)),
        index=pd.MultiIndex.from_arrays([kernels["source"], kernels["launch_id"]]),
    )
    for (src, lid), flag in above:
        if flag not in out[pos[(src, lid)]]:
            out[pos[(src, lid)]].append(flag)


def _is(col: pd.Series, value: str) -> np.ndarray:
    """Whether each cell of ``col`` is ``value`` (a boolean array; False where missing)."""
    return (col == value).to_numpy(dtype=bool, na_value=False)


def _status_flags(out: _Flags, kernels: pd.DataFrame) -> None:
    """Add the flags of each launch's status and of its coded notes (:data:`_NOTE_FLAGS`: the code
    of a :class:`ncuroof.schema.Note`, never its words), in place."""
    status = kernels["status"]  # compared as the text column it is, not as objects
    for i in np.flatnonzero(_is(status, "failed_measurement")):
        out[i].append(("failed_measurement", "ncu stored NaN, not plotted"))
    for i in np.flatnonzero(_is(status, "corrupt_record")):
        out[i].append(("corrupt_record", "the input is damaged (see notes), not plotted"))
    for i, flags in _note_flags(kernels["notes"]).items():
        out[i] += flags


def _missing_flags(out: _Flags, kernels: pd.DataFrame) -> None:
    """Add ``missing_metrics`` to each ``no_roofline_metrics`` launch, saying what it
    holds (in place); the text is made once per distinct combination of what is held."""
    rows = np.flatnonzero(_is(kernels["status"], "no_roofline_metrics"))
    if not len(rows):
        return
    held = evidence_facts(kernels)
    sm, mem = (
        kernels.reindex(columns=[c])[c].to_numpy(float)[rows]
        for c in ("sm_throughput_frac", "memory_throughput_frac")
    )
    facts = np.column_stack(
        [
            held["has_flop"].to_numpy(bool)[rows],
            held["has_bytes"].to_numpy(bool)[rows],
            np.isfinite(kernels["time_s"].to_numpy(float)[rows]),
            np.isfinite(sm),
            np.isfinite(mem),
        ]
    )
    first, inverse = distinct_codes(list(facts.T))
    texts = [_missing_text(*map(bool, facts[f])) for f in first]
    for i, k in zip(rows, inverse):
        out[i].append(("missing_metrics", texts[k]))


def _no_work_flags(out: _Flags, kernels: pd.DataFrame, no_work: float) -> None:
    """Add ``no_work`` to each ``ok`` launch with a duration, no FLOPs and at most ``no_work`` [B]
    at every level (in place)."""
    time_s = kernels["time_s"].to_numpy(float)
    work = kernels.reindex(columns=["fp64_flop", "fp32_flop", "fp16_flop", "tensor_flop"]).to_numpy(
        float
    )
    byts = kernels.reindex(columns=["dram_bytes", "l2_bytes", "l1_bytes"]).to_numpy(float)
    idle = (
        _is(kernels["status"], "ok")
        & np.isfinite(time_s)
        & ~(np.nan_to_num(work) > 0).any(axis=1)
        & ~(np.nan_to_num(byts) > no_work).any(axis=1)
        & np.isfinite(byts).any(axis=1)
    )
    for i in np.flatnonzero(idle):
        out[i].append(
            (
                "no_work",
                f"{fmt.time(time_s[i])} with no FLOPs and at most {fmt.plain(no_work)} B per level",
            )
        )


#: The columns :func:`_expect_flags` reads.
_EXPECT_FACTS = (
    "expected_flop",
    "expected_dram_bytes",
    "fp64_flop",
    "fp32_flop",
    "fp16_flop",
    "tensor_flop",
    "dram_bytes",
    "status",
)


#: The flags a launch's coded notes raise (:data:`ncuroof.schema.NOTE_CODES`), in this order.
#: The texts are sentences a person reads (the terminal prints them without the codes, issue 50).
_NOTE_FLAGS = {
    "na_metrics": "ncu stored no value for some metrics (the notes name them)",
    "inconsistent_read": (
        "counts and rates of this launch disagree; check it with --reader ncu_report"
    ),
    "sources_disagree": "two sources of one value disagree (the notes give both)",
    "l2_reads_only": "the L2 definition counts reads only, not writes (the notes say how much)",
    "levels_out_of_order": (
        "a memory level counts fewer bytes than the level under it (the notes say why)"
    ),
    "fp16_moves": "its FP16 FLOPs are probably register moves, not math",
}


def _note_flags(notes: pd.Series) -> dict[int, list[tuple[str, str]]]:
    """The flags each launch's coded notes raise (:data:`_NOTE_FLAGS`: the code of a
    :class:`ncuroof.schema.Note`, never its words), by position; launches without one are absent.
    The codes of all notes are compared at once, not launch by launch."""
    cells = notes.to_numpy(dtype=object)  # lists (ncuroof.schema.from_text reads text)
    counts = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    codes = np.empty(int(counts.sum()), dtype=object)
    every = itertools.chain.from_iterable(cells)  # each note's code, without a Python call each
    codes[:] = list(map(getattr, every, itertools.repeat("code"), itertools.repeat("")))
    row = np.repeat(np.arange(len(cells)), counts)
    out: dict[int, list[tuple[str, str]]] = {}
    for code, text in _NOTE_FLAGS.items():
        for i in np.unique(row[codes == code]).tolist():
            out.setdefault(i, []).append((code, text))
    return out


def _missing_text(flop: bool, byts: bool, time: bool, sm: bool, mem: bool) -> str:
    """The ``missing_metrics`` flag's text: which of FLOP counters and memory traffic are absent,
    and what the launch holds (FLOPs, bytes, a finite duration, SM and memory throughput)."""
    absent = (
        " and ".join(x for x, ok in (("FLOP counters", flop), ("memory traffic", byts)) if not ok)
        or "roofline counters"
    )
    held = [
        x
        for x, ok in (
            ("FLOPs", flop),
            ("bytes", byts),
            ("duration", time),
            ("SM throughput", sm),
            ("memory throughput", mem),
        )
        if ok
    ]
    return f"no {absent} (holds {', '.join(held) if held else 'nothing else'})"


def _above_roof(
    kernels: pd.DataFrame, points: pd.DataFrame, thresholds: dict[str, Any]
) -> list[tuple[tuple[str, int], tuple[str, str]]]:
    """((source, launch_id), flag) of each point over ``above_roof`` × its roof, with
    the likely cause."""
    above, resident = float(thresholds["above_roof"]), float(thresholds["l2_resident_share"])
    if points.empty:
        return []
    hot = points[points["roof_fraction"].to_numpy(float) > above]
    lk = kernels.set_index(["source", "launch_id"])
    found = []
    for r in hot.itertuples(index=False):
        k = lk.loc[(r.source, r.launch_id)]
        binding_src = r.peak_bytes_source if r.bound == "memory" else r.peak_flop_source
        if binding_src in ("datasheet", "user"):
            cause = (
                f"the {binding_src} roof is below what this GPU reached (check --gpu / --peak-*)"
            )
        elif r.level == "dram" and fmt.num(k["dram_bytes"]) < resident * fmt.num(k["l2_bytes"]):
            cause = "data resident in L2: DRAM bytes are under a tenth of L2 bytes"
        elif bool(r.estimated):
            cause = "estimated tensor FLOP weighting (SASS opcodes or x512)"
        elif "sparsity_on" in str(r.precision):
            cause = "structured sparsity counted as dense work"
        else:
            cause = (
                "the clock: the roof is at the measured clock, the work may have run at a"
                " higher one"
            )
        found.append(
            (
                (r.source, r.launch_id),
                (
                    "above_roof",
                    (
                        f"{precision_title(r.precision)} at {str(r.level).upper()}"
                        f" {fmt.pct(r.roof_fraction)} of roof, likely {cause}"
                    ),
                ),
            )
        )
    return found


def _expect_flags(r: Any, thresholds: dict[str, Any]) -> list[str]:
    """Counted work against the user's expectation (``--expect``) for one launch."""
    tol, excess = float(thresholds["expect_tolerance"]), float(thresholds["excess_bytes"])
    if r.status != "ok":
        return []
    flags = (
        _flop_flag(_counted_flop(r), fmt.num(getattr(r, "expected_flop", math.nan)), tol),
        _dram_flag(
            fmt.num(getattr(r, "dram_bytes", math.nan)),
            fmt.num(getattr(r, "expected_dram_bytes", math.nan)),
            tol,
            excess,
        ),
    )
    return [x for x in flags if x is not None]


def _counted_flop(r: Any) -> float:
    """FLOPs the counters hold over all precisions and tensor cores (NaN when none is finite)."""
    work = [fmt.num(getattr(r, c)) for c in ("fp64_flop", "fp32_flop", "fp16_flop", "tensor_flop")]
    if not any(math.isfinite(w) for w in work):
        return math.nan
    return sum(w for w in work if math.isfinite(w))


def _flop_flag(counted: float, expected: float, tol: float) -> tuple[str, str] | None:
    """``flop_above_expected`` or ``flop_below_expected`` beyond ``tol``, else None."""
    if not (expected > 0 and math.isfinite(counted)):
        return None
    ratio = counted / expected
    said = (
        f"counted FLOPs {fmt.si(counted, 'FLOP')} are {fmt.g(ratio)}x the expected"
        f" {fmt.si(expected, 'FLOP')}"
    )
    if ratio > 1 + tol:
        return ("flop_above_expected", f"{said}: masked, padded or redundant work")
    if ratio < 1 - tol:
        return (
            "flop_below_expected",
            (
                f"{said}: work on units the FLOP counters miss (tensor cores without ops metrics,"
                " integer math) or a wrong expectation"
            ),
        )
    return None


def _dram_flag(dram: float, expected: float, tol: float, excess: float) -> tuple[str, str] | None:
    """``dram_below_expected`` below ``1 - tol``, ``dram_above_expected`` above
    ``excess``, else None."""
    if not (expected > 0 and math.isfinite(dram)):
        return None
    ratio = dram / expected
    if ratio < 1 - tol:
        return (
            "dram_below_expected",
            (
                f"DRAM traffic {fmt.si(dram, 'B')} is below the {fmt.si(expected, 'B')} the"
                f" kernel must move ({fmt.g(ratio)}x): data was cache-resident (warm L2,"
                " --cache-control none) or the expectation is wrong"
            ),
        )
    if ratio > excess:
        return (
            "dram_above_expected",
            (
                f"DRAM traffic {fmt.si(dram, 'B')} is {fmt.g(ratio)}x the"
                f" {fmt.si(expected, 'B')} the kernel must move: redundant loads or poor reuse"
            ),
        )
    return None


def evidence_facts(table: pd.DataFrame) -> pd.DataFrame:
    """What each row holds, for the words of a verdict: ``has_flop``, ``has_bytes``, ``has_roof``,
    ``has_time`` (bool).

    Parameters
    ----------
    table : DataFrame
        A launch table (``<p>_flop``, ``tensor_*_flop``, ``<level>_bytes``,
        ``peak_*_per_s`` columns).

    Returns
    -------
    DataFrame
        Indexed like ``table``: any FLOP column > 0, any bytes column > 0, any
        finite ``peak_*`` roof.
    """

    def any_of(cols: list[str], test: Any) -> np.ndarray:
        out = np.zeros(len(table), dtype=bool)
        for c in cols:  # column by column: no table copy, no conversion of a float column
            col = table[c]
            a = (
                col.to_numpy()
                if col.dtype == np.float64
                else pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            )
            with np.errstate(invalid="ignore"):
                out |= test(a)
        return out

    cols = list(table.columns)
    return pd.DataFrame(
        {
            "has_flop": any_of(
                [c for c in cols if c.endswith("_flop") and not c.startswith(("expected", "peak"))],
                lambda a: a > 0,
            ),
            "has_bytes": any_of(
                [
                    c
                    for c in cols
                    if c.endswith("_bytes") and c.split("_")[0] in ("dram", "l2", "l1")
                ],
                lambda a: a > 0,
            ),
            "has_roof": any_of(
                [c for c in cols if c.startswith("peak_") and c.endswith("_per_s")], np.isfinite
            ),
            # A bool, not the duration: the verdict's words are made once per distinct row of facts.
            "has_time": any_of([c for c in ("time_s",) if c in cols], np.isfinite),
        },
        index=table.index,
    )


@gc_paused
def diagnose_launches(
    kernels: pd.DataFrame,
    points: pd.DataFrame,
    catalog: Catalog,
    gpus: GpuCatalog | None = None,
    bind: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Fill ``diagnosis``, ``evidence``, ``advice`` and ``flags`` of every launch.

    Parameters
    ----------
    kernels : DataFrame
        The classified launch table.
    points : DataFrame
        Its points table.
    catalog : Catalog
        For ``metrics/thresholds.toml``.
    gpus : GpuCatalog, optional
        Datasheets, for tensor-core headroom.
    bind : DataFrame, optional
        ``binding_points(points)`` when the caller has it (as given to
        :func:`ncuroof.model.classify.classify`); computed here if None.

    Returns
    -------
    DataFrame
        A copy of ``kernels`` with the four columns (see :func:`verdict`, :func:`launch_flags`).
    """
    k = kernels.copy(deep=False)
    facts = _launch_facts(k, binding_points(points) if bind is None else bind, catalog)
    cols = [c for c in _FACTS if c in facts.columns]
    first, inverse = distinct_rows(
        facts, cols
    )  # the text of each distinct combination of facts, made once
    res = np.array(
        _verdicts(_records(facts.iloc[first], cols), catalog, gpus), dtype=object
    ).reshape(len(first), 4)
    for i, name in enumerate(("diagnosis", "evidence", "advice", "limiter")):
        k[name] = text_array(categorical(inverse, res[:, i])) if len(k) else []
    k["flags"] = launch_flags(k, points, catalog.thresholds["diagnosis"]).to_numpy()
    return k


def _verdicts(
    facts: Iterable[dict[str, Any]], catalog: Catalog, gpus: GpuCatalog | None
) -> list[tuple[str, str, str, str]]:
    """:func:`verdict` of each row of facts, with the catalog's thresholds and pipes, then the
    limiter rules (:func:`ncuroof.model.limiters.apply`): class, evidence, advice, limiter."""
    diagnosis = catalog.thresholds["diagnosis"]
    occupancy = (float(diagnosis["occupancy_gap"]), float(diagnosis["occupancy_well_below"]))
    return [
        _limited(
            f,
            catalog.thresholds["sol"],
            gpus,
            float(diagnosis["low_occupancy"]),
            catalog.thresholds["instruction"],
            catalog.pipes,
            occupancy,
            catalog,
        )
        for f in facts
    ]


def _launch_facts(k: pd.DataFrame, bind: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """What a launch's verdict is made of (:data:`_FACTS`), one row per launch: its binding point,
    grid and block sizes and what it holds (:func:`evidence_facts`)."""
    bind = bind.drop(columns="bound")
    need = [
        "source",
        "launch_id",
        "grid",
        "block",
        *(c for c in _FACTS if c in k.columns and c not in bind.columns),
    ]
    facts = join_launches(k[need], bind)
    facts["blocks"] = grid_sizes(facts["grid"])
    facts["threads_per_block"] = grid_sizes(facts["block"])
    facts["short_launch"] = _short_launches(k, catalog)
    facts["spin_barrier"] = _spin_barriers(k)
    return pd.concat([facts, evidence_facts(k).reset_index(drop=True)], axis=1)


def _short_launches(k: pd.DataFrame, catalog: Catalog) -> np.ndarray:
    """Launches of at most ``metrics/limiters.toml`` [launch_bound].max_time_s (a bool, so that
    the verdicts of launches that differ only in duration are made once)."""
    if "time_s" not in k:
        return np.zeros(len(k), dtype=bool)
    limit = float(catalog.limiters.get("launch_bound", {}).get("max_time_s", 0.0))
    with np.errstate(invalid="ignore"):
        return k["time_s"].to_numpy(dtype=float, na_value=np.nan) <= limit


def _spin_barriers(k: pd.DataFrame) -> np.ndarray:
    """Launches whose notes name a spin barrier (:func:`ncuroof.model.evidence.opcode_signals`)."""
    if "notes" not in k:
        return np.zeros(len(k), dtype=bool)
    cells = k["notes"].to_numpy(dtype=object)
    return np.fromiter(
        (isinstance(c, list) and any(str(n).startswith(SPIN_WAIT) for n in c) for c in cells),
        dtype=bool,
        count=len(cells),
    )


def _records(frame: pd.DataFrame, cols: list[str]) -> Iterator[dict[str, Any]]:
    """``frame[cols].to_dict("records")`` (Python scalars, None for missing text) without iterating
    Arrow-backed columns element by element, which is what makes ``to_dict`` slow."""
    arrays = [
        (
            frame[c].to_numpy(dtype=object, na_value=None)
            if frame[c].dtype == "string" or isinstance(frame[c].dtype, pd.CategoricalDtype)
            else frame[c].to_numpy(dtype=object)
        )
        for c in cols
    ]
    return (dict(zip(cols, row)) for row in zip(*arrays))


#: The kernel summary's columns :func:`_useful_ai` reads.
_USEFUL_AI = ("expected_flop", "expected_dram_bytes", "counted_dram_ai_flop_per_byte")


def _useful_ai(f: dict[str, Any]) -> str:
    """``; useful AI 512 FLOP/B (expected work / expected DRAM bytes) vs 0.17 measured
    at DRAM``, or ''."""
    ef, eb = fmt.num(f.get("expected_flop")), fmt.num(f.get("expected_dram_bytes"))
    if not (ef > 0 and eb > 0):
        return ""
    measured = fmt.num(f.get("counted_dram_ai_flop_per_byte"))
    return f"; useful AI {fmt.g(ef / eb)} FLOP/B (expected FLOPs / expected DRAM bytes)" + (
        f" vs {fmt.g(measured)} measured at DRAM" if math.isfinite(measured) else ""
    )


@gc_paused
def diagnose_kernels(
    summary: pd.DataFrame, kernels: pd.DataFrame, catalog: Catalog, gpus: GpuCatalog | None = None
) -> pd.DataFrame:
    """Diagnose each kernel of a :func:`ncuroof.model.summary.kernel_summary` (launches aggregated).

    Parameters
    ----------
    summary : DataFrame
        From :func:`ncuroof.model.summary.kernel_summary`.
    kernels : DataFrame
        The launch table after :func:`diagnose_launches` (its ``flags`` and ``status``).
    catalog : Catalog
        Thresholds.
    gpus : GpuCatalog, optional
        Datasheets.

    Returns
    -------
    DataFrame
        A copy of ``summary`` with ``diagnosis``, ``evidence``, ``advice`` and ``flags`` (the
        launches' flags, distinct, plus ``clock differs`` when the SM clock spread over launches
        exceeds ``clock_spread``); ``status`` is ``failed_measurement`` when every launch failed.
    """
    s = summary.copy()
    k = kernels.assign(kernel_key=keys_of(kernels).array)
    s["status"] = _kernel_status(s, k)
    res = _kernel_verdicts(s, k)
    rows = _records(s, [c for c in _USEFUL_AI if c in s.columns])
    s["diagnosis"] = [r[0] for r in res]
    s["evidence"] = [r[1] + _useful_ai(f) for r, f in zip(res, rows)]
    s["advice"] = [r[2] for r in res]
    s["limiter"] = [r[3] for r in res]
    s["flags"] = _kernel_flags(s, k, float(catalog.thresholds["diagnosis"]["clock_spread"]))
    return s[[c for c in KERNEL_SUMMARY if c in s.columns]]


def _kernel_verdicts(s: pd.DataFrame, k: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """Each kernel's verdict taken from its launches, never made anew (issue 50: every launch
    said "grid larger than the work", the kernel row "launch more blocks"): the diagnosis that
    holds the most of the kernel's launch time, with the evidence (said to be that launch's),
    advice and limiter of its longest launch of that diagnosis; where launches differ, the
    evidence ends with how the launches split. ``(diagnosis, evidence, advice, limiter)`` in
    the order of ``s``."""
    cls = k["diagnosis"].astype(str).to_numpy()
    frame = pd.DataFrame(
        {
            "key": k["kernel_key"].to_numpy(dtype=object),
            "cls": cls,
            "t": np.nan_to_num(k["time_s"].to_numpy(dtype=float, na_value=np.nan)),
            "pos": np.arange(len(k)),
        }
    )
    shares = frame.groupby(["key", "cls"], sort=False)["t"].agg(["sum", "size"]).reset_index()
    shares = shares.sort_values(["sum", "size"], ascending=False, kind="stable")
    top = shares.drop_duplicates("key")[["key", "cls"]]
    chosen = frame.merge(top, on=["key", "cls"]).sort_values("t", ascending=False, kind="stable")
    pos = chosen.drop_duplicates("key").set_index("key")["pos"]
    split = {key: g for key, g in shares.groupby("key", sort=False) if len(g) > 1}
    n_launches = frame.groupby("key", sort=False).size().to_dict()
    text = {c: k[c].astype(object).to_numpy() for c in ("evidence", "advice", "limiter")}
    out = []
    for key in s["kernel_key"].to_numpy(dtype=object):
        i = int(pos.get(key, -1))
        if i < 0:
            out.append(("not_classified", "no launch of this kernel", "", ""))
            continue
        ev = str(text["evidence"][i] or "")
        if n_launches.get(key, 1) > 1:
            ev = f"longest launch of {n_launches[key]}: {ev}"
        ev += _launch_split(split[key]) if key in split else ""
        out.append((cls[i], ev, str(text["advice"][i] or ""), str(text["limiter"][i] or "")))
    return out


def _launch_split(shares: pd.DataFrame) -> str:
    """``; its launches: 3 of 4 (92% of time) latency-bound / under-occupied, 1 ...``."""
    n, total = int(shares["size"].sum()), float(shares["sum"].sum())
    parts = [
        f"{int(r.size)} of {n}"
        + (f" ({fmt.pct(r.sum / total)} of time)" if total > 0 else "")
        + f" {CLASSES.get(r.cls, r.cls)}"
        for r in shares.head(3).itertuples(index=False)
    ]
    return "; its launches: " + ", ".join(parts)


def _kernel_status(s: pd.DataFrame, k: pd.DataFrame) -> np.ndarray:
    """``failed_measurement`` for the kernels whose every launch failed, else ``ok``."""
    failed = k.groupby("kernel_key")["status"].agg(
        lambda x: bool((x == "failed_measurement").all())
    )
    return np.where(
        failed.reindex(s["kernel_key"]).fillna(False).to_numpy(bool), "failed_measurement", "ok"
    )


def _kernel_flags(s: pd.DataFrame, k: pd.DataFrame, spread: float) -> pd.Series:
    """Each kernel's launch flags, distinct, plus ``clock_differs`` above ``spread``."""
    held = np.fromiter(map(bool, k["flags"].to_numpy(dtype=object)), dtype=bool, count=len(k))
    flags = (
        k.loc[held]
        .groupby("kernel_key")["flags"]
        .agg(  # launches without a flag add none
            lambda x: list(dict.fromkeys(tuple(f) for v in x if isinstance(v, list) for f in v))
        )
    )
    out = []
    for r in s.itertuples(index=False):
        f = list(flags.get(r.kernel_key, []))
        if math.isfinite(fmt.num(r.clock_spread)) and r.clock_spread > spread:
            f.append(
                ("clock_differs", f"SM clock varies {fmt.pct(r.clock_spread)} between launches")
            )
        out.append(f)
    return pd.Series(out, index=s.index, dtype=object)


def what_if(
    summary: pd.DataFrame, kernels: pd.DataFrame, target: Any, gpus: GpuCatalog | None = None
) -> pd.DataFrame:
    """Project each kernel's measured FLOPs and DRAM bytes onto another GPU's datasheet roofs.

    Parameters
    ----------
    summary : DataFrame
        From :func:`ncuroof.model.summary.kernel_summary` (``precision``, ``ai_flop_per_byte``...).
    kernels : DataFrame
        The launch table (FLOPs per precision, DRAM bytes, roofs of the measured GPU).
    target : GpuSpec
        The datasheet entry to project onto (``metrics/gpus.toml``).
    gpus : GpuCatalog, optional
        The datasheet catalog, for tensor datapath names (default: ``metrics/gpus.toml``).

    Returns
    -------
    DataFrame
        Per kernel: ``kernel_label``, ``precision``, ``dram_ai_flop_per_byte`` (FLOPs of the main
        precision / DRAM bytes, unchanged by the GPU), ``ridge_here`` and ``bound_here`` (the
        measured GPU's roofs, time-weighted), ``ridge_there``, ``bound_there``,
        ``time_at_roof_there_s`` = max(FLOPs / target roof, DRAM bytes / target bandwidth), and
        ``change`` (text such as "memory-bound here, still memory-bound on H100 SXM (ridge
        20 -> 296)"). The projection is the roofline model's: it assumes the kernel reaches the same
        fraction of either roof and moves the same DRAM bytes (caches differ: L2
        size here vs there).
    """
    k = kernels.assign(kernel_key=keys_of(kernels).array)
    rows = []
    for r in summary.itertuples(index=False):
        g = k[(k["kernel_key"] == r.kernel_key) & (k["status"] == "ok")]
        if not r.precision or g.empty:
            continue
        row = _projection(r, g, target, gpus)
        if row is not None:
            rows.append(row)
    return pd.DataFrame(rows, columns=list(_WHAT_IF))


#: The columns of :func:`what_if`'s table.
_WHAT_IF = (
    "kernel_label",
    "precision",
    "dram_ai_flop_per_byte",
    "ridge_here",
    "bound_here",
    "ridge_there",
    "bound_there",
    "time_at_roof_here_s",
    "time_at_roof_there_s",
    "change",
)


def _projection(
    r: Any, g: pd.DataFrame, target: Any, gpus: GpuCatalog | None
) -> dict[str, Any] | None:
    """One kernel's row of :func:`what_if` from its launches ``g`` (None without
    FLOPs and bytes)."""
    p = r.precision
    flop_col, peak_col = f"{flop_name(p)}_flop", f"peak_{flop_name(p)}_flop_per_s"
    if flop_col not in g.columns:
        return None
    flop = float(np.nansum(g[flop_col]))
    dram = float(np.nansum(g["dram_bytes"]))
    if not (flop > 0 and dram > 0):
        return None
    ridge_here = _ridge_here(g, peak_col)
    there_peak, there_bw = _peak_there(target, p, gpus), target.dram_bytes_per_s
    ai = flop / dram
    ridge_there = there_peak / there_bw if there_bw > 0 else math.nan
    bound_here, bound_there = _side(ai, ridge_here), _side(ai, ridge_there)
    change = (
        _sides_text(r, bound_here, bound_there, target.name)
        + f" (ridge {fmt.g(ridge_here)} -> {fmt.g(ridge_there)} {work_unit(p)}/B, AI {fmt.g(ai)})"
    )
    return {
        "kernel_label": r.kernel_label,
        "precision": p,
        "dram_ai_flop_per_byte": ai,
        "ridge_here": ridge_here,
        "bound_here": bound_here,
        "ridge_there": ridge_there,
        "bound_there": bound_there,
        "time_at_roof_here_s": r.time_at_roof_s,
        "time_at_roof_there_s": max(flop / there_peak if there_peak > 0 else 0.0, dram / there_bw),
        "change": change,
    }


def _sides_text(r: Any, here: str, there: str, name: str) -> str:
    """ "memory-bound here, still memory-bound on H100 SXM" where the kernel's verdict is that
    side's; else its verdict first (issue 50: "compute-bound here" for a kernel the diagnosis
    calls latency-bound): "latency-bound / under-occupied here (the compute side of the DRAM
    ridge), the compute side on H100 SXM"."""
    diagnosis = getattr(r, "diagnosis", "")
    if not isinstance(diagnosis, str) or not diagnosis or (here and diagnosis.startswith(here)):
        still = "still " if here and here == there else ""
        return f"{here or '?'}-bound here, {still}{there or '?'}-bound on {name}"
    verdict = verdict_text(diagnosis, getattr(r, "limiter", "")) or "unclassified"
    return (
        f"{verdict} here (the {here or '?'} side of the DRAM ridge), the {there or '?'} side on"
        f" {name}"
    )


def _ridge_here(g: pd.DataFrame, peak_col: str) -> float:
    """The measured GPU's ridge for ``peak_col``: time-weighted roof over
    time-weighted bandwidth."""
    t = g["time_s"].to_numpy(float)
    here_peak = (
        float(np.nansum(g[peak_col].to_numpy(float) * t) / np.nansum(t))
        if peak_col in g.columns
        else math.nan
    )
    here_bw = float(np.nansum(g["peak_dram_bytes_per_s"].to_numpy(float) * t) / np.nansum(t))
    return here_peak / here_bw if here_bw > 0 else math.nan


def _peak_there(target: Any, precision: str, gpus: GpuCatalog | None) -> float:
    """The target GPU's datasheet roof for ``precision`` (its tensor datapath's for tensor work)."""
    if (path := tensor_path(precision)) is not None:
        key = (gpus or load_gpus()).tensor_key(path)
        return target.tensor.get(key, math.nan) if key else math.nan
    return target.flop_per_s.get(precision, math.nan)


def _side(ai: float, ridge: float) -> str:
    """``memory`` left of the ridge, ``compute`` at or right of it, '' without a ridge."""
    return "" if not math.isfinite(ridge) else ("memory" if ai < ridge else "compute")
