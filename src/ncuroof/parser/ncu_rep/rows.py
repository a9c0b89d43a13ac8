"""The raw-table rows of a ``.ncu-rep`` report, made the same way by both readers.

The decoder (:mod:`.decode`) and the ``ncu_report`` path (:mod:`.reference`) both turn a launch
into a row with :func:`launch_row` and the rows into the raw table with :func:`launch_frame`, so
that their tables agree column for column; :func:`held_text` holds the repeated names as
``category``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...fmt import path_text
from ...schema import RAW_COMPACT

__all__ = [
    "launch_row",
    "launch_frame",
    "numeric_metrics",
    "held_text",
    "META_COLUMNS",
]


def _dims(values: dict[str, Any], kind: str) -> str | None:
    dims = [values.get(f"launch__{kind}_dim_{a}") for a in "xyz"]
    if any(d is None or (isinstance(d, float) and math.isnan(d)) for d in dims):
        return None
    return "({}, {}, {})".format(*(int(d) for d in dims))


def _cc(values: dict[str, Any]) -> str | None:
    major = values.get("device__attribute_compute_capability_major")
    minor = values.get("device__attribute_compute_capability_minor")
    if major is None or minor is None or (isinstance(major, float) and math.isnan(major)):
        return None
    return f"{int(major)}.{int(minor)}"


_META = (
    "source",
    "range_id",
    "launch_id",
    "kernel_name",
    "kernel_demangled",
    "nvtx_range",
    "device_name",
    "cc",
    "grid",
    "block",
    "ncu_version",
    "reader",
    "input_notes",
)
#: The identity columns of a :func:`launch_row` row, in order (the metric columns follow).
META_COLUMNS = _META


def launch_row(
    path: Path,
    range_id: int,
    launch_id: int,
    kernel_name: str,
    demangled: str,
    nvtx: str | None,
    values: dict[str, Any],
    version: str | None,
) -> dict[str, Any]:
    """One raw-table row: the launch's identity columns, then its metric values.

    Shared by both ``.ncu-rep`` readers so that their tables agree column for column.

    Parameters
    ----------
    path : Path
        The report (``source`` column).
    range_id, launch_id : int
        ncu's range index and the launch's index across ranges.
    kernel_name, demangled : str
        Function and demangled names of the kernel.
    nvtx : str or None
        The NVTX ranges pushed at launch, ``' > '``-joined.
    values : dict
        Metric name to value (float, int, str, or NaN), in ncu's metric-name order; modified:
        ``device__attribute_display_name`` is moved to ``device_name``.
    version : str or None
        The ncu version that wrote the report.

    Returns
    -------
    dict
    """
    display = values.pop("device__attribute_display_name", None)
    row = dict(
        zip(
            _META,
            (
                path_text(path),
                range_id,
                launch_id,
                kernel_name,
                demangled,
                nvtx,
                display if isinstance(display, str) else None,
                _cc(values),
                _dims(values, "grid"),
                _dims(values, "block"),
                version,
                None,
                None,
            ),
        )
    )
    row.update(values)
    return row


def launch_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The raw table of :func:`launch_row` rows: metric columns made numeric (text becomes NaN).

    Parameters
    ----------
    rows : list of dict
        One per launch.

    Returns
    -------
    DataFrame
        Identity columns first, then metric columns in order of first appearance.
    """
    return numeric_metrics(pd.DataFrame.from_records(rows))


def numeric_metrics(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its metric columns that are not numeric yet made numeric (text becomes NaN).

    Parameters
    ----------
    df : DataFrame
        :data:`META_COLUMNS`, then metric columns.

    Returns
    -------
    DataFrame
        ``df``, changed in place.
    """
    text = [
        c for c, t in df.dtypes.items() if c not in _META and not pd.api.types.is_numeric_dtype(t)
    ]  # the rest are numbers already
    if text:
        df[text] = df[text].apply(pd.to_numeric, errors="coerce")
    return df


def held_text(df: pd.DataFrame, names: Sequence[str] = RAW_COMPACT) -> pd.DataFrame:
    """``df`` with its columns ``names`` (default :data:`~ncuroof.schema.RAW_COMPACT`, as both
    readers of a report give them) that hold text as ``category``: sorted categories of the text's
    dtype. Column by column (``astype`` of a dict rebuilds every column of a wide table: 10x the
    time)."""
    text = [c for c in names if isinstance(df[c].dtype, pd.StringDtype)]
    return df.assign(**{c: df[c].astype("category") for c in text}) if text else df
