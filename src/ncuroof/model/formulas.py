"""Derive FLOPs, bytes, rates, roofs and roofline points from the raw table.

All formulas come from the catalog (``metrics/*.toml``) and follow ROOFLINE_SPEC (Nsight
Compute's own roofline sections): this module only evaluates recipes and combines the results.

* Achieved FLOP/s per precision = Σ weight × ``…sum.per_cycle_elapsed`` × measured SMSP clock
  (ncu's chart form, [NCU-SEC]); FLOPs from ``…sum`` counts when the report has them, else
  FLOP/s × time. Where only counts exist, FLOP/s = FLOPs / time.
* Bytes per level likewise (``.per_second`` rate, or count / time).
* Roofs = ``peak_sustained`` × the measured clock of the unit (``sm__``, ``dram__``, ``lts__``,
  ``l1tex__cycles_elapsed.avg.per_second``); ``.sum.peak_sustained`` already covers every unit
  instance, so nothing is multiplied by the SM count.
* Arithmetic intensity = FLOP/s ÷ bytes/s of the level (time cancels), ridge = roof FLOP/s ÷
  roof bytes/s, attainable = min(roof FLOP/s, AI × roof bytes/s) ([KPG §2.9]).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import catalog as _catalog
from .. import fmt
from ..catalog import Catalog, Recipe, Term
from ..parser.validate import roof_damage
from ..schema import (
    DAMAGED,
    LAUNCHES,
    LEVELS,
    POINTS,
    PRECISIONS,
    SOURCES_DISAGREE,
    STATUSES,
    Note,
    empty,
    input_notes,
    tensor_columns,
    tensor_paths,
)
from .distinct import (
    categorical,
    coded_text,
    distinct_codes,
    factorize_objects,
    gc_paused,
    text_array,
)
from .evidence import (
    alternatives_text,
    flop_evidence,
    l2_write_evidence,
    ledger_text,
    level_order_evidence,
    opcode_flops,
    opcode_signals,
)
from .limiters import limiter_columns
from .roofs import Factorized, objects, report_sets
from .speed_of_light import apply_speed_of_light, hot_pipe_codes, launch_floor

__all__ = [
    "compute_launches",
    "compute_points",
    "achievable_roof",
    "time_at_roof",
    "cc_number",
    "Resolved",
    "flop_columns",
]

_NAN = np.nan


@dataclass
class Resolved:
    """Per-launch values of one quantity and the recipe that produced each (``which``: its index
    in ``names``, -1 where none did)."""

    values: np.ndarray
    which: np.ndarray
    names: tuple[str, ...]

    @property
    def labels(self) -> np.ndarray:
        """The label of the recipe that produced each launch's value ('' where none did)."""
        return np.array(["", *self.names], dtype=object)[self.which + 1]

    @property
    def present(self) -> np.ndarray:
        """Boolean mask of launches with a value."""
        return ~np.isnan(self.values)


def cc_number(cc: pd.Series) -> np.ndarray:
    """Convert 'major.minor' compute capabilities to floats (NaN when unknown).

    Parameters
    ----------
    cc : Series of str
        e.g. ``"8.6"``, ``"10.0"``.

    Returns
    -------
    ndarray of float
        8.6, 10.0, ... ; ``"12.1"`` becomes 12.1.
    """
    codes, uniques = pd.factorize(cc, use_na_sentinel=True)  # a handful of distinct values
    numbers = pd.to_numeric(pd.Series(uniques).astype("string"), errors="coerce")
    return np.append(numbers.to_numpy(dtype=float, na_value=_NAN), _NAN)[codes]


def _column(raw: pd.DataFrame, metric: str) -> np.ndarray | None:
    if metric not in raw.columns:
        return None
    return raw[metric].to_numpy(dtype=float, na_value=np.nan)


def _term(raw: pd.DataFrame, term: Term) -> np.ndarray:
    out = np.full(len(raw), _NAN)
    for alt in term.alts:
        if alt.metric is None:
            values = np.full(len(raw), alt.weight)
        else:
            col = _column(raw, alt.metric)
            if col is None:
                continue
            values = alt.weight * col
        out = np.where(np.isnan(out), values, out)
    return out


def _recipe(raw: pd.DataFrame, recipe: Recipe, cc: np.ndarray) -> np.ndarray:
    value = np.zeros(len(raw))
    for term in recipe.terms:
        value = value + _term(raw, term)
    if recipe.multiply_by is not None:
        value = value * _term(raw, recipe.multiply_by)
    for term in recipe.divide_by:
        value = _div(value, _term(raw, term))
    return np.where(_catalog.cc_in_range(cc, recipe.cc_min, recipe.cc_max), value, _NAN)


def _resolve(raw: pd.DataFrame, recipes: tuple[Recipe, ...], cc: np.ndarray) -> Resolved:
    values = np.full(len(raw), _NAN)
    which = np.full(len(raw), -1, dtype=np.int32)
    for i, recipe in enumerate(recipes):
        v = _recipe(raw, recipe, cc)
        take = np.isnan(values) & ~np.isnan(v)
        values[take] = v[take]
        which[take] = i
    return Resolved(values, which, tuple(r.label for r in recipes))


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(
        divide="ignore", invalid="ignore", over="ignore"
    ):  # an overflow is caught by _damaged
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), _NAN)


@dataclass
class _Work:
    """FLOPs, FLOP/s and roof of one precision or tensor path, per launch."""

    flop: np.ndarray
    flop_per_s: np.ndarray
    peak: np.ndarray
    estimated: np.ndarray


def _precision_work(
    raw: pd.DataFrame, cat: Catalog, cc: np.ndarray, time_s: np.ndarray, notes: list[list[str]]
) -> tuple[dict[str, _Work], np.ndarray, dict[str, np.ndarray]]:
    """Work per precision in the order of ``metrics/opcodes.toml`` ``[order].flop``: the roofline
    counters (count, else rate x time), else the SASS opcode tables (:mod:`ncuroof.model.evidence`).
    Returns the work, ``flop_source`` (the sources used, ``+``-joined) and each
    precision's ledger text.
    """
    work: dict[str, _Work] = {}
    tables = opcode_flops(raw, cat)
    disagree = float(cat.thresholds.get("evidence", {}).get("flop_disagree", 0.02))
    used, held = [], {}
    for name in PRECISIONS:
        p = cat.precisions[name]
        rate = _resolve(raw, p.rate, cc)
        count = _resolve(raw, p.count, cc)
        peak = _resolve(raw, p.peak, cc)
        flop = np.where(count.present, count.values, rate.values * time_s)
        flop_per_s = np.where(rate.present, rate.values, _div(count.values, time_s))
        # the three words as objects once, taken per launch (no str object made per launch)
        src = _SOURCE_WORDS[np.where(count.present, 2, np.where(rate.present, 1, 0))]
        flop, flop_per_s, src, held[name] = flop_evidence(
            name, flop, flop_per_s, src, time_s, tables, disagree, notes
        )
        used.append(src)
        work[name] = _Work(flop, flop_per_s, peak.values, np.zeros(len(raw), dtype=bool))
    first, which = distinct_codes(
        [factorize_objects(u)[0] for u in used]
    )  # a handful of combinations
    text = np.array(
        ["+".join(dict.fromkeys(u[i] for u in used if u[i])) for i in first], dtype=object
    )
    return work, categorical(which, text), held


#: A precision's FLOP source before the opcode tables: none, rate x time, count.
_SOURCE_WORDS = np.array(["", "rate x time", "count"], dtype=object)


@dataclass
class _Tensor:
    """Tensor work found so far: per datapath, the family total, its rate, the source and
    notes per launch."""

    paths: dict[str, _Work]
    flop: np.ndarray
    rate: np.ndarray
    source: np.ndarray
    notes: list[list[str]]


