"""Merge the raw tables of several files of one ncu run, launch by launch.

The NERSC/GENE roofline workflow profiles the same application twice: once for time and DRAM
bytes, once for the SASS FLOP counters, because SASS patching (the instrumentation behind
``*sass*`` metrics) inflates durations and cycles measured in the same pass (the V100 GENE pair
shows 0.0012 s in the time run and 0.113 s in the FLOP run for the same launch). Merging joins
the files on (range, launch ID) after checking that every launch runs the same kernel, and takes
a metric that several files carry from the file without SASS-patched metrics. The exports of such
runs written into one CSV file are joined by the same function (:mod:`ncuroof.parser.csv`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import InputError
from ..schema import RAW_META

if TYPE_CHECKING:  # csv.py joins the runs of one file with merge()
    from .csv import Session

__all__ = ["merge", "apply_session", "sass_patched"]

_KEY = ["range_id", "launch_id"]
_TIME_LIKE = ("gpu__time_duration", "cycles_elapsed", "cycles_active")
# Other metrics of one launch in two inputs are the same count unless they differ
# by more than rounding.
_SAME = 1e-9
_log = logging.getLogger(__name__)


def _shown(source: str) -> str:
    """An input as a note names it: the file name, and the process of an appended export."""
    path, sep, rest = str(source).partition(" (process ")
    return Path(path).name + (f" (process {rest}" if sep else "")


def sass_patched(raw: pd.DataFrame) -> bool:
    """Whether a raw table holds SASS-patched metrics (``sm__sass_*``,
    ``smsp__sass_*``, ``sass__*``).

    Parameters
    ----------
    raw : DataFrame
        A raw table.

    Returns
    -------
    bool
        True when any such metric has a value in any launch.
    """
    cols = [
        c for c in raw.columns if c not in RAW_META and ("__sass_" in c or c.startswith("sass__"))
    ]
    return bool(cols) and bool(raw[cols].notna().to_numpy().any())


def _name(raw: pd.DataFrame) -> str:
    return str(raw["source"].iloc[0])


_ADVICE = "merge only files of the same ncu run (or pass --stack)"


def _check_lineup(base: pd.DataFrame, other: pd.DataFrame, advice: str) -> None:
    a, b = _name(base), _name(other)
    if len(base) != len(other):
        raise InputError(
            f"cannot merge with {a}: it has {len(base)} launches and this one {len(other)};"
            f" {advice}",
            b,
        )
    joined = base[_KEY + ["kernel_name"]].merge(
        other[_KEY + ["kernel_name"]], on=_KEY, how="outer", suffixes=("_a", "_b"), indicator=True
    )
    missing = joined[joined["_merge"] != "both"]
    if not missing.empty:
        r = missing.iloc[0]
        raise InputError(
            f"cannot merge with {a}: launch {int(r['launch_id'])} is in only one of the two;"
            f" {advice}",
            b,
        )
    differ = joined[joined["kernel_name_a"] != joined["kernel_name_b"]]
    if not differ.empty:
        r = differ.iloc[0]
        raise InputError(
            f"cannot merge with {a}: launch {int(r['launch_id'])} is {r['kernel_name_b']!r} here"
            f" but {r['kernel_name_a']!r} there; {advice}",
            b,
        )


def merge(tables: list[pd.DataFrame], advice: str = _ADVICE) -> pd.DataFrame:
    """Merge raw tables of the same run into one, launch by launch.

    Parameters
    ----------
    tables : list of DataFrame
        Raw tables (one per input file), each with the same (range_id, launch_id) set and the same
        kernel (function name) per launch.
    advice : str, optional
        What to do when they do not line up, the end of the error message (default: for files).

    Returns
    -------
    DataFrame
        One raw table: metadata from the first file that has it, ``source`` = the files joined
        by ``' + '``, each metric from the first file without SASS-patched metrics that has it
        (else the first file that has it). ``input_notes`` says which file gave a metric that
        several files give different values for (a time or cycle metric: by more than 1 %), with
        both values; a warning (logging) says so on the terminal.

    Raises
    ------
    InputError
        When the launches of two files do not line up (count, IDs or kernel names differ).
    """
    base = tables[0].sort_values(_KEY).reset_index(drop=True)
    others = [t.sort_values(_KEY).reset_index(drop=True) for t in tables[1:]]
    for t in others:
        _check_lineup(base, t, advice)
    # stable: unpatched files first, then input order
    ordered = sorted([base, *others], key=sass_patched)
    out = _merged_meta(base, others)
    notes = _input_notes(out, others)
    metrics, differ = _merged_metrics(ordered, notes)
    out = pd.concat([out, pd.DataFrame(metrics)], axis=1)
    out["input_notes"] = ["; ".join(n) or None for n in notes]
    if differ:
        _warn_differ(out, notes, differ)
    return out


def _merged_meta(base: pd.DataFrame, others: list[pd.DataFrame]) -> pd.DataFrame:
    """The key and metadata columns, each from the first file that has it, and ``source``."""
    out = base[_KEY].copy()
    for col in RAW_META:
        if col in _KEY:
            continue
        values = pd.Series([None] * len(base), dtype=object)
        for t in [base, *others]:
            values = values.where(values.notna(), t[col].astype(object))
        out[col] = values
    out["source"] = " + ".join(_name(t) for t in [base, *others])
    return out


def _input_notes(out: pd.DataFrame, others: list[pd.DataFrame]) -> list[list[str]]:
    """Per launch, the distinct input notes of every file."""
    notes: list[list[str]] = [[n] if isinstance(n, str) and n else [] for n in out["input_notes"]]
    for t in others:
        for i, n in enumerate(t["input_notes"]):
            if isinstance(n, str) and n and n not in notes[i]:
                notes[i].append(n)
    return notes


def _merged_metrics(
    ordered: list[pd.DataFrame], notes: list[list[str]]
) -> tuple[dict[str, np.ndarray], list[tuple[int, str]]]:
    """Each metric from the first table of ``ordered`` that has it, launch by launch; where the
    tables disagree on a value, a note in ``notes`` and the (launch index, metric) listed."""
    patched = {_name(t): sass_patched(t) for t in ordered}
    metrics: dict[str, np.ndarray] = {}
    origin: dict[str, np.ndarray] = {}
    differ: list[tuple[int, str]] = []
    for t in ordered:
        name = _name(t)
        for col in t.columns:
            if col in RAW_META:
                continue
            v = t[col].to_numpy(dtype=float, na_value=np.nan)
            if col not in metrics:
                metrics[col] = v
                origin[col] = np.full(len(v), name, dtype=object)
                continue
            kept = metrics[col]
            tolerance = 0.01 if any(k in col for k in _TIME_LIKE) else _SAME
            for i in np.flatnonzero(
                np.isfinite(kept) & np.isfinite(v) & (np.abs(kept - v) > tolerance * np.abs(kept))
            ):
                inflated = tolerance > _SAME and patched[name] and not patched[origin[col][i]]
                notes[i].append(
                    _differ_note(col, (origin[col][i], kept[i]), (name, v[i]), inflated)
                )
                differ.append((i, col))
            take = np.isnan(kept) & ~np.isnan(v)
            metrics[col] = np.where(take, v, kept)
            origin[col] = np.where(take, name, origin[col])
    return metrics, differ


def _differ_note(
    col: str, kept: tuple[str, float], other: tuple[str, float], inflated: bool
) -> str:
    """The note of a launch whose inputs disagree on ``col``: the (file, value)
    kept and the other."""
    why = (
        " (its run has SASS-patched metrics, which inflate durations and cycles)"
        if inflated
        else " (the first input's value: nothing tells which is right)"
    )
    return (
        f"{col} from {_shown(kept[0])} ({kept[1]:,.6g}), not {_shown(other[0])}"
        f" ({other[1]:,.6g}){why}"
    )


def _warn_differ(out: pd.DataFrame, notes: list[list[str]], differ: list[tuple[int, str]]) -> None:
    """Say on the terminal that the inputs disagree (never decided quietly: which value was kept is
    in each launch's notes)."""
    i, col = differ[0]
    _log.warning(
        "%s: the inputs give different values for %d launch metrics, e.g. launch %s's %s: %s;"
        " each launch's notes in launches.csv name the value kept (pass runs that are not parts"
        " of one run with --stack)",
        out["source"].iloc[0],
        len(differ),
        out["launch_id"].iloc[i],
        col,
        notes[i][-1] if notes[i] else col,
    )


def apply_session(raw: pd.DataFrame, session: Session, path: Path) -> pd.DataFrame:
    """Complete a raw table with what a session-page export says about the run.

    Parameters
    ----------
    raw : DataFrame
        Launches of the same run.
    session : Session
        From :func:`ncuroof.parser.csv.read_session`.
    path : Path
        The session file, for messages.

    Returns
    -------
    DataFrame
        ``raw`` with empty ``device_name``, ``cc`` and ``ncu_version`` filled, and device
        attributes it lacks added as ``device__attribute_*`` columns.

    Raises
    ------
    InputError
        If the session page names another device than the launches.
    """
    raw = raw.copy()
    known = raw["device_name"].dropna().astype(str).unique()
    if session.device_name and len(known) and session.device_name not in known:
        raise InputError(
            f"is the session page of a run on {session.device_name}, but the launches ran on "
            f"{', '.join(known)}; pass the session page of the same run",
            path,
        )
    for col, value in (
        ("device_name", session.device_name),
        ("cc", session.cc),
        ("ncu_version", session.ncu_version),
    ):
        if value:
            raw[col] = raw[col].astype(object).where(raw[col].notna(), value)
    for name, value in session.attributes.items():
        if name not in raw.columns:
            raw[name] = value
    return raw
