"""Our own decoder of Nsight Compute ``.ncu-rep`` reports, built on the ``protobuf`` package.

A report is ``NVR\\0``, a u32 little-endian header size and the file header (a protobuf message
whose field 1 is the format version, 7 in every report from ncu 2020.1 to 2025.2), then blocks of
[u32 block-header size][block header][payload]. The block header's fields used here: 1 number of
source blocks, 2 number of results, 4 the string table (strings in its field 1), 5 the payload
size. The string table is ONE table for the whole report, the concatenation of every block's in
file order; a result may name a string that a later block defines (an H800 report of ncu 2023.3
has header-only blocks of one string each after its results), so the whole table is read first
and handed to every slice. A result payload is [u32 length][result message].
Result message: 1 the launching thread's ID (the process ID for the main thread), 2 ncu's
sequence number, 5, 6 and 7 the mangled, function and demangled names (an empty one stands for
the mangled name: C symbols have no demangled form), 8 the workload kind (3: a kernel launch),
13 the metric results, 14 a Unix timestamp, 21 the NVTX state. Metric result: 1 the metric
name's string-table index, 2 the value, 3 instances (1 the correlation ID, 2 the instance value).
A metric may be stored more than once in one result (GH200: ``gpu__time_duration.sum`` beside the
NVLink-C2C counters and again in the main list); ``ncu_report`` keeps the last copy, and so does
the decoder. Value: 1 string, 3 double, 5 uint64 (2 float and 4 uint32 are never written by the ncu
versions we know). NVTX state: 1 domains (1 ID, 2 name), 2 threads (1 thread ID, 2 per-domain
push/pop stacks: 1 domain ID, 3 ranges with the name in field 1; the launch's ranges are those of
the thread whose ID is result field 1, as ncu_report picks them), 3 start/end ranges. The formats
were reverse-engineered against ``ncu_report`` on every report in ``../shared/fixtures``
(tests/test_decoder.py requires identical raw tables); the messages are declared at run time, so no
generated code is needed; fields not declared are skipped, but a block header or result field never
seen in those reports (:data:`~.protobuf.SEEN_FIELDS`) is not: the report is unsupported.

:func:`read_nvr` reads only the metrics the catalog asks for, straight from a memory map, and
builds the same raw table as :func:`.reference.read_ncu_rep`: one walk over the block
headers checks the framing and records each result block (:func:`_plan`); a big report is cut into
slices of those blocks decoded side by side by worker processes (:mod:`.parallel`),
without walking the headers again; every launch record is then checked in file order
(:func:`~.framing.check_records`). Per launch, the wanted metric results are found by
a cached layout (positions checked by their leading bytes, earlier copies of repeated metrics
included) and their doubles matched by one regex and kept as raw bytes, read for many launches at
once as NumPy records (:class:`_Doubles`, :func:`_run_frame`), else value by value. A
report using anything not seen in those reports raises :class:`UnsupportedReport`, on which
:func:`ncuroof.parser.read` falls back to ``ncu_report``; a payload that does not decode raises
:class:`PayloadError` naming the block, its byte offset and the launch (damaged, or a layout
never seen: ``--reader auto`` asks ``ncu_report``). The launches where a layout was learned are
listed in the table's ``attrs[LEARNED]``: ``--reader auto`` checks them against ``ncu_report``
(:mod:`.verify`).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import math
import mmap
import operator
import os
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from google.protobuf.message import DecodeError
from pandas.api.types import union_categoricals

from ...catalog import Catalog
from ...errors import InputError, ReportFormatError
from ...fmt import path_text
from ...schema import RAW_COMPACT
from .framing import (
    RELEASE_BYTES,
    LaunchLedger,
    Mark,
    Plan,
    ResultRecord,
    Untiled,
    check_file,
    check_records,
    first_block,
    plan,
    release_pages,
    results,
    untiled_block,
    walk,
)
from .parallel import Workers, cores
from .protobuf import classes as _classes
from .protobuf import unseen_fields
from .protobuf import varint as _varint
from .rows import META_COLUMNS, held_text, launch_frame, launch_row, numeric_metrics
from .source import check_report, open_report

__all__ = [
    "read_nvr",
    "read_stamps",
    "UnsupportedReport",
    "PayloadError",
    "LEARNED",
    "FORMAT_VERSION",
    "iter_results",
    "Launch",
    "Slice",
    "decode_slice",
    "PROCESS_LAUNCHES",
    "PROCESSES_ENV",
    "Block",
]

FORMAT_VERSION = 7
KERNEL_LAUNCH = 3
CHUNK = 4096  # launches per DataFrame chunk: bounds the memory of the per-row dicts
#: Chunks of launches in one window of launches read in bulk (:class:`_SliceReader`): a window's
#: raw doubles (about 1 kB a launch) wait for its table; one chunk a window is as fast as four
#: (2.2-2.6 s for the 100,000-launch ESMM report in one process) and a decoding process peaks 37 MB
#: lower.
RUN = 1
#: Launches worth one more decoding process (a worker's start, 0.6 s, costs about 17,000
#: launches' decoding).
PROCESS_LAUNCHES = 25_000
#: The launches this process decodes while a worker starts (importing ncuroof, about 0.6 s).
START_LAUNCHES = 8_000
#: Environment variable that sets the number of decoding processes (1: decode in this process only).
PROCESSES_ENV = "NCUROOF_DECODE_PROCESSES"
#: Launches between two progress reports.
TICK = 256
#: ``DataFrame.attrs`` key of :func:`read_nvr`'s table: the launches whose layout was
#: learned by a full scan.
LEARNED = "ncuroof.learned_launches"
#: Bytes a double's raw metric result may hold after its value and still be read in bulk (ncu's
#: flag field, 2 bytes in every shared report): longer ones (a second message that repeats the
#: value, 19 bytes) change from launch to launch, so they are read one by one (:func:`_value_at`).
TRAILER = 4
#: Raw-table columns that repeat a kernel's names on each of its launches (kilobytes for a C++
#: template: 5.5 kB for gene-pop's): a slice's tables hold them as ``category`` from the decoding
#: to the joined table (:func:`~.rows.held_text`, :func:`_joined`; those of
#: :data:`~ncuroof.schema.RAW_COMPACT` beyond it), so a decoding worker's tables and the result it
#: hands over carry each name once, not once per launch.
NAMES = ("kernel_name", "kernel_demangled")
_DOUBLE = struct.Struct("<d")
_U32 = struct.Struct("<I")


class UnsupportedReport(Exception):
    """The report uses something the decoder has not been verified on (read it
    with ``ncu_report``)."""


@dataclass(slots=True)
class Launch:
    """One decoded result (kernel launch) of a report.

    ``seq`` is ncu's sequence number (result field 2), ``thread_id`` the launching thread's ID
    (result field 1; the process ID for a process's main thread), both None when absent, and
    ``timestamp`` the Unix time in seconds (field 14): the launch-accounting checks
    (:class:`~.framing.LaunchLedger`) use them to find repeated or reordered
    blocks. ``values`` maps metric names to values in ncu's metric-name order; it is built on
    demand from the scalar values in the order of ``layout.names`` (``numbers``, or the raw
    doubles ``blob`` and the ``others`` of :meth:`_Doubles.match`, which :func:`decode_slice` reads
    for many launches at once) and the opcode columns (``extra``).
    """

    block: int
    offset: int
    function: str
    demangled: str
    nvtx: str | None
    seq: int | None
    thread_id: int | None
    timestamp: int
    layout: _Layout
    numbers: list[Any] | None = None
    blob: bytes | None = None
    others: list[Any] | None = None
    extra: dict[str, Any] | None = None

    @property
    def values(self) -> dict[str, Any]:
        """Metric name to value (float, int, str or NaN)."""
        numbers = self.numbers
        if numbers is None:
            assert (
                self.layout.doubles is not None
                and self.blob is not None
                and self.others is not None
            )
            numbers = self.layout.doubles.values(self.blob, self.others)
        out = dict(zip(self.layout.names, numbers))
        if self.extra:
            out.update(self.extra)
        return out


def _key(name_id: int) -> bytes:
    """The bytes a metric result with this name index starts with: field 1, the
    index, field 2's tag."""
    out = bytearray(b"\x08")
    while name_id >= 0x80:
        out.append(name_id & 0x7F | 0x80)
        name_id >>= 7
    return bytes(out) + bytes([name_id, 0x12])


@dataclass
class _Layout:
    """Where a result's wanted metrics are: ``get(metrics)`` returns their raw metric results, each
    starting with its ``keys`` entry; the first ``len(names)`` are the scalars, in ncu's name order,
    whose value messages start at ``ats``, then the instanced (per-opcode) metrics named in
    ``opcodes`` (``n_read`` in all), then the earlier copies of repeated metrics (checked, not
    read). ``doubles`` reads them all at once once learned (:class:`_Doubles`)."""

    names: tuple[str, ...]
    ats: tuple[int, ...]
    keys: tuple[bytes, ...]
    get: Callable[[Any], tuple[bytes, ...]]
    opcodes: tuple[str, ...]
    doubles: _Doubles | None = None
    n_read: int = 0
    bulk: bool = False  # no scalar name twice: read in bulk (:func:`_run_frame`)
    positions: tuple[int, ...] = ()  # where ``get`` takes each of ``keys`` from in the metrics

    def same_extras(self, raws: tuple[bytes, ...]) -> bool:
        """Whether the opcode metrics and the earlier copies of repeated metrics
        are where learned."""
        at = len(self.names)
        return all(map(bytes.startswith, raws[at:], self.keys[at:])) if len(raws) > at else True

    def opcode_raws(self, raws: tuple[bytes, ...]) -> tuple[bytes, ...]:
        """The raw results of the instanced metrics among ``raws``, in the order of ``opcodes``."""
        at = len(self.names)
        return raws[at : at + len(self.opcodes)]


def _no_metrics(metrics: Any) -> tuple[bytes, ...]:
    return ()


#: The layout of a :class:`Launch` whose metrics are not read yet.
_NO_LAYOUT = _Layout((), (), (), _no_metrics, False)


@dataclass(frozen=True)
class _Doubles:
    """Reads a layout's scalar values in a few C calls: nearly all are one double (the raw metric
    result is key, ``\x12\x09\x19`` and 8 bytes, then maybe ncu's flag field). Those raw results,
    joined, must match ``pattern``, their exact bytes as in the launch the reader was learned from
    with any 8 bytes for each value (so every key and tag is checked); ``unpack`` then reads the
    doubles in place, or ``dtype`` reads the joined bytes of many launches at once as one NumPy
    record each (``doubles``: the positions of those values among the layout's names). The
    ``others`` (position, value offset) are read one by one."""

    get: Callable[[tuple[bytes, ...]], tuple[bytes, ...]]
    pattern: re.Pattern[bytes]
    unpack: Callable[[bytes], tuple[float, ...]]
    others: tuple[tuple[int, int], ...]
    doubles: tuple[int, ...] = ()
    dtype: np.dtype | None = None

    @classmethod
    def learn(cls, layout: _Layout, raws: tuple[bytes, ...]) -> _Doubles:
        """The reader of ``layout``'s values from one launch's ``raws`` (with no double too: the
        other values are read one by one, the launches still made a table at once)."""
        doubles, others, pattern, fmt, offsets, size = [], [], [], ["<"], [], 0
        for i, (raw, at) in enumerate(zip(raws, layout.ats)):
            if raw.startswith(b"\x09\x19", at) and at + 10 <= len(raw) <= at + 10 + TRAILER:
                doubles.append(i)
                pattern.append(re.escape(raw[: at + 2]) + rb".{8}" + re.escape(raw[at + 10 :]))
                fmt.append(f"{at + 2}xd{len(raw) - at - 10}x")
                offsets.append(size + at + 2)
                size += len(raw)
            else:
                others.append((i, at))
        dtype = np.dtype(
            {
                "names": [f"v{i}" for i in doubles],
                "formats": ["<f8"] * len(doubles),
                "offsets": offsets,
                "itemsize": size,
            }
        )
        return cls(
            _getter(doubles),
            re.compile(b"".join(pattern), re.DOTALL),
            struct.Struct("".join(fmt)).unpack,
            tuple(others),
            tuple(doubles),
            dtype,
        )

    def match(
        self, layout: _Layout, raws: tuple[bytes, ...], metric_cls: Any
    ) -> tuple[bytes, list[Any]] | None:
        """(the joined raw results of the doubles, the other values in order) of ``raws``, or None
        where they are not laid out as learned."""
        blob = b"".join(self.get(raws))
        if self.pattern.fullmatch(blob) is None or (
            len(raws) > len(layout.names) and not layout.same_extras(raws)
        ):
            return None
        others = []
        keys = layout.keys
        for i, at in self.others:
            raw = raws[i]
            if not raw.startswith(keys[i]):
                return None
            others.append(_value_at(raw, at, metric_cls))
        return blob, others

    def values(self, blob: bytes, others: list[Any]) -> list[Any]:
        """The scalar values in name order from :meth:`match`'s result."""
        values: list[Any] = list(self.unpack(blob))
        for (i, _), value in zip(self.others, others):
            values.insert(i, value)
        return values


def _getter(indices: list[int]) -> Callable[[Any], tuple[bytes, ...]]:
    if len(indices) > 1:
        return operator.itemgetter(*indices)  # type: ignore[return-value]
    return lambda metrics: tuple(metrics[i] for i in indices)


#: Opcode tables (:func:`_opcodes`) a :class:`_Bulk` keeps decoded by their raw bytes: launches of
#: one kernel repeat them, in turn with other kernels of the same layout.
OPCODE_CACHE = 256


@dataclass
class _Bulk:
    """:meth:`_Doubles.match` of a bulk layout (:attr:`_Layout.bulk`) straight from a result's
    metric results: the raw results of its doubles taken at once (``doubles``), joined and matched
    by the learned pattern, then those of its other values, of its opcode tables and of the earlier
    copies of repeated metrics (``checks``), each checked by its leading bytes (``keys``). The other
    values (launch dimensions, device name: the same from launch to launch) are read again only
    when their raw results differ from the last launch's (``last``, ``values``); an opcode table's
    columns (:func:`_opcodes`) are decoded once per distinct raw bytes (``tables``)."""

    layout: _Layout
    doubles: Callable[[Any], tuple[bytes, ...]]
    pattern: re.Pattern[bytes]
    checks: Callable[[Any], tuple[bytes, ...]] | None
    keys: tuple[bytes, ...]
    ats: tuple[int, ...]
    catalog: Catalog
    last: tuple[bytes, ...] = ()
    values: list[Any] = field(default_factory=list)
    tables: dict[tuple[bytes, ...], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, layout: _Layout, catalog: Catalog) -> _Bulk:
        """The reader of ``layout`` (bulk, with a :class:`_Doubles` reader)."""
        d, at = layout.doubles, layout.positions
        assert d is not None and layout.bulk
        checked = [i for i, _ in d.others] + list(range(len(layout.names), len(layout.keys)))
        return cls(
            layout,
            _getter([at[i] for i in d.doubles]),
            d.pattern,
            _getter([at[i] for i in checked]) if checked else None,
            tuple(layout.keys[i] for i in checked),
            tuple(offset for _, offset in d.others),
            catalog,
        )

    def match(
        self, metrics: Any, metric_cls: Any
    ) -> tuple[bytes, list[Any], dict[str, Any] | None] | None:
        """(the joined raw results of the doubles, the other values in order, the opcode columns or
        None without opcode tables) of ``metrics``, or None where they are not laid out as learned
        (as :meth:`_Doubles.match`)."""
        blob = b"".join(self.doubles(metrics))
        if self.pattern.fullmatch(blob) is None:
            return None
        if self.checks is None:
            return blob, [], None
        raws = self.checks(metrics)
        if not all(map(bytes.startswith, raws, self.keys)):
            return None
        n = len(self.ats)
        others = raws[:n]
        if others != self.last:
            self.values = [_value_at(raw, at, metric_cls) for raw, at in zip(others, self.ats)]
            self.last = others
        opcodes = self.layout.opcodes
        if not opcodes:
            return blob, self.values, None
        tables = raws[n : n + len(opcodes)]
        extra = self.tables.get(tables)
        if extra is None:
            if len(self.tables) >= OPCODE_CACHE:
                self.tables.clear()
            extra = self.tables[tables] = {}
            for name, raw in zip(opcodes, tables):
                extra.update(_opcodes(metric_cls.FromString(raw), name, self.catalog))
        return blob, self.values, extra


@dataclass
class _Wanted:
    """The metrics to read, by index in the whole report's string table, and a cache of the last
    layouts (:class:`_Layout`) by number of metrics in a result; each use checks every position by
    its leading bytes. ``scans`` counts the results whose layout was learned by a full scan (the
    launches :mod:`.verify` compares with ``ncu_report`` first)."""

    catalog: Catalog
    strings: list[str] = field(default_factory=list)
    ids: dict[int, str] = field(default_factory=dict)
    layouts: dict[int, list[_Layout]] = field(default_factory=dict)
    scans: int = 0

    @classmethod
    def of(cls, catalog: Catalog, strings: Any) -> _Wanted:
        """The wanted metrics among ``strings``, the report's WHOLE string table: a result may name
        a string that a block after it defines (an H800 report of ncu 2023.3 does), and
        ``ncu_report`` resolves it."""
        wanted = cls(catalog)
        is_tensor, instanced = catalog.is_tensor_path_metric, catalog.instanced_metrics
        for raw in strings:
            name = raw.decode("utf-8", "surrogateescape")
            if name in catalog.scalar_metrics or is_tensor(name) or name in instanced:
                wanted.ids[len(wanted.strings)] = name
            wanted.strings.append(name)
        return wanted

    def read_doubles(
        self, metrics: Any, metric_cls: Any
    ) -> tuple[Any, Any, tuple[bytes, list[Any]] | None]:
        """(layout, raws, matched) through the latest layout of this many metrics that has a
        :class:`_Doubles` reader (``matched``: :meth:`_Doubles.match`'s); matched None when there is
        none or it does not match."""
        for layout in self.layouts.get(len(metrics), ()):
            if layout.doubles is not None:
                raws = layout.get(metrics)
                return layout, raws, layout.doubles.match(layout, raws, metric_cls)
        return None, None, None

    def bulks(self, count: int) -> list[_Bulk]:
        """The readers of the bulk layouts with a :class:`_Doubles` reader of results of ``count``
        metric results, the latest learned first."""
        return [
            _Bulk.of(layout, self.catalog)
            for layout in self.layouts.get(count, ())
            if layout.doubles is not None and layout.bulk
        ]

    def raw_metrics(self, metrics: Any) -> tuple[_Layout, tuple[bytes, ...]]:
        """The layout of ``metrics`` (a result's raw metric results) and the wanted ones.

        A metric named more than once in one result (a GH200 report stores
        ``gpu__time_duration.sum`` beside the NVLink-C2C counters of one pass and again in the
        main list) is read from its LAST copy, as ``ncu_report`` keeps it; the layout also checks
        where the earlier copies were, so a cached layout is used only on results
        with the same repeats.
        """
        known = self.layouts.setdefault(len(metrics), [])
        for layout in known:
            raws = layout.get(metrics)
            if all(map(bytes.startswith, raws, layout.keys)):
                return layout, raws
        self.scans += 1
        found, earlier = self._scan(metrics)
        cat = self.catalog
        instanced = cat.instanced_metrics
        ids = self.ids
        scalars = sorted(
            (ids[mid], mid, i)
            for mid, i in found.items()
            if ids[mid] not in instanced or ids[mid] in cat.scalar_metrics
        )
        opcodes = sorted((ids[mid], mid, i) for mid, i in found.items() if ids[mid] in instanced)
        picked = [(mid, i) for _, mid, i in scalars] + [(mid, i) for _, mid, i in opcodes]
        picked += earlier  # checked, never read
        keys = tuple(_key(mid) for mid, _ in picked)
        n_read = len(picked) - len(earlier)
        layout = _Layout(
            tuple(name for name, _, _ in scalars),
            tuple(len(k) for k in keys[: len(scalars)]),
            keys,
            _getter([i for _, i in picked]),
            tuple(name for name, _, _ in opcodes),
            n_read=n_read,
            bulk=len({name for name, _, _ in scalars}) == len(scalars),
            positions=tuple(i for _, i in picked),
        )
        known[:] = [layout, *known[:3]]
        return layout, layout.get(metrics)

    def _scan(self, metrics: Any) -> tuple[dict[int, int], list[tuple[int, int]]]:
        """Every wanted metric's last position in ``metrics`` by name index, and (name index,
        position) of the earlier copies of repeated ones."""
        ids, n_strings = self.ids, len(self.strings)
        found: dict[int, int] = {}
        earlier: list[tuple[int, int]] = []
        for i, raw in enumerate(metrics):
            if raw[:1] != b"\x08":
                raise DecodeError(f"metric result {i} does not start with its name")
            mid = _varint(raw, 1)[0]
            if mid >= n_strings:
                raise DecodeError(
                    f"metric result {i} names string {mid}, beyond the report's string table of"
                    f" {n_strings}"
                )
            if mid in ids:
                if mid in found:
                    earlier.append((mid, found[mid]))
                found[mid] = i
        return found, earlier


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
    """The NVTX push/pop ranges open at launch, as
    :func:`._ncu_worker._nvtx` joins them."""
    if not result.HasField("nvtx"):
        return None
    state = result.nvtx
    if any(
        len(se) > 1 and (se[0] != 0x08 or any(b < 0x80 for b in se[1:-1])) for se in state.start_end
    ):
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

    One double, one uint64 or one short string (nearly all values) is read in place; anything else
    is decoded in full.
    """
    n = raw[at]
    if n == 9 and raw[at + 1] == 0x19:
        return _DOUBLE.unpack_from(raw, at + 2)[0]
    if n == 2 and raw[at + 1] == 0x28 and raw[at + 2] < 0x80:  # a one-byte uint64
        return raw[at + 2]
    if 0 < n < 0x80 and raw[at + 1] == 0x28:
        value, end = _varint(raw, at + 2)
        if end == at + 1 + n:
            return value
    if 1 < n < 0x80 and raw[at + 1] == 0x0A and raw[at + 2] == n - 2:  # one short string
        return raw[at + 3 : at + 1 + n].decode()
    return _metric_value(metric_cls.FromString(raw))


def _opcodes(metric: Any, opcode_metric: str, cat: Catalog) -> dict[str, Any]:
    """The metric's value and one ``<metric>[<opcode>]`` column per kept opcode
    (:attr:`ncuroof.catalog.Catalog.instanced_metrics`: MMA opcodes, FP opcodes)."""
    values = {opcode_metric: _metric_value(metric)}
    mma = cat.instanced_metrics[opcode_metric]
    for inst in metric.instances:
        key = _scalar(inst.key)
        if not isinstance(key, str):
            raise UnsupportedReport(f"{opcode_metric} instances not keyed by opcode")
        if mma.search(key):
            count = _scalar(inst.value)
            if not isinstance(count, (int, float)):
                raise UnsupportedReport(f"an {opcode_metric} instance without a number")
            values[f"{opcode_metric}[{key}]"] = float(count)
    return values


def _values(result: Any, wanted: _Wanted, metric_cls: Any, got: Launch) -> None:
    """Read ``result``'s wanted metric values into ``got`` (its layout, then the doubles' raw bytes
    and the other values, or all values, and the opcode columns)."""
    metrics = result.metrics
    layout, raws, matched = wanted.read_doubles(metrics, metric_cls)
    if matched is not None:
        got.blob, got.others = matched
    else:
        layout, raws = wanted.raw_metrics(metrics)
        unpack = _DOUBLE.unpack_from
        got.numbers = [
            (
                unpack(raw, at + 2)[0]
                if raw.startswith(b"\x09\x19", at)
                else _value_at(raw, at, metric_cls)
            )
            for raw, at in zip(raws, layout.ats)
        ]
        if layout.doubles is None:
            layout.doubles = _Doubles.learn(layout, raws)
    got.layout = layout
    if layout.opcodes:
        got.extra = {}
        for name, raw in zip(layout.opcodes, layout.opcode_raws(raws)):
            got.extra.update(_opcodes(metric_cls.FromString(raw), name, wanted.catalog))


def _launch(buf: Any, block: int, offset: int, wanted: _Wanted, classes: dict[str, Any]) -> Launch:
    result = classes["Result"].FromString(buf)
    if result.kind != KERNEL_LAUNCH:
        raise UnsupportedReport(f"a result of kind {result.kind} (not a kernel launch)")
    return _parsed_launch(result, block, offset, wanted, classes["Metric"])


def _parsed_launch(
    result: Any, block: int, offset: int, wanted: _Wanted, metric_cls: Any
) -> Launch:
    """The :class:`Launch` of a parsed kernel-launch result."""
    # an empty name (a C symbol has no demangled form) is the mangled one, as in ncu_report
    function, demangled = result.function or result.mangled, result.demangled or result.mangled
    got = Launch(
        block,
        offset,
        function.decode(),
        demangled.decode(),
        _nvtx(result),
        result.seq if result.HasField("seq") else None,
        result.thread_id if result.HasField("thread_id") else None,
        result.timestamp,
        _NO_LAYOUT,
    )
    _values(result, wanted, metric_cls, got)
    return got


def _first_block(mm: Any, path: Path) -> int:
    """Check the file header and format version; the byte offset of the first block."""
    pos, version = first_block(mm, path)
    if version != FORMAT_VERSION:
        raise UnsupportedReport(f"report format version {version} (known: {FORMAT_VERSION})")
    return pos


def _blocks(
    mm: Any,
    path: Path,
    pos: int | None = None,
    index: int = 0,
    stop: int | None = None,
    fd: int | None = None,
) -> Iterator[tuple[int, int, Any, int]]:
    """The blocks of :func:`.framing.walk`, from the first (its format version
    checked) or from block ``index`` at byte ``pos``, to the end of the file or to byte ``stop``
    (their headers read through ``fd`` when given)."""
    return walk(mm, path, _first_block(mm, path) if pos is None else pos, index, stop, fd)


class PayloadError(ReportFormatError):
    """A launch record that frames well but does not decode as the decoder knows results: the
    report is damaged or lays results out in a way never seen. Only ``ncu_report`` can tell: with
    ``--reader auto`` it is asked (:func:`ncuroof.parser.read`)."""


def _damaged(path: Path, launch: int, block: int, pos: int, exc: Exception) -> PayloadError:
    return PayloadError(
        f"launch {launch} in block {block} (byte {pos}) cannot be decoded ({exc}): the report is"
        " damaged or lays results out in a way the built-in reader does not know; re-run ncu, or"
        " read it with --reader ncu_report (NVIDIA's ncu-report package)",
        path,
    )


def _records(mm: Any, mark: Mark, fd: int | None = None) -> Iterator[tuple[int, Any]]:
    """The result records of one result block (:data:`~.framing.Mark`): its one record
    read in place when the block holds one result and nothing else (as ncu writes them; given
    ``fd``, read through ``os.pread``: a copy from the page cache costs less than faulting the
    mapped pages in, 3.5 against 6 us for a 35 kB launch), else through
    :func:`~.framing.results`; raises :class:`Untiled` if they do not tile its
    payload."""
    _, _, _, start, end, sources, count = mark
    if sources == 0 and count == 1:
        if fd is None or start + 4 > end:
            raw = mm[start:end]
        else:
            raw = os.pread(fd, end - start, start)
        if (
            len(raw) != end - start
            or len(raw) < 4
            or start + 4 + _U32.unpack_from(raw, 0)[0] != end
        ):
            raise Untiled()
        return iter(((start, memoryview(raw)[4:]),))
    return results(mm, start, end, _Counts(sources, count))


@dataclass(frozen=True)
class _Counts:
    """The record counts of a block header, as :func:`~.framing.results` reads them."""

    num_sources: int
    num_results: int


def _launches(
    mm: Any, path: Path, marks: Iterable[Mark], wanted: _Wanted
) -> Iterator[tuple[int, Launch, int, int, bool]]:
    """(launch index, :class:`Launch`, record start, record end, whether its metric layout was
    learned here) of the kernel launches in the result blocks ``marks`` (from the walk of
    :func:`_plan`), their metric names resolved in ``wanted`` (the whole report's string table); the
    result fields of a learned layout are checked (:func:`_check_seen`); a payload that does not
    decode raises :class:`PayloadError`. The pages read are released as it goes
    (:func:`~.framing.release_pages`)."""
    classes, released = _classes(), -1
    for mark in marks:
        pos, block, launch, start, end, sources, count = mark
        if released < 0 or start - released >= RELEASE_BYTES:
            released = start if released < 0 else release_pages(mm, released, start)
        try:
            for offset, buf in _records(mm, mark):
                scans = wanted.scans
                got = _launch(buf, block, offset, wanted, classes)
                learned = wanted.scans != scans
                if learned:  # a new layout: are its fields all known?
                    _check_seen(buf, "Result", f"launch {launch}")
                yield launch, got, offset + 4, offset + 4 + len(buf), learned
                launch += 1
        except Untiled as exc:
            raise untiled_block(path, launch, block, start, end, sources + count) from exc
        except (DecodeError, UnicodeDecodeError, IndexError, ValueError, struct.error) as exc:
            raise _damaged(path, launch, block, pos, exc) from exc
    if released >= 0:
        release_pages(mm, released, len(mm))


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
        and the launch (its index in the report); for repeated or reordered launch records
        (:class:`~.framing.LaunchLedger`).
    UnsupportedReport
        For a format version, value kind or structure not seen in the reports we verified.
    """
    ledger = LaunchLedger(path, mm)
    plan = _plan(mm, path)
    wanted = _Wanted.of(catalog, plan.strings)
    for index, got, start, end, _ in _launches(mm, path, plan.marks, wanted):
        ledger.add(ResultRecord(index, got.block, start, end, got.thread_id, got.seq))
        yield got


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
        for block, pos, header, start in _blocks(mm, path):
            if not header.num_results:
                continue
            try:
                for offset, buf in results(mm, start, start + header.payload_size, header):
                    m = stamp.FromString(buf)
                    rows.append((len(rows), block, offset, m.seq, m.thread_id, m.timestamp))
            except DecodeError as exc:
                raise _damaged(path, len(rows), block, pos, exc) from exc
    return pd.DataFrame(
        rows,
        columns=["launch_id", "block", "offset", "seq", "thread_id", "timestamp"],
        dtype="int64",
    )


def _check_seen(buf: Any, message: str, where: str) -> None:
    """Raise :class:`UnsupportedReport` for a field of ``message`` never seen in
    a verified report."""
    unseen = unseen_fields(bytes(buf), message)
    if unseen:
        raise UnsupportedReport(
            f"{where}: {message} fields never seen {unseen[:3]} (field number, wire type)"
        )


def _plan(mm: Any, path: Path, blocks: list[Block] | None = None, fd: int | None = None) -> Plan:
    """One walk over the block headers (:func:`.framing.plan`; read through ``fd``
    when given), checked for fields never seen; every block appended to ``blocks`` when given
    (:func:`_seen`)."""
    return plan(mm, path, _seen(mm, _blocks(mm, path, fd=fd), blocks))


#: One block as :func:`.verify.cut_report` needs it: its byte offset, the end of its
#: payload, its numbers of results and sources, and the string table of a result block (None
#: without strings or results).
Block = tuple[int, int, int, int, Any]


def _seen(
    mm: Any, blocks: Iterator[tuple[int, int, Any, int]], out: list[Block] | None
) -> Iterator[tuple[int, int, Any, int]]:
    """``blocks``, their headers checked for fields never seen (but for result blocks after the
    first), each also appended to ``out`` as a :data:`Block` (when ``out`` is not None)."""
    after_results = False
    for block, pos, header, start in blocks:
        results = header.num_results
        if not after_results or not results:
            _check_seen(mm[pos + 4 : start], "BlockHeader", f"block {block}")
            after_results = after_results or bool(results)
        if out is not None:
            strings = (
                header.strings
                if results and header.HasField("strings") and header.strings.strings
                else None
            )
            out.append((pos, start + header.payload_size, results, header.num_sources, strings))
        yield block, pos, header, start


@dataclass(frozen=True)
class Slice:
    """The result blocks of a report one process decodes, as the walk of :func:`_plan` found them
    (:data:`~.framing.Mark` rows of a ``uint64`` array: a header field is a u64), with
    the report's whole string table and its size in bytes (decompressed: a worker opens a
    compressed report without counting it again, :func:`~.source.open_report`)."""

    marks: np.ndarray
    strings: tuple[bytes, ...] = ()
    size: int | None = None


def _slices(plan: Plan, processes: int, size: int | None = None) -> list[Slice]:
    """Cut the result blocks into ``processes`` slices at block boundaries; the first (decoded in
    this process while the workers start) is longer by :data:`START_LAUNCHES` per worker."""
    strings = tuple(plan.strings)
    marks = np.array(plan.marks, dtype=np.uint64).reshape(-1, 7)
    if processes <= 1 or len(marks) < processes:
        return [Slice(marks, strings, size)]
    head = min(START_LAUNCHES, plan.total // (2 * processes))
    first = (plan.total + (processes - 1) * head) / processes
    width = (plan.total - first) / (processes - 1)
    launches = marks[:, 2].tolist()
    cuts = sorted(
        {bisect.bisect_left(launches, first + k * width) for k in range(processes - 1)}
        - {0, len(launches)}
    )
    return [Slice(part, strings, size) for part in np.split(marks, cuts)]


def decode_slice(
    path: Path,
    catalog: Catalog,
    part: Slice,
    chunk: int,
    version: str | None,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[pd.DataFrame], list[tuple[int, ...]]]:
    """Decode the launches of one :class:`Slice` of a report (in this process or a worker's).

    Returns the raw-table chunks (at most ``chunk`` launches each, :data:`RUN` times that for
    launches read in bulk, in launch order) and one record
    per launch (index, block, start, end, thread ID, sequence number) for
    :class:`~.framing.LaunchLedger`, then whether its metric layout was learned there
    (:data:`LEARNED`). ``progress(n)`` is told every
    :data:`TICK` launches. Python's cyclic garbage collector is paused meanwhile: the decoder
    makes no cycles, and its collections over the growing table cost a third of the time.
    """
    with open_report(path, part.size) as (mm, fd), _gc_paused():
        wanted = _Wanted.of(catalog, part.strings)
        reader = _SliceReader(path, mm, fd, wanted, chunk, version)
        reader.read(part.marks.tolist(), progress)
    return reader.frames, reader.records


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The tables ``frames`` (their :data:`NAMES` held as category by
    :func:`~.rows.held_text`) as one, in order: the table of the frames before
    coding, but for the :data:`NAMES` columns that were text: given back their text dtype
    (:func:`_text`), or, those of :data:`~ncuroof.schema.RAW_COMPACT`, kept ``category`` with
    sorted categories (as ``held_text`` holds them). Each name column gets the categories of all
    frames first, so the join keeps codes (a join of differing categories makes a Python string
    per launch)."""
    coded = [c for c in NAMES if isinstance(frames[0][c].dtype, pd.CategoricalDtype)]
    if len(frames) > 1 and coded:
        union = {
            c: union_categoricals([f[c] for f in frames], sort_categories=True).categories
            for c in coded
        }
        frames = [f.assign(**{c: f[c].cat.set_categories(union[c]) for c in coded}) for f in frames]
    df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    # those stay category, as ncu_rep.held_text holds them
    text = [c for c in coded if c not in RAW_COMPACT]
    return df.assign(**{c: _text(df[c]) for c in text}) if text else df


def _text(col: pd.Series) -> pd.Series:
    """A ``category`` column of text as its categories' text dtype, each launch's text made once in
    Arrow (``astype`` goes through a Python string per launch: 1.9 GB, not 0.55, for 100,000
    launches of a 5.5 kB name)."""
    cat = col.array
    codes = cat.codes
    values = pa.array(cat.categories.array).take(pa.array(codes, mask=codes < 0))
    return pd.Series(pd.array(values, dtype=cat.categories.dtype), index=col.index, name=col.name)


@dataclass
class _Run:
    """Launches of one window (:class:`_SliceReader`) whose values one layout's :class:`_Doubles`
    reader matched, as columns: launch index, function and demangled names, NVTX ranges, the
    doubles' joined raw results, the other values and the opcode columns (None without opcode
    tables; :func:`_run_frame` makes their table at once)."""

    layout: _Layout
    index: list[int] = field(default_factory=list)
    function: list[str] = field(default_factory=list)
    demangled: list[str] = field(default_factory=list)
    nvtx: list[str | None] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)
    others: list[list[Any]] = field(default_factory=list)
    extras: list[dict[str, Any] | None] = field(default_factory=list)

    def add(
        self,
        index: int,
        names: tuple[str, str, str | None],
        matched: tuple[bytes, list[Any], dict[str, Any] | None],
    ) -> None:
        """Add a launch: its index, (function, demangled, NVTX) and :meth:`_Bulk.match`'s values."""
        self.index.append(index)
        self.function.append(names[0])
        self.demangled.append(names[1])
        self.nvtx.append(names[2])
        self.blobs.append(matched[0])
        self.others.append(matched[1])
        self.extras.append(matched[2])

    def columns(self) -> list[tuple[int, list[str]]]:
        """(launch index, the raw-table columns it adds in order) of this run's first launch and of
        the first launch of each distinct set of opcode columns (for :func:`_window_frame`)."""
        names = [n for n in self.layout.names if n != _DISPLAY]
        out = [(self.index[0], [*META_COLUMNS, *names])]
        if self.extras[0] is None:  # a layout without opcode tables: none has any
            return out
        seen: set[int] = set()
        for i, extra in zip(self.index, self.extras):
            if extra is not None and id(extra) not in seen:
                seen.add(id(extra))
                out.append((i, list(extra)))
        return out


class _SliceReader:
    """Decodes the result blocks of one slice into raw-table chunks (``frames``) and ledger
    ``records``, a window of launches at a time: a launch whose values a learned bulk reader
    (:class:`_Bulk`) matches is added to its layout's :class:`_Run` as columns (no
    :class:`Launch`), any other is decoded in full (:func:`_parsed_launch`) and made a row
    (:func:`_frames`); a window's tables are made at once and put in launch order
    (:func:`_window_frame`), so launches of several kernels in turn cost no table each."""

    def __init__(
        self, path: Path, mm: Any, fd: int, wanted: _Wanted, chunk: int, version: str | None
    ) -> None:
        self.path, self.mm, self.wanted, self.chunk, self.version = path, mm, wanted, chunk, version
        self.fd = fd  # the report's file (mapped as ``mm``): single records read through it
        classes = _classes()
        self.result_cls, self.metric_cls = classes["Result"], classes["Metric"]
        self.texts: dict[bytes, str] = {}
        self.frames: list[pd.DataFrame] = []
        self.records: list[tuple[int, ...]] = []
        self.rows: list[tuple[int, Launch]] = []
        self.runs: dict[int, _Run] = {}  # the window's run of each bulk layout, by its id
        self.pending = 0  # launches in the window
        self.run_size = RUN * chunk
        self.bulks: dict[int, list[_Bulk]] = {}  # by number of metric results: Wanted.bulks'

    def read(self, marks: list[Mark], progress: Callable[[int], None] | None) -> None:
        """Decode the launches of the result blocks ``marks`` (rows of :data:`Mark`), in order; a
        block whose records do not tile it, or a payload that does not decode, raises
        (:func:`~.framing.untiled_block`, :class:`PayloadError`)."""
        released = marks[0][3] if marks else 0
        for mark in marks:
            pos, block, launch, start, end, sources, count = mark
            if start - released >= RELEASE_BYTES:
                released = release_pages(self.mm, released, start)
            try:
                for offset, buf in _records(self.mm, mark, self.fd):
                    self.launch(buf, launch, block, offset)
                    launch += 1
                    if progress is not None and len(self.records) % TICK == 0:
                        progress(TICK)
            except Untiled as exc:
                raise untiled_block(self.path, launch, block, start, end, sources + count) from exc
            except (DecodeError, UnicodeDecodeError, IndexError, ValueError, struct.error) as exc:
                raise _damaged(self.path, launch, block, pos, exc) from exc
        release_pages(self.mm, released, len(self.mm))
        self.flush()
        if progress is not None and len(self.records) % TICK:
            progress(len(self.records) % TICK)

    def launch(self, buf: Any, index: int, block: int, offset: int) -> None:
        """Decode one result record (``buf``, at byte ``offset`` of block ``block``)."""
        result = self.result_cls.FromString(buf)
        if result.kind != KERNEL_LAUNCH:
            raise UnsupportedReport(f"a result of kind {result.kind} (not a kernel launch)")
        mangled = result.mangled
        # an empty name (a C symbol has no demangled form) is the mangled one, as in ncu_report
        names = (
            self.text(result.function or mangled),
            self.text(result.demangled or mangled),
            _nvtx(result),
        )
        matched, bulk = self.match(result.metrics)
        learned = False
        if bulk is None:
            learned = self.slow(result, buf, index, block, offset)
        else:
            run = self.runs.get(id(bulk.layout))
            if run is None:
                run = self.runs[id(bulk.layout)] = _Run(bulk.layout)
            run.add(index, names, matched)
        self.pending += 1
        if self.pending >= self.run_size or len(self.rows) >= self.chunk:
            self.flush()
        seq = result.seq if result.HasField("seq") else None
        tid = result.thread_id if result.HasField("thread_id") else None
        self.records.append((index, block, offset + 4, offset + 4 + len(buf), tid, seq, learned))

    def match(self, metrics: Any) -> tuple[Any, _Bulk | None]:
        """(:meth:`_Bulk.match`'s values, the reader) of the first bulk reader of this many metric
        results that matches ``metrics`` (moved first: launches of a kernel come together), or
        (None, None)."""
        bulks = self.bulks.get(len(metrics))
        if bulks is None:
            bulks = self.bulks[len(metrics)] = self.wanted.bulks(len(metrics))
        for k, bulk in enumerate(bulks):
            matched = bulk.match(metrics, self.metric_cls)
            if matched is not None:
                if k:
                    bulks.insert(0, bulks.pop(k))
                return matched, bulk
        return None, None

    def text(self, raw: bytes) -> str:
        """``raw`` decoded (UTF-8), once per distinct name."""
        text = self.texts.get(raw)
        return text if text is not None else self.texts.setdefault(raw, raw.decode())

    def slow(self, result: Any, buf: Any, index: int, block: int, offset: int) -> bool:
        """Decode a launch in full into a row; whether its metric layout was learned here (then its
        result fields are checked: :func:`_check_seen`). A launch read without a
        :class:`_Doubles` reader (a layout new, or new to its reader) makes the bulk readers be
        listed again."""
        scans = self.wanted.scans
        got = _parsed_launch(result, block, offset, self.wanted, self.metric_cls)
        self.rows.append((index, got))
        if got.numbers is not None:
            self.bulks.clear()
        if self.wanted.scans != scans:  # a new layout: are its fields all known?
            _check_seen(buf, "Result", f"launch {index}")
            return True
        return False

    def flush(self) -> None:
        """Make the table of the window's runs and rows, in launch order."""
        frames = [_run_frame(self.path, run, self.version) for run in self.runs.values()]
        if self.rows:
            frames += _frames(self.path, self.rows, self.version)
        if len(frames) > 1:
            order = [c for run in self.runs.values() for c in run.columns()]
            order += [(i, _row_columns(got)) for i, got in self.rows]
            frames = [_window_frame(frames, order)]
        self.frames += [held_text(frame, NAMES) for frame in frames]
        self.runs, self.rows, self.pending = {}, [], 0


def _row_columns(got: Launch) -> list[str]:
    """The raw-table columns of a launch decoded in full, in order (as
    :func:`~.rows.launch_row` makes them)."""
    return [*META_COLUMNS, *(c for c in got.values if c != _DISPLAY)]


def _window_frame(frames: list[pd.DataFrame], columns: list[tuple[int, list[str]]]) -> pd.DataFrame:
    """The tables of one window's launches as one, rows in launch order and columns in the order
    one table of its rows in launch order would have (each column where a launch first has it:
    ``columns`` lists (launch index, the columns it adds) of the launches that add any)."""
    df = pd.concat(frames, ignore_index=True)
    first = dict.fromkeys(c for _, cols in sorted(columns, key=lambda x: x[0]) for c in cols)
    order = np.argsort(df["launch_id"].to_numpy(), kind="stable")
    return df[list(first)].take(order).reset_index(drop=True)


def _frames(path: Path, rows: list[tuple[int, Launch]], version: str | None) -> list[pd.DataFrame]:
    """The raw table of ``rows`` (launch index, :class:`Launch`), in order: each run of launches
    whose values were all matched by one :class:`_Doubles` reader (no opcode columns) read at once
    (:func:`_run_frame`), the others row by row (:func:`~.rows.launch_row`)."""
    out: list[pd.DataFrame] = []
    start, kinds = 0, [_fast(got) for _, got in rows]
    for end in range(1, len(rows) + 1):
        if end < len(rows) and kinds[end] == kinds[start]:
            continue
        run = rows[start:end]
        if kinds[start] is not None:
            out.append(_run_frame(path, _as_run(run), version))
        else:
            out.append(
                launch_frame(
                    [
                        launch_row(
                            path, 0, i, got.function, got.demangled, got.nvtx, got.values, version
                        )
                        for i, got in run
                    ]
                )
            )
        start = end
    return out


def _as_run(rows: list[tuple[int, Launch]]) -> _Run:
    """Launches of one bulk layout (:func:`_fast`) as a :class:`_Run`."""
    run = _Run(rows[0][1].layout)
    for i, got in rows:
        assert got.blob is not None and got.others is not None
        run.add(i, (got.function, got.demangled, got.nvtx), (got.blob, got.others, got.extra))
    return run


def _fast(got: Launch) -> int | None:
    """The identity of the layout ``got``'s values can be read with in bulk, or None."""
    layout = got.layout
    return id(layout) if got.blob is not None and layout.bulk else None


_DISPLAY = "device__attribute_display_name"
_SHAPE = (
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
    *(f"launch__{kind}_dim_{a}" for kind in ("grid", "block") for a in "xyz"),
)


def _run_frame(path: Path, run: _Run, version: str | None) -> pd.DataFrame:
    """The raw table of launches of one layout whose values :meth:`_Doubles.match` matched, equal to
    :func:`~.rows.launch_frame` of their :func:`~.rows.launch_row`
    rows: the doubles are read from their joined raw bytes as NumPy records (no Python float per
    value), the other values are typed as ``DataFrame.from_records`` types them, and the identity
    columns (compute capability, grid and block text) are made once per distinct combination."""
    layout, n = run.layout, len(run.index)
    doubles = layout.doubles
    assert doubles is not None and doubles.dtype is not None
    names = layout.names
    columns: dict[str, Any] = {}
    if doubles.doubles:
        records = np.frombuffer(b"".join(run.blobs), dtype=doubles.dtype)
        columns.update({names[i]: records[f"v{i}"].copy() for i in doubles.doubles})
    other = [names[i] for i, _ in doubles.others]
    if other:
        columns.update(_typed_distinct(run.others, other))

    def listed(name: str) -> list[Any]:
        col = columns.get(name)
        return [None] * n if col is None else col.tolist()

    display = [d if isinstance(d, str) else None for d in listed(_DISPLAY)]
    shapes: dict[tuple[Any, ...], tuple[str | None, str | None, str | None]] = {}
    texts = []
    for key in zip(*(listed(c) for c in _SHAPE)):
        text = shapes.get(key)
        if text is None:
            text = shapes[key] = _shape_texts(key)
        texts.append(text)
    cc, grid, block = zip(*texts) if texts else ((), (), ())
    meta = dict(
        zip(
            META_COLUMNS,
            (
                [path_text(path)] * n,
                [0] * n,
                run.index,
                run.function,
                run.demangled,
                run.nvtx,
                display,
                list(cc),
                list(grid),
                list(block),
                [version] * n,
                [None] * n,
                [None] * n,
            ),
        )
    )  # typed as DataFrame.from_records types the rows of launch_row
    body = {c: columns[c] for c in names if c != _DISPLAY}
    if run.extras and run.extras[0] is not None:  # opcode columns after, as a row's values
        body.update(_typed_distinct(run.extras))
    return numeric_metrics(pd.DataFrame({**meta, **body}))


def _typed_distinct(rows: list[Any], names: list[str] | None = None) -> pd.DataFrame:
    """``DataFrame.from_records(rows, columns=names)``, made from the distinct objects of ``rows``
    (:class:`_Bulk` hands on one list of other values while they do not change, one dict of opcode
    columns per distinct opcode table), then taken in order: the same values, so the same types;
    without ``names``, columns in order of first appearance."""
    first: dict[int, int] = {}
    codes = [first.setdefault(id(row), len(first)) for row in rows]
    if len(first) == len(rows):
        return pd.DataFrame.from_records(rows, columns=names)
    distinct = list({id(row): row for row in rows}.values())
    typed = pd.DataFrame.from_records(distinct, columns=names)
    return typed.take(codes).reset_index(drop=True)


def _shape_texts(key: tuple[Any, ...]) -> tuple[str | None, str | None, str | None]:
    """``cc``, ``grid`` and ``block`` of a launch with these :data:`_SHAPE` values (None: absent),
    as :func:`~.rows.launch_row` writes them."""
    row = launch_row(
        Path(), 0, 0, "", "", None, {c: v for c, v in zip(_SHAPE, key) if v is not None}, None
    )
    return row["cc"], row["grid"], row["block"]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _estimate(mm: Any, path: Path) -> int:
    """The launches of a report, estimated from the size of its first result
    block (0 without one)."""
    for _, _, header, start in _blocks(mm, path):
        if header.num_results:
            return int((len(mm) - start) * header.num_results / max(header.payload_size, 1))
    return 0


def _processes(total: int) -> int:
    """Decoding processes for a report of ``total`` launches: ``$NCUROOF_DECODE_PROCESSES``
    (:data:`PROCESSES_ENV`) when set, else one per :data:`PROCESS_LAUNCHES`, at most one per core.
    """
    given = os.environ.get(PROCESSES_ENV, "")
    if given.strip().isdigit() and int(given) > 0:
        return int(given)
    return max(1, min(cores(), total // PROCESS_LAUNCHES))


def read_nvr(
    path: str | Path,
    catalog: Catalog,
    progress: Callable[[int], Callable[..., None]] | None = None,
    chunk: int = CHUNK,
    processes: int | None = None,
    blocks: list[Block] | None = None,
    planned: Callable[[int, list[int]], None] | None = None,
) -> pd.DataFrame:
    """Read every launch of a report into the raw table, without ``ncu_report``.

    One walk over the block headers counts the launches; the result blocks are then decoded in
    slices, on several processes for a big report (:class:`.parallel.Workers`, as many
    as the size of the first result block says the report needs), and every launch record is
    checked in file order (:class:`~.framing.LaunchLedger`).

    Parameters
    ----------
    path : str or Path
        A report: a ``.ncu-rep``, or a ``.ncu-repz`` read forward from its stream
        (:mod:`.source`; where that path stops, :func:`ncuroof.parser.read` reads
        it from a decompressed copy).
    catalog : Catalog
        Which metrics to read: every scalar metric of its recipes, every ``sm__ops_path_tensor_*``
        count/rate/peak, the MMA opcodes of ``sass__inst_executed_per_opcode_with_modifier_all``.
    progress : callable, optional
        ``progress(total)`` returns a callable advanced by ``advance(n)`` as launches are read.
    chunk : int, default 4096
        Launches made a DataFrame at a time (bounds memory; the result does not depend on it).
    processes : int, optional
        Decoding processes (the result does not depend on it); default :func:`_processes`.
    blocks : list, optional
        When given, every block of the report is appended to it (:data:`Block`), so that the
        sample check (:func:`.verify.cut_report`) need not walk the report again.
    planned : callable, optional
        ``planned(launches, firsts)`` once the blocks are walked (``blocks`` complete), before
        decoding: the number of launches and the first launch of each slice (each learns a layout).

    Returns
    -------
    DataFrame
        The raw table of :mod:`ncuroof.schema`, identical to :func:`~.reference.read_ncu_rep`'s:
        one row per launch, ``range_id`` 0, ``launch_id`` 0, 1, ... in report order.

    Raises
    ------
    InputError, ReportFormatError
        For a missing, empty, foreign, truncated or damaged file (see :func:`iter_results`).
    UnsupportedReport
        For a report this decoder has not been verified on (read it with ``ncu_report``).
    """
    path = Path(path)
    check_report(path)
    # one pass over the report each (a compressed one is decompressed again for each)
    with open_report(path) as (mm, fd):
        n = processes if processes is not None else _processes(_estimate(mm, path))
    with open_report(path) as (mm, fd):
        parts = _decoded(mm, fd, path, catalog, n, chunk, progress, blocks, planned)
    return _checked(path, parts)


def _checked(
    path: Path, parts: list[tuple[list[pd.DataFrame], list[tuple[int, ...]]]]
) -> pd.DataFrame:
    """The raw table of the decoded ``parts`` (:func:`_decoded`) of the report ``path``, once every
    launch record is checked in file order (:func:`~.framing.check_records`, one more pass)."""
    records = [r for _, part in parts for r in part]
    with open_report(path) as (mm, _):
        check_records(path, mm, records)
    df = _joined([frame for part_frames, _ in parts for frame in part_frames])
    df.attrs[LEARNED] = [r[0] for r in records if r[6]]
    return df


def _decoded(
    mm: Any,
    fd: int,
    path: Path,
    catalog: Catalog,
    n: int,
    chunk: int,
    progress: Callable[[int], Callable[..., None]] | None,
    blocks: list[Block] | None,
    planned: Callable[[int, list[int]], None] | None = None,
) -> list[tuple[list[pd.DataFrame], list[tuple[int, ...]]]]:
    """The report walked once (:func:`_plan`, every block appended to ``blocks`` when given) and its
    slices decoded on ``n`` processes (:func:`decode_slice`'s results, in order); the workers start
    (import ncuroof) while the blocks are walked (their headers read through ``fd``); ``planned``
    is told the number of launches in between."""
    with Workers(n - 1, __name__) as workers:
        plan = _plan(mm, path, blocks, fd)
        if not plan.total:
            raise InputError(
                "holds no kernel launches; check ncu's --kernel-name/--launch-count filters",
                path,
            )
        parts = _slices(plan, len(workers.workers) + 1, len(mm))  # those that started
        if planned is not None:
            planned(plan.total, [int(part.marks[0][2]) for part in parts if len(part.marks)])
        advance = progress(plan.total) if progress is not None else None
        return workers.run(
            decode_slice, [(path, catalog, part, chunk, plan.version) for part in parts], advance
        )
