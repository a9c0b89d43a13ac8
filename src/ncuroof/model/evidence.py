"""The evidence ledger: every source a launch's input holds for each quantity, the one used, and
whether they agree (issue 33).

The order of preference is data (``metrics/opcodes.toml`` ``[order]``): roofline counters, then
the SASS opcode tables, then read + write counters, then rates x clock. For FLOPs this module adds
the opcode tables as a source (FLOPs per thread instruction x executed thread instructions per
opcode, ncu's roofline weights) and checks a counter against its opcode table where both exist; for
L2 it flags a zero the report's own write counters contradict and takes a roof from the L2 tag
stage where the chosen definition has none. Everything is vectorized over the launch table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import Catalog, OpcodeTable, Recipe
from ..schema import FP16_MOVES, L2_READS_ONLY, LEVELS_OUT_OF_ORDER, SOURCES_DISAGREE, Note
from .distinct import categorical, distinct_codes
from .roofs import objects

__all__ = [
    "alternatives_text",
    "OpcodeFlops",
    "opcode_flops",
    "flop_evidence",
    "l2_write_evidence",
    "level_order_evidence",
    "opcode_signals",
    "SOURCES_DISAGREE",
    "L2_READS_ONLY",
    "ledger_text",
]

# SOURCES_DISAGREE and L2_READS_ONLY (ncuroof.schema): the words of the notes this module writes, as
# Notes with codes ``sources_disagree`` and ``l2_reads_only`` (flags of the same names).

_NAN = np.nan

#: The start of the note that names a spin barrier (read by the fence limiter).
SPIN_WAIT = "spin wait"


@dataclass
class OpcodeFlops:
    """FLOPs of each precision from one SASS opcode table, per launch (NaN where the launch
    lacks the table)."""

    table: OpcodeTable
    held: np.ndarray
    flop: dict[str, np.ndarray]


def opcode_flops(raw: pd.DataFrame, cat: Catalog) -> list[OpcodeFlops]:
    """FLOPs per precision from each SASS opcode table the input holds, in order of preference.

    Parameters
    ----------
    raw : DataFrame
        The raw table: ``<table metric>`` (any value: the table exists in that launch) and one
        ``<table metric>[<OPCODE>]`` column per kept FP opcode
        (:attr:`ncuroof.catalog.Catalog.instanced_metrics`).
    cat : Catalog
        ``cat.opcodes`` (``metrics/opcodes.toml``): tables, their factor to thread instructions and
        the FLOPs per thread instruction of each opcode.

    Returns
    -------
    list of OpcodeFlops
        One per table of ``opcodes.toml`` present in ``raw`` [FLOP]: Σ weight × count × factor;
        an opcode the table does not list in a launch that holds the table executed 0 times.
    """
    if cat.opcodes is None:
        return []
    n = len(raw)
    out = []
    for table in cat.opcodes.tables:
        if table.metric not in raw.columns:
            continue
        held = raw[table.metric].notna().to_numpy()
        flop = {}
        for precision, weights in cat.opcodes.weights.items():
            total = np.zeros(n)
            for opcode, w in weights.items():
                col = f"{table.metric}[{opcode}]"
                if col in raw.columns:
                    total += w * np.nan_to_num(raw[col].to_numpy(dtype=float, na_value=np.nan))
            flop[precision] = np.where(held, total * table.factor, _NAN)
        out.append(OpcodeFlops(table, held, flop))
    return out


def _apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| / max(|a|, |b|); 0 where both are 0, NaN where either is missing."""
    big = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(big > 0, np.abs(a - b) / np.where(big > 0, big, 1.0), 0.0)


