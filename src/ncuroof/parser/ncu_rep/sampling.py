"""PM sampling time series of an ``.ncu-rep``/``.ncu-repz`` report (issue 51).

From ncu 2024.1 the ``PmSampling`` and ``PmSampling_WarpStates`` sections store hardware counters
sampled every 1.5 to 16 us across the workload. Each series is an ordinary instanced metric of the
launch's result (field 13): its instances are (sample start timestamp, value), keyed by the
timestamp as a uint64 (ns, or cycles where ncu samples by cycles), and the metric message carries
field 4 (ncu's ``MetricCategory``) = 1, which ``ncu_report`` exposes as ``correlation_ids()``
holding the timestamps. The pass groups' workload spans are metrics of the same kind
(``profiler__timestamp_workload_start_<g>``/``_end_<g>``, one instance each), and the sampling
interval of each group is ``profiler__pmsampler_interval_time`` (ns) or ``_cycles``, keyed by the
group index.

The series are read in a pass of their own, only for reports that hold them (the launch table's
``pm_sample_interval_s``), so a report without sampling reads as before. Verified value for value
against ``ncu_report`` (``tests/integration/test_sampling.py``) on every shared report that has
series.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from google.protobuf.message import DecodeError

from ...errors import ReportFormatError
from .compressed import is_compressed
from .framing import MAGIC, results, walk
from .framing import first_block as _first
from .protobuf import classes, field_spans
from .protobuf import varint as _varint
from .source import check_report, open_report

__all__ = ["read_series", "holds_series", "SERIES_COLUMNS", "INTERVAL_METRICS"]

#: The long table :func:`read_series` returns: one row per (launch, metric, instance).
SERIES_COLUMNS = ("launch_id", "metric", "key", "value")

#: The sampling interval per pass group (instances keyed by group index, category 0).
INTERVAL_METRICS = ("profiler__pmsampler_interval_time", "profiler__pmsampler_interval_cycles")

_TIMED = b"\x20\x01"  # field 4 (category) = 1: instances keyed by timestamp, written last


def _category(raw: bytes) -> int | None:
    """Field 4 of a metric result (None when absent); raises ValueError for a broken message."""
    for number, wire, value, _, _ in field_spans(raw):
        if number == 4 and wire == 0:
            return value
    return None


def _number(v: Any) -> float:
    kind = v.WhichOneof("kind")
    if kind in ("d", "f", "u32", "u64"):
        return float(getattr(v, kind))
    return float("nan")


def _key(v: Any) -> int:
    kind = v.WhichOneof("kind")
    if kind not in ("u64", "u32"):
        raise DecodeError(f"a sampled instance keyed by {kind}, not a timestamp")
    return int(getattr(v, kind))


class _Names:
    """Which of a report's strings name metrics to keep: the interval metrics by name, and the
    results that end with the category field = 1 (``20 01``: protobuf writes field 4 after the
    instances), confirmed when read (:func:`_rows`); a name found not timed is skipped after."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.untimed: set[str] = set()

    def add(self, header: Any) -> None:
        if header.HasField("strings"):
            self.strings += [s.decode("utf-8", "surrogateescape") for s in header.strings.strings]

    def kept(self, raw: bytes) -> str | None:
        mid = _varint(raw, 1)[0]
        if mid >= len(self.strings):
            raise DecodeError(f"a metric names string {mid}, beyond the string table")
        name = self.strings[mid]
        if name in INTERVAL_METRICS:
            return name
        return name if raw.endswith(_TIMED) and name not in self.untimed else None


def _head(raw: bytes) -> int:
    """Where a metric result's first instance (field 3) starts: after its name (field 1) and its
    value (field 2, when present); -1 when the result does not start that way."""
    at = _varint(raw, 1)[1]  # past field 1's varint
    if raw[at : at + 1] == b"\x12":  # field 2: the value message
        n, at = _varint(raw, at + 1)
        at += n
    return at if raw[at : at + 1] == b"\x1a" else -1


