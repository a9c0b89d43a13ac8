"""Read Nsight Compute ``.ncu-rep`` reports through NVIDIA's ``ncu_report`` module.

``ncu_report`` (PyPI ``ncu-report``) reads reports without a GPU, but it reads a truncated report
silently as one with fewer launches, and a repeated or reordered block as more launches, so
:func:`check_records` first walks the report once with the decoder's block walker
(:func:`ncuroof.parser.blocks.plan`): framing, every launch record through the
:class:`~ncuroof.parser.blocks.LaunchLedger`, and the ncu version, which ``ncu_report`` does not
expose. The report is then read by ``ncu_report`` in a worker process (:mod:`.contained`).
"""

from __future__ import annotations

import importlib.util
import math
import mmap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..catalog import Catalog
from ..errors import InputError, ReportFormatError
from ..fmt import path_text
from ..schema import DAMAGED, RAW_COMPACT
from .blocks import LaunchLedger, Plan, ResultRecord, check_file, plan, walk
from .contained import missing_module, read_launches

__all__ = [
    "read_ncu_rep",
    "check_records",
    "launch_row",
    "launch_frame",
    "numeric_metrics",
    "META_COLUMNS",
    "DAMAGED_TEXT",
]


def check_records(path: Path) -> Plan:
    """Framing, file header and launch records of a ``.ncu-rep`` checked, before
    ``ncu_report`` reads it.

    One walk over the blocks (:func:`ncuroof.parser.blocks.plan` with a
    :class:`~ncuroof.parser.blocks.LaunchLedger`): no truncated report, damaged block, duplicated
    or reordered launch record passes silently. The report's format version is not checked
    (``ncu_report`` reads versions the decoder does not know).

    Parameters
    ----------
    path : Path
        An uncompressed report.

    Returns
    -------
    Plan
        Its ``records`` (every launch record, in file order) and ``version`` (the ncu version
        that wrote it, None when not found: ncu 2020 reports).

    Raises
    ------
    InputError, ReportFormatError
        For a missing, empty or foreign file, a damaged file header, framing, block or launch
        record, or repeated or reordered launch records.
    """
    check_file(path)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return plan(mm, path, walk(mm, path), LaunchLedger(path, mm))


def _require_ncu_report(path: Path) -> None:
    if importlib.util.find_spec("ncu_report") is None:
        raise missing_module(path)


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


def _spec(catalog: Catalog) -> dict[str, Any]:
    """What the worker keeps of each launch (:mod:`._ncu_worker`)."""
    t = catalog.tensor
    return {
        "wanted": sorted(catalog.scalar_metrics),
        "ops_prefix": t.ops_prefix,
        "ops_suffixes": [t.ops_count, t.ops_rate, t.ops_peak],
        "instanced": {name: keep.pattern for name, keep in catalog.instanced_metrics.items()},
    }


def read_ncu_rep(path: str | Path, catalog: Catalog, progress: Any = None) -> pd.DataFrame:
    """Read every launch of every range of a report into the raw table.

    Parameters
    ----------
    path : str or Path
        An uncompressed report (:func:`ncuroof.parser.read` decompresses a ``.ncu-repz`` first,
        so that any ``ncu_report`` reads it and its launch records are checked).
    catalog : Catalog
        Says which metrics to read: every scalar metric of its recipes, every
        ``sm__ops_path_tensor_*`` count/rate/peak, the MMA opcodes of
        ``sass__inst_executed_per_opcode_with_modifier_all`` and the FP opcodes of the opcode tables
        (``metrics/opcodes.toml``).
    progress : callable, optional
        ``progress(total)`` returns a callable advanced once per launch (a progress bar).

    Returns
    -------
    DataFrame
        The raw table of :mod:`ncuroof.schema`: one row per launch, ``launch_id`` numbered
        0, 1, ... across ranges in report order (ncu's result ID); ``kernel_demangled`` held as
        ``category`` (:func:`held_text`).

    Raises
    ------
    InputError, ReportFormatError
        For a missing, empty, foreign, truncated or corrupt file.
    MissingModuleError
        If ``ncu_report`` is not installed.
    """
    path = Path(path)
    checked = check_records(path)
    records, version = checked.records, checked.version
    _require_ncu_report(path)
    launches = read_launches(path, _spec(catalog), progress, records)
    if not launches:
        raise _no_launches(path, records)
    rows: list[dict[str, Any]] = []
    for launch in launches:
        values = {k: v for k, v in launch.items() if k not in _LAUNCH_META}
        row = launch_row(
            path,
            launch["range_id"],
            launch["launch_id"],
            launch["kernel_name"],
            launch["kernel_demangled"],
            launch["nvtx_range"],
            values,
            version,
        )
        row["input_notes"] = DAMAGED_TEXT if launch.get("_damaged_text") else None
        rows.append(row)
    return held_text(launch_frame(rows))


def held_text(df: pd.DataFrame, names: Sequence[str] = RAW_COMPACT) -> pd.DataFrame:
    """``df`` with its columns ``names`` (default :data:`~ncuroof.schema.RAW_COMPACT`, as both
    readers of a report give them) that hold text as ``category``: sorted categories of the text's
    dtype. Column by column (``astype`` of a dict rebuilds every column of a wide table: 10x the
    time)."""
    text = [c for c in names if isinstance(df[c].dtype, pd.StringDtype)]
    return df.assign(**{c: df[c].astype("category") for c in text}) if text else df


#: Keys of the worker's launch dicts that are not metrics.
_LAUNCH_META = frozenset(
    {"range_id", "launch_id", "kernel_name", "kernel_demangled", "nvtx_range", "_damaged_text"}
)
#: Input note of a launch whose names held bytes that are not UTF-8.
DAMAGED_TEXT = (
    f"{DAMAGED}: its names hold bytes that are not UTF-8 (shown as U+FFFD), the report is damaged"
)


def _no_launches(path: Path, records: list[ResultRecord] | None) -> InputError:
    """The error for a report ncu_report reads as empty: damaged when its blocks
    hold launch records."""
    if records:
        return ReportFormatError(
            f"is damaged: it holds {len(records)} launch records but ncu_report decodes none (its"
            " file or session header is likely damaged); copy the report again or re-run ncu",
            path,
        )
    return InputError(
        "holds no kernel launches: ncu profiled none (check its --kernel-name/--launch-count"
        " filters), or the file was cut short after its header (copy it again)",
        path,
    )