def flop_evidence(
    precision: str,
    flop: np.ndarray,
    flop_per_s: np.ndarray,
    source: np.ndarray,
    time_s: np.ndarray,
    tables: list[OpcodeFlops],
    disagree: float,
    notes: list[list[str]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.Categorical]:
    """Fill a precision's FLOPs from opcode tables where counters have none; check where both exist.

    Parameters
    ----------
    precision : str
        ``fp64``, ``fp32`` or ``fp16``.
    flop, flop_per_s : ndarray
        From the roofline counters [FLOP, FLOP/s] (NaN where none).
    source : ndarray of str
        ``count``, ``rate x time`` or '' per launch.
    time_s : ndarray
        Launch durations [s] (a rate from an opcode count is FLOPs / time).
    tables : list of OpcodeFlops
        From :func:`opcode_flops`, in order of preference.
    disagree : float
        ``[evidence].flop_disagree`` of ``metrics/thresholds.toml``: the relative difference above
        which a counter and its thread-opcode table are a flag.
    notes : list of list of str
        Per-launch notes, extended in place (the disagreement, a warp-table assumption).

    Returns
    -------
    (flop, flop_per_s, source, held)
        FLOPs and FLOP/s with the opcode tables' values where the counters had none, the source
        used per launch (the table's id where it came from one), and the ledger text of the
        sources held (``"rate x time = sass_thread_opcodes (0.01 % apart)"``), a Categorical: each
        distinct text made once.
    """
    title, held = precision.upper(), _Held.of(source)
    for t in tables:
        value = t.flop[precision]
        take = np.isnan(flop) & t.held
        if t.table.assumption:
            _add_note(notes, take & (value > 0), _assumption(title, t.table))
        flop = np.where(take, value, flop)
        flop_per_s = np.where(take, _div(value, time_s), flop_per_s)
        source = np.where(take, t.table.id, source)
        both = t.held & held.nonempty() & ~take
        apart = _apart(flop, value)
        held.append(both, *_agreement_text(t.table, both, apart, disagree))
        held.replace(take, t.table.id)
        if t.table.factor == 1:  # only a thread table counts what the counters count
            for i in np.flatnonzero(both & (apart > disagree)):
                notes[i].append(
                    _disagree_note(title, (flop[i], source[i]), value[i], apart[i], t, disagree)
                )
    return flop, flop_per_s, source.astype(object), categorical(held.codes, objects(held.words))


@dataclass
class _Held:
    """A precision's ledger text per launch, coded: ``words[codes]`` (each text made once)."""

    codes: np.ndarray
    words: list[str]

    @classmethod
    def of(cls, source: np.ndarray) -> _Held:
        """The text of each launch's FLOP source (``count``, ``rate x time`` or '')."""
        codes, words = pd.factorize(np.asarray(source, dtype=object), use_na_sentinel=False)
        return cls(codes, [w if isinstance(w, str) else "" for w in words])

    def nonempty(self) -> np.ndarray:
        """Whether each launch's text is not empty."""
        return np.array([w != "" for w in self.words], dtype=bool)[self.codes]

    def append(self, where: np.ndarray, codes: np.ndarray, shown: np.ndarray) -> None:
        """``shown[codes]`` added to the text of the launches ``where``, once per distinct pair."""
        at = np.flatnonzero(where)
        if not len(at):
            return
        first, pair = distinct_codes([self.codes[at], codes[at]])
        base = len(self.words)
        self.words += [self.words[self.codes[at[f]]] + shown[codes[at[f]]] for f in first]
        self.codes = self.codes.copy()
        self.codes[at] = base + pair

    def replace(self, where: np.ndarray, word: str) -> None:
        """The text of the launches ``where`` is ``word``."""
        if where.any():
            self.words.append(word)
            self.codes = np.where(where, len(self.words) - 1, self.codes)


def _assumption(title: str, table: OpcodeTable) -> str:
    """The note of FLOPs taken from an opcode table that assumes something (a warp table)."""
    return f"{title} FLOPs from {table.metric} x {table.factor:g}: {table.assumption}"


def _add_note(notes: list[list[str]], where: np.ndarray, note: str) -> None:
    """Append ``note`` to the notes of the launches ``where`` (in place)."""
    for i in np.flatnonzero(where):
        notes[i].append(note)


def _agreement_text(
    table: OpcodeTable, both: np.ndarray, apart: np.ndarray, disagree: float
) -> tuple[np.ndarray, np.ndarray]:
    """The ledger's ``" = <table> (x % apart)"`` of the launches holding both the counters and the
    opcode table (``both``): ``!=`` (a thread table) or ``<=`` (warp x 32, an upper bound of the
    thread count) beyond ``disagree``; each distinct difference formatted once. Returns (codes,
    texts): per launch the index of its text (-1 outside ``both``)."""
    sign = ("=", "!=") if table.factor == 1 else ("=", "<=")
    text, shown = np.full(len(both), -1, dtype=np.int64), np.array([], dtype=object)
    if both.any():
        codes, values = pd.factorize(apart[both], use_na_sentinel=False)
        shown = np.array(
            [
                f" {sign[int(a > disagree)]} {table.id} ({fmt.apart(a)} apart)"
                if np.isfinite(a)
                else ""
                for a in values
            ],
            dtype=object,
        )
        text[both] = codes
    return text, shown


def _disagree_note(
    title: str,
    counted: tuple[float, str],
    value: float,
    apart: float,
    t: OpcodeFlops,
    disagree: float,
) -> Note:
    """The ``sources_disagree`` note of a launch whose counters (``counted``: FLOPs and their
    source) and thread-opcode table ``t`` (``value`` [FLOP]) are ``apart`` by more
    than ``disagree``."""
    flop, source = counted
    return Note(
        "sources_disagree",
        f"{SOURCES_DISAGREE}: {title} FLOPs {fmt.si(flop, 'FLOP')} from the counters ({source})"
        f" but {fmt.si(value, 'FLOP')} from {t.table.metric} ({100 * apart:.1f} % apart, more"
        f" than {100 * disagree:g} %): the counters are used; re-profile if the run was replayed"
        " inconsistently",
    )


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), _NAN)


