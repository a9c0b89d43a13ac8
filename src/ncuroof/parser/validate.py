"""Values that cannot be physical, caught where data enters (issue 14).

A flipped byte or an edited CSV can turn a duration, a clock or a counter into a negative,
infinite or absurd number. Passed on, such a value becomes a silent zero (a clock of ``inf`` gives
``time_s = 0``), an ``inf`` bandwidth, a numpy ``RuntimeWarning`` or a lowered FLOP count.
:func:`check_values` keeps such values missing (NaN, never 0 or inf) and marks the launch as a
damaged record, naming the metric; the formulas gives it status ``corrupt_record``
(:data:`ncuroof.schema.DAMAGED`). The limits, with their reasons, are ``[input]`` of
``metrics/thresholds.toml``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..catalog import Catalog
from ..schema import DAMAGED, RAW_META
from .csv import NA_NOTE

__all__ = ["check_values", "roof_violations", "roof_damage", "limits", "add_note"]

_DEFAULTS: dict[str, Any] = {
    "durations_ns": ["gpu__time_duration.sum"],
    "min_duration_ns": 1.0,
    "cycle_counts": ["cycles_elapsed.avg"],
    "min_cycles": 1.0,
    "clock_suffix": "cycles_elapsed.avg.per_second",
    "max_clock_hz": 1e10,
    "core_clocks": ["sm__cycles_elapsed.avg.per_second"],
    "max_value": 1e24,
    "unchecked_prefix": "device__attribute_",
    "max_roof_multiple": 100.0,
    "rate_consistency": 1e-9,
}


def limits(catalog: Catalog) -> dict[str, Any]:
    """The ``[input]`` limits of ``metrics/thresholds.toml`` (defaults for a
    catalog without them)."""
    return {**_DEFAULTS, **catalog.thresholds.get("input", {})}


def _reasons(
    values: np.ndarray, cols: list[str], lim: dict[str, Any]
) -> tuple[np.ndarray, list[str]]:
    """Per cell: 0 for a plausible value or NaN, else the index of why it cannot be physical in
    the returned texts (small integer codes: a 100,000-launch table stays cheap to check)."""
    texts = [
        "",
        "negative",
        f"above {lim['max_value']:g}",
        "infinite",
        f"a duration below {lim['min_duration_ns']:g} ns",
        f"below {lim['min_cycles']:g} elapsed cycle",
        "a clock of 0 Hz or less",
        f"a clock above {lim['max_clock_hz'] / 1e9:g} GHz",
    ]
    why = np.zeros(values.shape, dtype=np.uint8)
    with np.errstate(invalid="ignore"):
        why[values < 0] = 1
        why[values > lim["max_value"]] = 2
        why[np.isinf(values)] = 3
        for j, c in enumerate(cols):
            col = values[:, j]
            if c in lim["durations_ns"]:
                why[(col < lim["min_duration_ns"]) & (why[:, j] == 0), j] = 4
            elif c.endswith(tuple(lim["cycle_counts"])):
                why[(col < lim["min_cycles"]) & (why[:, j] == 0), j] = 5
            elif c.endswith(lim["clock_suffix"]):
                why[(col <= 0) & (why[:, j] == 0), j] = 6
                if c in lim["core_clocks"]:
                    why[(col > lim["max_clock_hz"]) & (why[:, j] == 0), j] = 7
    return why, texts


def add_note(raw: pd.DataFrame, i: int, text: str) -> None:
    """Put ``text`` first in launch ``i``'s ``input_notes`` (``'; '``-joined with what is there)."""
    old = raw.at[i, "input_notes"]
    raw.at[i, "input_notes"] = f"{text}; {old}" if isinstance(old, str) and old else text


def _checked_columns(raw: pd.DataFrame, lim: dict[str, Any]) -> list[str]:
    """The numeric metric columns :func:`check_values` checks (not those named
    ``unchecked_prefix``)."""
    return [
        c
        for c in raw.columns
        if c not in RAW_META
        and not c.startswith(lim["unchecked_prefix"])
        and pd.api.types.is_numeric_dtype(raw[c])
    ]


