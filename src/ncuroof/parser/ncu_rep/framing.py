"""The framing of an Nsight Compute ``.ncu-rep`` report, walked the same way by both readers.

A report is ``NVR\\0``, a u32 little-endian header size and the file header (a protobuf message
whose field 1 is the format version), then blocks of [u32 block-header size][block header][payload],
ending exactly at the end of the file (verified on every report in ``../shared/fixtures``). The
block header's fields used here: 1 number of source records, 2 number of result (launch) records,
4 the string table, 5 the payload size; a payload is its records, each a u32 length and a protobuf
message, the sources first.

:func:`walk` is the one block walker (it checks the framing as it goes), :func:`plan` the one pass
over the block headers that both readers start from: the decoder (:mod:`.decode`) to cut the report
into slices, the ``ncu_report`` path (:mod:`.reference`) to check every launch record with the
:class:`LaunchLedger` before ``ncu_report``, which reads a damaged report silently, sees it.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from ...errors import InputError, ReportFormatError
from .protobuf import classes, field_spans, fields, varint

__all__ = [
    "MAGIC",
    "RELEASE_BYTES",
    "check_file",
    "check_header",
    "first_block",
    "walk",
    "results",
    "Untiled",
    "untiled_block",
    "release_pages",
    "ResultRecord",
    "LaunchLedger",
    "check_records",
    "Plan",
    "Mark",
    "plan",
]

MAGIC = b"NVR\x00"
#: Bytes read from a memory-mapped report between releases of its pages (:func:`release_pages`).
RELEASE_BYTES = 8 << 20
_VERSION = re.compile(rb"(\d{4}\.\d+\.\d+(?:\.\d+)?) \(build")


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
            if (
                head
                and all(32 <= b < 127 or b in (9, 10, 13) for b in head[:4])
                or head.startswith(b"\xef\xbb\xbf")
            ):
                hint = " (it looks like text: if it is an ncu CSV export, give it a .csv name)"
            raise InputError(
                f"is not an Nsight Compute report: it does not start with NVR\\0{hint}", path
            )
        if len(head) < 8:
            raise ReportFormatError(
                "is truncated inside its file header; copy the report again", path
            )
    return head


def check_header(header: bytes, end: int, size: int, path: Path) -> None:
    """Check the file header ``header`` (after ``NVR\\0`` and its u32 size, ending at byte ``end``
    of a file of ``size`` bytes): it must fit in the file and parse, with field 1, the format
    version (ncu 2020-2025 write it).

    Parameters
    ----------
    header : bytes
        The file header's bytes (possibly cut short by the end of the file).
    end, size : int
        Where the header says it ends, and the file's size, in bytes.
    path : Path
        The report, for the error.

    Raises
    ------
    ReportFormatError
        Naming its byte range and what is wrong.
    """
    damaged = f"has a damaged or truncated file header (bytes 0-{min(end, size)})"
    if end > size:
        raise ReportFormatError(
            f"{damaged}: it claims {end - 8} bytes, the file has {size}; copy the report again or"
            " re-run ncu",
            path,
        )
    try:
        numbers = {number for number, wire, _ in fields(header) if wire == 0}
    except ValueError as exc:
        raise ReportFormatError(
            f"{damaged}: {exc}; copy the report again or re-run ncu", path
        ) from exc
    if 1 not in numbers:
        raise ReportFormatError(
            f"{damaged}: no format version; copy the report again or re-run ncu", path
        )


_U32 = struct.Struct("<I")


def _u32(mm: Any, pos: int) -> int:
    return _U32.unpack(mm[pos : pos + 4])[0]


def first_block(mm: Any, path: Path) -> tuple[int, int]:
    """Check the file header of the report ``mm`` (an ``mmap`` or ``bytes``).

    Returns
    -------
    (int, int)
        The byte offset of the first block and the report's format version (7 from
        ncu 2020.1 to 2025.2).

    Raises
    ------
    ReportFormatError
        For a truncated or damaged file header (:func:`check_header`).
    """
    size = len(mm)
    if size < 8:
        raise ReportFormatError("is truncated inside its file header; copy the report again", path)
    pos = 8 + _u32(mm, 4)
    check_header(mm[8 : min(pos, size)], pos, size, path)
    try:
        version = classes()["FileHeader"].FromString(mm[8:pos]).version
    except DecodeError as exc:
        raise ReportFormatError(
            f"has a damaged file header ({exc}); copy the report again or re-run ncu", path
        ) from exc
    return pos, version


def release_pages(mm: mmap.mmap, start: int, end: int) -> int:
    """Drop the pages of ``mm[start:end]`` (already read) from the process: the resident memory of
    a memory-mapped report stays bounded however large the file. Returns the new release mark."""
    start -= start % mmap.PAGESIZE
    end -= end % mmap.PAGESIZE
    if end > start and hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)
    return end


def walk(
    mm: Any,
    path: Path,
    pos: int | None = None,
    index: int = 0,
    stop: int | None = None,
    fd: int | None = None,
) -> Iterator[tuple[int, int, Any, int]]:
    """Walk the blocks of a report, checking its framing.

    Parameters
    ----------
    mm : buffer
        The whole report (an ``mmap`` or ``bytes``).
    path : Path
        The report, for error messages.
    pos, index : int, optional
        Start at block ``index``, at byte ``pos`` (default: the first block, after
        :func:`first_block`).
    stop : int, optional
        End at this byte, a block boundary (default: the end of the file).
    fd : int, optional
        A file descriptor of the report ``mm`` maps: the block headers are then read with
        ``os.pread`` (a few bytes each) instead of touching a page of the map per block, and a
        result block's header that equals one parsed before but for its payload size is given
        without parsing it, as a read-only stand-in (:class:`_Headers`).

    Yields
    ------
    (int, int, BlockHeader, int)
        Block index, byte offset, decoded block header, byte offset of its payload.

    Raises
    ------
    ReportFormatError
        For a damaged file header or block header, or blocks that do not end exactly at ``stop``
        (a truncated or corrupt report).
    """
    size = len(mm) if stop is None else stop
    pos = first_block(mm, path)[0] if pos is None else pos
    released = pos
    fd = fd if hasattr(os, "pread") else None  # Windows has no pread: the map is read
    headers = _Headers(mm, fd, path)
    while pos + 4 <= size:
        if fd is None and pos - released >= RELEASE_BYTES:
            released = release_pages(mm, released, pos)
        length, header = headers.at(pos, index, size)
        start = pos + 4 + length
        if header is None:
            break
        end = start + header.payload_size
        if end > size:
            break
        yield index, pos, header, start
        pos = end
        index += 1
    if fd is None:
        release_pages(mm, released, pos)  # the blocks are read: none of their pages stays resident
    if pos != size:
        raise _truncated(path, pos, len(mm))


#: Bytes read at once at the start of a block (:class:`_Headers`): its size and, nearly always,
#: its whole header.
_HEAD = 256


class _Learned:
    """A result block's header that equals a parsed one byte for byte but for its payload size
    (:class:`_Headers`): what ``BlockHeader.FromString`` gives for it, without parsing it."""

    __slots__ = ("num_sources", "num_results", "strings", "payload_size", "HasField")

    def __init__(self, template: Any, payload_size: int) -> None:
        self.num_sources, self.num_results = template.num_sources, template.num_results
        self.strings, self.HasField = template.strings, template.HasField
        self.payload_size = payload_size


class _Headers:
    """Reads the block headers of :func:`walk`: parsed (``BlockHeader.FromString``) from ``mm``,
    or, given ``fd`` (read through ``os.pread``) or a :class:`~.source.Forward`
    (``sequential``), parsed but for result block headers of a learned byte shape: the bytes of a
    parsed result block header with its one payload-size varint (field 5) matched as any varint of
    at most 9 bytes (below 2**63). A header that matches parses as the learned one but for that
    field, so it is read without parsing (:class:`_Learned`, read-only). The last :attr:`SHAPES`
    shapes are kept, most recent first."""

    SHAPES = 4

    def __init__(self, mm: Any, fd: int | None, path: Path) -> None:
        self.mm, self.fd, self.path = mm, fd, path
        self.sequential = getattr(mm, "sequential", False)  # a Forward: no buffer, read once
        self.known: list[tuple[bytes, bytes, Any]] = []  # (bytes before, bytes after, header)

    def at(self, pos: int, index: int, size: int) -> tuple[int, Any]:
        """(header size, header) of block ``index`` at byte ``pos``; header None when the block
        runs past byte ``size``."""
        head = os.pread(self.fd, _HEAD, pos) if self.fd is not None else self.mm[pos : pos + _HEAD]
        length = _U32.unpack_from(head, 0)[0]
        if length == 0:  # no block has an empty header: zeros appended or written over it
            raise _empty_header(self.path, index, pos, size)
        if pos + 4 + length > size:
            return length, None
        if length <= _HEAD - 4:
            raw, begin, end = head, 4, 4 + length
        elif self.sequential:  # a Forward is no buffer: its bytes
            raw, begin, end = self.mm[pos + 4 : pos + 4 + length], 0, length
        else:
            raw, begin, end = self.mm, pos + 4, pos + 4 + length
        for before, after, template in self.known:
            size_bytes = _between(raw, begin, end, before, after)
            if size_bytes is not None:
                return length, _Learned(template, _varint_value(size_bytes))
        data = raw[begin:end]
        try:
            header = classes()["BlockHeader"].FromString(data)
        except DecodeError as exc:
            raise ReportFormatError(
                f"block {index} at byte {pos} has a corrupt header ({exc}); the report is damaged",
                self.path,
            ) from exc
        if header.num_results and (self.fd is not None or self.sequential):
            self.learn(data, header)
        return length, header

    def learn(self, raw: bytes, header: Any) -> None:
        """Learn the shape of ``raw``, a result block's header parsed as ``header``, when its
        payload size is one varint field 5 of at most 9 bytes (as ncu writes it)."""
        try:
            spans = [(w, start, end) for n, w, _, start, end in field_spans(raw) if n == 5]
        except ValueError:
            return
        if len(spans) != 1 or spans[0][0] != 0:
            return
        at, end = varint(raw, spans[0][1])[1], spans[0][2]  # the value: after the key
        if end - at > 9:
            return
        self.known = [(raw[:at], raw[end:], header), *self.known[: self.SHAPES - 1]]


def _between(raw: Any, begin: int, end: int, before: bytes, after: bytes) -> bytes | None:
    """The bytes of ``raw[begin:end]`` between ``before`` and ``after`` when it is ``before``, one
    varint of 1 to 9 bytes and ``after``, else None (a learned header shape of :class:`_Headers`;
    compared as bytes: a regex of a 14 kB header costs 0.14 s to compile)."""
    width = end - begin - len(before) - len(after)
    if not 1 <= width <= 9:
        return None
    mid = begin + len(before)
    if raw[begin:mid] != before or raw[mid + width : end] != after:
        return None
    size_bytes = bytes(raw[mid : mid + width])
    if any(b < 0x80 for b in size_bytes[:-1]) or size_bytes[-1] >= 0x80:
        return None
    return size_bytes


@functools.lru_cache(maxsize=4096)
def _varint_value(raw: bytes) -> int:
    """The value of the varint ``raw`` (one whole varint; payload sizes repeat: cached)."""
    return varint(raw, 0)[0]


def _empty_header(path: Path, index: int, pos: int, size: int) -> ReportFormatError:
    """The error for a block header of size 0 at byte ``pos`` (the walk ends at byte ``size``)."""
    return ReportFormatError(
        f"block {index} at byte {pos} has an empty header: the {size - pos} bytes from"
        " there are not blocks (zeros appended to the report?); the report is damaged:"
        " copy it again or re-run ncu",
        path,
    )


def _truncated(path: Path, pos: int, size: int) -> ReportFormatError:
    """The error for blocks that end at byte ``pos`` of a file of ``size`` bytes."""
    return ReportFormatError(
        f"is truncated or corrupt: its blocks end at byte {pos} but the file has {size}"
        " bytes; copy the report again or re-run ncu",
        path,
    )


class Untiled(DecodeError):
    """A block's records do not tile its payload (:func:`untiled_block` says it for a report)."""