def l2_write_evidence(
    evaluate: Callable[[Recipe], np.ndarray],
    cat: Catalog,
    l2_bytes: np.ndarray,
    definition: np.ndarray,
    peak: np.ndarray,
    notes: list[list[str]],
) -> tuple[np.ndarray, np.ndarray]:
    """Flag an L2 zero the write counters contradict; fill a missing L2 roof from the tag stage.

    Parameters
    ----------
    evaluate : callable
        Recipe -> per-launch values (the formulas's recipe evaluation).
    cat : Catalog
        ``cat.l2_evidence`` (``[l2_evidence]`` of ``metrics/roofline.toml``): ``writes``
        and ``peak`` recipes.
    l2_bytes, definition, peak : ndarray
        The L2 bytes [B], traffic definition id and roof [B/s] chosen by the formulas.
    notes : list of list of str
        Per-launch notes, extended in place.

    Returns
    -------
    (peak, peak_label)
        The L2 roof [B/s] with the tag-stage roof where the chosen definition gave none (NaN, or 0
        from 0 B / 0 % of peak) and the recipe label of that roof ('' where unchanged).
    """
    n = len(l2_bytes)
    writes = np.full(n, _NAN)
    label = np.full(n, "", dtype=object)
    for r in cat.l2_evidence.get("writes", ()):
        v = evaluate(r)
        take = np.isnan(writes) & ~np.isnan(v)
        writes = np.where(take, v, writes)
        label = np.where(take, r.label, label)
    reads_only = (definition == "ncu-legacy") & (l2_bytes == 0) & (writes > 0)
    for i in np.flatnonzero(reads_only):
        notes[i].append(
            Note(
                "l2_reads_only",
                f"{L2_READS_ONLY}: l2_bytes = 0 under the ncu-legacy definition"
                f" (l1tex__m_xbar2l1tex_read_bytes, L2 -> L1 reads only) while {label[i]} ="
                f" {fmt.si(writes[i], 'B')} were written to L2: this launch's L2 traffic is writes;"
                " --traffic nersc (lts__t_bytes) counts them",
            )
        )
    missing = ~(peak > 0) & ~np.isnan(l2_bytes)
    peak_label = np.full(n, "", dtype=object)
    for r in cat.l2_evidence.get("peak", ()):
        v = evaluate(r)
        take = missing & (peak_label == "") & (v > 0)
        peak = np.where(take, v, peak)
        peak_label = np.where(take, r.label, peak_label)
    for i in np.flatnonzero(peak_label != ""):
        notes[i].append(
            f"L2 roof {fmt.si(peak[i], 'B/s')} from {peak_label[i]} (the"
            f" {definition[i] or 'chosen'} definition has none here)"
        )
    return peak, peak_label


def _signal_counts(
    raw: pd.DataFrame, metric: str, pattern: re.Pattern[str]
) -> dict[str, np.ndarray]:
    """Each kept opcode (with modifiers) of ``metric`` that ``pattern`` matches -> its counts."""
    prefix = metric + "["
    return {
        c[len(prefix) : -1]: np.nan_to_num(raw[c].to_numpy(dtype=float, na_value=np.nan))
        for c in raw.columns
        if c.startswith(prefix) and pattern.search(c[len(prefix) : -1])
    }


