"""Read Nsight Compute ``.ncu-rep`` reports through NVIDIA's ``ncu_report`` module.

``ncu_report`` (PyPI ``ncu-report``) reads reports without a GPU, but it reads a truncated
report silently as one with fewer launches, so :func:`check_framing` walks the file's framing
first: ``NVR\\0``, a u32 header size and the file header, then blocks of a u32 header size, a
protobuf block header whose field 5 is the payload size, and the payload, ending exactly at the
end of the file (verified on every report in ``../shared/fixtures``).
"""

from __future__ import annotations

import math
import mmap
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ..catalog import Catalog
from ..errors import InputError, MissingModuleError, ReportFormatError

__all__ = ["read_ncu_rep", "check_framing", "check_file", "ncu_version", "MAGIC", "launch_row", "launch_frame"]

MAGIC = b"NVR\x00"
_PAYLOAD_FIELD = 5
_VERSION = re.compile(rb"(\d{4}\.\d+\.\d+(?:\.\d+)?) \(build")


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("varint runs past the block header")
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def _payload_size(header: bytes) -> int:
    """Return field 5 (payload size) of a protobuf block header, 0 when absent."""
    i = 0
    while i < len(header):
        key, i = _varint(header, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(header, i)
            if field == _PAYLOAD_FIELD:
                return value
        elif wire == 2:
            length, i = _varint(header, i)
            i += length
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
    if i != len(header):
        raise ValueError("block header overruns its size")
    return 0


def check_file(path: Path) -> bytes:
    """Check that ``path`` is a non-empty file starting with ``NVR\\0`` and a header size.

    Parameters
    ----------
    path : Path
        The report.

    Returns
    -------
    bytes
        Its first 8 bytes.

    Raises
    ------
    InputError
        If the file is missing, empty, or not an Nsight Compute report.
    ReportFormatError
        If it ends inside its first 8 bytes.
    """
    if not path.exists():
        raise InputError("no such file; check the path", path)
    if not path.is_file():
        raise InputError("is not a file; pass a .ncu-rep report or an ncu CSV export", path)
    size = path.stat().st_size
    if size == 0:
        raise InputError("is empty; re-run ncu with -o to write the report again", path)
    with path.open("rb") as f:
        head = f.read(8)
        if head[:4] != MAGIC:
            hint = ""
            if head and all(32 <= b < 127 or b in (9, 10, 13) for b in head[:4]) or head.startswith(b"\xef\xbb\xbf"):
                hint = " (it looks like text: if it is an ncu CSV export, give it a .csv name)"
            raise InputError(f"is not an Nsight Compute report: it does not start with NVR\\0{hint}", path)
        if len(head) < 8:
            raise ReportFormatError("is truncated inside its file header; copy the report again", path)
    return head


def check_framing(path: Path) -> int:
    """Check that ``path`` is a whole, uncompressed ``.ncu-rep`` file.

    Parameters
    ----------
    path : Path
        The report.

    Returns
    -------
    int
        The number of blocks in the file.

    Raises
    ------
    InputError
        If the file is missing, empty, or not an Nsight Compute report.
    ReportFormatError
        If the block framing does not end exactly at the end of the file (truncated or corrupt).
    """
    head = check_file(path)
    size = path.stat().st_size
    with path.open("rb") as f:
        pos = 8 + struct.unpack("<I", head[4:8])[0]
        blocks = 0
        while pos < size:
            f.seek(pos)
            raw = f.read(4)
            if len(raw) < 4:
                break
            hsize = struct.unpack("<I", raw)[0]
            header = f.read(hsize)
            if len(header) < hsize:
                break
            try:
                payload = _payload_size(header)
            except ValueError as exc:
                raise ReportFormatError(f"block {blocks} at byte {pos} has a corrupt header ({exc}); the report is damaged", path) from exc
            pos += 4 + hsize + payload
            blocks += 1
        if pos != size:
            raise ReportFormatError(
                f"is truncated or corrupt: its blocks end at byte {pos} but the file has {size} bytes; "
                "copy the report again or re-run ncu",
                path,
            )
    return blocks


def ncu_version(path: Path) -> str | None:
    """Return the version of Nsight Compute that wrote ``path`` (e.g. ``'2023.1.1.0'``).

    The version is stored in the report's session block as text ``'<version> (build ...'``;
    ``ncu_report`` does not expose it. Best effort: ``None`` if not found (ncu 2020 reports).

    Parameters
    ----------
    path : Path
        A framing-checked report.

    Returns
    -------
    str or None
    """
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        m = _VERSION.search(mm)  # type: ignore[call-overload]
        return m.group(1).decode() if m else None


def _import_ncu_report(path: Path) -> Any:
    try:
        import ncu_report  # type: ignore[import-not-found]
    except ImportError as exc:
        raise MissingModuleError(
            "reading .ncu-rep needs NVIDIA's ncu_report module (pip install ncu-report; it has wheels for "
            "Linux x86-64 and Windows only); run ncuroof on such a machine, or export the data with "
            f"ncu --import {path.name} --csv --page raw --print-units base > {path.stem}.csv and analyze that CSV",
            path,
        ) from exc
    return ncu_report


def _nvtx(action: Any) -> str | None:
    try:
        state = action.nvtx_state()
    except Exception:  # noqa: BLE001 - reports without NVTX data raise inside the SWIG layer
        return None
    if state is None:
        return None
    parts: list[str] = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        names = [str(n) for n in dom.push_pop_ranges()] + [str(n) for n in dom.start_end_ranges()]
        if not names:
            continue
        domain = dom.name()
        prefix = "" if domain in ("", "<default domain>") else f"{domain}:"
        parts.extend(prefix + n for n in names)
    return " > ".join(parts) if parts else None


def _value(metric: Any) -> Any:
    v = metric.value()
    if v is None:
        return math.nan
    return v


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

_META = ("source", "range_id", "launch_id", "kernel_name", "kernel_demangled", "nvtx_range", "device_name", "cc", "grid",
         "block", "ncu_version", "input_notes")


def launch_row(path: Path, range_id: int, launch_id: int, kernel_name: str, demangled: str, nvtx: str | None,
               values: dict[str, Any], version: str | None) -> dict[str, Any]:
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
    row = dict(zip(_META, (str(path), range_id, launch_id, kernel_name, demangled, nvtx,
                           display if isinstance(display, str) else None, _cc(values), _dims(values, "grid"),
                           _dims(values, "block"), version, None)))
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
    df = pd.DataFrame.from_records(rows)
    metric_cols = [c for c in df.columns if c not in _META]
    df[metric_cols] = df[metric_cols].apply(pd.to_numeric, errors="coerce")
    return df


def _actions(ctx: Any) -> Iterator[tuple[int, int, Any]]:
    launch = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            yield r, launch, rng.action_by_idx(a)
            launch += 1


def _count_actions(ctx: Any) -> int:
    return sum(ctx.range_by_idx(r).num_actions() for r in range(ctx.num_ranges()))


def read_ncu_rep(path: str | Path, catalog: Catalog, progress: Any = None) -> pd.DataFrame:
    """Read every launch of every range of a report into the raw table.

    Parameters
    ----------
    path : str or Path
        A ``.ncu-rep`` (or ``.ncu-repz``) file.
    catalog : Catalog
        Says which metrics to read: every scalar metric of its recipes, every
        ``sm__ops_path_tensor_*`` count/rate/peak, and the MMA opcodes of
        ``sass__inst_executed_per_opcode_with_modifier_all``.
    progress : callable, optional
        ``progress(total)`` returns a callable advanced once per launch (a progress bar).

    Returns
    -------
    DataFrame
        The raw table of :mod:`ncuroof.schema`: one row per launch, ``launch_id`` numbered
        0, 1, ... across ranges in report order (ncu's result ID).

    Raises
    ------
    InputError, ReportFormatError
        For a missing, empty, foreign, truncated or corrupt file.
    MissingModuleError
        If ``ncu_report`` is not installed.
    """
    path = Path(path)
    if path.suffix != ".ncu-repz":
        check_framing(path)
    elif not path.is_file():
        raise InputError("no such file; check the path", path)
    version = ncu_version(path) if path.suffix != ".ncu-repz" else None
    ncu_report = _import_ncu_report(path)
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as exc:  # noqa: BLE001 - the SWIG layer raises plain RuntimeError/Exception
        raise ReportFormatError(f"ncu_report could not read it ({exc}); re-run ncu or re-export the report", path) from exc

    wanted = catalog.scalar_metrics
    tensor = catalog.tensor
    opcode_metric = tensor.opcode_metric
    ops_prefix = tensor.ops_prefix
    name_base = ncu_report.IAction
    total = _count_actions(ctx)
    advance = progress(total) if progress is not None else None
    rows: list[dict[str, Any]] = []
    for range_id, launch_id, action in _actions(ctx):
        names = action.metric_names()
        values: dict[str, Any] = {}
        for name in names:
            if name in wanted or (name.startswith(ops_prefix) and catalog.is_tensor_path_metric(name)):
                values[name] = _value(action.metric_by_name(name))
        if opcode_metric in names:
            m = action.metric_by_name(opcode_metric)
            values[opcode_metric] = _value(m)
            keys = m.correlation_ids() if m.has_correlation_ids() else None
            for i in range(m.num_instances() if keys is not None else 0):
                opcode = keys.as_string(i)
                if tensor.looks_like_mma.search(opcode):
                    values[f"{opcode_metric}[{opcode}]"] = m.as_double(i)
        rows.append(launch_row(path, range_id, launch_id, action.name(name_base.NameBase_FUNCTION),
                               action.name(name_base.NameBase_DEMANGLED), _nvtx(action), values, version))
        if advance is not None:
            advance()
    if not rows:
        raise InputError("holds no kernel launches; check ncu's --kernel-name/--launch-count filters", path)
    return launch_frame(rows)