def results(mm: Any, start: int, end: int, header: Any) -> Iterator[tuple[int, Any]]:
    """The result records of one block's payload.

    Parameters
    ----------
    mm : buffer
        The whole report.
    start, end : int
        The payload's byte range in ``mm``.
    header : BlockHeader
        The block's header (``num_sources`` records of other kinds come first,
        then ``num_results``).

    Yields
    ------
    (int, buffer)
        Byte offset of each ``[u32 length][result]`` record and the result message.

    Raises
    ------
    Untiled
        If the records do not tile the payload exactly.
    """
    at = start
    for i in range(header.num_sources + header.num_results):
        if at + 4 > end or at + 4 + _u32(mm, at) > end:
            raise Untiled()
        n = _u32(mm, at)
        if i >= header.num_sources:
            yield at, mm[at + 4 : at + 4 + n]
        at += 4 + n
    if at != end:
        raise Untiled()


def untiled_block(
    path: Path, launch: int, block: int, start: int, end: int, count: int
) -> ReportFormatError:
    """The error for a block whose records do not tile its payload.

    Parameters
    ----------
    path : Path
        The report.
    launch, block : int
        The launch being read and its block's index.
    start, end : int
        The payload's byte range.
    count : int
        The records the block header announces.

    Returns
    -------
    ReportFormatError
        One line naming the launch, the block and its bytes.
    """
    return ReportFormatError(
        f"has a damaged block: launch {launch} in block {block} (bytes {start}-{end}): the block"
        f" should hold {count} records but its contents do not add up; copy the report again or"
        " re-run ncu",
        path,
    )