def opcode_signals(
    raw: pd.DataFrame, cat: Catalog, fp16_flop: np.ndarray, notes: list[list[str]]
) -> None:
    """Notes from the opcode-with-modifier table (``metrics/opcodes.toml`` [signals]), in place.

    ``hfma2_mma``: FP16 FLOPs whose HFMA2 instructions are (at least ``share`` of the FP16 warp
    instructions of ``sass__inst_executed_per_opcode``) HFMA2.MMA register moves: "probably moves,
    not math" (code ``fp16_moves``, issue 44). ``spin_barrier``: a strong GPU-scope load with YIELD,
    CCTL.IVALL or a GPU fence: a grid-wide spin barrier is named with its instruction counts.

    Parameters
    ----------
    raw : DataFrame
        The raw table with the ``<metric>[<OPCODE>]`` columns the parser kept.
    cat : Catalog
        ``cat.opcodes.signals`` and ``cat.tensor.opcode_metric``.
    fp16_flop : ndarray
        FP16 FLOPs per launch.
    notes : list of list of str
        Per-launch notes.
    """
    if cat.opcodes is None:
        return
    sig, metric = cat.opcodes.signals, cat.tensor.opcode_metric
    if "hfma2_mma" in sig:
        moves = sum(_signal_counts(raw, metric, sig["hfma2_mma"]).values(), np.zeros(len(raw)))
        fp16 = np.full(len(raw), _NAN)  # FP16 warp instructions: NaN where the table is absent
        for op in cat.opcodes.weights.get("fp16", {}):
            c = f"sass__inst_executed_per_opcode[{op}]"
            if c in raw.columns:
                v = raw[c].to_numpy(dtype=float, na_value=np.nan)
                fp16 = np.where(np.isnan(v), fp16, np.nan_to_num(fp16) + v)
        share = cat.opcodes.signal_share.get("hfma2_mma", 1.0)
        with np.errstate(invalid="ignore"):
            hit = (fp16_flop > 0) & (moves > 0) & (fp16 > 0) & (moves >= share * fp16)
        for i in np.flatnonzero(hit):
            notes[i].append(
                Note(
                    "fp16_moves",
                    f"{FP16_MOVES}: {moves[i]:,.0f} of the {fp16[i]:,.0f} FP16 warp instructions"
                    " are HFMA2.MMA, which the compiler emits to move registers on the FMA pipe;"
                    " the FP16 FLOPs counted from them are not arithmetic",
                )
            )
    if "spin_barrier" in sig:
        _spin_barrier(_signal_counts(raw, metric, sig["spin_barrier"]), len(raw), notes)


def _spin_barrier(counts: dict[str, np.ndarray], n: int, notes: list[list[str]]) -> None:
    """Name a spin wait at GPU or system scope: a strong GPU- or system-scope load with YIELD,
    CCTL.IVALL or a fence."""
    strong = [k for k in counts if "STRONG" in k]
    other = [k for k in counts if "STRONG" not in k]
    if not strong or not other:
        return
    with_strong = sum((counts[k] for k in strong), np.zeros(n)) > 0
    with_other = sum((counts[k] for k in other), np.zeros(n)) > 0
    for i in np.flatnonzero(with_strong & with_other):
        seen = ", ".join(f"{k} x {counts[k][i]:,.0f}" for k in counts if counts[k][i] > 0)
        scope = "system" if any(k.endswith(".SYS") and counts[k][i] > 0 for k in strong) else "GPU"
        notes[i].append(
            f"{SPIN_WAIT} at {scope} scope visible in the opcode table ({seen}): a grid-wide"
            " barrier or a semaphore (grid.sync, split-K serial reduction) where warps poll a flag"
            " until other blocks arrive; that wait is latency, not work: fewer grid-wide syncs"
            " (split the kernel at the barrier) or a block-level step instead"
        )


#: What a level's definitions leave out, named where that level counts less than the one under it.
_LEFT_OUT = {
    "l1": (
        "the L1 definition counts loads written back to registers only (stores, LDGSTS/cp.async"
        " and TMA copies bypass it)"
    ),
    "l2": "the L2 definition counts reads only (L2 -> L1 / crossbar), not writes",
    "l2+writes": (
        "the L2 definition counts its reads and the L2 writes held, and still less than DRAM: some"
        " DRAM traffic is in none of the L2 counters it reads"
    ),
}


