"""Read Nsight Compute ``.ncu-rep`` reports through NVIDIA's ``ncu_report`` module.

``ncu_report`` (PyPI ``ncu-report``) reads reports without a GPU, but it reads a truncated
report silently as one with fewer launches, so :func:`check_framing` walks the file's framing
first: ``NVR\\0``, a u32 header size and the file header, then blocks of a u32 header size, a
protobuf block header whose field 5 is the payload size, and the payload, ending exactly at the
end of the file (verified on every report in ``../shared/fixtures``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import mmap
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from google.protobuf.message import DecodeError

from ..catalog import Catalog
from ..errors import InputError, ReportFormatError
from ..schema import DAMAGED
from .contained import missing_module, read_launches
from .wire import classes
from .wire import varint as _varint

__all__ = ["read_ncu_rep", "check_framing", "check_file", "check_records", "launch_sequence", "check_launches", "LaunchLedger", "ResultRecord", "ncu_version",
           "MAGIC", "launch_row", "launch_frame", "DAMAGED_TEXT"]

MAGIC = b"NVR\x00"
_PAYLOAD_FIELD = 5  # block header fields: 5 payload size, 1 records before the results, 2 result records
_VERSION = re.compile(rb"(\d{4}\.\d+\.\d+(?:\.\d+)?) \(build")


def _payload_size(header: bytes) -> int:
    """Return field 5 (payload size) of a protobuf block header, 0 when absent."""
    return _message_fields(header).get(_PAYLOAD_FIELD, 0)


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
    """Check that the report ``path`` is a whole, uncompressed ``.ncu-rep`` file and return its
    number of blocks.

    Raises
    ------
    InputError
        As :func:`check_file`.
    ReportFormatError
        If the block framing does not end exactly at the end of the file (truncated or corrupt).
    """
    head = check_file(path)
    size = path.stat().st_size
    with path.open("rb") as f:
        pos = 8 + struct.unpack("<I", head[4:8])[0]
        f.seek(8)
        _check_file_header(f.read(min(pos, size) - 8), pos, size, path)
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


@dataclass(frozen=True)
class ResultRecord:
    """One launch (result) record of a report, as found by :func:`launch_sequence`.

    ``start``/``end`` are byte offsets of the message in the file; ``process_id`` and
    ``sequence`` are fields 1 and 2 of the result message (ncu's process ID and its increasing
    sequence number; field 14 is a Unix timestamp), ``None`` when absent.
    """

    index: int
    block: int
    start: int
    end: int
    process_id: int | None
    sequence: int | None


def _message_fields(buf: bytes) -> dict[int, int]:
    """Top-level varint fields of one protobuf message; ValueError if its wire format is broken."""
    fields: dict[int, int] = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, i = _varint(buf, i)
            fields.setdefault(field, value)
        elif wire == 2:
            length, i = _varint(buf, i)
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(buf):
            raise ValueError("a field runs past the end of the record")
    return fields


#: Bytes read from a memory-mapped report between releases of its pages (:func:`release_pages`).
RELEASE_BYTES = 64 << 20


def release_pages(mm: mmap.mmap, start: int, end: int) -> int:
    """Drop the pages of ``mm[start:end]`` (already read) from the process: the resident memory of
    a memory-mapped report stays bounded however large the file. Returns the new release mark."""
    start -= start % mmap.PAGESIZE
    end -= end % mmap.PAGESIZE
    if end > start and hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)
    return end


def _blocks(path: Path) -> Iterator[tuple[int, int, dict[int, int], bytes]]:
    """(block number, payload offset, header fields, payload) of a framing-checked report."""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos = 8 + struct.unpack("<I", data[4:8])[0]
        n = released = 0
        while pos < len(data):
            if pos - released >= RELEASE_BYTES:
                released = release_pages(data, released, pos)
            hsize = struct.unpack("<I", data[pos:pos + 4])[0]
            fields = _message_fields(data[pos + 4:pos + 4 + hsize])
            start = pos + 4 + hsize
            size = fields.get(_PAYLOAD_FIELD, 0)
            yield n, start, fields, data[start:start + size]
            pos = start + size
            n += 1


def _records(block: int, offset: int, payload: bytes, count: int, path: Path, launch: int) -> list[tuple[int, int]]:
    """(start, end) of the ``count`` u32-size-prefixed records that must tile ``payload`` exactly
    (``launch``: the number of the block's first launch, for the message)."""
    out, i = [], 0
    while i < len(payload):
        if i + 4 > len(payload):
            break
        size = struct.unpack("<I", payload[i:i + 4])[0]
        out.append((i + 4, i + 4 + size))
        i += 4 + size
    if i != len(payload) or len(out) != count:
        raise untiled_block(path, launch, block, offset, offset + len(payload), count)
    return out


def untiled_block(path: Path, launch: int, block: int, start: int, end: int, count: int) -> ReportFormatError:
    """The error for a block whose ``count`` records do not tile its payload ``[start, end)``."""
    return ReportFormatError(
        f"has a damaged block: launch {launch} in block {block} (bytes {start}-{end}): the block "
        f"should hold {count} records but its contents do not add up; copy the report again or re-run ncu", path)


def launch_sequence(path: str | Path) -> list[ResultRecord]:
    """Find every launch (result) record of a framing-checked report, without decoding it.

    A block header's field 2 counts the result records in its payload, field 1 the records before
    them; each record is a u32 size and a protobuf message. Each result message's wire format is
    walked at its top level (a deleted or inserted byte breaks it) and its fields 1 (process ID)
    and 2 (ncu's sequence number) are read. Verified on every report in ``../shared/fixtures``.

    Parameters
    ----------
    path : str or Path
        A report that passed :func:`check_framing`.

    Returns
    -------
    list of ResultRecord
        In file order.

    Raises
    ------
    ReportFormatError
        If a block's records do not tile its payload or a result record's wire format is broken
        (the record is named with its byte range).
    """
    path = Path(path)
    stamp = classes()["Stamp"]
    out: list[ResultRecord] = []
    for block, offset, fields, payload in _blocks(path):
        before, results = fields.get(1, 0), fields.get(2, 0)
        if not results:
            continue
        for start, end in _records(block, offset, payload, before + results, path, len(out))[before:]:
            msg = payload[start:end]
            try:  # protobuf's C parser walks the record's wire format (a deleted or inserted byte breaks it)
                f = stamp.FromString(msg)
            except DecodeError as exc:
                raise ReportFormatError(
                    f"has a damaged launch record: record {len(out)} (bytes {offset + start}-{offset + end}) is not "
                    f"readable ({exc}); copy the report again or re-run ncu", path) from exc
            out.append(ResultRecord(len(out), block, offset + start, offset + end,
                                    f.thread_id if f.HasField("thread_id") else None, f.seq if f.HasField("seq") else None))
    return out


class LaunchLedger:
    """Refuses repeated or reordered launch records as they are read, one at a time.

    Two identical records (same bytes) are a duplicated block; within one process, ncu's sequence
    numbers increase from record to record, so a repeated or lower number means records were
    repeated or reordered. (A removed record leaves no trace in general.) Records are told apart by
    (process ID, sequence number); their bytes are compared only when those repeat, and hashed only
    for records without a sequence number, so the check costs next to nothing in a decoder's pass.

    Parameters
    ----------
    path : Path
        The report, for the messages.
    data : buffer
        The whole report (``mmap`` or ``bytes``): ``data[r.start:r.end]`` is record ``r``.
    """

    def __init__(self, path: Path, data: Any) -> None:
        self.path, self.data = path, data
        self.first: dict[Any, ResultRecord] = {}
        self.last: dict[int | None, ResultRecord] = {}

    def _bytes(self, r: ResultRecord) -> bytes:
        return bytes(self.data[r.start:r.end])

    def add(self, r: ResultRecord) -> None:
        """Take the next record in file order.

        Raises
        ------
        ReportFormatError
            Naming both records, their byte ranges and sequence numbers.
        """
        ident = (r.process_id, r.sequence) if r.sequence is not None else hashlib.blake2b(self._bytes(r), digest_size=16).digest()
        first = self.first.setdefault(ident, r)
        if first is not r and (r.sequence is None or self._bytes(first) == self._bytes(r)):
            raise ReportFormatError(
                f"has a repeated launch record: record {r.index} (bytes {r.start}-{r.end}) is an exact copy of record "
                f"{first.index} (bytes {first.start}-{first.end}), a duplicated block; the report is damaged: copy it "
                "again or re-run ncu", self.path)
        prev = self.last.get(r.process_id)
        if prev is not None and r.sequence is not None and prev.sequence is not None and r.sequence <= prev.sequence:
            raise ReportFormatError(
                f"has launch records out of sequence: record {r.index} (bytes {r.start}-{r.end}) has ncu sequence "
                f"number {r.sequence}, not above the {prev.sequence} of record {prev.index}; launches are repeated or "
                "reordered, the report is damaged: copy it again or re-run ncu", self.path)
        self.last[r.process_id] = r


def check_launches(path: str | Path, records: list[ResultRecord]) -> None:
    """Refuse a report whose launch records repeat or step backwards (:class:`LaunchLedger`).

    Parameters
    ----------
    path : str or Path
        The report.
    records : list of ResultRecord
        From :func:`launch_sequence`.

    Raises
    ------
    ReportFormatError
        Naming both records, their byte ranges and sequence numbers.
    """
    path = Path(path)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        ledger = LaunchLedger(path, data)
        for r in records:
            ledger.add(r)


def check_records(path: Path) -> list[ResultRecord]:
    """Framing, file header and launch records of a ``.ncu-rep`` checked, before any decoder runs.

    :func:`check_framing`, then :func:`launch_sequence` and :func:`check_launches`: whichever
    reader decodes the report then, no duplicated or reordered launch record passes silently.

    Parameters
    ----------
    path : Path
        An uncompressed report.

    Returns
    -------
    list of ResultRecord

    Raises
    ------
    InputError, ReportFormatError
        See :func:`check_framing`, :func:`launch_sequence`, :func:`check_launches`.
    """
    check_framing(path)
    records = launch_sequence(path)
    check_launches(path, records)
    return records


def _check_file_header(header: bytes, end: int, size: int, path: Path) -> None:
    """The file header (after ``NVR\\0`` and its u32 size) is a small protobuf message: it must fit
    in the file and parse (ncu 2020-2025 write field 1, the format version)."""
    damaged = f"has a damaged or truncated file header (bytes 0-{min(end, size)})"
    if end > size:
        raise ReportFormatError(f"{damaged}: it claims {end - 8} bytes, the file has {size}; copy the report again or re-run ncu", path)
    try:
        fields = _message_fields(header)
    except ValueError as exc:
        raise ReportFormatError(f"{damaged}: {exc}; copy the report again or re-run ncu", path) from exc
    if 1 not in fields:
        raise ReportFormatError(f"{damaged}: no format version; copy the report again or re-run ncu", path)


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

_META = ("source", "range_id", "launch_id", "kernel_name", "kernel_demangled", "nvtx_range", "device_name", "cc", "grid",
         "block", "ncu_version", "reader", "input_notes")


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
                           _dims(values, "block"), version, None, None)))
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
    text = [c for c in df.columns if c not in _META and not pd.api.types.is_numeric_dtype(df[c])]  # the rest are numbers already
    if text:
        df[text] = df[text].apply(pd.to_numeric, errors="coerce")
    return df


