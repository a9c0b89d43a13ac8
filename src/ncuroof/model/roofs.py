"""Where each roof comes from, and where it came from: the report, a GPU datasheet, the user.

A ``.ncu-rep`` from the roofline or full set carries ``peak_sustained`` metrics, and
:func:`ncuroof.model.formulas.compute_launches` turns them into roofs at the clock ncu measured
(source ``report``). CSV exports and custom ``--metrics`` reports usually carry none; for them
:func:`fill_ceilings` takes the missing roofs from the datasheet catalog ``metrics/gpus.toml``
(source ``datasheet``, boost clock), matched on the device name or named with ``--gpu``, and the
user may set roofs outright (source ``user``, ``--peak-flops``/``--peak-bandwidth``).
:func:`fill_achievable` sets the achievable roofs: published measurements (``measured``) or the
user's.

A launch's roof sources (``ceiling_sources``, ``achievable_sources`` of the launch table,
:data:`ncuroof.schema.SOURCE_COLUMNS`) are, in memory, a roof set: a tuple of ``(roof, source)``
pairs in the order the roofs were set (the formulas sets the report's roofs, :func:`fill_ceilings`
adds datasheet, user and measured ones); the text ``"fp32:report,dram:datasheet"`` only in files
(:func:`ncuroof.schema.to_text`). The launch table also holds a summary in ``peak_source`` and the
datasheet entry used in ``datasheet_gpu``. Launches share a handful of roof sets, so every function
on them works once per distinct set and maps the result back by factorizing the column (linear in
launches, no text). :func:`roof_table` lays the roofs out as the declared long table
:data:`ncuroof.schema.ROOFS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import Catalog, GpuCatalog, GpuSpec, Measurement
from ..catalog import load as load_catalog
from ..errors import InputError
from ..parser.validate import roof_damage
from ..schema import (
    LEVELS,
    PRECISIONS,
    ROOF_SOURCES,
    ROOFS,
    Note,
    parse_cell,
    tensor_columns,
    tensor_paths,
)
from .distinct import bit_codes, distinct_codes, factorize_objects, first_rows, gc_paused

__all__ = [
    "fill_ceilings",
    "fill_achievable",
    "parse_peak",
    "SOURCES",
    "FLOP_ROOFS",
    "RoofSet",
    "objects",
    "report_sets",
    "set_source",
    "sources_of",
    "Factorized",
    "source_kinds",
    "has_any",
    "roof_table",
]

#: Values a peak roof's source takes, in the order they are listed (achievable roofs:
#: ``measured``, ``user``).
SOURCES = ("report", "datasheet", "user")
#: Names of a user compute roof (``--peak-flops``, ``--achievable-flops``): a precision, or
#: ``tensor`` for every tensor datapath; ``*`` names them all. Bandwidth roofs are named by level
#: (:data:`ncuroof.schema.LEVELS`).
FLOP_ROOFS = (*PRECISIONS, "tensor")
_SI = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([kKMGTP]?)\s*$")


#: One launch's roof sources: ``(roof, source)`` pairs, in the order the roofs were set.
RoofSet = tuple[tuple[str, str], ...]


def objects(items: Iterable[object], n: int | None = None) -> np.ndarray:
    """A 1-d object array of ``items`` (a tuple stays one cell; numpy would unpack it)."""
    items = list(items)
    if n is None or n == len(items):  # each item one cell, without a Python step each
        return np.fromiter(items, dtype=object, count=len(items))
    out = np.empty(len(items) if n is None else n, dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out


def _as_set(cell: object) -> RoofSet:
    """A cell as a roof set: a tuple of pairs, or () for a missing or empty cell."""
    return cell if isinstance(cell, tuple) else ()


def _per_set(cells: np.ndarray, change: Callable[[RoofSet], object]) -> np.ndarray:
    """``change`` of each cell's roof set, computed once per distinct set."""
    codes, uniques = factorize_objects(cells)
    done = objects(change(_as_set(u)) for u in uniques)
    return done[codes] if len(done) else objects([], len(cells))


def report_sets(names: list[str], have: np.ndarray) -> np.ndarray:
    """The roof sets of the roofs a report carries: ``have[i, j]`` (bool, launches x ``names``)
    says launch ``i`` has roof ``names[j]`` from ncu's ``peak_sustained``; one cell per launch."""
    bits = np.asarray(have, dtype=bool).reshape(len(have), len(names))
    if len(names) <= 62:  # each row's roofs as the bits of one integer
        key = bits.astype(np.int64) @ (np.int64(1) << np.arange(len(names), dtype=np.int64))
    else:
        key = np.unique(bits, axis=0, return_inverse=True)[1].reshape(-1)
    which, rows = pd.factorize(key)
    first = first_rows(which, len(rows))
    sets = objects(tuple((nm, "report") for nm, h in zip(names, have[i]) if h) for i in first)
    return sets[which] if len(sets) else objects([], len(have))