def level_order_evidence(
    level_bytes: dict[str, np.ndarray],
    definitions: dict[str, np.ndarray],
    l2_writes: np.ndarray,
    slack: float,
    notes: list[list[str]],
) -> np.ndarray:
    """Flag a level that counts fewer bytes than the level under it (issue 44: an H100 launch with
    L2 224 B under the read-only definition and DRAM 5,632 B).

    Traffic reaching DRAM passes through L2, and L2 traffic through L1 (for the loads and stores
    both count), so a level below the one under it by more than ``slack`` (a fraction,
    ``[evidence].level_order_slack``) means its definition leaves traffic out: reads only (L2 ncu /
    ncu-legacy), loads written back only (L1 ncu). Bytes stay as the definition counts them
    (ncu's own); the note says which level, by how much, and the L2 write bytes where held.

    Parameters
    ----------
    level_bytes : dict of str to ndarray
        ``l1``, ``l2``, ``dram`` bytes [B] per launch (NaN: not held).
    definitions : dict of str to ndarray
        Each level's definition id per launch.
    l2_writes : ndarray
        L2 write bytes [B] from ``[l2_evidence].writes`` (NaN where not held).
    slack : float
        Allowed shortfall, fraction of the lower level's bytes.
    notes : list of list of str
        Per-launch notes, extended in place (code ``levels_out_of_order``).

    Returns
    -------
    ndarray of bool
        The launches flagged.
    """
    flagged = np.zeros(len(l2_writes), dtype=bool)
    for upper, lower in (("l1", "l2"), ("l2", "dram")):
        up, low = level_bytes[upper], level_bytes[lower]
        with np.errstate(invalid="ignore"):
            bad = (low > 0) & (up < low * (1 - slack))
        for i in np.flatnonzero(bad):
            with_writes = upper == "l2" and str(definitions[upper][i]).endswith("+writes")
            why = _LEFT_OUT["l2+writes" if with_writes else upper]
            extra = (
                f"; L2 writes held: {fmt.si(l2_writes[i], 'B')}"
                if upper == "l2" and l2_writes[i] > 0
                else ""
            )
            notes[i].append(
                Note(
                    "levels_out_of_order",
                    f"{LEVELS_OUT_OF_ORDER}: {upper.upper()} {fmt.si(up[i], 'B')}"
                    f" ({definitions[upper][i]} definition) below {lower.upper()}"
                    f" {fmt.si(low[i], 'B')}: {why}{extra}",
                )
            )
        flagged |= bad
    return flagged


def alternatives_text(forms: list[tuple[str, np.ndarray]], n: int) -> pd.Categorical:
    """Ledger text of one quantity given in several forms, in order of preference: the first form a
    launch holds, then each other held form with how far apart it is (``"a = b (0.3 % apart)"``).

    Parameters
    ----------
    forms : list of (label, ndarray)
        Each form's label and per-launch values (NaN where not held).
    n : int
        Number of launches.

    Returns
    -------
    Categorical of str
        '' where the launch holds none; each distinct text written once (launches share a handful:
        which form is first, and each other form's distinct difference).
    """
    ref, first_form = np.full(n, _NAN), np.full(n, -1, dtype=np.int64)
    codes, words = [], []  # per form: 1 + its " = label (x apart)" text's code, 0 where none
    for j, (label, v) in enumerate(forms):
        held = ~np.isnan(v)
        first = held & np.isnan(ref)
        first_form[first] = j
        other = held & ~first
        code, shown = np.zeros(n, dtype=np.int64), np.array([], dtype=object)
        if other.any():
            which, values = pd.factorize(_apart(ref[other], v[other]), use_na_sentinel=False)
            shown = np.array([f" = {label} ({fmt.apart(a)} apart)" for a in values], dtype=object)
            code[other] = which + 1
        codes.append(code)
        words.append(shown)
        ref = np.where(first, v, ref)
    rows, inverse = distinct_codes([first_form + 1, *codes])
    labels = ["", *(label for label, _ in forms)]
    made = np.array(
        [
            labels[first_form[i] + 1] + "".join(w[c[i] - 1] for c, w in zip(codes, words) if c[i])
            for i in rows
        ],
        dtype=object,
    )
    return categorical(inverse, made)


def ledger_text(parts: dict[str, np.ndarray | pd.Categorical]) -> pd.Categorical:
    """The ``evidence_sources`` cell of each launch:
    ``"quantity: used [= other (x % apart)] | ..."``.

    Parameters
    ----------
    parts : dict of str to ndarray of str or Categorical
        Quantity (``fp32``, ``dram``, ``time``, ...) -> per-launch text of its sources, the used one
        first ('' where the launch holds none).

    Returns
    -------
    Categorical of str
        The quantities with a source, `` | ``-joined, in the order of ``parts``; each distinct
        ledger is joined and stored once.
    """
    if not parts:
        return pd.Categorical([])
    names = list(parts)
    # launches share a handful of ledgers: factorize each quantity's text (hashing), join
    # each distinct row once
    coded = [
        (p.codes, p.categories)
        if isinstance(p, pd.Categorical) and not (p.codes < 0).any()
        else pd.factorize(p, use_na_sentinel=False)
        for p in (parts[k] for k in names)
    ]
    first, row = distinct_codes([c for c, _ in coded])
    words = [np.asarray(u, dtype=object) for _, u in coded]
    text = np.array(
        [
            " | ".join(f"{k}: {u[c[i]]}" for k, u, (c, _) in zip(names, words, coded) if u[c[i]])
            for i in first
        ],
        dtype=object,
    )
    return categorical(row, text)