@dataclass(frozen=True)
class ResultRecord:
    """One launch (result) record of a report.

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


class LaunchLedger:
    """Refuses repeated or reordered launch records as they are read, one at a time.

    Two identical records (same bytes) are a duplicated block; within one process, ncu's sequence
    numbers increase from record to record, so a repeated or lower number means records were
    repeated or reordered. (A removed record leaves no trace in general.) Records are told apart by
    (process ID, sequence number); their bytes are compared only when those repeat, and hashed only
    for records without a sequence number, so the check costs next to nothing in a reader's pass.

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
        return bytes(self.data[r.start : r.end])

    def add(self, r: ResultRecord) -> None:
        """Take the next record in file order.

        Raises
        ------
        ReportFormatError
            Naming both records, their byte ranges and sequence numbers.
        """
        ident = (
            (r.process_id, r.sequence)
            if r.sequence is not None
            else hashlib.blake2b(self._bytes(r), digest_size=16).digest()
        )
        first = self.first.setdefault(ident, r)
        if first is not r and (r.sequence is None or self._bytes(first) == self._bytes(r)):
            raise ReportFormatError(
                f"has a repeated launch record: record {r.index} (bytes {r.start}-{r.end}) is an"
                f" exact copy of record {first.index} (bytes {first.start}-{first.end}), a"
                " duplicated block; the report is damaged: copy it again or re-run ncu",
                self.path,
            )
        prev = self.last.get(r.process_id)
        if (
            prev is not None
            and r.sequence is not None
            and prev.sequence is not None
            and r.sequence <= prev.sequence
        ):
            raise ReportFormatError(
                f"has launch records out of sequence: record {r.index} (bytes {r.start}-{r.end})"
                f" has ncu sequence number {r.sequence}, not above the {prev.sequence} of record"
                f" {prev.index}; launches are repeated or reordered, the report is damaged: copy it"
                " again or re-run ncu",
                self.path,
            )
        self.last[r.process_id] = r


