"""The clock control a report was collected with, from the report itself (and
the collection record).

ncu stores in every result its clock status: result field 25, ``ClockStatus`` of NVIDIA's
``extras/FileFormat/ProfilerReport.proto`` (``ProfilerClockStatusMessage``: 1 ``RequestedLock``,
2 ``ExecutedLocked``). It says whether the clocks were locked, not to which clock (``base`` or, from
ncu 2026.1, ``boost``): that comes from the ``.ncuroof.json`` record ``ncuroof profile`` writes
beside the report, when there is one. One ncu session applies one ``--clock-control`` to all its
launches, so the first launch record is read: :func:`report_clock` streams the report (compressed or
not) only up to it, in bounded chunks.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from ..collector.ncu import read_sidecar
from .ncu_rep.compressed import is_compressed
from .ncu_rep.framing import MAGIC
from .ncu_rep.protobuf import classes, fields, varint

__all__ = ["report_clock", "clock_control", "LOCKED", "NOT_LOCKED", "NOT_APPLIED"]

LOCKED, NOT_LOCKED, NOT_APPLIED = "locked", "not locked", "lock requested, not applied"
#: Bytes read at a time when skipping a block that holds no launch.
_SKIP = 1 << 20
#: A block header or launch record longer than this is no report's (a damaged file): stop looking.
_MAX_RECORD = 256 << 20


def _read(f: BinaryIO, n: int) -> bytes | None:
    """Exactly ``n`` bytes, or None at the end of the stream."""
    out = f.read(n)
    while out is not None and len(out) < n:
        more = f.read(n - len(out))
        if not more:
            return None
        out += more
    return out


def _skip(f: BinaryIO, n: int) -> bool:
    while n > 0:
        got = f.read(min(n, _SKIP))
        if not got:
            return False
        n -= len(got)
    return True


def _first_record(f: BinaryIO) -> bytes | None:
    """The first launch record of a report stream (after ``NVR\\0``), None when there is none or
    the framing breaks."""
    size = _read(f, 4)
    if size is None or not _skip(f, struct.unpack("<I", size)[0]):
        return None
    header_cls = classes()["BlockHeader"]
    while (raw := _read(f, 4)) is not None:
        n = struct.unpack("<I", raw)[0]
        if n > _MAX_RECORD or (buf := _read(f, n)) is None:
            return None
        try:
            header = header_cls.FromString(buf)
        except Exception:  # noqa: BLE001 - a damaged header: the readers say so, not this
            return None
        if not header.num_results:
            if not _skip(f, header.payload_size):
                return None
            continue
        for _ in range(header.num_sources):
            m = _read(f, 4)
            if m is None or not _skip(f, struct.unpack("<I", m)[0]):
                return None
        m = _read(f, 4)
        n = struct.unpack("<I", m)[0] if m is not None else _MAX_RECORD + 1
        return _read(f, n) if n <= _MAX_RECORD else None
    return None


def _status(record: bytes) -> str | None:
    """The clock status of one launch record (result field 25), None without one."""
    i, end = 0, len(record)
    try:
        while i < end:
            key, i = varint(record, i)
            number, wire = key >> 3, key & 7
            if wire == 0:
                i = varint(record, i)[1]
            elif wire == 2:
                length, i = varint(record, i)
                if number == 25:
                    flags = {n: v for n, w, v in fields(record[i : i + length]) if w == 0}
                    return (LOCKED if flags.get(2) else NOT_APPLIED) if flags.get(1) else NOT_LOCKED
                i += length
            elif wire in (1, 5):
                i += 8 if wire == 1 else 4
            else:
                return None
    except ValueError:
        return None
    return None


def report_clock(path: Path) -> str | None:
    """Whether ncu locked the clocks for the launches of the report at ``path``.

    Parameters
    ----------
    path : Path
        A ``.ncu-rep`` or ``.ncu-repz`` report (any other file gives None).

    Returns
    -------
    str or None
        :data:`LOCKED`, :data:`NOT_LOCKED` (``--clock-control none``) or :data:`NOT_APPLIED`
        (locking was asked for and failed); None when the report stores no clock status or cannot
        be read this far (the readers report damage, not this).
    """
    try:
        with path.open("rb") as raw:
            head = raw.read(8)
            raw.seek(0)
            if head[:4] == MAGIC:
                raw.seek(4)
                record = _first_record(raw)
            elif is_compressed(head):
                import zstandard

                with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as z:
                    record = _first_record(z) if _read(z, 4) == MAGIC else None  # type: ignore[arg-type]
            else:
                return None
    # unreadable or corrupt: the reader's own error says it, not this
    except Exception:  # noqa: BLE001
        return None
    return _status(record) if record else None


def clock_control(path: Path) -> str | None:
    """The clock control of a report as the page and ``launches.csv`` show it: the report's clock
    status (:func:`report_clock`), then after a colon the ``--clock-control`` of
    ``ncuroof profile``'s record when there is one (``locked: base (ncu default)``,
    ``not locked: none``); the record's value alone for an input without a clock status; None
    when neither says."""
    status = report_clock(path)
    rec = read_sidecar(path)
    mode = (
        rec.get("clock_control")
        if isinstance(rec, dict) and isinstance(rec.get("clock_control"), str)
        else None
    )
    if status and mode:
        return f"{status}: {mode}"
    return status or mode
