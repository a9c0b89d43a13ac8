"""Our own decoder of Nsight Compute ``.ncu-rep`` reports, built on the ``protobuf`` package.

A report is ``NVR\\0``, a u32 little-endian header size and the file header (a protobuf message
whose field 1 is the format version, 7 in every report from ncu 2020.1 to 2025.2), then blocks of
[u32 block-header size][block header][payload]. The block header's fields used here: 1 number of
source blocks, 2 number of results, 4 the string table (strings in its field 1; one global table
that grows across blocks), 5 the payload size. A result payload is [u32 length][result message].
Result message: 1 the launching thread's ID (the process ID for the main thread), 2 ncu's
sequence number, 5, 6 and 7 the mangled, function and demangled names (an empty one stands for
the mangled name: C symbols have no demangled form), 8 the workload kind (3: a kernel launch),
13 the metric results, 14 a Unix timestamp, 21 the NVTX state. Metric result: 1 the metric
name's string-table index, 2 the value, 3 instances (1 the correlation ID, 2 the instance value).
Value: 1 string, 3 double, 5 uint64 (2 float and 4 uint32 are never written by the ncu versions
we know). NVTX state: 1 domains (1 ID, 2 name), 2 threads (1 thread ID, 2 per-domain push/pop
stacks: 1 domain ID, 3 ranges with the name in field 1; the launch's ranges are those of the
thread whose ID is result field 1, as ncu_report picks them), 3 start/end ranges. The formats
were reverse-engineered against ``ncu_report`` on every report in
``../shared/fixtures`` (tests/test_decoder.py requires identical raw tables); the messages are
declared at run time, so no generated code is needed; fields not declared are skipped.

:func:`read_nvr` reads only the metrics the catalog asks for, straight from a memory map, and
builds the same raw table as :func:`ncuroof.parser.ncu_rep.read_ncu_rep`. A report using anything
not seen in those reports raises :class:`UnsupportedReport`, on which :func:`ncuroof.parser.read`
falls back to ``ncu_report``; a payload that does not decode raises
:class:`~ncuroof.errors.ReportFormatError` naming the block, its byte offset and the launch.
"""

from __future__ import annotations

import math
import mmap
import operator
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from google.protobuf.message import DecodeError

from ..catalog import Catalog
from ..errors import InputError, ReportFormatError
from .ncu_rep import _VERSION, RELEASE_BYTES, _varint, check_file, launch_frame, launch_row, release_pages
from .wire import classes as _classes

__all__ = ["read_nvr", "read_stamps", "UnsupportedReport", "FORMAT_VERSION", "iter_results", "Launch"]

FORMAT_VERSION = 7
KERNEL_LAUNCH = 3
CHUNK = 4096  # launches per DataFrame chunk: bounds the memory of the per-row dicts
_DOUBLE = struct.Struct("<d")

class UnsupportedReport(Exception):
    """The report uses something the decoder has not been verified on (read it with ``ncu_report``)."""


@dataclass
class Launch:
    """One decoded result (kernel launch) of a report.

    ``seq`` is ncu's sequence number (result field 2), ``thread_id`` the launching thread's ID
    (result field 1; the process ID for a process's main thread) and ``timestamp`` the Unix time
    in seconds (field 14): the launch-accounting checks use them to find repeated or reordered
    blocks. ``values`` maps metric names to values in ncu's metric-name order.
    """

    block: int
    offset: int
    function: str
    demangled: str
    nvtx: str | None
    values: dict[str, Any]
    seq: int
    thread_id: int
    timestamp: int


def _key(name_id: int) -> bytes:
    """The bytes a metric result with this name index starts with: field 1, the index, field 2's tag."""
    out = bytearray(b"\x08")
    while name_id >= 0x80:
        out.append(name_id & 0x7F | 0x80)
        name_id >>= 7
    return bytes(out) + bytes([name_id, 0x12])