def check_records(path: Path, data: Any, records: Sequence[tuple[Any, ...]]) -> None:
    """Check launch records in file order as :class:`LaunchLedger` does, at once where it can.

    Where every record has a process ID and a sequence number and each process's numbers
    increase from record to record (a report as ncu writes it), the ledger finds nothing: no two
    records share (process ID, sequence number), none is out of sequence; that is checked on
    NumPy arrays. Otherwise the records go through the ledger one by one, which raises its error.

    Parameters
    ----------
    path : Path
        The report, for the messages.
    data : buffer
        The whole report (``mmap`` or ``bytes``).
    records : sequence of tuple
        ``(index, block, start, end, process ID, sequence number, ...)`` per launch record, in file
        order (the fields of :class:`ResultRecord`, then anything).

    Raises
    ------
    ReportFormatError
        As :meth:`LaunchLedger.add`.
    """
    pids, seqs = [r[4] for r in records], [r[5] for r in records]
    if None not in pids and None not in seqs:
        try:
            pid, seq = np.array(pids, dtype=np.uint64), np.array(seqs, dtype=np.uint64)
        except OverflowError:  # not u64 values: the ledger says what is wrong
            pass
        else:
            order = np.argsort(pid, kind="stable")  # by process, in file order within each
            pid, seq = pid[order], seq[order]
            if not ((pid[1:] == pid[:-1]) & (seq[1:] <= seq[:-1])).any():
                return
    ledger = LaunchLedger(path, data)
    for r in records:
        ledger.add(ResultRecord(*r[:6]))


