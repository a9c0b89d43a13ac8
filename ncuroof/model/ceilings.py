"""Where each roof comes from: the report, a GPU datasheet, or the user.

A ``.ncu-rep`` from the roofline or full set carries ``peak_sustained`` metrics, and
:func:`ncuroof.model.calculator.compute_kernels` turns them into roofs at the clock ncu measured
(source ``report``). CSV exports and custom ``--metrics`` reports usually carry none; for them
:func:`fill_ceilings` takes the missing roofs from the datasheet catalog ``metrics/gpus.toml``
(source ``datasheet``, boost clock), matched on the device name or named with ``--gpu``, and the
user may set roofs outright (source ``user``, ``--peak-flops``/``--peak-bandwidth``).

The kernels table records every roof's source in ``ceiling_sources``
(``"fp32:report,dram:datasheet"``), a summary in ``peak_source``, and the datasheet entry used in
``datasheet_gpu``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import Catalog, GpuCatalog, GpuSpec
from ..catalog import load as load_catalog
from ..errors import InputError
from ..parser.validate import roof_damage
from ..schema import (
    LEVELS,
    PRECISIONS,
    format_sources_column,
    parse_cell,
    parse_sources_column,
    tensor_columns,
    tensor_paths,
)

__all__ = ["fill_ceilings", "fill_achievable", "parse_peak", "SOURCES", "FLOP_ROOFS"]

#: Values a roof's source takes, in the order they are listed.
SOURCES = ("report", "datasheet", "user")
#: Names of a user compute roof (``--peak-flops``, ``--achievable-flops``): a precision, or ``tensor`` for every
#: tensor datapath; ``*`` names them all. Bandwidth roofs are named by level (:data:`ncuroof.schema.LEVELS`).
FLOP_ROOFS = (*PRECISIONS, "tensor")
_SI = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([kKMGTP]?)\s*$")


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
        For an unknown name or a value that is not a positive number.
    """
    name, sep, value = text.partition("=")
    if not sep:
        name, value = default, text
    name = name.strip().lower()
    if name not in allowed and name != default:
        raise ValueError(f"{name!r} is not one of {', '.join(allowed)}")
    m = _NUMBER.match(value)
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"{value!r} is not a positive number (suffixes K, M, G, T, P allowed)")
    return name, float(m.group(1)) * _SI[m.group(2)]