@dataclass(frozen=True)
class _Layout:
    """Where a result's wanted metrics are: ``get(metrics)`` returns their raw metric results, each
    starting with its ``keys`` entry; the first ``len(names)`` are the scalars, in ncu's name order,
    whose value messages start at ``ats``, then the opcode metric if ``opcode``."""

    names: tuple[str, ...]
    ats: tuple[int, ...]
    keys: tuple[bytes, ...]
    get: Callable[[Any], tuple[bytes, ...]]
    opcode: bool


def _getter(indices: list[int]) -> Callable[[Any], tuple[bytes, ...]]:
    if len(indices) > 1:
        return operator.itemgetter(*indices)  # type: ignore[return-value]
    return lambda metrics: tuple(metrics[i] for i in indices)


@dataclass
class _Wanted:
    """The metrics to read, by string-table index, and a cache of the last layouts (:class:`_Layout`)
    by number of metrics in a result; each use checks every position by its leading bytes."""

    catalog: Catalog
    strings: list[str] = field(default_factory=list)
    ids: dict[int, str] = field(default_factory=dict)
    layouts: dict[int, list[_Layout]] = field(default_factory=dict)

    def add_strings(self, new: Any) -> None:
        cat = self.catalog
        for raw in new:
            name = raw.decode("utf-8", "surrogateescape")
            if name in cat.scalar_metrics or cat.is_tensor_path_metric(name) or name == cat.tensor.opcode_metric:
                self.ids[len(self.strings)] = name
            self.strings.append(name)
        self.layouts.clear()

    def raw_metrics(self, metrics: Any) -> tuple[_Layout, tuple[bytes, ...]]:
        """The layout of ``metrics`` (a result's raw metric results) and the wanted ones."""
        known = self.layouts.setdefault(len(metrics), [])
        for layout in known:
            raws = layout.get(metrics)
            if all(map(bytes.startswith, raws, layout.keys)):
                return layout, raws
        ids, n_strings = self.ids, len(self.strings)
        found: dict[int, int] = {}
        for i, raw in enumerate(metrics):
            if raw[:1] != b"\x08":
                raise DecodeError(f"metric result {i} does not start with its name")
            mid = _varint(raw, 1)[0]
            if mid >= n_strings:
                raise DecodeError(f"metric result {i} names string {mid}, beyond the string table")
            if mid in ids and mid not in found:
                found[mid] = i
        cat = self.catalog
        opcode_metric = cat.tensor.opcode_metric
        scalars = sorted((ids[mid], mid, i) for mid, i in found.items() if ids[mid] != opcode_metric or opcode_metric in cat.scalar_metrics)
        picked = [(mid, i) for _, mid, i in scalars] + [(mid, i) for mid, i in found.items() if ids[mid] == opcode_metric]
        keys = tuple(_key(mid) for mid, _ in picked)
        layout = _Layout(tuple(name for name, _, _ in scalars), tuple(len(k) for k in keys[:len(scalars)]), keys,
                         _getter([i for _, i in picked]), len(picked) > len(scalars))
        known[:] = [layout, *known[:3]]
        return layout, layout.get(metrics)


def _scalar(v: Any) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "d":
        return v.d
    if kind == "u64":
        return v.u64
    if kind == "s":
        return v.s.decode()
    if kind is None:
        if v.ByteSize():
            raise UnsupportedReport("a metric value of a kind never seen")
        return None
    raise UnsupportedReport(f"a metric value of kind {kind}, never seen")


def _metric_value(m: Any) -> Any:
    """The metric's value as ``ncu_report.IMetric.value()`` gives it (NaN for None)."""
    if m.HasField("value"):
        value = _scalar(m.value)
    elif m.instances:
        first = _scalar(m.instances[0].value)
        value = None if first is None or isinstance(first, str) else type(first)(0)
    else:
        value = None
    return math.nan if value is None else value