def _tensor_work(
    raw: pd.DataFrame, cat: Catalog, cc: np.ndarray, time_s: np.ndarray, notes: list[list[str]]
) -> tuple[dict[str, _Work], np.ndarray, np.ndarray, np.ndarray]:
    """Return per-path work, tensor_flop, tensor_flop_per_s and source per launch (``notes``
    extended in place).

    In order of preference: the ``sm__ops_path_tensor_*`` counters (exact), SASS MMA opcode
    counts x ops per instruction (estimated), no tensor-pipe instruction (exactly 0), and
    512 x tensor-pipe instructions on CC 7.0 (approximate) (``metrics/tensor.toml``).
    """
    st = _ops_path_work(raw, cat, time_s, notes)
    _opcode_work(raw, cat, time_s, st)
    t = cat.tensor
    idle = np.isnan(st.flop) & (
        (_term(raw, t.legacy_count) == 0) | (_term(raw, t.legacy_rate) == 0)
    )
    st.flop = np.where(idle, 0.0, st.flop)
    st.rate = np.where(idle, 0.0, st.rate)
    st.source = np.where(idle, "pipe_tensor=0", st.source)
    _legacy_work(raw, cat, cc, time_s, st)
    return st.paths, st.flop, st.rate, st.source


def _ops_path_work(
    raw: pd.DataFrame, cat: Catalog, time_s: np.ndarray, notes: list[list[str]]
) -> _Tensor:
    """1. ``sm__ops_path_tensor_<path>`` counters (exact); the family total
    avoids double counting."""
    t = cat.tensor
    n = len(raw)
    sm_clock = _column(raw, t.ops_clock)
    sm_clock = np.full(n, _NAN) if sm_clock is None else sm_clock
    names = sorted(
        {
            c[len(t.ops_prefix) : -len(t.ops_count)]
            for c in raw.columns
            if c.startswith(t.ops_prefix) and c.endswith(t.ops_count)
        }
        | {
            c[len(t.ops_prefix) : -len(t.ops_rate)]
            for c in raw.columns
            if c.startswith(t.ops_prefix) and c.endswith(t.ops_rate)
        }
    )
    paths: dict[str, _Work] = {}
    have_ops = np.zeros(n, dtype=bool)
    for path in names:
        base = t.ops_prefix + path
        count, rate, peak = (
            _column(raw, base + t.ops_count),
            _column(raw, base + t.ops_rate),
            _column(raw, base + t.ops_peak),
        )
        rate_s = rate * sm_clock if rate is not None else np.full(n, _NAN)
        count = count if count is not None else np.full(n, _NAN)
        flop = np.where(~np.isnan(count), count, rate_s * time_s)
        peak_s = peak * sm_clock if peak is not None else np.full(n, _NAN)
        have_ops |= ~np.isnan(flop)
        paths[path] = _Work(
            flop,
            np.where(~np.isnan(rate_s), rate_s, _div(count, time_s)),
            peak_s,
            np.zeros(n, dtype=bool),
        )

    _dense_aggregate_peaks(paths, t.family_prefix, notes)

    def family_sum(attr: str) -> np.ndarray:
        agg = [getattr(w, attr) for p, w in paths.items() if not p.startswith(t.family_prefix)]
        ops = [getattr(w, attr) for p, w in paths.items() if p.startswith(t.family_prefix)]
        a = np.nansum(agg, axis=0) if agg else np.zeros(n)
        o = np.nansum(ops, axis=0) if ops else np.zeros(n)
        return np.where(a > 0, a, o)

    return _Tensor(
        paths,
        np.where(have_ops, family_sum("flop") if paths else 0.0, _NAN),
        np.where(have_ops, family_sum("flop_per_s") if paths else 0.0, _NAN),
        np.where(have_ops, "ops_path", "").astype(object),
        notes,
    )


def _dense_aggregate_peaks(paths: dict[str, _Work], family: str, notes: list[list[str]]) -> None:
    """A per-datatype aggregate path without a sparsity suffix (RTX 50xx
    ``src_bf16_dst_fp32``) holds the *sparsity-on* peak (174,080 ops/cycle where its dense
    ``op_hmma_…_sparsity_off`` child holds 87,040). Where the launch ran no sparse MMA of that
    datatype (its ``_sparsity_on`` children 0 or absent), its work is judged against the dense
    peak: the highest ``_sparsity_off`` child's (ROOFLINE_SPEC §3.2 "never add a sparse path's
    ops to a dense path's peak"; ncu's own pct_of_peak uses the dense peak). In place."""
    for agg in [p for p in paths if not p.startswith(family) and "sparsity" not in p]:
        kids = [
            p for p in paths if p.startswith(family) and p.endswith("_" + agg + "_sparsity_off")
        ]
        if not kids:
            continue
        on = [paths[k[: -len("off")] + "on"].flop for k in kids if k[: -len("off")] + "on" in paths]
        sparse_ops = np.nansum(on, axis=0) if on else np.zeros(len(paths[agg].flop))
        with np.errstate(all="ignore"):
            dense = np.fmax.reduce([paths[k].peak for k in kids])
            use = (sparse_ops == 0) & (dense > 0) & ~(paths[agg].peak <= dense)
        paths[agg].peak = np.where(use, dense, paths[agg].peak)
        for i in np.flatnonzero(use & (paths[agg].flop > 0)):
            notes[i].append(
                f"tensor {agg} roof = its dense peak (the highest {family}*_{agg}_sparsity_off):"
                " the aggregate's peak_sustained is the sparsity-on rate, and no sparse MMA ran"
            )


def _opcode_work(raw: pd.DataFrame, cat: Catalog, time_s: np.ndarray, st: _Tensor) -> None:
    """2. SASS opcode counts x ops per MMA instruction (estimated), where no
    ops-path counter exists."""
    t = cat.tensor
    n = len(raw)
    opcode_total = _column(raw, t.opcode_metric)
    if opcode_total is None:
        return
    use = np.isnan(st.flop) & ~np.isnan(opcode_total)
    prefix = t.opcode_metric + "["
    per_path: dict[str, np.ndarray] = {}
    for col in (c for c in raw.columns if c.startswith(prefix)):
        opcode = col[len(prefix) : -1]
        if not t.looks_like_mma.search(opcode):  # an opcode kept for its signal, not tensor work
            continue
        counts = np.nan_to_num(raw[col].to_numpy(dtype=float, na_value=np.nan))
        shape = next((s for s in t.shapes if s.pattern.search(opcode)), None)
        if shape is None:
            for i in np.flatnonzero(use & (counts > 0)):
                st.notes[i].append(
                    f"tensor work incomplete: no MMA shape known for SASS opcode {opcode}"
                )
            continue
        per_path[shape.path] = per_path.get(shape.path, np.zeros(n)) + counts * shape.ops_of(opcode)
    est_total = np.zeros(n)
    for path, ops in per_path.items():
        flop = np.where(use, ops, _NAN)
        st.paths[path] = _Work(flop, _div(flop, time_s), np.full(n, _NAN), use.copy())
        est_total += ops
    st.flop = np.where(use, est_total, st.flop)
    st.rate = np.where(use, _div(est_total, time_s), st.rate)
    st.source = np.where(use, "sass_opcodes", st.source)
    for i in np.flatnonzero(use & (est_total > 0)):
        st.notes[i].append(
            "tensor FLOPs estimated from SASS MMA opcode counts x 2*M*N*K, no tensor roof in this"
            " report"
        )