def _spec_for(device: object, gpus: GpuCatalog, forced: GpuSpec | None) -> GpuSpec | None:
    if forced is not None:
        return forced
    return gpus.by_device(device) if isinstance(device, str) and device else None


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
        From :func:`ncuroof.model.calculator.compute_kernels`: ``peak_<p>_flop_per_s`` [FLOP/s],
        ``peak_<level>_bytes_per_s`` [B/s], ``peak_tensor_<path>_flop_per_s``, ``device_name``,
        ``cc``, ``sm_clock_hz``, ``status``, ``ceiling_sources``, ``notes``.
    gpus : GpuCatalog
        The datasheet catalog (``metrics/gpus.toml``).
    gpu : str, optional
        Use this catalog entry (id, name or a device name it matches) for every launch instead of
        matching ``device_name``.
    peak_flops : mapping, optional
        User compute roofs in FLOP/s by precision (``fp64``, ``fp32``, ``fp16``, ``tensor``;
        ``"*"`` for all). They replace any other roof of that precision.
    peak_bandwidth : mapping, optional
        User bandwidth roofs in B/s by level (``dram``, ``l2``, ``l1``).
    catalog : Catalog, optional
        For ``max_roof_multiple`` (``[input]`` of ``metrics/thresholds.toml``); the installed one
        by default.
    achievable_flops, achievable_bandwidth : mapping, optional
        User achievable roofs, named as ``peak_flops`` and ``peak_bandwidth``; they replace the
        published measurements of ``metrics/gpus.toml`` (see :func:`fill_achievable`).

    Returns
    -------
    DataFrame
        A copy with the roof columns filled, ``ceiling_sources``, ``peak_source`` (the sources
        used, ``+``-joined), ``datasheet_gpu`` and ``notes`` updated. A datasheet roof is used
        only where the input has none; datasheet numbers assume the boost clock
        (ROOFLINE_SPEC §9), and the note gives the launch's measured clock beside it. A launch
        achieving more than ``max_roof_multiple`` times a datasheet roof holds a damaged counter:
        its status becomes ``corrupt_record`` (as the calculator does for the report's own roofs,
        :func:`ncuroof.parser.validate.roof_violations`; user roofs are taken as given).

    Raises
    ------
    InputError
        If ``gpu`` names no catalog entry.
    """
    forced = _forced_spec(gpus, gpu)
    peak_flops, peak_bandwidth = _check_names(peak_flops, peak_bandwidth)
    k = kernels.copy(deep=False)
    tensor_cols = {p: tensor_columns(p).peak for p in tensor_paths(k.columns, "peak")}
    sources = parse_sources_column(k["ceiling_sources"])
    notes = [list(parse_cell("notes", x)) for x in k["notes"]]
    devices = k["device_name"].astype(object).where(k["device_name"].notna(), "").to_numpy()
    spec_of = {d: _spec_for(d, gpus, forced) for d in pd.unique(devices)}
    datasheet = np.full(len(k), "", dtype=object)
    for device, spec in spec_of.items():
        if spec is not None:
            _apply_datasheet(
                k,
                np.flatnonzero(devices == device),
                spec,
                gpus,
                tensor_cols,
                sources,
                notes,
                datasheet,
            )
    for name, col, value in _user_roofs(peak_flops, peak_bandwidth, tensor_cols):
        k[col] = float(value)
        for src in sources:
            src[name] = "user"
    _no_roof_notes(k, devices, spec_of, sources, notes, gpus)
    _beyond_datasheet(k, sources, notes, catalog if catalog is not None else load_catalog())
    k["ceiling_sources"] = text = format_sources_column(sources)
    kinds: dict[str, str] = {}
    for t, s in zip(text, sources):  # launches share a handful of source sets
        if t not in kinds:
            kinds[t] = "+".join(x for x in SOURCES if x in s.values())
    k["peak_source"] = [kinds[t] for t in text]
    k["datasheet_gpu"] = datasheet
    k["notes"] = notes
    return fill_achievable(
        k,
        gpus,
        {d: s for d, s in spec_of.items() if s is not None},
        achievable_flops,
        achievable_bandwidth,
    )


def _check_names(
    flops: Mapping[str, float] | None, bandwidth: Mapping[str, float] | None
) -> tuple[dict[str, float], dict[str, float]]:
    """The user roofs as dicts; ValueError for a name that is no precision (or tensor, ``*``) or level."""
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
) -> pd.DataFrame:
    """Set the achievable roofs: published measurements of the launch's GPU, or the user's.

    Parameters
    ----------
    kernels : DataFrame
        With ``device_name``, the ``peak_*`` roofs, ``achievable_<p>_flop_per_s`` [FLOP/s],
        ``achievable_<level>_bytes_per_s`` [B/s], ``achievable_sources`` (made where absent),
        ``notes`` and a ``peak_tensor_<path>_flop_per_s`` column per tensor datapath.
    gpus : GpuCatalog
        For the datasheet key of each tensor datapath.
    spec_of : mapping
        Device name -> the :class:`ncuroof.catalog.GpuSpec` the launches of that device use.
    achievable_flops, achievable_bandwidth : mapping, optional
        User achievable roofs [FLOP/s by precision, ``tensor`` or ``*``; B/s by level]
        (``--achievable-flops``, ``--achievable-bandwidth``).

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
    k = kernels.copy(deep=False)
    paths = tensor_paths(k.columns, "peak")
    for col in (
        *(f"achievable_{p}_flop_per_s" for p in PRECISIONS),
        *(f"achievable_{lv}_bytes_per_s" for lv in LEVELS),
    ):
        if col not in k.columns:
            k[col] = np.nan
    sources = parse_sources_column(
        k["achievable_sources"] if "achievable_sources" in k.columns else pd.Series([""] * len(k))
    )
    notes = [list(parse_cell("notes", x)) for x in k["notes"]]
    devices = k["device_name"].astype(object).where(k["device_name"].notna(), "").to_numpy()
    for device, spec in spec_of.items():
        _apply_measured(k, np.flatnonzero(devices == device), spec, gpus, paths, sources, notes)
    for name, col, value in _user_roofs(
        flops, bandwidth, {p: tensor_columns(p).peak for p in paths}
    ):
        k["achievable_" + col[len("peak_") :]] = float(value)
        for src in sources:
            src[name] = "user"
    k["achievable_sources"] = format_sources_column(sources)
    k["notes"] = notes
    return k