#: A result block as :func:`plan` finds it: byte offset, block index, first launch, payload start,
#: payload end, number of source records, number of result records.
Mark = tuple[int, int, int, int, int, int, int]


@dataclass
class Plan:
    """What one walk over a report's block headers finds (:func:`plan`): the ncu version (in the
    first block header without results that has one; ``ncu_report`` does not expose it), the
    number of launches, ``marks``: for each result block its byte offset, block index, first
    launch, payload start and end, and numbers of source and result records (:data:`Mark`: a
    reader decodes the results from these without walking the block headers again), ``strings``, the
    whole string table (every block's, in file order), and ``records``, every launch record, when
    the walk was given a ledger."""

    version: str | None = None
    total: int = 0
    marks: list[Mark] = field(default_factory=list)
    strings: list[bytes] = field(default_factory=list)
    records: list[ResultRecord] = field(default_factory=list)


def plan(
    mm: Any,
    path: Path,
    blocks: Iterator[tuple[int, int, Any, int]],
    ledger: LaunchLedger | None = None,
) -> Plan:
    """Walk the block headers once.

    Parameters
    ----------
    mm : buffer
        The whole report (an ``mmap`` or ``bytes``).
    path : Path
        The report, for error messages.
    blocks : iterator
        Its blocks, from :func:`walk`.
    ledger : LaunchLedger, optional
        When given, every launch record is also read (its process ID and sequence number), checked
        in file order by the ledger and kept in ``records``: a damaged record is refused before a
        reader that does not check it (``ncu_report``) decodes the report.

    Returns
    -------
    Plan

    Raises
    ------
    ReportFormatError
        As :func:`walk`; with a ledger, for a block whose records do not tile its payload, an
        unreadable launch record (named with its byte range), or repeated or reordered records.
    """
    out = Plan()
    for block, pos, header, start in blocks:
        if header.num_results:
            end = start + header.payload_size
            out.marks.append(
                (pos, block, out.total, start, end, header.num_sources, header.num_results)
            )
            if ledger is not None:
                out.records.extend(_stamps(mm, path, block, start, header, out.total, ledger))
            out.total += header.num_results
        elif out.version is None:
            m = _VERSION.search(mm[pos:start])
            out.version = m.group(1).decode() if m else None
        if header.HasField("strings"):
            out.strings.extend(header.strings.strings)
    return out


def _stamps(
    mm: Any, path: Path, block: int, start: int, header: Any, launch: int, ledger: LaunchLedger
) -> list[ResultRecord]:
    """The launch records of one block, numbered from ``launch``, each added to ``ledger``."""
    stamp, out = classes()["Stamp"], []
    try:
        for offset, buf in results(mm, start, start + header.payload_size, header):
            begin, end = offset + 4, offset + 4 + len(buf)
            # protobuf's C parser walks the record's wire format (a deleted or
            # inserted byte breaks it)
            try:
                f = stamp.FromString(buf)
            except DecodeError as exc:
                raise ReportFormatError(
                    f"has a damaged launch record: record {launch} (bytes {begin}-{end}) is not "
                    f"readable ({exc}); copy the report again or re-run ncu",
                    path,
                ) from exc
            r = ResultRecord(
                launch,
                block,
                begin,
                end,
                f.thread_id if f.HasField("thread_id") else None,
                f.seq if f.HasField("seq") else None,
            )
            ledger.add(r)
            out.append(r)
            launch += 1
    except Untiled as exc:
        raise untiled_block(
            path,
            launch,
            block,
            start,
            start + header.payload_size,
            header.num_sources + header.num_results,
        ) from exc
    return out