def _legacy_work(
    raw: pd.DataFrame, cat: Catalog, cc: np.ndarray, time_s: np.ndarray, st: _Tensor
) -> None:
    """3. Legacy 512 x tensor-pipe instructions, CC 7.0 only (approximate), where
    nothing else applied."""
    t = cat.tensor
    legacy_cc = np.isin(np.round(cc, 1), t.legacy_cc)
    count = _term(raw, t.legacy_count) * t.legacy_factor
    rate_clock = _column(raw, t.legacy_rate_clock)
    rate = (
        _term(raw, t.legacy_rate)
        * t.legacy_factor
        * (rate_clock if rate_clock is not None else _NAN)
    )
    use = legacy_cc & np.isnan(st.flop) & (~np.isnan(count) | ~np.isnan(rate))
    if not use.any():
        return
    flop = np.where(~np.isnan(count), count, rate * time_s)
    flop_per_s = np.where(~np.isnan(rate), rate, _div(count, time_s))
    peak_clock = _column(raw, t.legacy_peak_clock)
    peak = (
        _term(raw, t.legacy_peak)
        * t.legacy_factor
        * (peak_clock if peak_clock is not None else _NAN)
    )
    st.paths["legacy_x512"] = _Work(
        np.where(use, flop, _NAN),
        np.where(use, flop_per_s, _NAN),
        np.where(use, peak, _NAN),
        use.copy(),
    )
    st.flop = np.where(use, flop, st.flop)
    st.rate = np.where(use, flop_per_s, st.rate)
    st.source = np.where(use, "legacy_x512", st.source)
    for i in np.flatnonzero(use & (flop > 0)):
        st.notes[i].append(
            "tensor FLOPs = 512 x tensor-pipe instructions (NERSC convention): exact only for"
            " HMMA.884 with FP32 accumulation"
        )


@dataclass
class _Traffic:
    bytes: np.ndarray
    bytes_per_s: np.ndarray
    peak: np.ndarray
    definition: np.ndarray
    #: ``definition`` coded: index into ``ids`` ('' first: no definition)
    codes: np.ndarray
    ids: list[str]


def _level_traffic(
    raw: pd.DataFrame, cat: Catalog, cc: np.ndarray, time_s: np.ndarray, traffic: str
) -> dict[str, _Traffic]:
    out: dict[str, _Traffic] = {}
    n = len(raw)
    for name in LEVELS:
        level = cat.levels[name]
        defs = list(level.definitions)
        if traffic == "nersc":
            defs.sort(key=lambda d: d.id != "nersc")
        b = np.full(n, _NAN)
        r = np.full(n, _NAN)
        pk = np.full(n, _NAN)
        used = np.zeros(n, dtype=np.int64)  # 1 + the definition's place in defs, 0: none yet
        for j, d in enumerate(defs, start=1):
            valid = _catalog.cc_in_range(cc, d.cc_min, d.cc_max)
            db = _resolve(raw, d.bytes, cc).values
            dr = _resolve(raw, d.rate, cc).values
            dp = _resolve(raw, d.peak, cc).values
            take = valid & (used == 0) & (~np.isnan(db) | ~np.isnan(dr))
            b = np.where(take, np.where(np.isnan(db), dr * time_s, db), b)
            r = np.where(take, np.where(np.isnan(dr), _div(db, time_s), dr), r)
            pk = np.where(take, dp, pk)
            used[take] = j
        ids = ["", *(d.id for d in defs)]
        out[name] = _Traffic(b, r, pk, np.array(ids, dtype=object)[used], used, ids)
    return out


def _zero_fallback(
    raw: pd.DataFrame,
    cat: Catalog,
    cc: np.ndarray,
    time_s: np.ndarray,
    levels: dict[str, _Traffic],
    notes: list[list[str]],
) -> None:
    """A level of ``[evidence].zero_fallback_levels`` (thresholds.toml) whose chosen definition
    counts 0 B while a later definition holds bytes takes that definition (bytes, rate and roof),
    with a note: a zero another counter of the same level contradicts is never shown. In place."""
    for name in cat.thresholds.get("evidence", {}).get("zero_fallback_levels", ()):
        lv, defs = levels[name], cat.levels[name].definitions
        for d in defs:
            zero = (lv.bytes == 0) & (lv.definition != d.id)
            db = _resolve(raw, d.bytes, cc).values
            take = zero & _catalog.cc_in_range(cc, d.cc_min, d.cc_max) & (db > 0)
            if not take.any():
                continue
            j = lv.ids.index(d.id)
            for i in np.flatnonzero(take):
                notes[i].append(
                    f"{name.upper()} bytes are 0 under the {lv.definition[i]} definition while"
                    f" {d.bytes[0].label} (or 32 B x its sectors) holds {fmt.si(db[i], 'B')}: the"
                    f" {d.id} definition is used, not a zero: {d.description}"
                )
            lv.bytes = np.where(take, db, lv.bytes)
            lv.bytes_per_s = np.where(take, _div(db, time_s), lv.bytes_per_s)
            lv.peak = np.where(take, _resolve(raw, d.peak, cc).values, lv.peak)
            lv.definition = np.where(take, d.id, lv.definition)
            lv.codes = np.where(take, j, lv.codes)


def _ledger(
    raw: pd.DataFrame,
    cat: Catalog,
    cc: np.ndarray,
    flop_held: dict[str, np.ndarray],
    levels: dict[str, _Traffic],
    notes: list[list[str]],
) -> pd.Categorical:
    """The ``evidence_sources`` column: per precision, level, time and clock, every source the
    launch's input holds, the used one first, with the agreement of two forms of one quantity
    (``dram__bytes.sum`` and read + write); a disagreement beyond
    ``[evidence].flop_disagree`` is a note (flag).
    """
    disagree = float(cat.thresholds.get("evidence", {}).get("flop_disagree", 0.02))
    parts = dict(flop_held)
    for name in LEVELS:
        parts[name] = _level_ledger(raw, cat, cc, name, levels[name], disagree, notes)
    parts["time"] = alternatives_text([(r.label, _recipe(raw, r, cc)) for r in cat.time], len(raw))
    clocks = [(cat.clocks[c], _column(raw, cat.clocks[c])) for c in ("sm", "smsp")]
    parts["clock"] = alternatives_text([(name, v) for name, v in clocks if v is not None], len(raw))
    return ledger_text(parts)


def _level_ledger(
    raw: pd.DataFrame,
    cat: Catalog,
    cc: np.ndarray,
    name: str,
    level: _Traffic,
    disagree: float,
    notes: list[list[str]],
) -> pd.Categorical:
    """One level's ledger text per launch (:func:`_ledger`): which byte recipes of each definition
    the launch holds decides the text, so it is written once per distinct combination; a recipe
    that disagrees with the used definition's first is a note of that launch."""
    used = level.definition
    held = []
    for d in cat.levels[name].definitions:
        mine, ref = used == d.id, np.full(len(raw), _NAN)
        for r in d.bytes:
            v = _recipe(raw, r, cc)
            held.append(~np.isnan(v))
            here = held[-1] & mine
            first = here & np.isnan(ref)
            _note_disagreement(name, r.label, ref, v, here & ~first, disagree, notes)
            ref = np.where(first, v, ref)
    has_bytes = ~np.isnan(level.bytes)
    first, inverse = distinct_codes([level.codes, has_bytes, *held])
    text = _level_text(
        cat.levels[name].definitions,
        np.asarray(level.ids, dtype=object)[level.codes[first]],
        [h[first] for h in held],
        has_bytes[first],
    )
    return categorical(inverse, text)


def _note_disagreement(
    name: str,
    label: str,
    ref: np.ndarray,
    v: np.ndarray,
    both: np.ndarray,
    disagree: float,
    notes: list[list[str]],
) -> None:
    """A note for each launch (``both``) whose bytes from recipe ``label`` are further than
    ``disagree`` from its first recipe's (``ref``)."""
    with np.errstate(invalid="ignore"):
        apart = np.abs(v - ref) / np.maximum(np.maximum(np.abs(v), np.abs(ref)), 1.0)
        for i in np.flatnonzero(both & (apart > disagree)):
            notes[i].append(
                Note(
                    "sources_disagree",
                    f"{SOURCES_DISAGREE}: {name.upper()} bytes {ref[i]:.6g} from the first"
                    f" recipe but {v[i]:.6g} from {label} ({100 * apart[i]:.1f} % apart): the"
                    " first is used",
                )
            )


