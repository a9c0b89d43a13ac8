"""Where each roof comes from: the report, a GPU datasheet, or the user.

A ``.ncu-rep`` from the roofline or full set carries ``peak_sustained`` metrics, and
:func:`ncuroof.calculator.compute_kernels` turns them into roofs at the clock ncu measured
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
from typing import Mapping

import numpy as np
import pandas as pd

from .catalog import GpuCatalog, GpuSpec
from .errors import InputError
from .schema import LEVELS, PRECISIONS, format_sources, parse_sources

__all__ = ["fill_ceilings", "parse_peak", "SOURCES"]

#: Values a roof's source takes, in the order they are listed.
SOURCES = ("report", "datasheet", "user")
_TENSOR_PEAK = re.compile(r"^peak_tensor_(.+)_flop_per_s$")
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


def fill_ceilings(kernels: pd.DataFrame, gpus: GpuCatalog, gpu: str | None = None,
                  peak_flops: Mapping[str, float] | None = None,
                  peak_bandwidth: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Fill the roofs a launch lacks from a datasheet, and apply user roofs.

    Parameters
    ----------
    kernels : DataFrame
        From :func:`ncuroof.calculator.compute_kernels`: ``peak_<p>_flop_per_s`` [FLOP/s],
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

    Returns
    -------
    DataFrame
        A copy with the roof columns filled, ``ceiling_sources``, ``peak_source`` (the sources
        used, ``+``-joined), ``datasheet_gpu`` and ``notes`` updated. A datasheet roof is used
        only where the input has none; datasheet numbers assume the boost clock
        (ROOFLINE_SPEC §9), and the note gives the launch's measured clock beside it.

    Raises
    ------
    InputError
        If ``gpu`` names no catalog entry.
    """
    k = kernels.copy()
    forced = None
    if gpu is not None:
        forced = gpus.by_name(gpu)
        if forced is None:
            known = ", ".join(g.id for g in gpus.gpus)
            raise InputError(f"--gpu {gpu!r} is not in the datasheet catalog (metrics/gpus.toml); known: {known}")
    peak_flops = dict(peak_flops or {})
    peak_bandwidth = dict(peak_bandwidth or {})
    unknown = [n for n in peak_flops if n not in (*PRECISIONS, "tensor", "*")] + [n for n in peak_bandwidth if n not in LEVELS]
    if unknown:
        raise ValueError(f"unknown roof names {unknown}: use {', '.join(PRECISIONS)}, tensor or * for FLOP/s "
                         f"and {', '.join(LEVELS)} for bandwidth")
    tensor_cols = {m.group(1): c for c in k.columns if (m := _TENSOR_PEAK.match(c))}
    sources = [parse_sources(s) for s in k["ceiling_sources"]]
    datasheet = np.full(len(k), "", dtype=object)
    notes = [[n] if isinstance(n, str) and n else [] for n in k["notes"]]
    cc_names = {}
    for i, row in enumerate(k.itertuples(index=False)):
        spec = _spec_for(row.device_name, gpus, forced)
        src = sources[i]
        filled: list[str] = []
        if spec is not None:
            for p in PRECISIONS:
                col = f"peak_{p}_flop_per_s"
                if not np.isfinite(getattr(row, col)) and p in spec.flop_per_s:
                    k.iat[i, k.columns.get_loc(col)] = spec.flop_per_s[p]
                    src[p] = "datasheet"
                    filled.append(p)
            if not np.isfinite(row.peak_dram_bytes_per_s):
                k.iat[i, k.columns.get_loc("peak_dram_bytes_per_s")] = spec.dram_bytes_per_s
                src["dram"] = "datasheet"
                filled.append("dram")
            for path, col in tensor_cols.items():
                key = gpus.tensor_key(path)
                if key in spec.tensor and not np.isfinite(k.iat[i, k.columns.get_loc(col)]):
                    k.iat[i, k.columns.get_loc(col)] = spec.tensor[key]
                    src[f"tensor_{path}"] = "datasheet"
                    filled.append(f"tensor {path}")
            if filled:
                datasheet[i] = spec.id
                clock = row.sm_clock_hz
                ran = (f"; this launch ran at {clock / 1e6:.0f} MHz, {100 * clock / spec.boost_hz:.0f} % of it"
                       if np.isfinite(clock) else "")
                notes[i].append(f"roofs for {', '.join(filled)} from the {spec.name} datasheet "
                                f"(boost clock {spec.boost_hz / 1e6:.0f} MHz{ran}; confidence {spec.confidence})")
        for name, value in peak_flops.items():
            targets = [*PRECISIONS, *(f"tensor_{p}" for p in tensor_cols)] if name == "*" else \
                [f"tensor_{p}" for p in tensor_cols] if name == "tensor" else [name]
            for t in targets:
                col = tensor_cols[t[len("tensor_"):]] if t.startswith("tensor_") else f"peak_{t}_flop_per_s"
                k.iat[i, k.columns.get_loc(col)] = value
                src[t] = "user"
        for name, value in peak_bandwidth.items():
            k.iat[i, k.columns.get_loc(f"peak_{name}_bytes_per_s")] = value
            src[name] = "user"
        if row.status == "ok" and spec is None and not any(v for v in src.values()):
            if isinstance(row.device_name, str) and row.device_name:
                notes[i].append(f"no roofs: the input has no peak_sustained metrics and {row.device_name} is not in "
                                "metrics/gpus.toml; pass --gpu NAME or --peak-flops/--peak-bandwidth")
            else:
                cc = row.cc if isinstance(row.cc, str) else ""
                if cc not in cc_names:
                    cc_names[cc] = ", ".join(g.id for g in gpus.gpus if g.cc == cc)
                hint = f" (CC {cc}: {cc_names[cc]})" if cc_names[cc] else ""
                notes[i].append(f"no roofs: the input names no device and has no peak_sustained metrics; "
                                f"pass --gpu NAME{hint} or --peak-flops/--peak-bandwidth")
    k["ceiling_sources"] = [format_sources(s) for s in sources]
    k["peak_source"] = ["+".join(x for x in SOURCES if x in s.values()) for s in sources]
    k["datasheet_gpu"] = datasheet
    k["notes"] = ["; ".join(n) for n in notes]
    return k