def _spec(catalog: Catalog) -> dict[str, Any]:
    """What the worker keeps of each launch (:mod:`._ncu_worker`)."""
    t = catalog.tensor
    return {"wanted": sorted(catalog.scalar_metrics), "ops_prefix": t.ops_prefix,
            "ops_suffixes": [t.ops_count, t.ops_rate, t.ops_peak], "opcode_metric": t.opcode_metric,
            "mma": t.looks_like_mma.pattern}


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
    records = None
    if path.suffix != ".ncu-repz":
        records = check_records(path)
    elif not path.is_file():
        raise InputError("no such file; check the path", path)
    version = ncu_version(path) if path.suffix != ".ncu-repz" else None
    _require_ncu_report(path)
    launches = read_launches(path, _spec(catalog), progress, records)
    if not launches:
        raise _no_launches(path, records)
    rows: list[dict[str, Any]] = []
    for launch in launches:
        values = {k: v for k, v in launch.items() if k not in _LAUNCH_META}
        row = launch_row(path, launch["range_id"], launch["launch_id"], launch["kernel_name"], launch["kernel_demangled"],
                         launch["nvtx_range"], values, version)
        row["input_notes"] = DAMAGED_TEXT if launch.get("_damaged_text") else None
        rows.append(row)
    return launch_frame(rows)


#: Keys of the worker's launch dicts that are not metrics.
_LAUNCH_META = frozenset({"range_id", "launch_id", "kernel_name", "kernel_demangled", "nvtx_range", "_damaged_text"})
#: Input note of a launch whose names held bytes that are not UTF-8.
DAMAGED_TEXT = f"{DAMAGED}: its names hold bytes that are not UTF-8 (shown as U+FFFD), the report is damaged"


def _no_launches(path: Path, records: list[ResultRecord] | None) -> InputError:
    """The error for a report ncu_report reads as empty: damaged when its blocks hold launch records."""
    if records:
        return ReportFormatError(
            f"is damaged: it holds {len(records)} launch records but ncu_report decodes none (its file or session "
            "header is likely damaged); copy the report again or re-run ncu", path)
    return InputError("holds no kernel launches: ncu profiled none (check its --kernel-name/--launch-count filters), or the "
                      "file was cut short after its header (copy it again)", path)