def _nvtx(result: Any) -> str | None:
    """The NVTX push/pop ranges open at launch, as :func:`ncuroof.parser.ncu_rep._nvtx` joins them."""
    if not result.HasField("nvtx"):
        return None
    state = result.nvtx
    if any(len(se) > 1 and (se[0] != 0x08 or any(b < 0x80 for b in se[1:-1])) for se in state.start_end):
        raise UnsupportedReport("NVTX start/end ranges")
    threads = [t for t in state.threads if t.tid == result.thread_id]
    if len(threads) > 1:
        raise UnsupportedReport("NVTX state of one thread given twice")
    stacks = {s.domain: s for t in threads for s in t.stacks}
    parts: list[str] = []
    for dom in state.domains:
        stack = stacks.get(dom.id)
        if stack is None:
            continue
        domain = dom.name.decode()
        prefix = "" if domain in ("", "<default domain>") else f"{domain}:"
        parts.extend(prefix + r.name.decode() for r in stack.ranges)
    return " > ".join(parts) if parts else None


def _value_at(raw: bytes, at: int, metric_cls: Any) -> Any:
    """The value of the metric result ``raw`` whose value message starts at ``raw[at]``.

    One double or one uint64 (nearly all values) is read in place; anything else is decoded in full.
    """
    n = raw[at]
    if n == 9 and raw[at + 1] == 0x19:
        return _DOUBLE.unpack_from(raw, at + 2)[0]
    if 0 < n < 0x80 and raw[at + 1] == 0x28:
        value, end = _varint(raw, at + 2)
        if end == at + 1 + n:
            return value
    return _metric_value(metric_cls.FromString(raw))


def _opcodes(values: dict[str, Any], metric: Any, cat: Catalog) -> None:
    """Add the metric's value and one ``<metric>[<opcode>]`` column per MMA opcode to ``values``."""
    opcode_metric = cat.tensor.opcode_metric
    values[opcode_metric] = _metric_value(metric)
    mma = cat.tensor.looks_like_mma
    for inst in metric.instances:
        key = _scalar(inst.key)
        if not isinstance(key, str):
            raise UnsupportedReport(f"{opcode_metric} instances not keyed by opcode")
        if mma.search(key):
            count = _scalar(inst.value)
            if not isinstance(count, (int, float)):
                raise UnsupportedReport(f"an {opcode_metric} instance without a number")
            values[f"{opcode_metric}[{key}]"] = float(count)


def _values(result: Any, wanted: _Wanted, metric_cls: Any) -> dict[str, Any]:
    layout, raws = wanted.raw_metrics(result.metrics)
    unpack = _DOUBLE.unpack_from
    values = dict(zip(layout.names, [
        unpack(raw, at + 2)[0] if raw.startswith(b"\x09\x19", at) else _value_at(raw, at, metric_cls)
        for raw, at in zip(raws, layout.ats)]))
    if layout.opcode:
        _opcodes(values, metric_cls.FromString(raws[-1]), wanted.catalog)
    return values


def _launch(buf: Any, block: int, offset: int, wanted: _Wanted, classes: dict[str, Any]) -> Launch:
    result = classes["Result"].FromString(buf)
    if result.kind != KERNEL_LAUNCH:
        raise UnsupportedReport(f"a result of kind {result.kind} (not a kernel launch)")
    # an empty name (a C symbol has no demangled form) is the mangled one, as in ncu_report
    function, demangled = result.function or result.mangled, result.demangled or result.mangled
    return Launch(block, offset, function.decode(), demangled.decode(), _nvtx(result),
                  _values(result, wanted, classes["Metric"]), result.seq, result.thread_id, result.timestamp)


def _u32(mm: Any, pos: int) -> int:
    return struct.unpack_from("<I", mm, pos)[0]