def set_source(cells: np.ndarray, idx: np.ndarray, name: str, source: str) -> np.ndarray:
    """``cells`` with roof ``name``'s source set to ``source`` for the launches ``idx`` (a roof
    already set keeps its place, a new one goes last)."""

    def change(roofs: RoofSet) -> RoofSet:
        if any(r == name for r, _ in roofs):
            return tuple((r, source if r == name else s) for r, s in roofs)
        return (*roofs, (name, source))

    out = cells.copy()
    if len(idx):
        out[idx] = _per_set(cells[idx], change)
    return out


@dataclass
class Factorized:
    """A roof-sources column factorized once: each launch's code into its distinct roof sets."""

    codes: np.ndarray
    sets: list[RoofSet]

    @classmethod
    def of(cls, cells: np.ndarray) -> Factorized:
        """The distinct roof sets of ``cells`` (a missing cell is the empty set)."""
        codes, uniques = factorize_objects(cells)
        return cls(codes, [_as_set(u) for u in uniques])

    def source(self, name: str) -> np.ndarray:
        """The source of roof ``name`` of every launch ('' without one), an object array."""
        per = objects(dict(s).get(name, "") for s in self.sets)
        return per[self.codes] if len(per) else objects([], len(self.codes))


def sources_of(cells: np.ndarray, name: str) -> np.ndarray:
    """The source of roof ``name`` of every launch ('' without one), an object array (to ask for
    several roofs, factorize once: :class:`Factorized`)."""
    return Factorized.of(cells).source(name)


def source_kinds(cells: np.ndarray) -> np.ndarray:
    """Each launch's ``peak_source``: the sources its roofs use, in
    :data:`ncuroof.schema.ROOF_SOURCES` order, ``+``-joined (``report+datasheet``)."""
    return _per_set(
        cells, lambda roofs: "+".join(x for x in ROOF_SOURCES if x in dict(roofs).values())
    )


def has_any(cells: np.ndarray) -> np.ndarray:
    """Whether each launch has a roof of any source."""
    return _per_set(cells, bool).astype(bool)


def parse_peak(text: str, allowed: tuple[str, ...], default: str) -> tuple[str, float]:
    """Parse a user roof ``[NAME=]VALUE[K|M|G|T|P]``.

    Parameters
    ----------
    text : str
        e.g. ``"fp32=19.5T"``, ``"900G"``, ``"dram=1.5e12"``.
    allowed : tuple of str
        Names accepted before ``=`` (precisions or levels, plus ``tensor``).
    default : str
        The name a bare value applies to (``"*"`` for every precision).

    Returns
    -------
    (str, float)
        The name and the value in base SI units (FLOP/s or B/s).

    Raises
    ------
    ValueError
        For an unknown name or a value that is not a finite positive number (``1e400``
        overflows to infinity: an infinite roof is no roof).
    """
    name, sep, value = text.partition("=")
    if not sep:
        name, value = default, text
    name = name.strip().lower()
    if name not in allowed and name != default:
        raise ValueError(f"{name!r} is not one of {', '.join(allowed)}")
    m = _NUMBER.match(value)
    number = float(m.group(1)) * _SI[m.group(2)] if m is not None else math.nan
    if not (math.isfinite(number) and number > 0):  # 1e400 and 1e999T are inf: no roof
        raise ValueError(
            f"{value!r} is not a finite positive number (suffixes K, M, G, T, P allowed)"
        )
    return name, number


@dataclass
class _Sets:
    """The roof sets of one sources column (:data:`RoofSet`) and the launches' notes,
    updated in place while roofs are filled."""

    cells: np.ndarray
    notes: list[list[str]]

    @classmethod
    def of(cls, k: pd.DataFrame, column: str, owned: bool = False) -> _Sets:
        """The sets of ``k[column]`` (none where absent) and a copy of each launch's notes (the
        lists themselves where ``owned``: made by this module's caller, not the input's)."""
        if column in k.columns:
            cells = k[column].to_numpy(dtype=object)
        else:
            cells = objects([()] * len(k))
        notes = k["notes"].to_numpy(dtype=object)
        return cls(cells, list(notes) if owned else _note_lists(notes))

    def set(self, idx: np.ndarray, name: str, source: str) -> None:
        """Roof ``name`` of the launches ``idx`` comes from ``source``."""
        self.cells = set_source(self.cells, idx, name, source)


def _note_lists(cells: np.ndarray) -> list[list[str]]:
    """A copy of every launch's notes (lists: ncuroof.schema.from_text reads text)."""
    return list(map(list, cells))