def _level_text(
    definitions: Iterable[Any], used: np.ndarray, held: list[np.ndarray], has_bytes: np.ndarray
) -> np.ndarray:
    """The ledger text of one level for launches with definition ``used``, holding the byte recipes
    ``held`` (one mask per recipe of each definition, in catalog order) and bytes (``has_bytes``):
    the used definition's recipes (``"a = b"``), "rate x time" where it held none, then the other
    definitions the launch holds."""
    n = len(used)
    text = np.full(n, "", dtype=object)
    others = np.full(n, "", dtype=object)
    masks = iter(held)
    for d in definitions:
        seen = np.zeros(n, dtype=bool)
        for r in d.bytes:
            has = next(masks)
            here = has & (used == d.id)
            first = here & ~seen
            text = np.where(first, np.where(text == "", "", text + "; ") + r.label, text)
            text = np.where(here & ~first, text + " = " + r.label, text)
            seen |= first
            other = has & (used != d.id) & (used != "")
            other &= np.array([f" {d.id}," not in t for t in others], dtype=bool)
            others = np.where(other, others + f" {d.id},", others)
    rated = (text == "") & (used != "") & has_bytes
    text = np.where(rated, used.astype(object) + " definition (rate x time)", text)
    extra = np.array([t.strip(" ,") for t in others], dtype=object)
    return np.where(extra != "", text + "; also held: " + extra + " (other definitions)", text)


def _failed_measurements(raw: pd.DataFrame, time_s: np.ndarray) -> np.ndarray:
    """Launches ncu could not measure: NaN duration, or NaN in every FLOP counter that other
    launches of the same input have (ncu writes NaN, not 0, when a pass fails)."""
    n = len(raw)
    duration = _column(raw, "gpu__time_duration.sum")
    failed = np.zeros(n, dtype=bool)
    if duration is not None:
        failed |= np.isnan(duration) & np.isnan(time_s)
    counters = [c for c in raw.columns if "sass_thread_inst_executed_op_" in c]
    if counters:
        values = raw[counters]
        for at in raw.groupby("source", sort=False).indices.values():
            block = values if len(at) == n else values.iloc[at]  # one input: no copy
            seen = block.notna().any(axis=0)
            if seen.any():
                all_nan = block.loc[:, seen].isna().all(axis=1).to_numpy()
                failed[at] |= all_nan
    return failed


