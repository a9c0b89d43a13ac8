"""The limiter rules (issue 50): evidence beyond the roofline point that names what limits a launch.

A roofline verdict reads the binding point and ncu's SpeedOfLight throughputs. Some limiters hide
behind those numbers: a launch too small to amortise its launch latency, warps waiting on a fence,
uncoalesced accesses that fill the memory side with wasted sectors, a memory side busy with requests
rather than bytes, a partial last wave that leaves SMs idle, a non-FP pipe that the latency verdict
never names. Each rule here is one small function over a launch's facts with its thresholds in
``metrics/limiters.toml``; the rules run in that file's ``order`` (strongest evidence first) and the
first that fires names the launch's ``limiter``, leads its evidence and replaces its advice (the
numbers that fired it are in the evidence).

=================  ==================  =============================================================
limiter            diagnosis           when
=================  ==================  =============================================================
``launch_bound``   latency_bound       fewer blocks than SMs and at most ``max_time_s`` long
``fence``          latency_bound       membar/barrier the top stall reason (ncu's CPIStall rule),
                                       ``lead`` x the next
``uncoalesced``    memory_below_roof   global sectors per request above ``max_sectors_per_request``
``request_bound``  memory_below_roof   the memory SpeedOfLight unit counts requests, ``gap`` above
                                       the binding level's roof fraction
``tail``           latency_bound       ncu's tail effect and SMs active < ``sm_active`` of elapsed
``pipe``           latency_bound       a latency verdict whose busiest pipe is not the work's own
                                       and at least ``busy``
=================  ==================  =============================================================

Outside the rules, :func:`stall_words` names the top stall reasons in place of "read ncu's
warp-stall reasons" wherever the report holds them.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import Catalog, load

__all__ = [
    "LIMITER_COLUMNS",
    "LIMITER_TEXT",
    "Limiter",
    "apply",
    "limiter_columns",
    "older_arch_words",
    "stall_words",
]

#: The launch-table columns of the rules (declared in :data:`ncuroof.schema.LAUNCHES`): those
#: :func:`limiter_columns` makes and ``limiter``, with the value a table saved before issue 50 gets.
LIMITER_COLUMNS: dict[str, Any] = {
    "sm_count": math.nan,
    "sm_active_frac": math.nan,
    "global_load_sectors_per_request": math.nan,
    "global_store_sectors_per_request": math.nan,
    "warp_cycles_per_issue": math.nan,
    "issue_active_frac": math.nan,
    "top_stall": "",
    "top_stall_cycles_per_issue": math.nan,
    "second_stall": "",
    "second_stall_cycles_per_issue": math.nan,
    "limiter": "",
}


#: What each limiter is called where a person reads the verdict (:func:`ncuroof.model.diagnose.
#: verdict_text`): the class's words give way to these.
LIMITER_TEXT = {
    "launch_bound": "launch-bound: too few blocks for launch latency",
    "fence": "fence/barrier-bound",
    "uncoalesced": "memory-bound by uncoalesced accesses",
    "request_bound": "request-bound (memory requests, not bytes)",
    "tail": "tail-bound: a partial last wave",
    "pipe": "pipe-bound (a non-FP pipe)",
}


@dataclass(frozen=True)
class Limiter:
    """A rule's verdict: the limiter's code, the class it sets, its evidence and advice."""

    code: str
    diagnosis: str
    evidence: str
    advice: str
    #: The base verdict's advice follows as the next step (a memory verdict's bytes advice after
    #: the accesses are fixed); else the rule's advice replaces it.
    then_base: bool = False


def _text(value: object) -> str:
    """A text fact, '' where missing (None, NaN, pandas' NA)."""
    return value if isinstance(value, str) else ""


def _ratio(num: np.ndarray | None, den: np.ndarray | None, n: int) -> np.ndarray:
    """num / den where both are finite and den > 0, else NaN."""
    if num is None or den is None:
        return np.full(n, math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(num) & (den > 0), num / den, math.nan)


def limiter_columns(raw: pd.DataFrame, cat: Catalog) -> dict[str, np.ndarray]:
    """The launch-table columns the rules read, from the raw table.

    Parameters
    ----------
    raw : DataFrame
        The raw table (metric columns in ncu base units).
    cat : Catalog
        ``cat.limiter_metrics`` (``metrics/limiters.toml`` [metrics]).

    Returns
    -------
    dict of ndarray
        ``sm_count`` [1]; ``sm_active_frac`` [1]: sm__cycles_active.avg / sm__cycles_elapsed.avg;
        ``global_load_sectors_per_request`` and ``global_store_sectors_per_request`` [1]:
        l1tex__t_sectors / l1tex__t_requests of global loads and stores ([KPG] Memory Workload
        Analysis, Sectors/Req); ``warp_cycles_per_issue`` [cycle]; ``issue_active_frac`` [1];
        ``top_stall`` and ``second_stall`` (reasons, '' where none) with their
        ``*_cycles_per_issue`` [cycle] (smsp__average_warps_issue_stalled_<reason>_per_issue_active,
        ncu's CPIStall rule). NaN where the report lacks a metric.
    """
    n, m = len(raw), cat.limiter_metrics

    def col(role: str) -> np.ndarray | None:
        name = m.get(role)
        return raw[name].to_numpy(dtype=float, na_value=np.nan) if name in raw.columns else None

    def value(role: str) -> np.ndarray:
        got = col(role)
        return got if got is not None else np.full(n, math.nan)

    out = {
        "sm_count": value("sm_count"),
        "sm_active_frac": _ratio(col("sm_active_cycles"), col("sm_elapsed_cycles"), n),
        "global_load_sectors_per_request": _ratio(col("load_sectors"), col("load_requests"), n),
        "global_store_sectors_per_request": _ratio(col("store_sectors"), col("store_requests"), n),
        "warp_cycles_per_issue": value("warp_cycles_per_issue"),
        "issue_active_frac": value("issue_active"),
    }
    return out | _top_stalls(raw, m, n)


def _top_stalls(raw: pd.DataFrame, m: dict[str, str], n: int) -> dict[str, np.ndarray]:
    """The two largest stall reasons of each launch and their cycles per issued instruction
    ('' and NaN where the report holds fewer)."""
    reasons = [r.split(":", 1)[1] for r in m if r.startswith("stall:") and m[r] in raw.columns]
    cycles = np.column_stack(
        [raw[m[f"stall:{r}"]].to_numpy(dtype=float, na_value=np.nan) for r in reasons]
        or [np.empty((n, 0))]
    )
    held = np.where(np.isfinite(cycles) & (cycles > 0), cycles, -1.0)
    order = np.argsort(-held, axis=1, kind="stable")
    names = np.array(reasons, dtype=object)
    out = {}
    for rank, label in ((0, "top"), (1, "second")):
        got = held[np.arange(n), order[:, rank]] if rank < len(reasons) else np.full(n, -1.0)
        picked = names[order[:, rank]] if rank < len(reasons) else np.full(n, "", dtype=object)
        out[f"{label}_stall"] = np.where(got > 0, picked, "").astype(object)
        out[f"{label}_stall_cycles_per_issue"] = np.where(got > 0, got, math.nan)
    return out


def apply(f: dict[str, Any], base: tuple[str, str, str], cat: Catalog) -> tuple[str, str, str, str]:
    """A launch's verdict after the limiter rules.

    Parameters
    ----------
    f : dict
        The launch's facts (:data:`ncuroof.model.diagnose._FACTS`, with the columns of
        :func:`limiter_columns` and ``short_launch`` and ``spin_barrier``).
    base : (str, str, str)
        The roofline/SpeedOfLight verdict: class, evidence, advice.
    cat : Catalog
        ``cat.limiters`` (``metrics/limiters.toml``).

    Returns
    -------
    (str, str, str, str)
        Class, evidence, advice and the limiter's code ('' when no rule fired); the advice names
        the top stall reasons (:func:`stall_words`) where it sent the reader to ncu's.
    """
    cls, ev, advice = base
    if cls == "not_classified" or not cat.limiters:
        return cls, ev, advice, ""
    arch = older_arch_words(f, cat)
    for name in cat.limiters.get("order", ()):
        hit = _RULES[name](f, cat, cls)
        if hit is not None:
            then = (
                f"; then: {_AT_ROOF.sub('', advice)}"
                if hit.then_base and cls.startswith("memory")
                else ""
            )
            return hit.diagnosis, f"{hit.evidence}; {ev}", hit.advice + then + arch, hit.code
    return cls, ev, stall_words(f, advice, cat) + arch, ""


#: "at the DRAM roof: " leading a memory verdict's advice: not said after a rule that found the
#: memory side full of wasted sectors or requests (the rest of that advice, fewer bytes, follows).
_AT_ROOF = re.compile(r"^at the [^:]*roof: ")


def older_arch_words(f: dict[str, Any], cat: Catalog) -> str:
    """``; built for sm_80 on a CC 9.0 GPU: ...`` where the kernel's name says it was built for
    an older architecture than the GPU's and the GPU's offers more (``[older_arch]`` of
    ``metrics/limiters.toml``), else ''. Made once per (name, compute capability)."""
    name, gpu = _text(f.get("kernel_name")), fmt.num(f.get("cc"))
    if not name or not math.isfinite(gpu) or "older_arch" not in cat.limiters:
        return ""
    return _older_arch(name, gpu, cat.directory)


@functools.lru_cache(maxsize=4096)
def _older_arch(name: str, gpu: float, directory: Any) -> str:
    """:func:`older_arch_words` of one kernel name on one compute capability."""
    spec = load(directory).limiters["older_arch"]
    built = math.nan
    for a in spec["arch"]:
        m = _pattern(a["pattern"]).search(name)
        if m:
            built = int(m.group("sm")) / 10 if a["cc"] == "sm" else float(a["cc"])
            break
    offers = [n["text"] for n in spec["newer"] if built < float(n["cc_min"]) <= gpu + 1e-9]
    if not offers:
        return ""
    return (
        f"; built for sm_{round(built * 10)} on a CC {gpu:.1f} GPU: a kernel for this"
        f" architecture can use {offers[-1]}"
    )


@functools.lru_cache(maxsize=64)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


#: Where a verdict's advice sends the reader to ncu's stall reasons (with the words before them).
_GENERIC = (
    " and read ncu's warp-stall reasons (WarpStateStats) for what the warps wait on",
    ", and read ncu's warp-stall reasons",
    " and read ncu's warp-stall reasons",
)


def stall_words(f: dict[str, Any], advice: str, cat: Catalog) -> str:
    """``advice`` with "read ncu's warp-stall reasons" replaced by the reasons ncu's CPIStall
    rule reports (cycles above ``[fence].share`` of the cycles between issues), each with what it
    means and what to try (``[stall]``); unchanged where the report holds no stall reasons."""
    generic = next((g for g in _GENERIC if g in advice), None)
    named = _reported_stalls(f, cat.limiters) if generic else ""
    return advice.replace(generic, f"; {named}") if generic and named else advice


def _reported_stalls(f: dict[str, Any], spec: dict[str, Any]) -> str:
    """The stall reasons ncu's CPIStall rule would report, in words; '' when none."""
    per_issue = fmt.num(f.get("warp_cycles_per_issue"))
    share = float(spec.get("fence", {}).get("share", 0.3))
    words = []
    for rank in ("top", "second"):
        reason, cycles = (
            _text(f.get(f"{rank}_stall")),
            fmt.num(f.get(f"{rank}_stall_cycles_per_issue")),
        )
        text = spec.get("stall", {}).get(reason)
        if not text or not (per_issue > 0 and cycles > share * per_issue):
            continue
        words.append(
            f"{reason} ({fmt.g(cycles)} of the {fmt.g(per_issue)} cycles between issues,"
            f" {text['means']}): {text['advice']}"
        )
    return ("warp stalls: " + "; then ".join(words)) if words else ""


def _launch_bound(f: dict[str, Any], cat: Catalog, cls: str) -> Limiter | None:
    """Fewer blocks than SMs in a launch of at most ``max_time_s``: launch latency and too
    little parallel work, whatever the roofline point says."""
    spec = cat.limiters["launch_bound"]
    blocks, sms = fmt.num(f.get("blocks")), fmt.num(f.get("sm_count"))
    if not (f.get("short_launch") and blocks > 0 and sms > 0 and blocks < sms):
        return None
    return Limiter(
        "launch_bound",
        "latency_bound",
        f"{fmt.count(int(blocks), 'block')} on {fmt.plain(sms)} SMs in a launch under"
        f" {fmt.time(float(spec['max_time_s']))}",
        "too few blocks and launch latency limit it, not bandwidth or compute: the launch's fixed"
        " cost is a large share of its time and most SMs idle; batch the work into fewer, larger"
        " launches (more blocks each), fuse it with its neighbours, or replay the sequence as a"
        " CUDA graph",
    )


def _fence(f: dict[str, Any], cat: Catalog, cls: str) -> Limiter | None:
    """The top stall reason a fence or CTA barrier, reported by ncu's CPIStall rule and
    ``lead`` x the next reason; or, in a latency verdict without stall reasons, a spin barrier in
    the opcode table (issue 50: a barrier found only in the notes while the advice said "raise
    occupancy")."""
    top = _text(f.get("top_stall"))
    if _dominant_fence(f, cat.limiters["fence"]):
        return _fence_limiter(f, top)
    if f.get("spin_barrier") and cls == "latency_bound" and not top:
        return Limiter(
            "fence",
            "latency_bound",
            "a grid-wide spin barrier in the opcode table (the notes give its instructions); no"
            " warp-stall reasons in the report to weigh it",
            _FENCE_ADVICE + _GRID_BARRIER,
        )
    return None


def _dominant_fence(f: dict[str, Any], spec: dict[str, Any]) -> bool:
    """ncu's CPIStall rule reports the top reason, a fence or barrier ``lead`` x the next."""
    top, cycles = _text(f.get("top_stall")), fmt.num(f.get("top_stall_cycles_per_issue"))
    per_issue, issue = fmt.num(f.get("warp_cycles_per_issue")), fmt.num(f.get("issue_active_frac"))
    nxt = fmt.num(f.get("second_stall_cycles_per_issue"))
    if top not in spec.get("reasons", ()) or not (per_issue > 0 and cycles > 0):
        return False
    if cycles <= float(spec["share"]) * per_issue or issue >= float(spec["issue_active"]):
        return False
    return not (math.isfinite(nxt) and cycles < float(spec["lead"]) * nxt)


_FENCE_ADVICE = (
    "fence-bound: the warps wait on the fence, not on bytes or math; fewer fences at the"
    " narrowest correct scope (block, not GPU or system)"
)
_GRID_BARRIER = (
    ", and fewer grid-wide barriers: split the kernel at the barrier or synchronise per block"
)


def _fence_limiter(f: dict[str, Any], top: str) -> Limiter:
    """The fence verdict of a dominant membar or barrier stall, with its numbers."""
    cycles, per_issue = (
        fmt.num(f.get("top_stall_cycles_per_issue")),
        fmt.num(f.get("warp_cycles_per_issue")),
    )
    nxt = fmt.num(f.get("second_stall_cycles_per_issue"))
    barrier = " with a spin barrier in the opcode table" if f.get("spin_barrier") else ""
    what = "a memory fence (MEMBAR)" if top == "membar" else "a CTA barrier (__syncthreads)"
    nxt_text = f" (the next, {f.get('second_stall')}, {fmt.g(nxt)})" if math.isfinite(nxt) else ""
    advice = (
        _FENCE_ADVICE + (_GRID_BARRIER if barrier else "")
        if top == "membar"
        else "barrier-bound: warps wait for their block's slowest warp; uniform work per warp"
        " before each __syncthreads, fewer barriers, smaller blocks"
    )
    return Limiter(
        "fence",
        "latency_bound",
        f"warps stall on {what}{barrier}: {top} {fmt.g(cycles)} of the {fmt.g(per_issue)} cycles"
        f" between issued instructions{nxt_text}",
        advice,
    )


def _memory_side(f: dict[str, Any], cls: str) -> bool:
    """A memory-bound verdict, or a latency verdict whose memory throughput exceeds the SM's."""
    if cls.startswith("memory"):
        return True
    sm, mem = fmt.num(f.get("sm_throughput_frac")), fmt.num(f.get("memory_throughput_frac"))
    return cls == "latency_bound" and math.isfinite(mem) and not (sm >= mem)


def _uncoalesced(f: dict[str, Any], cat: Catalog, cls: str) -> Limiter | None:
    """Global loads or stores above ``max_sectors_per_request`` sectors per request."""
    spec = cat.limiters["uncoalesced"]
    limit = float(spec["max_sectors_per_request"])
    over = limit * (1 + float(spec.get("slack", 0.0)))
    sides = [
        (name, fmt.num(f.get(f"global_{name}_sectors_per_request"))) for name in ("load", "store")
    ]
    bad = [(name, v) for name, v in sides if v > over]
    if not bad or not _memory_side(f, cls):
        return None
    said = ", ".join(f"{name}s {fmt.g(v)} sectors per request" for name, v in bad)
    return Limiter(
        "uncoalesced",
        "memory_below_roof",
        f"uncoalesced global accesses: {said}, above the {fmt.plain(limit)} of the widest coalesced"
        f" access (ideal {spec['ideal_text']})",
        "the access pattern, not the data the kernel needs, fills the memory side: a warp's"
        " accesses touch up to 32 separate sectors; coalesce them (consecutive threads to"
        " consecutive addresses, a shared-memory tile to transpose), widen them (float4)",
        then_base=True,
    )


def _request_bound(f: dict[str, Any], cat: Catalog, cls: str) -> Limiter | None:
    """The memory SpeedOfLight's unit counts requests, busy, and well above the bytes' roof
    fraction (``metrics/pipes.toml`` [hot_memory_unit] units with ``requests = true``)."""
    spec = cat.limiters["request_bound"]
    unit, frac = _text(f.get("hot_memory_unit")), fmt.num(f.get("hot_memory_unit_frac"))
    if cat.pipes is None or unit not in cat.pipes.request_units or not frac >= float(spec["busy"]):
        return None
    roof = fmt.num(f.get("roof_fraction"))
    level = _text(f.get("level")).upper()
    if not math.isfinite(roof) or frac - roof < float(spec["gap"]) or not _memory_side(f, cls):
        return None
    sectors = [fmt.num(f.get(f"global_{s}_sectors_per_request")) for s in ("load", "store")]
    spr = max((v for v in sectors if math.isfinite(v)), default=math.nan)
    return Limiter(
        "request_bound",
        "memory_below_roof",
        f"memory throughput is {unit} at {fmt.pct(frac)}: requests, not bytes ({level or 'the'}"
        f" bytes at {fmt.pct(roof)} of roof)"
        + (f"; up to {fmt.g(spr)} sectors per global request" if math.isfinite(spr) else ""),
        "request-bound: the memory side is full of small requests, not of bytes; fewer, wider"
        " requests (128-bit accesses, coalesced so that a warp's request covers whole sectors),"
        " fewer atomics or scattered accesses",
        then_base=True,
    )


def _tail(f: dict[str, Any], cat: Catalog, cls: str) -> Limiter | None:
    """ncu's tail effect with the SMs idle for much of the elapsed time."""
    spec = cat.limiters["tail"]
    waves, active = fmt.num(f.get("waves_per_sm")), fmt.num(f.get("sm_active_frac"))
    if not (waves >= 1 and math.isfinite(active) and active < float(spec["sm_active"])):
        return None
    whole, partial = math.floor(waves), waves - math.floor(waves)
    tail = 1.0 / (whole + 1)
    if not (1e-6 < partial <= float(spec["partial_max"])) or tail < float(spec["tail_share"]):
        return None
    blocks = fmt.num(f.get("blocks"))
    slots = blocks / waves if blocks > 0 else math.nan
    pipe, pfrac = _text(f.get("hot_pipe")), fmt.num(f.get("hot_pipe_frac"))
    busy = (
        f"; {pipe} pipe {fmt.pct(pfrac)} of elapsed cycles, {fmt.pct(min(pfrac / active, 1.0))}"
        " while active"
        if pipe and pfrac > 0
        else ""
    )
    size = f" ({fmt.plain(blocks)} blocks on {fmt.plain(slots)} slots)" if slots > 0 else ""
    return Limiter(
        "tail",
        "latency_bound",
        f"a tail: {fmt.g(waves)} waves{size}, the last fills {fmt.pct(partial)} of a wave and SMs"
        f" are active {fmt.pct(active)} of elapsed cycles{busy}",
        f"the partial last wave idles SMs (up to {fmt.pct(tail)} of the runtime, ncu's tail"
        " effect): a grid of whole waves"
        + (f" (a multiple of {fmt.plain(slots)} blocks)" if slots > 0 else "")
        + ", smaller tiles for more, shorter blocks, or a persistent / stream-K schedule",
    )


def _pipe(f: dict[str, Any], cat: Catalog, cls: str) -> Limiter | None:
    """A latency verdict whose busiest pipe is not the work's own (``[diagnosis].fp_pipes`` or
    ``tensor_pipes``) and at least ``busy``."""
    spec, th = cat.limiters["pipe"], cat.thresholds["diagnosis"]
    pipe, frac = _text(f.get("hot_pipe")), fmt.num(f.get("hot_pipe_frac"))
    own = th["tensor_pipes"] if _text(f.get("precision")).startswith("tensor") else th["fp_pipes"]
    if cls != "latency_bound" or not pipe or pipe in own or not frac >= float(spec["busy"]):
        return None
    found = next((p for p in cat.pipes.pipes if p.name == pipe), None) if cat.pipes else None
    does, lever = (found.does, found.advice) if found else ("", "")
    stalls = _reported_stalls(f, cat.limiters)
    return Limiter(
        "pipe",
        "latency_bound",
        f"the busiest pipe is {pipe} at {fmt.pct(frac)}" + (f": it runs {does}" if does else ""),
        f"the {pipe} pipe, not the FP or tensor work, is the busiest unit: "
        + (lever or f"fewer {pipe} instructions")
        + (f"; {stalls}" if stalls else ""),
    )


_RULES: dict[str, Callable[[dict[str, Any], Catalog, str], Limiter | None]] = {
    "launch_bound": _launch_bound,
    "fence": _fence,
    "uncoalesced": _uncoalesced,
    "request_bound": _request_bound,
    "tail": _tail,
    "pipe": _pipe,
}