def _blocks(mm: Any, path: Path, classes: dict[str, Any]) -> Iterator[tuple[int, int, Any, int]]:
    """(block index, byte offset, block header, payload offset) of each block; checks the framing."""
    size = len(mm)
    if size < 8:
        raise ReportFormatError("is truncated inside its file header; copy the report again", path)
    pos = 8 + _u32(mm, 4)
    if pos > size:
        raise ReportFormatError("is truncated inside its file header; copy the report again", path)
    try:
        version = classes["FileHeader"].FromString(mm[8:pos]).version
    except DecodeError as exc:
        raise ReportFormatError(f"has a damaged file header ({exc}); copy the report again or re-run ncu", path) from exc
    if version != FORMAT_VERSION:
        raise UnsupportedReport(f"report format version {version} (known: {FORMAT_VERSION})")
    index = released = 0
    header_cls = classes["BlockHeader"]
    while pos + 4 <= size:
        if pos - released >= RELEASE_BYTES:
            released = release_pages(mm, released, pos)
        start = pos + 4 + _u32(mm, pos)
        if start > size:
            break
        try:
            header = header_cls.FromString(mm[pos + 4:start])
        except DecodeError as exc:
            raise ReportFormatError(f"block {index} at byte {pos} has a corrupt header ({exc}); the report is damaged", path) from exc
        end = start + header.payload_size
        if end > size:
            break
        yield index, pos, header, start
        pos = end
        index += 1
    if pos != size:
        raise ReportFormatError(f"is truncated or corrupt: its blocks end at byte {pos} but the file has {size} bytes; "
                                "copy the report again or re-run ncu", path)


def _results(mm: Any, block: int, pos: int, start: int, end: int, count: int) -> Iterator[tuple[int, Any]]:
    """(offset, message view) of each ``[u32 length][result]`` in the payload ``mm[start:end]``."""
    at = start
    for _ in range(count):
        if at + 4 > end or at + 4 + _u32(mm, at) > end:
            raise DecodeError(f"result at byte {at} runs past the block's payload")
        n = _u32(mm, at)
        yield at, mm[at + 4:at + 4 + n]
        at += 4 + n
    if at != end:
        raise DecodeError(f"the payload has {end - at} bytes after its {count} result(s)")


def _damaged(path: Path, launch: int, block: int, pos: int, exc: Exception) -> ReportFormatError:
    return ReportFormatError(f"launch {launch} in block {block} (byte {pos}) cannot be decoded ({exc}); "
                             "the report is damaged: re-run ncu or copy the report again", path)


def iter_results(mm: Any, path: Path, catalog: Catalog) -> Iterator[Launch]:
    """Decode the kernel launches of a memory-mapped report, in file order.

    Parameters
    ----------
    mm : buffer
        The whole report (an ``mmap`` or ``bytes``).
    path : Path
        The report, for error messages.
    catalog : Catalog
        Which metrics to read (see :func:`read_nvr`).

    Yields
    ------
    Launch

    Raises
    ------
    ReportFormatError
        For a damaged header, framing or payload: names the file, the block, its byte offset
        and the launch (its index in the report).
    UnsupportedReport
        For a format version, value kind or structure not seen in the reports we verified.
    """
    classes = _classes()
    wanted = _Wanted(catalog)
    launch = 0
    for block, pos, header, start in _blocks(mm, path, classes):
        if header.HasField("strings"):
            wanted.add_strings(header.strings.strings)
        if not header.num_results:
            continue
        try:
            for offset, buf in _results(mm, block, pos, start, start + header.payload_size, header.num_results):
                yield _launch(buf, block, offset, wanted, classes)
                launch += 1
        except (DecodeError, UnicodeDecodeError, IndexError, ValueError, struct.error) as exc:
            raise _damaged(path, launch, block, pos, exc) from exc


def _version(mm: Any, path: Path) -> str | None:
    """The ncu version in the first block header that is not a result's (the session details), as
    :func:`~ncuroof.parser.ncu_rep.ncu_version` finds it, without reading the results."""
    for _, pos, header, start in _blocks(mm, path, _classes()):
        if not header.num_results:
            m = _VERSION.search(mm, pos, start)
            if m:
                return m.group(1).decode()
    return None