def _damaged(k: pd.DataFrame, cat: Catalog, read: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Launches whose record is damaged: flagged by the parser (a ``damaged_record`` note among
    its input notes ``read``, :func:`ncuroof.parser.validate.check_values`) or with a rate beyond
    any roof (:func:`ncuroof.parser.validate.roof_damage`, reason returned).
    Returns (mask, reasons).
    """
    mask = np.zeros(len(read), dtype=bool)
    for i in np.flatnonzero(np.fromiter(map(bool, read), dtype=bool, count=len(read))):
        mask[i] = any(getattr(n, "code", "") == "damaged_record" for n in read[i])
    names = [*(f"{p}_flop" for p in PRECISIONS), *(f"{lv}_bytes" for lv in LEVELS)]
    reasons = roof_damage(
        {n: k[f"{n}_per_s"].to_numpy(float) for n in names},
        {n: k[f"peak_{n}_per_s"].to_numpy(float) for n in names},
        cat,
    )
    beyond = reasons != ""
    floats = [c for c in k.columns if k[c].dtype == float]
    inf = np.zeros((len(k), len(floats)), dtype=bool)
    for j in (j for j, c in enumerate(floats) if np.isinf(k[c].to_numpy(float)).any()):
        inf[:, j] = np.isinf(k[floats[j]].to_numpy(float))  # a rare overflow: no matrix copy
    inf_any = inf.any(axis=1) if inf.any() else np.zeros(len(k), dtype=bool)
    for i in np.flatnonzero(inf_any & (reasons == "")):  # a safety net behind the parser's limits
        reasons[i] = (
            f"{DAMAGED}: {', '.join(np.array(floats)[inf[i]][:3])} overflowed to infinity (kept"
            " missing); re-run ncu"
        )
    if inf_any.any():  # rewriting every float column would copy the table
        k[floats] = np.where(inf, np.nan, k[floats].to_numpy(float))
    return mask | beyond | inf_any, reasons


def _instruction_counts(raw: pd.DataFrame, cat: Catalog, cc: np.ndarray) -> dict[str, np.ndarray]:
    """Warp instructions, transactions per level and the instruction issue roof ([DING] §III;
    ``metrics/instruction_roofline.toml``): roof = SMs x schedulers per SM x SM clock [warp inst/s].
    """
    n = len(raw)
    ins = cat.instruction
    if ins is None:
        return {
            c: np.full(n, _NAN)
            for c in ("warp_inst", *(f"{lv}_transactions" for lv in LEVELS), "peak_warp_inst_per_s")
        }
    out = {"warp_inst": _resolve(raw, ins.warp_inst, cc).values}
    for lv in LEVELS:
        out[f"{lv}_transactions"] = (
            _resolve(raw, ins.transactions[lv], cc).values
            if lv in ins.transactions
            else np.full(n, _NAN)
        )
    sms, clock = _column(raw, ins.sm_count), _column(raw, ins.clock)
    out["peak_warp_inst_per_s"] = (
        (sms * ins.schedulers_per_sm * clock)
        if sms is not None and clock is not None
        else np.full(n, _NAN)
    )
    return out


def _fraction(raw: pd.DataFrame, metric: str) -> np.ndarray:
    col = _column(raw, metric)
    return np.full(len(raw), _NAN) if col is None else col / 100.0


def _measured_columns(
    raw: pd.DataFrame,
    cat: Catalog,
    cc: np.ndarray,
    time_s: np.ndarray,
    work: dict[str, _Work],
    levels: dict[str, _Traffic],
    tensor_flop: np.ndarray,
    tensor_rate: np.ndarray,
) -> pd.DataFrame:
    """The launch table's identity and measured columns: time, work, traffic, rates, roofs from
    the report, SpeedOfLight throughputs, occupancy, hot pipe and instruction counts (one table
    built at once, not column by column)."""
    sm_clock = _column(raw, cat.clocks["sm"])
    ident = ("source", "launch_id", "kernel_name", "kernel_demangled", "nvtx_range")
    return pd.DataFrame(
        {
            **{c: raw[c] for c in (*ident, "device_name", "cc", "grid", "block")},
            "time_s": time_s,
            "sm_clock_hz": sm_clock if sm_clock is not None else _NAN,
            **{f"{p}_flop": work[p].flop for p in PRECISIONS},
            "tensor_flop": tensor_flop,
            **{f"{lv}_bytes": levels[lv].bytes for lv in LEVELS},
            **{f"{p}_flop_per_s": work[p].flop_per_s for p in PRECISIONS},
            "tensor_flop_per_s": tensor_rate,
            **{f"{lv}_bytes_per_s": levels[lv].bytes_per_s for lv in LEVELS},
            **{f"peak_{p}_flop_per_s": work[p].peak for p in PRECISIONS},
            **{f"peak_{lv}_bytes_per_s": levels[lv].peak for lv in LEVELS},
            # achievable roofs: ncuroof.model.roofs.fill_ceilings; fractions: classify.classify
            **{f"achievable_{p}_flop_per_s": _NAN for p in PRECISIONS},
            **{f"achievable_{lv}_bytes_per_s": _NAN for lv in LEVELS},
            "roof_fraction": _NAN,
            "achievable_roof_fraction": _NAN,
            "achievable_sources": objects([()] * len(raw)),
            **_throughput_columns(raw, cat, cc),
            **_instruction_counts(raw, cat, cc),
            **limiter_columns(raw, cat),
        },
        index=raw.index,
    )


def _throughput_columns(raw: pd.DataFrame, cat: Catalog, cc: np.ndarray) -> dict[str, Any]:
    """SpeedOfLight throughputs, waves, occupancy and the hot pipe of each launch."""
    waves = _column(raw, cat.throughput["waves"])
    pipe, pipe_frac, unit, unit_frac = ("", _NAN, "", _NAN)
    if cat.pipes is not None:
        code, pipe_frac = hot_pipe_codes(raw, cat.pipes, cc)
        pipe = coded_text(code + 1, ["", *(p.name for p in cat.pipes.pipes)])
        code, unit_frac = hot_pipe_codes(raw, cat.pipes, cc, memory=True)
        unit = coded_text(code + 1, ["", *(p.name for p in cat.pipes.memory_units)])
    return {
        "sm_throughput_frac": _fraction(raw, cat.throughput["sm"]),
        "memory_throughput_frac": _fraction(raw, cat.throughput["memory"]),
        "waves_per_sm": waves if waves is not None else _NAN,
        "occupancy_frac": _fraction(raw, cat.throughput["occupancy"]),
        "theoretical_occupancy_frac": _fraction(raw, cat.throughput["theoretical_occupancy"]),
        "hot_pipe": pipe,
        "hot_pipe_frac": pipe_frac,
        "hot_memory_unit": unit,
        "hot_memory_unit_frac": unit_frac,
        "pm_sample_interval_s": _sample_interval(raw, cat),
    }


def _sample_interval(raw: pd.DataFrame, cat: Catalog) -> Any:
    """The PM sampling interval in seconds (profiler__pmsampler_interval_time in ns, or _cycles
    over the SM clock); NaN where ncu did not sample."""
    ns = _column(raw, cat.throughput.get("sample_interval_time", ""))
    cycles = _column(raw, cat.throughput.get("sample_interval_cycles", ""))
    clock = _column(raw, cat.clocks["sm"])
    out = np.full(len(raw), np.nan)
    if cycles is not None and clock is not None:
        out = np.asarray(cycles, dtype=float) / np.asarray(clock, dtype=float)
    if ns is not None:
        ns = np.asarray(ns, dtype=float)
        out = np.where(np.isfinite(ns), ns * 1e-9, out)
    return np.where(out > 0, out, np.nan)


def _report_roofs(
    k: pd.DataFrame, work: dict[str, _Work], levels: dict[str, _Traffic], tpaths: dict[str, _Work]
) -> None:
    """``peak_source``, ``ceiling_sources`` and ``datasheet_gpu`` for the roofs the report
    carries (in place)."""
    names = [*PRECISIONS, *LEVELS, *(tensor_columns(p).name for p in tpaths)]
    peaks = np.column_stack(
        [work[p].peak for p in PRECISIONS]
        + [levels[lv].peak for lv in LEVELS]
        + [w.peak for w in tpaths.values()]
    )
    have = np.isfinite(peaks)
    k["peak_source"] = coded_text(have.any(axis=1), ["", "report"])
    k["ceiling_sources"] = report_sets(names, have)
    k["datasheet_gpu"] = coded_text(np.zeros(len(k), dtype=np.int64), [""])


def _has_work(
    k: pd.DataFrame, work: dict[str, _Work], levels: dict[str, _Traffic]
) -> tuple[np.ndarray, np.ndarray]:
    """Whether each launch has FLOPs and bytes to place a point: counts or rates (a rate-only
    export, the roofline section's details page, has no duration). The SASS-opcode tensor estimate
    alone does not make a roofline (no FP counters, no roof)."""
    opcodes = (k["tensor_source"] == "sass_opcodes").to_numpy(dtype=bool, na_value=False)
    tensor = np.where(opcodes, _NAN, k["tensor_flop"].to_numpy(float))
    has_flop = np.isfinite(
        np.column_stack(
            [work[p].flop for p in PRECISIONS] + [work[p].flop_per_s for p in PRECISIONS] + [tensor]
        )
    ).any(axis=1)
    has_bytes = np.isfinite(
        np.column_stack(
            [levels[lv].bytes for lv in LEVELS] + [levels[lv].bytes_per_s for lv in LEVELS]
        )
    ).any(axis=1)
    return has_flop, has_bytes


def _missing_note(has_flop: bool, has_bytes: bool) -> str:
    """The first note of a ``no_roofline_metrics`` launch: what it lacks and how to collect it."""
    missing = []
    if not has_flop:
        missing.append(
            "FLOP counters (smsp__sass_thread_inst_executed_op_*, sm__ops_path_tensor_*)"
        )
    if not has_bytes:
        missing.append(
            "memory traffic (dram__bytes, lts__lts2xbar_cycles_active, l1tex__lsu_writeback_active_*)"  # noqa: E501
        )
    return (
        "no roofline metrics: missing "
        + " and ".join(missing)
        + ", collect with ncu --set roofline (or --set full)"
    )


_FAILED_NOTE = (
    "measurement failed: ncu stored NaN for the duration or the FLOP counters of this launch,"
    " not plotted"
)


def _status_and_notes(
    raw: pd.DataFrame,
    k: pd.DataFrame,
    cat: Catalog,
    time: Resolved,
    work: dict[str, _Work],
    levels: dict[str, _Traffic],
    notes: list[list[str]],
) -> np.ndarray:
    """Each launch's status (ok, no_roofline_metrics, failed_measurement, corrupt_record), with
    the reason first in its notes (``notes`` is extended in place, the reader's notes last, each
    with its code where it has one: :func:`ncuroof.schema.input_notes`)."""
    time_s = time.values
    read = _read_notes(raw)
    has_flop, has_bytes = _has_work(k, work, levels)
    failed = _failed_measurements(raw, time_s)
    status = np.where(
        failed, "failed_measurement", np.where(has_flop & has_bytes, "ok", "no_roofline_metrics")
    )
    damaged, why = _damaged(k, cat, read)
    status = np.where(damaged, "corrupt_record", status)
    first = cat.time[0].label
    other_time = np.array([False, *(bool(x) and x != first for x in time.names)])[time.which + 1]
    labels = time.labels  # read once: each read of the property makes the whole array
    for i in np.flatnonzero(
        damaged | failed | (status == "no_roofline_metrics") | np.isnan(time_s) | other_time
    ):  # the rest have no note
        if damaged[i]:
            if why[i]:
                notes[i].insert(0, Note("damaged_record", why[i]))
        elif failed[i]:
            notes[i].insert(0, _FAILED_NOTE)
        elif status[i] == "no_roofline_metrics":
            notes[i].insert(0, _missing_note(has_flop[i], has_bytes[i]))
        if not failed[i] and np.isnan(time_s[i]):
            notes[i].append(_no_duration_note(status[i]))
        if other_time[i]:
            notes[i].append(f"time from {labels[i]}")
    for i in np.flatnonzero(np.fromiter(map(bool, read), dtype=bool, count=len(read))):
        notes[i].extend(read[i])
    return status


def _read_notes(raw: pd.DataFrame) -> np.ndarray:
    """Each launch's reader notes (:func:`ncuroof.schema.input_notes`), an object array of lists:
    each distinct text parsed once, launches with the same text sharing its list (only read)."""
    if "input_notes" not in raw.columns:
        return objects([[]])[np.zeros(len(raw), dtype=np.int64)]
    codes, texts = pd.factorize(raw["input_notes"], use_na_sentinel=True)
    return objects([*input_notes(list(texts)), []])[codes]  # -1 (missing): the last, empty


def _status_codes(status: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``status`` (each one of :data:`ncuroof.schema.STATUSES`) as codes into those words."""
    codes = np.zeros(len(status), dtype=np.int64)
    for j, word in enumerate(STATUSES):
        codes[status == word] = j
    return codes, list(STATUSES)


def _no_duration_note(status: str) -> str:
    """The note of a launch without a duration: a point from rates needs none,
    counts and savings do."""
    if status == "ok":
        return (
            "no duration (gpu__time_duration.sum or sm__cycles_elapsed.avg): the point is placed"
            " from the rates the input holds (FLOP/s, B/s), which need none; time, FLOPs, bytes,"
            " the share of GPU time and savings need it (add the SpeedOfLight section, or --metrics"
            " gpu__time_duration.sum)"
        )
    return "no duration (gpu__time_duration.sum or sm__cycles_elapsed.avg)"


def _later_columns(k: pd.DataFrame) -> None:
    """The columns later stages fill (roofs and time at the roof, --expect, kernel key, bound,
    diagnosis), empty (in place)."""
    for col in ("time_at_roof_s", "saving_s", "expected_flop", "expected_dram_bytes"):
        k[col] = _NAN
    none = np.zeros(len(k), dtype=np.int64)  # one text for every launch: taken, not converted
    for col in ("time_at_roof_bound", "speed_of_light_note", "evidence", "advice", "limiter"):
        k[col] = coded_text(none, [""])
    k["kernel_key"] = None  # set once by the analysis (ncuroof.model.summary.kernel_keys, --match)
    k["clock_control"] = (
        None  # set by the analysis from each input (ncuroof.parser.clocks.clock_control)
    )
    k["bound"] = coded_text(none, ["unknown"])
    k["diagnosis"] = coded_text(none, ["not_classified"])
    k["flags"] = [[] for _ in range(len(k))]


@gc_paused
def compute_launches(raw: pd.DataFrame, catalog: Catalog, traffic: str = "ncu") -> pd.DataFrame:
    """Compute the launch table (one row per launch) from the raw table.

    Parameters
    ----------
    raw : DataFrame
        Parser output (:data:`ncuroof.schema.RAW_META` columns + ncu metric columns, base units).
    catalog : Catalog
        The metric catalog.
    traffic : {'ncu', 'nersc'}, default 'ncu'
        Which traffic definition each memory level prefers (``metrics/roofline.toml``).

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.LAUNCHES` columns except ``bound`` (set to ``'unknown'``; see
        :func:`ncuroof.model.classify.classify`). SI units. Missing values are NaN/empty, never 0.
        After the declared columns, three columns per tensor datapath with work in any launch:
        ``tensor_<path>_flop``, ``tensor_<path>_flop_per_s``, ``peak_tensor_<path>_flop_per_s``
        (paths: ncu's ``sm__ops_path_tensor_<path>``, ``sass_hmma``/``sass_imma``/``sass_dmma``
        for the opcode estimate, ``legacy_x512``).

    Notes
    -----
    ``status`` is ``failed_measurement`` when ncu stored NaN for the duration or for every FLOP
    counter the launch has (ncu could not profile it), ``no_roofline_metrics`` when the launch
    has neither FLOP counters nor traffic of any level, else ``ok``.
    """
    cat = catalog
    cc = cc_number(raw["cc"])
    time = _resolve(raw, cat.time, cc)
    time_s = time.values
    notes: list[list[str]] = [[] for _ in range(len(raw))]  # the FLOP notes first, then tensor
    work, flop_source, flop_held = _precision_work(raw, cat, cc, time_s, notes)
    tpaths, tensor_flop, tensor_rate, tensor_source = _tensor_work(raw, cat, cc, time_s, notes)
    levels = _level_traffic(raw, cat, cc, time_s, traffic)
    _zero_fallback(raw, cat, cc, time_s, levels, notes)
    _cross_checks(raw, cat, cc, time_s, work, levels, notes)
    k = _measured_columns(raw, cat, cc, time_s, work, levels, tensor_flop, tensor_rate)
    k["flop_source"] = text_array(flop_source)
    k["tensor_source"] = tensor_source
    k["evidence_sources"] = text_array(_ledger(raw, cat, cc, flop_held, levels, notes))
    for lv in LEVELS:
        k[f"{lv}_definition"] = coded_text(levels[lv].codes, levels[lv].ids)
    _report_roofs(k, work, levels, tpaths)
    k["ncu_version"] = raw["ncu_version"]
    k["reader"] = raw["reader"] if "reader" in raw.columns else None
    status = _status_and_notes(raw, k, cat, time, work, levels, notes)
    k["status"] = coded_text(*_status_codes(status))
    _later_columns(k)
    k["notes"] = notes
    return _with_tensor_paths(k[list(LAUNCHES)].reset_index(drop=True), tpaths)


def _cross_checks(
    raw: pd.DataFrame,
    cat: Catalog,
    cc: np.ndarray,
    time_s: np.ndarray,
    work: dict[str, _Work],
    levels: dict[str, _Traffic],
    notes: list[list[str]],
) -> None:
    """The evidence that checks the counters against each other, in place: the L2 write counters
    (an L2 zero they contradict; a missing L2 roof from the tag stage, on ``levels``), the opcode
    signals and the order of the levels' bytes, each adding its ``notes``
    (:mod:`ncuroof.model.evidence`)."""
    writes = [_recipe(raw, r, cc) for r in cat.l2_evidence.get("writes", ())]
    _count_l2_writes(raw, cat, cc, time_s, levels, writes, notes)
    levels["l2"].peak, _ = l2_write_evidence(
        lambda r: _recipe(raw, r, cc),
        cat,
        levels["l2"].bytes,
        levels["l2"].definition,
        levels["l2"].peak,
        notes,
    )

    opcode_signals(raw, cat, work["fp16"].flop, notes)
    level_order_evidence(
        {lv: levels[lv].bytes for lv in LEVELS},
        {lv: levels[lv].definition for lv in LEVELS},
        np.fmax.reduce(writes) if writes else np.full(len(raw), _NAN),
        float(cat.thresholds.get("evidence", {}).get("level_order_slack", 0.0)),
        notes,
    )


def _first_held(values: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per launch (``n`` of them), the first of ``values`` (alternatives in order of preference)
    that is not NaN, and its index (-1, with NaN, where none is held)."""
    stack = np.column_stack(values) if values else np.full((n, 1), _NAN)
    held = ~np.isnan(stack)
    which = np.where(held.any(axis=1), held.argmax(axis=1), -1)
    return np.where(which >= 0, stack[np.arange(len(stack)), np.maximum(which, 0)], _NAN), which


def _count_l2_writes(
    raw: pd.DataFrame,
    cat: Catalog,
    cc: np.ndarray,
    time_s: np.ndarray,
    levels: dict[str, _Traffic],
    writes: list[np.ndarray],
    notes: list[list[str]],
) -> None:
    """L2 as reads + writes where a reads-only definition (``[l2_evidence].reads_only``) puts it
    below DRAM by more than ``[evidence].level_order_slack`` and the report holds L2 write bytes
    (``[l2_evidence].writes``, the first held): bytes and rate add the writes, the roof is the tag
    stage's (``[l2_evidence].peak``, which counts reads and writes) where held, the definition
    becomes ``<id>+writes`` and a note keeps ncu's read-only value (in place on ``levels``)."""
    l2, dram = levels["l2"], levels["dram"].bytes
    if not writes or not cat.l2_reads_only:
        return
    w, which = _first_held(writes, len(raw))
    slack = float(cat.thresholds.get("evidence", {}).get("level_order_slack", 0.0))
    with np.errstate(invalid="ignore"):
        add = (
            np.isin(l2.definition, list(cat.l2_reads_only))
            & (dram > 0)
            & (l2.bytes < dram * (1 - slack))
            & (w > 0)
        )
    if not add.any():
        return
    tag, _ = _first_held([_recipe(raw, r, cc) for r in cat.l2_evidence.get("peak", ())], len(raw))
    reads = l2.bytes.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(reads > 0, (reads + w) / reads, _NAN)
    l2.bytes = np.where(add, reads + w, reads)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(time_s > 0, l2.bytes / time_s, l2.bytes_per_s * share)
    l2.bytes_per_s = np.where(add, rate, l2.bytes_per_s)
    l2.peak = np.where(add & (tag > 0), tag, l2.peak)
    ids = list(l2.ids)
    codes = l2.codes.copy()
    for i in np.flatnonzero(add):
        name = f"{l2.definition[i]}+writes"
        if name not in ids:
            ids.append(name)
        codes[i] = ids.index(name)
        notes[i].append(
            f"L2 counts writes: the {l2.definition[i]} definition's {fmt.si(reads[i], 'B')}"
            f" (reads only, ncu's L2 dot) is below DRAM {fmt.si(dram[i], 'B')}, so the"
            f" {fmt.si(w[i], 'B')} of L2 writes ({cat.l2_evidence['writes'][which[i]].label}) are"
            " added"
        )
    l2.ids, l2.codes = ids, codes
    l2.definition = np.asarray(ids, dtype=object)[codes]


def _with_tensor_paths(k: pd.DataFrame, tpaths: dict[str, _Work]) -> pd.DataFrame:
    """``k`` and one column triple per tensor datapath with work in any launch (ncu shows only
    non-zero paths)."""
    extra = {}
    for path, w in tpaths.items():
        if (np.nan_to_num(w.flop) > 0).any():
            t = tensor_columns(path)
            extra |= {t.flop: w.flop, t.flop_per_s: w.flop_per_s, t.peak: w.peak}
    if extra:
        k = pd.concat([k, pd.DataFrame(extra)], axis=1)
    return k


@gc_paused
def compute_points(kernels: pd.DataFrame) -> pd.DataFrame:
    """Place every launch on the roofline: one point per (launch, precision, level) with work.

    Parameters
    ----------
    kernels : DataFrame
        The launch table (:data:`ncuroof.schema.LAUNCHES`); launches whose ``status`` is not
        ``ok`` get no points. Tensor work is taken per datapath from the ``tensor_<path>_flop``
        columns :func:`compute_launches` adds.

    Returns
    -------
    DataFrame
        The :data:`ncuroof.schema.POINTS` columns, sorted by source, launch, precision and level
        (in :data:`ncuroof.schema.LEVELS` order). ``ai_flop_per_byte`` = ``flop_per_s`` /
        ``bytes_per_s``; ``ridge_flop_per_byte`` = ``peak_flop_per_s`` / ``peak_bytes_per_s``;
        ``roof_flop_per_s`` = min(``peak_flop_per_s``, AI × ``peak_bytes_per_s``) [KPG §2.9];
        ``roof_fraction`` = ``flop_per_s`` / ``roof_flop_per_s``; ``bound`` = memory when AI is
        below the ridge. Points without a roof have NaN roof columns and an empty ``bound``.
        Achievable roofs (``achievable_<p>_flop_per_s``, ``achievable_<level>_bytes_per_s``,
        ``achievable_sources`` of the launch table, :func:`ncuroof.model.roofs.fill_ceilings`)
        give ``achievable_roof_flop_per_s`` = min(achievable FLOP/s, AI × achievable B/s), an absent
        achievable roof taken at its peak, NaN where the point has neither; and
        ``achievable_roof_fraction`` = ``flop_per_s`` / that.
    """
    parts = _point_parts(kernels)
    if not parts:
        return empty(POINTS)
    rows = np.concatenate([p.rows for p in parts])
    order = _point_order(kernels, rows, parts)
    return pd.DataFrame(
        {
            "source": kernels["source"].array.take(rows[order]),
            "launch_id": kernels["launch_id"].to_numpy()[rows[order]],
            "kernel_name": kernels["kernel_name"].array.take(rows[order]),
            **{
                c: (
                    np.concatenate([p.numbers[c] for p in parts])[order]
                    if c in parts[0].numbers
                    else _texts([p.texts[c] for p in parts], order)
                )
                for c in POINTS
                if c not in ("source", "launch_id", "kernel_name")
            },
        },
        copy=False,  # every column made here: not copied into one block
    )


def _point_parts(kernels: pd.DataFrame) -> list[_PointPart]:
    """The points of each (level, precision) pair, for the launches with work there."""
    ok = (kernels["status"] == "ok").to_numpy()
    sources = _Sources(kernels, "ceiling_sources")
    achievable = _Sources(kernels, "achievable_sources")
    parts = []
    work = _point_work(kernels)
    defs = {lv: pd.factorize(kernels[f"{lv}_definition"], use_na_sentinel=False) for lv in LEVELS}
    for lv in LEVELS:
        for w in work:
            # a rate-only launch (no duration, so no counts) is placed from its
            # rates: AI = FLOP/s / B/s
            keep = (
                ok
                & ((w.flop > 0) | np.isnan(w.flop))
                & (w.flop_per_s > 0)
                & (kernels[f"{lv}_bytes_per_s"].to_numpy(float) > 0)
            )
            if keep.any():
                parts.append(
                    _point_part(kernels, np.flatnonzero(keep), lv, w, sources, achievable, defs[lv])
                )
    return parts


@dataclass
class _PointPart:
    """The points of some launches (``rows`` of the launch table) for one precision and level:
    numeric columns, and text columns as (codes, words) pairs."""

    rows: np.ndarray
    level: str
    numbers: dict[str, np.ndarray]
    texts: dict[str, tuple[np.ndarray, np.ndarray]]


def _point_order(kernels: pd.DataFrame, rows: np.ndarray, parts: list[_PointPart]) -> np.ndarray:
    """The order of the points by source, launch_id, precision and level (:data:`LEVELS` order),
    stable, as a sort of those columns would give; sorted on integer ranks, not text."""
    source = pd.factorize(kernels["source"], sort=True, use_na_sentinel=True)[0]
    source = np.where(source < 0, source.max(initial=0) + 1, source)  # missing last
    precision = [(p.texts["precision"], len(p.rows)) for p in parts]
    names = np.concatenate([words for (_, words), _ in precision])
    rank = pd.factorize(names, sort=True)[0]
    offsets = np.cumsum([0, *(len(words) for (_, words), _ in precision)])
    prec = np.concatenate(
        [rank[o + codes] for ((codes, _), _), o in zip(precision, offsets, strict=False)]
    )
    level = np.concatenate([np.full(len(p.rows), LEVELS.index(p.level)) for p in parts])
    launch = kernels["launch_id"].to_numpy()[rows]
    return np.lexsort((level, prec, launch, source[rows]))


def _texts(pieces: list[tuple[np.ndarray, np.ndarray]], order: np.ndarray) -> Any:
    """A ``str`` column from per-part (codes, words), in ``order``: each word converted once."""
    offsets = np.cumsum([0, *(len(words) for _, words in pieces)])
    codes = np.concatenate([c + o for (c, _), o in zip(pieces, offsets, strict=False)])[order]
    words = np.concatenate([w for _, w in pieces])
    if all(isinstance(x, str) for x in words):
        return pd.array(pa.array(words, pa.large_string()).take(codes), dtype="str")
    return pd.array(words[codes], dtype="str")  # a missing value among them


def achievable_roof(
    ai: np.ndarray,
    peak_flop: np.ndarray,
    peak_bytes: np.ndarray,
    achievable_flop: np.ndarray,
    achievable_bytes: np.ndarray,
) -> np.ndarray:
    """The attainable roof under the achievable roofs, per point.

    Parameters
    ----------
    ai : ndarray
        Arithmetic intensity [FLOP/B].
    peak_flop, peak_bytes : ndarray
        Peak compute [FLOP/s] and bandwidth [B/s] roofs.
    achievable_flop, achievable_bytes : ndarray
        Achievable roofs [FLOP/s, B/s], NaN where none.

    Returns
    -------
    ndarray
        min(achievable FLOP/s, AI × achievable B/s) [FLOP/s] ([KPG §2.9] with the roofs a
        benchmark sustained), an absent achievable roof taken at its peak; NaN where the point
        has neither achievable roof.
    """
    ach_f, ach_b = np.isfinite(achievable_flop), np.isfinite(achievable_bytes)
    both = np.minimum(
        np.where(ach_f, achievable_flop, peak_flop),
        ai * np.where(ach_b, achievable_bytes, peak_bytes),
    )
    return np.where(ach_f | ach_b, both, _NAN)


def flop_columns(columns: Iterable[str]) -> dict[str, str]:
    """The FLOP column of each precision in a table with the launch table's work columns.

    Parameters
    ----------
    columns : iterable of str
        The table's columns (the launch table, :data:`ncuroof.schema.PHASES`,
        :data:`ncuroof.schema.OPS`).

    Returns
    -------
    dict of str to str
        Precision (as the points table spells it) -> column [FLOP]: ``fp64`` -> ``fp64_flop`` for
        every precision of :data:`ncuroof.schema.PRECISIONS` (present or not), then
        ``tensor:<path>`` -> ``tensor_<path>_flop`` for each tensor datapath column
        present, in column order.
    """
    tensor = {t.precision: t.flop for t in map(tensor_columns, tensor_paths(columns))}
    return {p: f"{p}_flop" for p in PRECISIONS} | tensor


@dataclass
class _PointWork:
    """One precision or tensor datapath of the launch table, as :func:`compute_points` reads it."""

    name: str
    key: str
    flop: np.ndarray
    flop_per_s: np.ndarray
    peak: np.ndarray
    achievable: np.ndarray
    estimated: np.ndarray


def _point_work(kernels: pd.DataFrame) -> list[_PointWork]:
    """Every precision and tensor datapath of ``kernels``: work, rate, peak and
    achievable roof per launch."""
    n = len(kernels)

    def col(name: str) -> np.ndarray:
        return kernels[name].to_numpy(float) if name in kernels.columns else np.full(n, _NAN)

    estimated = kernels["tensor_source"].isin(["sass_opcodes", "legacy_x512"]).to_numpy()
    # one tensor point per work: where an aggregate path (src_…) holds the work, its per-family
    # op_… paths (the same ops, split by instruction) are not placed a second time
    in_aggregate = np.zeros(n, dtype=bool)
    for path in tensor_paths(kernels.columns):
        if not path.startswith("op_"):
            in_aggregate |= np.nan_to_num(col(tensor_columns(path).flop)) > 0
    out = []
    for prec, c in flop_columns(kernels.columns).items():
        key = c.removesuffix("_flop")
        out.append(
            _PointWork(
                prec,
                key,
                np.where(in_aggregate, 0.0, col(c)) if key.startswith("tensor_op_") else col(c),
                col(f"{key}_flop_per_s"),
                col(f"peak_{key}_flop_per_s"),
                col(f"achievable_{key}_flop_per_s"),
                np.zeros(n, dtype=bool) if prec in PRECISIONS else estimated,
            )
        )
    return out


class _Sources:
    """The roof sets of a roof-sources column (:data:`ncuroof.schema.SOURCE_COLUMNS`): each roof's
    source per launch, found once per distinct set (:class:`ncuroof.model.roofs.Factorized`)."""

    def __init__(self, kernels: pd.DataFrame, column: str) -> None:
        n = len(kernels)
        cells = kernels[column].to_numpy(dtype=object) if column in kernels.columns else None
        self.sets = Factorized.of(cells if cells is not None else objects([], n))
        self.words: dict[str, np.ndarray] = {}

    def get(self, idx: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The source of roof ``name`` ('' without one) of the launches ``idx``, as (codes, words):
        the words one per distinct roof set."""
        if name not in self.words:
            self.words[name] = objects(dict(s).get(name, "") for s in self.sets.sets)
        return self.sets.codes[idx], self.words[name]


def _point_part(
    kernels: pd.DataFrame,
    idx: np.ndarray,
    lv: str,
    w: _PointWork,
    sources: _Sources,
    achievable: _Sources,
    definitions: tuple[np.ndarray, np.ndarray],
) -> _PointPart:
    """The points of the launches ``idx`` for one precision ``w`` at level ``lv`` ([KPG §2.9])."""
    fps, bps = w.flop_per_s[idx], kernels[f"{lv}_bytes_per_s"].to_numpy(float)[idx]
    peak_f, peak_b = w.peak[idx], kernels[f"peak_{lv}_bytes_per_s"].to_numpy(float)[idx]
    ach_f, ach_b = (
        w.achievable[idx],
        (
            kernels[f"achievable_{lv}_bytes_per_s"].to_numpy(float)[idx]
            if f"achievable_{lv}_bytes_per_s" in kernels.columns
            else np.full(len(idx), _NAN)
        ),
    )
    ai = _div(fps, bps)  # an infinite rate over an infinite one is unknown, not a warning
    ridge = _div(peak_f, peak_b)
    roof = np.minimum(peak_f, ai * peak_b)
    ach_roof = achievable_roof(ai, peak_f, peak_b, ach_f, ach_b)
    one = np.zeros(len(idx), dtype=np.int64)
    numbers = {
        "time_s": kernels["time_s"].to_numpy(float)[idx],
        "flop": w.flop[idx],
        "bytes": kernels[f"{lv}_bytes"].to_numpy(float)[idx],
        "ai_flop_per_byte": ai,
        "flop_per_s": fps,
        "bytes_per_s": bps,
        "peak_flop_per_s": peak_f,
        "peak_bytes_per_s": peak_b,
        "ridge_flop_per_byte": ridge,
        "roof_flop_per_s": roof,
        "roof_fraction": _div(fps, roof),
        "estimated": w.estimated[idx].astype(bool),
        "achievable_flop_per_s": ach_f,
        "achievable_bytes_per_s": ach_b,
        "achievable_roof_flop_per_s": ach_roof,
        "achievable_roof_fraction": _div(fps, ach_roof),
    }
    texts = {
        "precision": (one, np.array([w.name], dtype=object)),
        "level": (one, np.array([lv], dtype=object)),
        "peak_flop_source": sources.get(idx, w.key),
        "peak_bytes_source": sources.get(idx, lv),
        "bound": (
            np.where(np.isnan(ridge), 0, np.where(ai < ridge, 1, 2)),
            np.array(["", "memory", "compute"], dtype=object),
        ),
        "definition": (definitions[0][idx], definitions[1]),
        "achievable_flop_source": achievable.get(idx, w.key),
        "achievable_bytes_source": achievable.get(idx, lv),
    }
    return _PointPart(idx, lv, numbers, texts)


@gc_paused
def time_at_roof(kernels: pd.DataFrame, catalog: Catalog | None = None) -> pd.DataFrame:
    """Fill ``time_at_roof_s``, ``time_at_roof_bound``, ``saving_s`` and ``speed_of_light_note``.

    Parameters
    ----------
    kernels : DataFrame
        The launch table with its roofs filled (:func:`ncuroof.model.roofs.fill_ceilings`):
        ``<p>_flop`` [FLOP] and ``peak_<p>_flop_per_s`` [FLOP/s] per precision and tensor
        datapath, ``<level>_bytes`` [B] and ``peak_<level>_bytes_per_s`` [B/s] per level,
        ``time_s``, ``sm_throughput_frac``, ``memory_throughput_frac``.
    catalog : Catalog, optional
        For ``metrics/pipes.toml`` and ``metrics/thresholds.toml``; default
        :func:`ncuroof.catalog.load`.

    Returns
    -------
    DataFrame
        A copy with ``time_at_roof_s`` [s] = max(roofline bound, unit bound) — the roofline bound
        adds the times of precisions that share a pipe and takes the max over pipes and memory
        levels [Williams et al., CACM 52(4), 2009; KPG §2.9]; the unit bound is
        ``time_s`` × max(SM, memory throughput) ([NCU-SEC] SpeedOfLight) — with
        ``time_at_roof_bound`` saying which set it, ``saving_s`` [s] = max(``time_s`` −
        ``time_at_roof_s``, 0) and ``speed_of_light_note``; see
        :func:`ncuroof.model.speed_of_light.apply_speed_of_light`. The roofline bound is NaN for
        launches whose ``status`` is not ``ok``; the unit bound exists wherever ncu stored the
        duration and a throughput. Where a bound exists, the launch floor of its GPU
        (:func:`ncuroof.model.speed_of_light.launch_floor`, ``metrics/thresholds.toml``
        [launch_floor]) is a third lower bound (``time_at_roof_bound`` ``launch_floor``).
    """
    cat = catalog or _catalog.load()
    disagree = float(cat.thresholds.get("speed_of_light", {}).get("disagree", 2.0))
    cc = cc_number(kernels["cc"])
    t = pd.Series(kernels["time_s"].to_numpy(float))
    own = t.groupby(kernels["device_name"].astype(str).to_numpy()).transform("min").to_numpy()
    return apply_speed_of_light(
        kernels, cat.pipes, cc, disagree, launch_floor(cc, cat.thresholds["launch_floor"], own)
    )