def _regular(raw: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """The instances of a timed series read at once, when they all have the one layout ncu writes
    for a sample: ``1a L | 0a K 28 <key varint, K-1 bytes> | 12 09 19 <double>`` then the category
    (``20 01``) last; None for any other layout (read through protobuf then)."""
    at = _head(raw)
    if at < 0 or len(raw) < at + 2 or not raw.endswith(_TIMED):
        return None
    size, klen = raw[at + 1] + 2, raw[at + 3]
    body = len(raw) - 2 - at
    if size >= 0x80 + 2 or body % size or size != klen + 2 + 2 + 11 or not 2 <= klen <= 11:
        return None
    rows = np.frombuffer(raw, np.uint8, body, at).reshape(-1, size)
    v = 4 + klen  # where the value message starts
    fixed = {0: 0x1A, 1: size - 2, 2: 0x0A, 3: klen, 4: 0x28, v: 0x12, v + 1: 0x09, v + 2: 0x19}
    if any((rows[:, c] != b).any() for c, b in fixed.items()):
        return None
    key = rows[:, 5:v].astype(np.uint64)
    if (key[:, :-1] < 0x80).any() or (key[:, -1] >= 0x80).any():
        return None  # not a varint of exactly klen - 1 bytes
    shifts = np.arange(0, 7 * key.shape[1], 7, dtype=np.uint64)
    keys = np.bitwise_or.reduce((key & np.uint64(0x7F)) << shifts, axis=1)
    values = np.ascontiguousarray(rows[:, v + 3 : v + 11]).view("<f8").ravel()
    return keys.astype(np.int64), values


def _rows(result: Any, launch: int, names: _Names, metric_cls: Any, out: list[tuple]) -> None:
    """Append ``result``'s kept metrics to ``out`` as (launch, name, keys, values); a metric given
    twice in one result is read from its last copy, as ``ncu_report`` keeps it."""
    kept: dict[str, bytes] = {}
    for raw in result.metrics:
        raw = bytes(raw)
        if raw[:1] != b"\x08":
            raise DecodeError("a metric result does not start with its name")
        name = names.kept(raw)
        if name is not None:
            kept.pop(name, None)
            kept[name] = raw
    for name, raw in kept.items():
        fast = _regular(raw)  # its layout read to the end: the category is field 4
        if fast is None:
            if name not in INTERVAL_METRICS and _category(raw) != 1:
                names.untimed.add(name)
                continue
            insts = metric_cls.FromString(raw).instances
            fast = (
                np.array([_key(i.key) for i in insts], dtype=np.int64),
                np.array([_number(i.value) for i in insts], dtype=np.float64),
            )
        out.append((launch, name, *fast))


def holds_series(path: str | Path) -> bool:
    """Whether ``path`` is a report the series can be read from (``.ncu-rep`` or ``.ncu-repz`` by
    its first bytes; an ncu CSV export lists the sampling interval but holds no series)."""
    try:
        with Path(path).open("rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head[:4] == MAGIC or is_compressed(head)


def read_series(path: str | Path) -> pd.DataFrame:
    """Every launch's PM sampling series, pass-group spans and sampling intervals.

    Parameters
    ----------
    path : str or Path
        A ``.ncu-rep`` or ``.ncu-repz`` report.

    Returns
    -------
    DataFrame
        :data:`SERIES_COLUMNS`: ``launch_id`` (int64, the launch's 0-based index in the report, as
        the launch table's), ``metric`` (ncu's name, e.g.
        ``pmsampling:dram__bytes.sum.per_second``), ``key`` (int64: the sample's start timestamp in
        ns, or cycles; for :data:`INTERVAL_METRICS` the pass group) and ``value`` (float64, ncu's
        base units), in file order. Empty for a report without sampling.

    Raises
    ------
    InputError, ReportFormatError
        For a missing, foreign or damaged report (one line naming the file).
    """
    path = Path(path)
    check_report(path)
    result_cls, metric_cls = classes()["Result"], classes()["Metric"]
    names, out, launch = _Names(), [], 0
    with open_report(path) as (mm, _):
        pos, _version = _first(mm, path)
        for block, _pos, header, start in walk(mm, path, pos, 0, None, None):
            names.add(header)
            if not header.num_results:
                continue
            try:
                for _off, buf in results(mm, start, start + header.payload_size, header):
                    _rows(result_cls.FromString(buf), launch, names, metric_cls, out)
                    launch += 1
            except (DecodeError, ValueError, IndexError) as exc:
                raise ReportFormatError(
                    f"launch {launch} in block {block}: its sampled series cannot be decoded"
                    f" ({exc}); re-run ncu or read without the samples",
                    path,
                ) from exc
    return _frame(out)


def _frame(parts: list[tuple[int, str, np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """The long table of the (launch, metric, keys, values) parts."""
    sizes = np.array([len(p[2]) for p in parts], dtype=np.int64)
    return pd.DataFrame(
        {
            "launch_id": np.repeat(np.array([p[0] for p in parts], dtype=np.int64), sizes),
            "metric": np.repeat(np.array([p[1] for p in parts], dtype=object), sizes),
            "key": np.concatenate([p[2] for p in parts]) if parts else np.empty(0, np.int64),
            "value": np.concatenate([p[3] for p in parts]) if parts else np.empty(0),
        }
    )