def _note_list(cell: object) -> list[str]:
    """A copy of a launch's notes (a list in memory; a hand-made or read-back table may hold their
    text or a tuple: parsed, codes included)."""
    return list(cell) if isinstance(cell, list) else list(parse_cell("notes", cell))


def _spec_for(device: object, gpus: GpuCatalog, forced: GpuSpec | None) -> GpuSpec | None:
    if forced is not None:
        return forced
    return gpus.entry(device=device)


def _devices(k: pd.DataFrame) -> np.ndarray:
    """Each launch's device name ('' where unknown)."""
    codes, names = pd.factorize(k["device_name"], use_na_sentinel=True)  # no object per launch
    return np.array([*names, ""], dtype=object)[codes]  # -1 (missing): the last, ''


@gc_paused
def fill_ceilings(
    kernels: pd.DataFrame,
    gpus: GpuCatalog,
    gpu: str | None = None,
    peak_flops: Mapping[str, float] | None = None,
    peak_bandwidth: Mapping[str, float] | None = None,
    catalog: Catalog | None = None,
    achievable_flops: Mapping[str, float] | None = None,
    achievable_bandwidth: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Fill the roofs a launch lacks from a datasheet, and apply user roofs.

    Parameters
    ----------
    kernels : DataFrame
        From :func:`ncuroof.model.formulas.compute_launches`: ``peak_<p>_flop_per_s`` [FLOP/s],
        ``peak_<level>_bytes_per_s`` [B/s], ``peak_tensor_<path>_flop_per_s``, ``device_name``,
        ``cc``, ``sm_clock_hz``, ``status``, ``ceiling_sources`` (roof sets), ``notes``.
    gpus : GpuCatalog
        The datasheet catalog (``metrics/gpus.toml``).
    gpu : str, optional
        Use this catalog entry (id, name or a device name it matches) for every launch.
    peak_flops, peak_bandwidth : mapping, optional
        User roofs: FLOP/s by precision (``fp64``, ``fp32``, ``fp16``, ``tensor``; ``"*"`` for
        all), B/s by level (``dram``, ``l2``, ``l1``). They replace any other roof of that name.
    catalog : Catalog, optional
        For ``max_roof_multiple`` (``[input]`` of ``metrics/thresholds.toml``); default installed.
    achievable_flops, achievable_bandwidth : mapping, optional
        User achievable roofs, named the same way (see :func:`fill_achievable`).

    Returns
    -------
    DataFrame
        A copy with the roof columns filled, ``ceiling_sources``, ``peak_source`` (the sources
        used, ``+``-joined), ``datasheet_gpu`` and ``notes`` updated. A datasheet roof is used
        only where the input has none, its compute roofs scaled to the measured clock (datasheets
        are at boost, ROOFLINE_SPEC §9). A launch above ``max_roof_multiple`` times a datasheet
        roof holds a damaged counter: status ``corrupt_record``
        (:func:`ncuroof.parser.validate.roof_violations`; user roofs are taken as given).

    Raises
    ------
    InputError
        If ``gpu`` names no catalog entry.
    """
    forced = _forced_spec(gpus, gpu)
    flops, bandwidth = _check_names(peak_flops, peak_bandwidth)
    k = kernels.copy(deep=False)
    paths = tensor_paths(k.columns, "peak")
    spec_of = _fill_peaks(k, gpus, forced, _user_roofs(flops, bandwidth, paths), paths, catalog)
    specs = {d: s for d, s in spec_of.items() if s is not None}
    user = _check_names(achievable_flops, achievable_bandwidth)
    return _achievable(k, gpus, specs, user, paths, True)


def _fill_peaks(
    k: pd.DataFrame,
    gpus: GpuCatalog,
    forced: GpuSpec | None,
    user: list[tuple[str, str, float]],
    paths: list[str],
    catalog: Catalog | None,
) -> dict[str, GpuSpec | None]:
    """The peak roofs of :func:`fill_ceilings` on the copy ``k``, in place: datasheet roofs where
    the input has none, the user roofs ``user`` (:func:`_user_roofs`), the notes of launches
    without a roof, damaged records, and the sources columns. Return each device's datasheet."""
    sets, devices = _Sets.of(k, "ceiling_sources"), _devices(k)
    spec_of = {d: _spec_for(d, gpus, forced) for d in pd.unique(devices)}
    datasheet = _datasheet_roofs(k, gpus, spec_of, devices, paths, sets)
    _apply_user(k, sets, user, "peak_")
    _no_roof_notes(k, devices, spec_of, sets, gpus)
    _level_without_roof_notes(k, sets)
    _beyond_datasheet(k, sets, catalog if catalog is not None else load_catalog())
    k["ceiling_sources"], k["peak_source"] = sets.cells, source_kinds(sets.cells)
    k["datasheet_gpu"], k["notes"] = datasheet, sets.notes
    return spec_of


def _datasheet_roofs(
    k: pd.DataFrame,
    gpus: GpuCatalog,
    spec_of: dict[str, GpuSpec | None],
    devices: np.ndarray,
    paths: list[str],
    sets: _Sets,
) -> np.ndarray:
    """Fill the roofs each launch lacks from its device's datasheet ``spec_of`` (in place); return
    the ``datasheet_gpu`` column: the entry of the launches that took a roof from one, else ''."""
    datasheet = np.full(len(k), "", dtype=object)
    for device, spec in spec_of.items():
        if spec is not None:
            filled = _apply_datasheet(k, np.flatnonzero(devices == device), spec, gpus, paths, sets)
            datasheet[filled] = spec.id
    return datasheet


def _check_names(
    flops: Mapping[str, float] | None, bandwidth: Mapping[str, float] | None
) -> tuple[dict[str, float], dict[str, float]]:
    """The user roofs as dicts; ValueError for a name that is no precision (or
    tensor, ``*``) or level."""
    flops, bandwidth = dict(flops or {}), dict(bandwidth or {})
    unknown = [n for n in flops if n not in (*FLOP_ROOFS, "*")] + [
        n for n in bandwidth if n not in LEVELS
    ]
    if unknown:
        raise ValueError(
            f"unknown roof names {unknown}: use {', '.join(FLOP_ROOFS)} or * for FLOP/s "
            f"and {', '.join(LEVELS)} for bandwidth"
        )
    return flops, bandwidth


def fill_achievable(
    kernels: pd.DataFrame,
    gpus: GpuCatalog,
    spec_of: Mapping[str, GpuSpec],
    achievable_flops: Mapping[str, float] | None = None,
    achievable_bandwidth: Mapping[str, float] | None = None,
    paths: list[str] | None = None,
) -> pd.DataFrame:
    """Set the achievable roofs: published measurements of the launch's GPU, or the user's.

    Parameters
    ----------
    kernels : DataFrame
        With ``device_name``, the ``peak_*`` roofs, ``achievable_<p>_flop_per_s`` [FLOP/s],
        ``achievable_<level>_bytes_per_s`` [B/s], ``achievable_sources`` (roof sets; made where
        absent), ``notes`` and a ``peak_tensor_<path>_flop_per_s`` column per tensor datapath.
    gpus : GpuCatalog
        For the datasheet key of each tensor datapath.
    spec_of : mapping
        Device name -> the :class:`ncuroof.catalog.GpuSpec` the launches of that device use.
    achievable_flops, achievable_bandwidth : mapping, optional
        User achievable roofs [FLOP/s by precision, ``tensor`` or ``*``; B/s by level]
        (``--achievable-flops``, ``--achievable-bandwidth``).
    paths : list of str, optional
        The tensor datapaths with a roof column (default: found in ``kernels``' columns).

    Returns
    -------
    DataFrame
        A copy with the achievable roofs (``achievable_tensor_<path>_flop_per_s`` added where a
        tensor datapath has one), ``achievable_sources`` (``measured``: the highest measurement
        of the quantity in ``metrics/gpus.toml``, :meth:`ncuroof.catalog.GpuSpec.achievable`;
        ``user``) and a note citing each measurement used. Peak roofs are left as they are.

    Raises
    ------
    ValueError
        For a user roof name that is no precision or level.
    """
    flops, bandwidth = _check_names(achievable_flops, achievable_bandwidth)
    paths = tensor_paths(kernels.columns, "peak") if paths is None else paths
    return _achievable(kernels.copy(deep=False), gpus, spec_of, (flops, bandwidth), paths, False)


def _achievable(
    k: pd.DataFrame,
    gpus: GpuCatalog,
    spec_of: Mapping[str, GpuSpec],
    user: tuple[dict[str, float], dict[str, float]],
    paths: list[str],
    owned: bool,
) -> pd.DataFrame:
    """:func:`fill_achievable` of the copy ``k`` (in place, returned), with the user roofs
    ``user`` (FLOP/s, B/s); ``owned``: ``k``'s notes lists are this module's own, not copied."""
    for col in (
        *(f"achievable_{p}_flop_per_s" for p in PRECISIONS),
        *(f"achievable_{lv}_bytes_per_s" for lv in LEVELS),
    ):
        if col not in k.columns:
            k[col] = np.nan
    sets, devices = _Sets.of(k, "achievable_sources", owned), _devices(k)
    for device, spec in spec_of.items():
        _apply_measured(k, np.flatnonzero(devices == device), spec, gpus, paths, sets)
    _apply_user(k, sets, _user_roofs(*user, paths), "achievable_")
    k["achievable_sources"], k["notes"] = sets.cells, sets.notes
    return k


def _apply_user(
    k: pd.DataFrame, sets: _Sets, user: list[tuple[str, str, float]], kind: str
) -> None:
    """Set the user roofs ``user`` (:func:`_user_roofs`) on every launch, in place: ``kind``
    (``peak_`` or ``achievable_``) names the columns."""
    for name, col, value in user:
        k[kind + col[len("peak_") :]] = float(value)
        sets.set(np.arange(len(k)), name, "user")


def _measured_targets(quantity: str, gpus: GpuCatalog, paths: list[str]) -> list[tuple[str, str]]:
    """(roof name, achievable column) of each roof a measured ``quantity`` of
    gpus.toml applies to."""
    if quantity.startswith("tensor_"):
        return [
            (t.name, t.achievable)
            for p, t in zip(paths, map(tensor_columns, paths))
            if gpus.tensor_key(p) == quantity[7:]
        ]
    unit = "bytes" if quantity in LEVELS else "flop"
    return [(quantity, f"achievable_{quantity}_{unit}_per_s")]


def _apply_measured(
    k: pd.DataFrame,
    idx: np.ndarray,
    spec: GpuSpec,
    gpus: GpuCatalog,
    paths: list[str],
    sets: _Sets,
) -> None:
    """Set the launches ``idx``'s achievable roofs from ``spec``'s measurements, in place, citing
    each in the notes."""
    for quantity, m in spec.achievable().items():
        targets = _measured_targets(quantity, gpus, paths)
        for name, col in targets:
            values = k[col].to_numpy(float).copy() if col in k.columns else np.full(len(k), np.nan)
            values[idx] = m.value
            k[col] = values
            sets.set(idx, name, "measured")
        if targets and len(idx):
            _cite_measurement(k, idx, quantity, m, [c for _, c in targets], sets.notes)


def _cite_measurement(
    k: pd.DataFrame,
    idx: np.ndarray,
    quantity: str,
    m: Measurement,
    columns: list[str],
    notes: list[list[str]],
) -> None:
    """Note, for the launches ``idx``, the measurement ``m`` their achievable roofs ``columns``
    took, and whether it is above the launch's peak roof (at the clock ncu measured)."""
    text = (
        f"achievable {quantity.replace('_', ' ').upper()} roof"
        f" {fmt.si(m.value, 'B/s' if quantity in LEVELS else 'FLOP/s')}: {m.what}"
        f" ({m.source}, confidence {m.confidence})"
    )
    peaks = np.column_stack(
        [
            (
                k[c.replace("achievable_", "peak_", 1)].to_numpy(float)
                if c.replace("achievable_", "peak_", 1) in k.columns
                else np.full(len(k), np.nan)
            )
            for c in columns
        ]
    )
    above = ": above this launch's peak roof, which is at the clock ncu measured"
    for i in idx:
        notes[i].append(text + (above if bool((peaks[i] < m.value).any()) else ""))


def _beyond_datasheet(k: pd.DataFrame, sets: _Sets, cat: Catalog) -> None:
    """Mark the ``ok`` launches whose FLOP/s or B/s exceed a datasheet roof by more than
    ``max_roof_multiple`` as damaged records (in place: ``status``, ``notes``)."""
    ok = (k["status"] == "ok").to_numpy()
    rates, peaks, sources = {}, {}, Factorized.of(sets.cells)
    for key, unit in [*((p, "flop") for p in PRECISIONS), *((lv, "bytes") for lv in LEVELS)]:
        if f"{key}_{unit}_per_s" not in k.columns or f"peak_{key}_{unit}_per_s" not in k.columns:
            continue
        sheet = ok & (sources.source(key) == "datasheet")
        rates[f"{key}_{unit}"] = k[f"{key}_{unit}_per_s"].to_numpy(float)
        peaks[f"{key}_{unit}"] = np.where(
            sheet, k[f"peak_{key}_{unit}_per_s"].to_numpy(float), np.nan
        )
    damage = roof_damage(rates, peaks, cat, " (a datasheet roof)")
    for i in np.flatnonzero(damage != ""):
        sets.notes[i].insert(0, Note("damaged_record", damage[i]))
    if (damage != "").any():
        k["status"] = np.where(damage != "", "corrupt_record", k["status"].to_numpy(dtype=object))


def _forced_spec(gpus: GpuCatalog, gpu: str | None) -> GpuSpec | None:
    """The ``--gpu`` entry, or None; InputError when it names no entry."""
    if gpu is None:
        return None
    forced = gpus.by_name(gpu)
    if forced is None:
        raise InputError(gpus.unknown("--gpu", gpu))
    return forced


def _datasheet_targets(
    spec: GpuSpec, gpus: GpuCatalog, paths: list[str]
) -> list[tuple[str, str, float | None]]:
    """(roof name, peak column, datasheet value or None) of every roof a datasheet may fill."""
    targets = [(p, f"peak_{p}_flop_per_s", spec.flop_per_s.get(p)) for p in PRECISIONS]
    targets.append(("dram", "peak_dram_bytes_per_s", spec.dram_bytes_per_s))
    return targets + [
        (t.name, t.peak, spec.tensor.get(gpus.tensor_key(path)))
        for path, t in zip(paths, map(tensor_columns, paths))
    ]


def _apply_datasheet(
    k: pd.DataFrame,
    idx: np.ndarray,
    spec: GpuSpec,
    gpus: GpuCatalog,
    paths: list[str],
    sets: _Sets,
) -> np.ndarray:
    """Fill the roofs the launches ``idx`` lack from ``spec``, in place, and say so in their notes
    (made once per distinct set of roofs filled and SM clock); return the launches that took a roof
    from it."""
    clock = k["sm_clock_hz"].to_numpy(float)[idx]
    scale = _clock_scale(clock, spec)
    filled: list[tuple[str, str]] = []  # (shown name, text) of each roof filled, in order
    took: list[np.ndarray] = []  # for each of them: which launches of ``idx`` took it
    named: list[np.ndarray] = []  # ... and used it (work of that precision, bytes at that level)
    for name, col, value in _datasheet_targets(spec, gpus, paths):
        if value is None:
            continue
        values = k[col].to_numpy(float).copy()
        lacks = np.isnan(values[idx])
        miss = idx[lacks]
        # one clock for every roof of a launch: compute roofs at the SM clock ncu measured (the DRAM
        # roof runs on the memory clock, which the SM clock does not tell: it stays the datasheet's)
        values[miss] = value * (1.0 if name == "dram" else scale[lacks])
        k[col] = values
        sets.set(miss, name, "datasheet")
        unscaled = "" if name == "dram" else f" (datasheet {fmt.si(value, 'FLOP/s')} at boost)"
        shown = name.replace("_", " ", 1) if name.startswith("tensor_") else name
        filled.append((shown, shown + unscaled))
        took.append(lacks)
        named.append(lacks & _used(k, name, idx))
    hit = np.flatnonzero(np.logical_or.reduce(took)) if took else np.array([], dtype=np.int64)
    if not len(hit):
        return hit
    # the note names the roofs the launch used, and is left out where it used none of them
    took = named
    took_any, hit = hit, hit[np.logical_or.reduce([t[hit] for t in took])]
    rows = [t[hit] for t in took]
    first, inverse = distinct_codes([*rows, *bit_codes([clock[hit].view(np.uint64)])])
    notes = [
        _datasheet_notes(spec, gpus, [f for f, t in zip(filled, rows) if t[j]], clock[hit[j]])
        for j in first
    ]
    for i, n in zip(idx[hit].tolist(), inverse.tolist()):
        sets.notes[i] += notes[n]
    return idx[took_any]


def _used(k: pd.DataFrame, name: str, idx: np.ndarray) -> np.ndarray:
    """Whether the launches ``idx`` used roof ``name``: work of that precision or tensor path, or
    bytes at that level. Only those roofs are named in the datasheet note (issue 44: an FP16 roof
    listed on an FP64-only kernel); the others are filled all the same (a table column)."""
    col = f"{name}_bytes" if name in LEVELS else f"{name}_flop"
    if col not in k.columns and f"{col}_per_s" not in k.columns:
        return np.ones(len(idx), dtype=bool)  # a table without the work: named, as it may be
    used = np.zeros(len(idx), dtype=bool)
    for c in (col, f"{col}_per_s"):  # a rate-only launch (no duration) holds only the rate
        if c in k.columns:
            with np.errstate(invalid="ignore"):
                used |= k[c].to_numpy(float)[idx] > 0
    return used


def _datasheet_notes(
    spec: GpuSpec, gpus: GpuCatalog, names: list[tuple[str, str]], clock: float
) -> list[str]:
    """The notes of a launch whose roofs ``names`` ((shown name, text) pairs) came from ``spec``
    with its SM clock ``clock`` [Hz]: the datasheet, the clock, and any tensor roof assumption."""
    compute = any(n != "dram" for n, _ in names)
    ran = (
        ""
        if not compute
        # no "; " inside one note: it separates the notes of a written table (LIST_SEPARATOR)
        else (
            ", compute roofs scaled to the SM clock this launch ran at,"
            f" {fmt.si(clock, 'Hz')} = {fmt.pct(clock / spec.boost_hz)} of boost, as the"
            " report's own roofs are, DRAM at the datasheet's bandwidth"
            if np.isfinite(clock) and clock > 0
            else ", no measured SM clock: at the boost clock"
        )
    )
    out = [
        f"roofs for {', '.join(text for _, text in names)} from the {spec.name} datasheet "
        f"(boost clock {spec.boost_hz / 1e6:.0f} MHz{ran}, confidence {spec.confidence})"
    ]
    for name, _ in names:
        rule = gpus.tensor_rule(name[len("tensor ") :]) if name.startswith("tensor ") else None
        if rule is not None and rule.assumption:
            out.append(
                f"{name} roof = datasheet {rule.key.upper()}"
                f" {fmt.si(spec.tensor[rule.key], 'FLOP/s')}: {rule.assumption} (confidence"
                f" {rule.confidence})"
            )
    return out


def _clock_scale(clock: np.ndarray, spec: GpuSpec) -> np.ndarray:
    """measured / boost SM clock per launch (1 where the clock is unknown): datasheet compute roofs
    are at the boost clock (ROOFLINE_SPEC §9), report roofs at the clock ncu measured."""
    ok = np.isfinite(clock) & (clock > 0) & (spec.boost_hz > 0)
    return np.where(ok, clock / (spec.boost_hz if spec.boost_hz > 0 else 1.0), 1.0)


def _user_roofs(
    peak_flops: dict[str, float], peak_bandwidth: dict[str, float], paths: list[str]
) -> list[tuple[str, str, float]]:
    """(roof name, peak column, value) of every user roof; ``*`` is every precision not
    named and tensor."""
    user = [
        (name, f"peak_{name}_flop_per_s", v) for name, v in peak_flops.items() if name in PRECISIONS
    ]
    for name, v in peak_flops.items():
        if name in ("*", "tensor"):
            user += [(t.name, t.peak, v) for t in map(tensor_columns, paths)]
        if name == "*":
            user += [(p, f"peak_{p}_flop_per_s", v) for p in PRECISIONS if p not in peak_flops]
    return user + [(name, f"peak_{name}_bytes_per_s", v) for name, v in peak_bandwidth.items()]


def _level_without_roof_notes(k: pd.DataFrame, sets: _Sets) -> None:
    """Say, for each ``ok`` launch with bytes at a level but no roof there (and roofs elsewhere:
    one with none at all has its own note), why that level's point has no roof fraction or bound
    and what to pass (issue 44: an L2 row with bytes and empty fraction and bound)."""
    roofed = has_any(sets.cells)
    ok = (k["status"] == "ok").to_numpy() & roofed
    for lv in LEVELS:
        if f"{lv}_bytes" not in k.columns:
            continue
        b = k[f"{lv}_bytes"].to_numpy(float)
        peak = k[f"peak_{lv}_bytes_per_s"].to_numpy(float)
        definition = (
            k[f"{lv}_definition"].astype(str).to_numpy()
            if f"{lv}_definition" in k.columns
            else np.full(len(k), "", dtype=object)
        )
        with np.errstate(invalid="ignore"):
            bare = ok & (b > 0) & ~(peak > 0)
        for i in np.flatnonzero(bare):
            sets.notes[i].append(
                f"no {lv.upper()} roof: {fmt.si(b[i], 'B')} counted at {lv.upper()}"
                + (f" ({definition[i]} definition)" if definition[i] else "")
                + f" but the input holds no {lv.upper()} peak for it and the datasheet gives"
                f" none, so the {lv.upper()} point has no roof fraction or bound: pass"
                f" --peak-bandwidth {lv}=B/s"
            )


def _no_roof_notes(
    k: pd.DataFrame,
    devices: np.ndarray,
    spec_of: dict,
    sets: _Sets,
    gpus: GpuCatalog,
) -> None:
    """Say, for each measured launch left without any roof, what to pass."""
    roofed = has_any(sets.cells)
    codes, names = pd.factorize(devices, use_na_sentinel=False)
    sheet = np.array([spec_of[d] is not None for d in names], dtype=bool)
    bare = (k["status"] == "ok").to_numpy() & ~roofed & ~sheet[codes]
    for i in np.flatnonzero(bare):
        if devices[i]:
            sets.notes[i].append(
                f"no roofs: the input has no peak_sustained metrics and {devices[i]} is not in "
                "metrics/gpus.toml: pass --gpu NAME or --peak-flops/--peak-bandwidth"
            )
            continue
        cc = k["cc"].iat[i] if isinstance(k["cc"].iat[i], str) else ""
        same = ", ".join(g.id for g in gpus.gpus if g.cc == cc)
        hint = f" (CC {cc}: {same})" if same else ""
        sets.notes[i].append(
            "no roofs: the input names no device and has no peak_sustained metrics: "
            f"pass --gpu NAME{hint} or --peak-flops/--peak-bandwidth"
        )


def _roof_rows(kernels: pd.DataFrame, kind: str, column: str) -> list[pd.DataFrame]:
    """One frame per roof name of the ``kind`` roofs (peak or achievable) with a
    value or a source."""
    cells = (
        Factorized.of(kernels[column].to_numpy(dtype=object)) if column in kernels.columns else None
    )
    names = [*PRECISIONS, *LEVELS] + [
        c[len("peak_") : -len("_flop_per_s")]
        for c in kernels.columns
        if c.startswith("peak_tensor_") and c.endswith("_flop_per_s")
    ]
    frames = []
    for name in names:
        unit = "bytes" if name in LEVELS else "flop"
        values = kernels.get(f"{kind}_{name}_{unit}_per_s")
        values = values.to_numpy(float) if values is not None else np.full(len(kernels), np.nan)
        src = cells.source(name) if cells is not None else np.full(len(kernels), "", object)
        keep = np.isfinite(values) | (src != "")
        if keep.any():
            frames.append(
                pd.DataFrame(
                    {
                        "row": np.flatnonzero(keep),
                        "kind": kind,
                        "roof": name,
                        "flop_per_s": values[keep] if unit == "flop" else np.nan,
                        "bytes_per_s": values[keep] if unit == "bytes" else np.nan,
                        "roof_source": src[keep],
                    }
                )
            )
    return frames


def _confidence(long: pd.DataFrame, gpus: GpuCatalog | None) -> np.ndarray:
    """Each roof's confidence in ``metrics/gpus.toml``: its datasheet entry's, or its measurement's
    (the entry of the launch's datasheet, else of its device); '' for report and user roofs."""
    out = np.full(len(long), "", dtype=object)
    if gpus is None:
        return out
    keyed = long.groupby(["datasheet_gpu", "device_name"], sort=False, dropna=False).indices
    src, roof = (long[c].to_numpy(dtype=object) for c in ("roof_source", "roof"))
    for (gpu, device), at in keyed.items():
        spec = gpus.entry(gpu, device)
        if spec is None:
            continue
        out[at[src[at] == "datasheet"]] = spec.confidence
        for quantity, m in spec.achievable().items():
            out[at[(src[at] == "measured") & (roof[at] == quantity)]] = m.confidence
    return out


def roof_table(kernels: pd.DataFrame, gpus: GpuCatalog | None = None) -> pd.DataFrame:
    """The roofs of every launch as a long table (:data:`ncuroof.schema.ROOFS`).

    Parameters
    ----------
    kernels : DataFrame
        The launch table after :func:`fill_ceilings`: ``peak_*`` and
        ``achievable_*`` roofs [FLOP/s, B/s], ``ceiling_sources``, ``achievable_sources``,
        ``sm_clock_hz``, ``datasheet_gpu``, ``device_name``.
    gpus : GpuCatalog, optional
        For the confidence of datasheet roofs and measurements (empty without).

    Returns
    -------
    DataFrame
        One row per (launch, kind, roof) with a value or a source, launches in table order, then
        peak before achievable, then precisions, levels and tensor datapaths in column order.
        ``clock_hz`` is the SM clock the roof is at: the launch's measured clock for the compute
        roofs of the report and of a datasheet scaled to it; NaN for bandwidth roofs and for user
        roofs and measurements (taken as given). Categorical ``kind``, ``roof``, ``roof_source``.
    """
    frames = _roof_rows(kernels, "peak", "ceiling_sources")
    frames += _roof_rows(kernels, "achievable", "achievable_sources")
    if not frames:
        return pd.DataFrame({n: pd.Series(dtype=c.dtype) for n, c in ROOFS.items()})
    long = pd.concat(frames, ignore_index=True).sort_values("row", kind="stable")
    rows = long.pop("row").to_numpy()
    for col in ("source", "launch_id", "device_name"):
        long[col] = kernels[col].astype(object).where(kernels[col].notna(), "").to_numpy()[rows]
    sheet = kernels.get("datasheet_gpu", pd.Series("", index=kernels.index))
    long["datasheet_gpu"] = sheet.astype(object).where(sheet.notna(), "").to_numpy()[rows]
    clocked = long["roof_source"].isin(["report", "datasheet"]) & long["bytes_per_s"].isna()
    clock = kernels["sm_clock_hz"].to_numpy(float)[rows]
    long["clock_hz"] = np.where(
        clocked.to_numpy() & (long["kind"] == "peak").to_numpy(), clock, np.nan
    )
    long = long.reset_index(drop=True)
    long["confidence"] = _confidence(long, gpus)
    long.loc[long["roof_source"] != "datasheet", "datasheet_gpu"] = ""
    return long[list(ROOFS)].astype({n: c.dtype for n, c in ROOFS.items()})