def check_values(raw: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """Keep values that cannot be physical missing and mark their launches as damaged records.

    Parameters
    ----------
    raw : DataFrame
        A parser's raw table (:data:`ncuroof.schema.RAW_META` columns, metric columns in ncu base
        units: ns, Hz, counts, B/s).
    catalog : Catalog
        Its ``thresholds["input"]`` holds the limits (``metrics/thresholds.toml``).

    Returns
    -------
    DataFrame
        A copy of ``raw`` where every negative or infinite metric value, any value above
        ``max_value``, a duration below ``min_duration_ns``, elapsed cycles (``cycle_counts``)
        below ``min_cycles``, a clock (``*<clock_suffix>``)
        at or below 0 and a core clock (``core_clocks``) above ``max_clock_hz`` is NaN; a launch
        without a kernel name, or without any metric value (the record was emptied), is damaged too.
        Each damaged launch's ``input_notes`` starts with :data:`ncuroof.schema.DAMAGED` and names
        the metrics, their values and why (at most three).
    """
    lim = limits(catalog)
    raw = raw.reset_index(drop=True)
    cols = _checked_columns(raw, lim)
    values = raw[cols].to_numpy(dtype=float, copy=True) if cols else np.empty((len(raw), 0))
    why, texts = _reasons(values, cols, lim)
    bad = why != 0
    names = raw["kernel_name"]
    no_name = names.isna().to_numpy() | (names.astype(str).str.strip() == "").to_numpy()
    empty = np.isnan(values).all(axis=1) if cols else np.zeros(len(raw), dtype=bool)
    empty &= (
        not empty.all()
    )  # a launch emptied among launches with values; not an export without metrics
    empty &= (
        ~raw["input_notes"].fillna("").astype(str).str.contains(NA_NOTE, regex=False).to_numpy()
    )
    for i in np.flatnonzero(bad.any(axis=1) | no_name | empty):
        parts = [
            f"{cols[j]} = {values[i, j]:g} is {texts[why[i, j]]}"
            for j in np.flatnonzero(bad[i])[:3]
        ]
        if no_name[i]:
            parts.insert(0, "no kernel name")
        if empty[i]:
            parts.append("no metric values")
        add_note(
            raw,
            i,
            f"{DAMAGED}: {', '.join(parts)}, kept missing (not 0): the input is damaged, re-run ncu"
            " or export it again",
        )
    if bad.any():
        values[bad] = np.nan
        raw[cols] = values
    return raw


def roof_damage(
    rates: dict[str, np.ndarray], peaks: dict[str, np.ndarray], catalog: Catalog, roofs: str = ""
) -> np.ndarray:
    """Per launch, '' or the damaged-record note of :func:`roof_violations` (``roofs`` says whose
    roofs, e.g. ``" (a datasheet roof)"``); the formulas and the datasheet roofs both use it."""
    beyond = roof_violations(rates, peaks, catalog)
    return np.array(
        [
            (
                f"{DAMAGED}: {b}{roofs}, beyond any measurement error, a counter is damaged: re-run"
                " ncu, not plotted"
                if b
                else ""
            )
            for b in beyond
        ],
        dtype=object,
    )


def roof_violations(
    rates: dict[str, np.ndarray], peaks: dict[str, np.ndarray], catalog: Catalog
) -> np.ndarray:
    """Per launch, the achieved rates more than ``max_roof_multiple`` times their roof.

    Parameters
    ----------
    rates, peaks : dict of str to ndarray, shape (n_launches,)
        Achieved FLOP/s or B/s and the roof (same units) of each precision or level, by name.
    catalog : Catalog
        Holds ``max_roof_multiple`` (``[input]`` of ``metrics/thresholds.toml``).

    Returns
    -------
    ndarray of object, shape (n_launches,)
        '' where every rate is plausible or has no roof, else a note naming each rate and its
        multiple of the roof; such a launch holds a damaged counter (status ``corrupt_record``).
    """
    factor = limits(catalog)["max_roof_multiple"]
    n = len(next(iter(rates.values()))) if rates else 0
    out = np.full(n, "", dtype=object)
    for name, rate in rates.items():
        peak = peaks.get(name)
        if peak is None:
            continue
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            multiple = rate / peak
            hit = np.isfinite(peak) & (peak > 0) & (multiple > factor)
        for i in np.flatnonzero(hit):
            out[i] += f"{', ' if out[i] else ''}{name} at {multiple[i]:.3g}x its roof"
    return out