def _apply_measured(
    k: pd.DataFrame,
    idx: np.ndarray,
    spec: GpuSpec,
    gpus: GpuCatalog,
    paths: list[str],
    sources: list[dict[str, str]],
    notes: list[list[str]],
) -> None:
    """Set the launches ``idx``'s achievable roofs from ``spec``'s measurements, in place, citing each in the notes."""
    for quantity, m in spec.achievable().items():
        if quantity.startswith("tensor_"):
            targets = [
                (t.name, t.achievable)
                for p, t in zip(paths, map(tensor_columns, paths))
                if gpus.tensor_key(p) == quantity[7:]
            ]
        else:
            unit = "bytes" if quantity in LEVELS else "flop"
            targets = [(quantity, f"achievable_{quantity}_{unit}_per_s")]
        for name, col in targets:
            values = k[col].to_numpy(float).copy() if col in k.columns else np.full(len(k), np.nan)
            values[idx] = m.value
            k[col] = values
            for i in idx:
                sources[i][name] = "measured"
        if targets and len(idx):
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
                    for _, c in targets
                ]
            )
            for i in idx:
                above = bool((peaks[i] < m.value).any())
                notes[i].append(
                    text
                    + (
                        ": above this launch's peak roof, which is at the clock ncu measured"
                        if above
                        else ""
                    )
                )


def _beyond_datasheet(
    k: pd.DataFrame, sources: list[dict[str, str]], notes: list[list[str]], cat: Catalog
) -> None:
    """Mark the ``ok`` launches whose FLOP/s or B/s exceed a datasheet roof by more than
    ``max_roof_multiple`` as damaged records (in place: ``status``, ``notes``)."""
    ok = (k["status"] == "ok").to_numpy()
    rates, peaks = {}, {}
    for key, unit in [*((p, "flop") for p in PRECISIONS), *((lv, "bytes") for lv in LEVELS)]:
        if f"{key}_{unit}_per_s" not in k.columns or f"peak_{key}_{unit}_per_s" not in k.columns:
            continue
        sheet = ok & np.array([s.get(key) == "datasheet" for s in sources], dtype=bool)
        rates[f"{key}_{unit}"] = k[f"{key}_{unit}_per_s"].to_numpy(float)
        peaks[f"{key}_{unit}"] = np.where(
            sheet, k[f"peak_{key}_{unit}_per_s"].to_numpy(float), np.nan
        )
    damage = roof_damage(rates, peaks, cat, " (a datasheet roof)")
    for i in np.flatnonzero(damage != ""):
        notes[i].insert(0, damage[i])
    if (damage != "").any():
        k["status"] = np.where(damage != "", "corrupt_record", k["status"].to_numpy(dtype=object))


def _forced_spec(gpus: GpuCatalog, gpu: str | None) -> GpuSpec | None:
    """The ``--gpu`` entry, or None; InputError when it names no entry."""
    if gpu is None:
        return None
    forced = gpus.by_name(gpu)
    if forced is None:
        known = ", ".join(g.id for g in gpus.gpus)
        raise InputError(
            f"--gpu {gpu!r} is not in the datasheet catalog (metrics/gpus.toml); known: {known}"
        )
    return forced