def read_stamps(path: str | Path) -> pd.DataFrame:
    """ncu's sequence number, thread ID and time of every launch, without decoding its metrics.

    For launch accounting: a repeated or backward sequence number means a repeated or reordered
    result block.

    Parameters
    ----------
    path : str or Path
        A ``.ncu-rep`` report.

    Returns
    -------
    DataFrame
        One row per launch in file order: ``launch_id``, ``block`` (block index), ``offset``
        (byte offset of the result), ``seq`` (result field 2), ``thread_id`` (field 1) and
        ``timestamp`` (field 14, Unix time in seconds); all int64.

    Raises
    ------
    InputError, ReportFormatError
        For a missing, foreign or damaged report.
    UnsupportedReport
        For an unknown format version.
    """
    path = Path(path)
    check_file(path)
    stamp = _classes()["Stamp"]
    rows: list[tuple[int, int, int, int, int, int]] = []
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for block, pos, header, start in _blocks(mm, path, _classes()):
            if not header.num_results:
                continue
            try:
                for offset, buf in _results(mm, block, pos, start, start + header.payload_size, header.num_results):
                    m = stamp.FromString(buf)
                    rows.append((len(rows), block, offset, m.seq, m.thread_id, m.timestamp))
            except DecodeError as exc:
                raise _damaged(path, len(rows), block, pos, exc) from exc
    return pd.DataFrame(rows, columns=["launch_id", "block", "offset", "seq", "thread_id", "timestamp"], dtype="int64")


def _count(mm: Any, path: Path) -> int:
    return sum(h.num_results for _, _, h, _ in _blocks(mm, path, _classes()))


def read_nvr(path: str | Path, catalog: Catalog, progress: Callable[[int], Callable[[], None]] | None = None,
             chunk: int = CHUNK) -> pd.DataFrame:
    """Read every launch of a report into the raw table, without ``ncu_report``.

    Parameters
    ----------
    path : str or Path
        A ``.ncu-rep`` file (not ``.ncu-repz``).
    catalog : Catalog
        Which metrics to read: every scalar metric of its recipes, every
        ``sm__ops_path_tensor_*`` count/rate/peak, and the MMA opcodes of
        ``sass__inst_executed_per_opcode_with_modifier_all``.
    progress : callable, optional
        ``progress(total)`` returns a callable advanced once per launch (a progress bar).
    chunk : int, default 4096
        Launches turned into a DataFrame at a time (bounds memory; the result does not depend on it).

    Returns
    -------
    DataFrame
        The raw table of :mod:`ncuroof.schema`, identical to
        :func:`~ncuroof.parser.ncu_rep.read_ncu_rep`'s: one row per launch, ``range_id`` 0,
        ``launch_id`` 0, 1, ... in report order.

    Raises
    ------
    InputError, ReportFormatError
        For a missing, empty, foreign, truncated or damaged file (see :func:`iter_results`).
    UnsupportedReport
        For a report this decoder has not been verified on (read it with ``ncu_report``).
    """
    path = Path(path)
    if path.suffix == ".ncu-repz":
        raise UnsupportedReport("a compressed .ncu-repz report")
    check_file(path)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        version = _version(mm, path)
        advance = progress(_count(mm, path)) if progress is not None else None
        frames: list[pd.DataFrame] = []
        rows: list[dict[str, Any]] = []
        for launch_id, launch in enumerate(iter_results(mm, path, catalog)):
            rows.append(launch_row(path, 0, launch_id, launch.function, launch.demangled, launch.nvtx,
                                   launch.values, version))
            if len(rows) == chunk:
                frames.append(launch_frame(rows))
                rows = []
            if advance is not None:
                advance()
    if rows:
        frames.append(launch_frame(rows))
    if not frames:
        raise InputError("holds no kernel launches; check ncu's --kernel-name/--launch-count filters", path)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