def _apply_datasheet(
    k: pd.DataFrame,
    idx: np.ndarray,
    spec: GpuSpec,
    gpus: GpuCatalog,
    tensor_cols: dict[str, str],
    sources: list[dict[str, str]],
    notes: list[list[str]],
    datasheet: np.ndarray,
) -> None:
    """Fill the roofs the launches ``idx`` lack from ``spec``, in place, and say so in their notes."""
    targets = [(p, f"peak_{p}_flop_per_s", spec.flop_per_s.get(p)) for p in PRECISIONS]
    targets.append(("dram", "peak_dram_bytes_per_s", spec.dram_bytes_per_s))
    targets += [
        (tensor_columns(path).name, col, spec.tensor.get(gpus.tensor_key(path)))
        for path, col in tensor_cols.items()
    ]
    scale = _clock_scale(k["sm_clock_hz"].to_numpy(float)[idx], spec)
    filled: dict[int, list[tuple[str, str]]] = {}
    for name, col, value in targets:
        if value is None:
            continue
        values = k[col].to_numpy(float).copy()
        lacks = np.isnan(values[idx])
        miss = idx[lacks]
        # one clock for every roof of a launch: compute roofs at the SM clock ncu measured (the DRAM roof
        # runs on the memory clock, which the SM clock does not tell: it stays the datasheet's)
        values[miss] = value * (1.0 if name == "dram" else scale[lacks])
        k[col] = values
        for i in miss:
            sources[i][name] = "datasheet"
            unscaled = "" if name == "dram" else f" (datasheet {fmt.si(value, 'FLOP/s')} at boost)"
            shown = name.replace("_", " ", 1) if name.startswith("tensor_") else name
            filled.setdefault(i, []).append((shown, shown + unscaled))
    clock = k["sm_clock_hz"].to_numpy(float)
    for i, names in filled.items():
        datasheet[i] = spec.id
        compute = any(n != "dram" for n, _ in names)
        ran = (
            ""
            if not compute
            else (
                "; compute roofs scaled to the SM clock this launch ran at,"
                f" {fmt.si(clock[i], 'Hz')} = {fmt.pct(clock[i] / spec.boost_hz)} of boost, as the"
                " report's own roofs are; DRAM at the datasheet's bandwidth"
                if np.isfinite(clock[i]) and clock[i] > 0
                else "; no measured SM clock: at the boost clock"
            )
        )
        notes[i].append(
            f"roofs for {', '.join(text for _, text in names)} from the {spec.name} datasheet "
            f"(boost clock {spec.boost_hz / 1e6:.0f} MHz{ran}, confidence {spec.confidence})"
        )
        for name, _ in names:
            rule = gpus.tensor_rule(name[len("tensor ") :]) if name.startswith("tensor ") else None
            if rule is not None and rule.assumption:
                notes[i].append(
                    f"{name} roof = datasheet {rule.key.upper()}"
                    f" {fmt.si(spec.tensor[rule.key], 'FLOP/s')}: {rule.assumption} (confidence"
                    f" {rule.confidence})"
                )


def _clock_scale(clock: np.ndarray, spec: GpuSpec) -> np.ndarray:
    """measured / boost SM clock per launch (1 where the clock is unknown): datasheet compute roofs
    are at the boost clock (ROOFLINE_SPEC §9), report roofs at the clock ncu measured."""
    ok = np.isfinite(clock) & (clock > 0) & (spec.boost_hz > 0)
    return np.where(ok, clock / (spec.boost_hz if spec.boost_hz > 0 else 1.0), 1.0)


def _user_roofs(
    peak_flops: dict[str, float], peak_bandwidth: dict[str, float], tensor_cols: dict[str, str]
) -> list[tuple[str, str, float]]:
    """(roof name, column, value) of every user roof; ``*`` is every precision not named and tensor."""
    user = [
        (name, f"peak_{name}_flop_per_s", v) for name, v in peak_flops.items() if name in PRECISIONS
    ]
    for name, v in peak_flops.items():
        if name in ("*", "tensor"):
            user += [(tensor_columns(p).name, c, v) for p, c in tensor_cols.items()]
        if name == "*":
            user += [(p, f"peak_{p}_flop_per_s", v) for p in PRECISIONS if p not in peak_flops]
    return user + [(name, f"peak_{name}_bytes_per_s", v) for name, v in peak_bandwidth.items()]


def _no_roof_notes(
    k: pd.DataFrame,
    devices: np.ndarray,
    spec_of: dict,
    sources: list[dict[str, str]],
    notes: list[list[str]],
    gpus: GpuCatalog,
) -> None:
    """Say, for each measured launch left without any roof, what to pass."""
    for i in np.flatnonzero((k["status"] == "ok").to_numpy()):
        if sources[i] or spec_of[devices[i]] is not None:
            continue
        if devices[i]:
            notes[i].append(
                f"no roofs: the input has no peak_sustained metrics and {devices[i]} is not in "
                "metrics/gpus.toml: pass --gpu NAME or --peak-flops/--peak-bandwidth"
            )
            continue
        cc = k["cc"].iat[i] if isinstance(k["cc"].iat[i], str) else ""
        same = ", ".join(g.id for g in gpus.gpus if g.cc == cc)
        hint = f" (CC {cc}: {same})" if same else ""
        notes[i].append(
            "no roofs: the input names no device and has no peak_sustained metrics: "
            f"pass --gpu NAME{hint} or --peak-flops/--peak-bandwidth"
        )
