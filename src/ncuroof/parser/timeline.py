"""Production timelines: the kernel launches of a real run, from a PyTorch profiler trace or an
Nsight Systems export (issue 24), as the :data:`ncuroof.schema.TIMELINE_LAUNCH` table.

Two formats, told apart by their content:

* a PyTorch profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``. Its ``traceEvents`` are
  streamed through ``ijson`` (C backend ``yajl2_c``): one event at a time, never the whole
  document in memory. Only the events that make the table are kept, in columns: ``kernel``
  events, the ``cuda_runtime``/``cuda_driver`` calls that launched them (same ``correlation``,
  which is also what the ``ac2g`` flow events link), the ``cpu_op`` events and the
  ``user_annotation`` ranges and ``python_function`` module scopes of the launching thread;
* an Nsight Systems SQLite export (``nsys export --type sqlite``), read with one SQL query joining
  ``CUPTI_ACTIVITY_KIND_KERNEL`` to ``StringIds`` and ``CUPTI_ACTIVITY_KIND_RUNTIME``; NVTX push/pop
  ranges come from ``NVTX_EVENTS``. A ``.nsys-rep`` is exported first when ``nsys`` is on PATH.

The launching operator (``op``) is the innermost ``cpu_op`` open on the launching thread when the
runtime call was made; ``scope`` and ``nvtx`` are the paths of the ranges open on that thread then
(:func:`_enclosing`). This needs no ``External id`` convention (traces differ on what it names).
A kernel whose runtime call is not in the trace is placed by the start of its ``ac2g`` flow, else
given the ``cpu_op`` of its ``External id`` (unless that id is its correlation, as in traces that
number runtime calls with it); a kernel with nothing open on the CPU side takes its scope from the
``gpu_user_annotation`` ranges of its stream.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import zlib
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from .. import catalog
from ..errors import InputError
from ..fmt import path_text
from ..schema import TIMELINE_LAUNCH, validate_timeline
from . import graphs as _graphs
from .files import regular_file

__all__ = [
    "read_timeline",
    "read_operator_launches",
    "NoShapesError",
    "busy_time",
    "same_gpu",
    "FORMATS",
]

#: Values of the ``format`` attribute of a timeline table.
FORMATS = ("kineto", "nsys-sqlite")

_SQLITE_MAGIC = b"SQLite format 3\x00"
_GZIP_MAGIC = b"\x1f\x8b"
_PATH_SEP = " > "
# Kineto event categories (older PyTorch releases capitalised some of them).
_KERNEL = frozenset({"kernel", "Kernel"})
_OP = frozenset({"cpu_op", "Operator"})
_LAUNCH = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
_SCOPE = frozenset({"user_annotation"})
#: Kineto's copies and memsets on the GPU (issue 52: every GPU second in a row).
_TRANSFER = frozenset({"gpu_memcpy", "gpu_memset"})
_GPU_SCOPE = "gpu_user_annotation"
_FLOW = "ac2g"
_PYTHON = "python_function"
# Head of a Kineto file searched for its metadata (deviceProperties precede traceEvents).
_HEAD_BYTES = 1 << 22
_READ_BYTES = 1 << 20
# ijson reads this much at a time (its default: larger buffers measured slower).
_JSON_BYTES = 1 << 16
_NAN = float("nan")
_NO_DIMS = (_NAN, _NAN, _NAN)


def read_timeline(
    path: str | Path,
    device: int | None = None,
    progress: Callable[[int], Callable[..., None]] | None = None,
    *,
    report_gpu: str | None = None,
) -> pd.DataFrame:
    """Read the kernel launches of one device of a production timeline.

    Parameters
    ----------
    path : str or Path
        A PyTorch profiler trace (``.json``, ``.json.gz``), an Nsight Systems SQLite export
        (``.sqlite``) or an Nsight Systems report (``.nsys-rep``, exported with ``nsys`` from PATH).
    device : int, optional
        CUDA device index (``--device N``). Default: the only device with kernels, else the one
        whose name matches ``report_gpu``.
    progress : callable, optional
        Progress-bar factory ``progress(total) -> advance(n)``; advanced by the bytes of a Kineto
        trace as they are read.
    report_gpu : str, optional
        The ncu report's GPU name, to choose among several devices.

    Returns
    -------
    DataFrame
        One row per kernel launch on the device, columns :data:`ncuroof.schema.TIMELINE_LAUNCH`
        (times in s: Kineto's µs x 1e-6, nsys's ns x 1e-9), sorted by start. ``attrs``: ``format``
        (one of :data:`FORMATS`), ``path``, ``device``, ``gpu_name`` (Kineto ``deviceProperties`` /
        nsys ``TARGET_INFO_GPU``, None when absent), ``devices`` (devices with kernels), ``span_s``
        (first kernel start to last kernel end on the device), ``busy_s`` (length of the union of
        the kernel intervals: the idle share of the timeline is ``1 - busy_s / span_s``),
        ``shapes`` (a Kineto cpu_op carries ``Input Dims``: issue 41's analytic work can be made).

    Raises
    ------
    InputError
        Missing or unknown file, truncated gzip or JSON, a trace without kernel events, an SQLite
        file without the kernel table, an unknown device or several devices and no way to choose.
    """
    path = Path(path)
    fmt = _sniff(path)
    if fmt == "nsys-rep":
        return _read_nsys_rep(path, device, progress, report_gpu)
    launches, gpus, shapes = _read_launches(path, fmt, progress)
    _whole_numbers(launches, path)
    devices = sorted(int(d) for d in launches["device"].dropna().unique())
    chosen = _choose_device(devices, gpus, device, report_gpu, path)
    on_device = (launches["device"] == chosen).to_numpy(dtype=bool, na_value=False)
    out = launches if on_device.all() else launches[on_device]
    del launches
    out, start, end = _by_start(out)
    t0 = start.min()
    where = path_text(path)
    _durations_a_gpu_can_have(out["duration_s"].to_numpy(dtype=float, na_value=np.nan), path)
    out = validate_timeline(out.assign(start_s=start - t0).reset_index(drop=True), where)
    out.attrs = {"format": fmt, "path": where, "device": chosen, "gpu_name": gpus.get(chosen)}
    out.attrs.update(devices=devices, span_s=float(end.max() - t0), busy_s=busy_time(start, end))
    out.attrs["shapes"] = shapes
    return out


def _read_launches(
    path: Path, fmt: str, progress: Callable[[int], Callable[..., None]] | None
) -> tuple[pd.DataFrame, dict[int, str], bool]:
    """The launches of every device of a Kineto trace or nsys SQLite export (``fmt``), in the
    :data:`ncuroof.schema.TIMELINE_LAUNCH` columns; the GPU names by device; whether the trace
    carries ``Input Dims`` (``shapes``). InputError when a limit is hit."""
    try:
        launches, gpus = _read_nsys(path) if fmt == "nsys-sqlite" else _read_kineto(path, progress)
    except _LimitHit as exc:
        raise InputError(f"cannot be read within ncuroof's limits: {exc}", path) from None
    shapes = bool(launches.attrs.get("shapes", False))
    return launches[list(TIMELINE_LAUNCH)], gpus, shapes


def _read_nsys_rep(
    path: Path,
    device: int | None,
    progress: Callable[[int], Callable[..., None]] | None,
    report_gpu: str | None,
) -> pd.DataFrame:
    """:func:`read_timeline` of an ``.nsys-rep``: exported to SQLite in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="ncuroof-nsys-") as tmp:
        exported = _export_nsys_rep(path, Path(tmp))
        try:
            out = read_timeline(exported, device, progress, report_gpu=report_gpu)
        except InputError as exc:
            raise InputError(f"exported to SQLite: {exc.message}", path) from None
    out.attrs["path"] = path_text(path)
    return out


def _by_start(out: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The launches sorted by start (stable; left as they are when already sorted), their starts
    and ends (s)."""
    start = out["start_s"].to_numpy(dtype=float)
    if np.any(start[1:] < start[:-1]):
        out = out.iloc[np.argsort(start, kind="stable")]
        start = out["start_s"].to_numpy(dtype=float)
    return out, start, start + out["duration_s"].to_numpy(dtype=float)


def _durations_a_gpu_can_have(dur: np.ndarray, path: Path) -> None:
    """InputError for a kernel duration no GPU timer gives: above 0 and below
    ``[limits] timeline_min_duration_s``, or above ``timeline_max_duration_s`` (issue 53: a
    1e-300 us kernel, a 584-year nsys row)."""
    lim = catalog.limits()
    low, high = lim["timeline_min_duration_s"], lim["timeline_max_duration_s"]
    with np.errstate(invalid="ignore"):
        odd = ((dur > 0) & (dur < low)) | (dur > high)
    if odd.any():
        raise InputError(
            f"{int(odd.sum())} kernel events last {dur[odd][0]:.3g} s, which no GPU timer gives"
            f" (limits.timeline_min_duration_s = {low:g}, timeline_max_duration_s = {high:g} in"
            " metrics/thresholds.toml); the trace is damaged or hand-made: re-export it",
            path,
        )


def _whole_numbers(launches: pd.DataFrame, path: Path) -> None:
    """InputError when a device, stream, grid, block or correlation is not a whole number an int64
    holds (``grid [1.5, 1, 1]``, ``device 1e20``): a damaged or hand-made trace."""
    for name, col in TIMELINE_LAUNCH.items():
        if col.dtype != "Int64":
            continue
        v = pd.to_numeric(launches[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        given = ~np.isnan(v)
        bad = given & ((np.abs(v) >= 2.0**53) | (v != np.round(v)))
        if bad.any():
            raise InputError(
                f"{int(bad.sum())} kernel events with a {name} that is not a whole number below"
                f" 2**53 (e.g. {v[bad][0]:g}); re-export the trace",
                path,
            )


def busy_time(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of the intervals ``[start, end)``: the time at least one kernel runs.

    Parameters
    ----------
    start, end : ndarray of float, shape (n,)
        Interval bounds (s), in any order.

    Returns
    -------
    float
        Summed length of the merged intervals (s); 0 for no interval.
    """
    if len(start) == 0:
        return 0.0
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum.accumulate(end[order])
    gaps = np.clip(s[1:] - e[:-1], 0.0, None)
    return float(e[-1] - s[0] - gaps.sum())


# --- format and device -------------------------------------------------------------------------


def _sniff(path: Path) -> str:
    """The format of ``path`` from its first bytes (and the ``.nsys-rep`` suffix)."""
    regular_file(
        path,
        "pass a PyTorch profiler trace (.json, .json.gz) or an Nsight Systems export (.sqlite)",
    )
    if path.suffix == ".nsys-rep":
        return "nsys-rep"
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise InputError(
            f"cannot read ({exc.strerror}); check the file's permissions", path
        ) from None
    if head.startswith(_SQLITE_MAGIC):
        return "nsys-sqlite"
    if head.startswith(_GZIP_MAGIC) or head.lstrip()[:1] in (b"{", b"["):
        return "kineto"
    raise InputError(
        "unknown timeline format; pass a PyTorch profiler trace (.json, .json.gz) or an Nsight"
        " Systems SQLite export (nsys export --type sqlite)",
        path,
    )


def _export_nsys_rep(path: Path, outdir: Path) -> Path:
    """Export an ``.nsys-rep`` to SQLite in ``outdir`` with ``nsys`` from PATH."""
    out = outdir / (path.stem + ".sqlite")
    command = ["nsys", "export", "--type", "sqlite", "--output", str(out), str(path)]
    if shutil.which("nsys") is None:
        raise InputError(
            f"nsys is not on PATH; export the report with: nsys export --type sqlite {path} and"
            " pass the .sqlite file",
            path,
        )
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(
            f"nsys export failed ({last}); export it by hand: {' '.join(command[:4])} {path}", path
        )
    return out


def _choose_device(
    have: list[int], gpus: dict[int, str], device: int | None, report_gpu: str | None, path: Path
) -> int:
    """The device to read among those with kernels (``have``): ``device``, else the only one, else
    the one named ``report_gpu``."""
    listing = ", ".join(f"{d} ({gpus[d]})" if d in gpus else str(d) for d in have)
    if device is not None:
        if device not in have:
            raise InputError(
                f"no kernels on device {device}; devices with kernels: {listing}", path
            )
        return int(device)
    if len(have) == 1:
        return have[0]
    if report_gpu:
        named = [d for d in have if same_gpu(gpus.get(d), report_gpu)]
        if len(named) == 1:
            return named[0]
    raise InputError(f"kernels on {len(have)} devices: {listing}; choose one with --device N", path)


def same_gpu(name: str | None, report_gpu: str) -> bool:
    """Whether a timeline's GPU name and a report's name the same product (case
    and 'NVIDIA ' aside).

    Parameters
    ----------
    name : str or None
        The timeline's device name (Kineto ``deviceProperties``, nsys ``TARGET_INFO_GPU``).
    report_gpu : str
        The report's ``device__attribute_display_name``.

    Returns
    -------
    bool
        False when ``name`` is empty or None.
    """
    if not name:
        return False

    def norm(s: str) -> str:
        return s.lower().removeprefix("nvidia ").strip()

    return norm(name) == norm(report_gpu)


# --- nsys SQLite -------------------------------------------------------------------------------

_NSYS_QUERY = """
SELECT k.start AS start, k.end AS end, k.deviceId AS device, k.streamId AS stream, k.correlationId AS correlation,
       k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z, k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z,
       k.{name} AS name_id, r.globalTid AS tid, r.start AS launch
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
LEFT JOIN {runtime} AS r ON r.correlationId = k.correlationId{same_process}
"""  # noqa: E501
_NAMES_QUERY = (
    "SELECT id, value FROM StringIds WHERE id IN (SELECT DISTINCT {name} FROM"
    " CUPTI_ACTIVITY_KIND_KERNEL)"
)
# Rows fetched from SQLite at a time: each batch becomes numeric columns before the next is fetched.
_SQL_ROWS = 100_000
# Events converted to Python values at a time by the range sweep.
_SWEEP_ROWS = 65_536
_NVTX_QUERY = """
SELECT e.globalTid AS tid, e.start AS start, e.end AS end, COALESCE(e.text, s.value) AS label
FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId
WHERE e.eventType = 59 AND e.end IS NOT NULL
"""
# One runtime call per correlation ID (of a process: IDs are per process), so no
# kernel is counted twice.
_RUNTIME = (
    "(SELECT correlationId, globalTid, MIN(start) AS start FROM CUPTI_ACTIVITY_KIND_RUNTIME "
    "GROUP BY {process}correlationId)"
)
_NO_RUNTIME = "(SELECT NULL AS globalTid, NULL AS start, NULL AS correlationId)"


def _read_nsys(path: Path) -> tuple[pd.DataFrame, dict[int, str]]:
    """The launches of every device of an nsys SQLite export and the GPU names by device."""
    raw, names, nvtx, gpus = _query_nsys(path)
    if raw.empty:
        raise InputError(
            "the export holds no kernel launches (CUPTI_ACTIVITY_KIND_KERNEL is empty)", path
        )
    missing = ~raw["name_id"].isin(names.keys())
    if missing.any():
        raise InputError(
            f"{int(missing.sum())} kernels name a string ID that StringIds does not hold (e.g."
            f" {raw['name_id'][missing].iloc[0]:.0f}): the export is damaged; re-export it with"
            " nsys export --type sqlite",
            path,
        )
    base = raw["start"].min()
    out = raw.assign(
        kernel_name=raw["name_id"].map(names),
        start_s=(raw["start"] - base) * 1e-9,
        duration_s=(raw["end"] - raw["start"]) * 1e-9,
        op=pd.NA,
        scope=pd.NA,
    )
    out["nvtx"] = (
        pd.NA
        if nvtx is None or nvtx.empty
        else _enclosing(nvtx, raw[["tid", "launch"]].rename(columns={"launch": "start"}))[1]
    )
    return out, gpus


def _query_nsys(path: Path) -> tuple[pd.DataFrame, Any, pd.DataFrame | None, dict[int, str]]:
    """The kernel rows, the kernel names by string ID, the NVTX ranges (None without the table) and
    the GPU names by device of an nsys SQLite export, read within the query budget."""
    try:
        # as a URI: '#', '?' or '%' in a path are escaped
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        budget = _bounded(con)
        with contextlib.closing(con):
            tables = _nsys_tables(con, path)
            query, name = _kernel_query(con, tables)
            raw = _numbers(
                con,
                query,
                con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0],
            )
            names = _names(con, _NAMES_QUERY.format(name=name))
            nvtx = pd.read_sql_query(_NVTX_QUERY, con) if "NVTX_EVENTS" in tables else None
            gpus = _nsys_gpus(con, tables)
    except sqlite3.DatabaseError as exc:
        if budget.hit is not None:
            raise _LimitHit(budget.hit) from None
        raise InputError(
            f"not a readable SQLite database ({exc}); re-export it with nsys export --type sqlite",
            path,
        ) from None
    except (ValueError, TypeError) as exc:  # TEXT or a BLOB where nsys writes numbers
        raise InputError(
            f"a kernel column holds a value that is not a number ({str(exc)[:80]}); re-export it"
            " with nsys export --type sqlite",
            path,
        ) from None
    return raw, names, nvtx, gpus


def _nsys_tables(con: sqlite3.Connection, path: Path) -> set[str]:
    """The export's tables; InputError without the kernel or the string table."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        raise InputError(
            "no CUPTI_ACTIVITY_KIND_KERNEL table: the export holds no CUDA kernels (profile"
            " with nsys profile --trace=cuda and export with nsys export --type sqlite)",
            path,
        )
    if "StringIds" not in tables:  # only real tables are read: a view can run forever
        raise InputError(
            "no StringIds table (a view of that name is not read); re-export it with nsys"
            " export --type sqlite",
            path,
        )
    return tables


def _kernel_query(con: sqlite3.Connection, tables: set[str]) -> tuple[str, str]:
    """The query of the kernel rows for this export's columns, and the kernel name's column."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    by_process = "globalPid" in cols and "CUPTI_ACTIVITY_KIND_RUNTIME" in tables
    runtime = (
        _RUNTIME.format(process="globalTid >> 24, " if by_process else "")
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables
        else _NO_RUNTIME
    )
    same = " AND (r.globalTid >> 24) = (k.globalPid >> 24)" if by_process else ""
    name = "demangledName" if "demangledName" in cols else "shortName"
    return _NSYS_QUERY.format(name=name, runtime=runtime, same_process=same), name


class _Budget:
    """The time and virtual-machine steps an SQLite connection may spend ([limits] ``sql_seconds``,
    ``sql_steps_millions``): its progress handler interrupts a query past either (a recursive view,
    a join without end), also on Ctrl-C, which a long SQLite query otherwise ignores."""

    _EVERY = 100_000  # steps between calls of the handler

    def __init__(self) -> None:
        lim = catalog.limits()
        self.seconds, self.calls = lim["sql_seconds"], lim["sql_steps_millions"] * 1e6 / self._EVERY
        self.start, self.n, self.hit = time.monotonic(), 0, None

    def __call__(self) -> int:
        self.n += 1
        if time.monotonic() - self.start > self.seconds:
            self.hit = catalog.over_limit(
                "sql_seconds", f"its queries ran more than {self.seconds:g} s"
            )
        elif self.n > self.calls:
            self.hit = catalog.over_limit(
                "sql_steps_millions", "its queries took more SQLite steps than allowed"
            )
        return self.hit is not None


def _bounded(con: sqlite3.Connection) -> _Budget:
    budget = _Budget()
    con.set_progress_handler(budget, _Budget._EVERY)
    return budget


def _names(con: sqlite3.Connection, query: str) -> dict[Any, str]:
    """``id -> value`` of StringIds, each value at most ``[limits] name_chars`` long
    (longer is refused)."""
    limit = int(catalog.limits()["name_chars"])
    out = {}
    for i, v in con.execute(f"SELECT id, substr(value, 1, {limit + 1}) FROM ({query})"):
        v = "" if v is None else str(v)
        if len(v) > limit:
            raise _LimitHit(
                catalog.over_limit(
                    "name_chars", f"a kernel name of StringIds has more than {limit} characters"
                )
            )
        out[i] = v
    return out


def _numbers(con: sqlite3.Connection, query: str, rows: int) -> pd.DataFrame:
    """The result of a query of at most ``rows`` rows of numbers as float64 columns (NULL as NaN),
    filled a batch at a time into one array: no Python object per value outlives its batch."""
    cursor = con.execute(query)
    data = np.empty((rows, len(cursor.description)))
    done = 0
    while batch := cursor.fetchmany(_SQL_ROWS):
        data[done : done + len(batch)] = np.array(batch, dtype=np.float64)
        done += len(batch)
    return pd.DataFrame(data[:done], columns=[d[0] for d in cursor.description], copy=False)


def _nsys_gpus(con: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    """GPU names by device ID from ``TARGET_INFO_GPU`` (empty when the table is absent)."""
    if "TARGET_INFO_GPU" not in tables:
        return {}
    return {
        int(i): str(n)
        for i, n in con.execute("SELECT id, name FROM TARGET_INFO_GPU")
        if i is not None and n
    }


# --- Kineto -------------------------------------------------------------------------------------


class _Counted(io.RawIOBase):
    """A binary file that reports the bytes read to a progress callback."""

    def __init__(self, raw: BinaryIO, advance: Callable[..., None] | None) -> None:
        self._raw, self._advance = raw, advance

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)
        if self._advance is not None and n:
            self._advance(n)
        return n or 0


class _Consumed:
    """A binary file counting the bytes read from it (``consumed``)."""

    def __init__(self, f: BinaryIO) -> None:
        self._f, self.consumed = f, 0

    def read(self, size: int = -1) -> bytes:
        b = self._f.read(size)
        self.consumed += len(b)
        return b

    def readinto(self, b: Any) -> int:
        n = self._f.readinto(b) or 0
        self.consumed += n
        return n

    def readable(self) -> bool:
        return True


class _LimitHit(Exception):
    """An input past one of the ``[limits]`` of ``metrics/thresholds.toml`` (the
    message says which)."""


# Every byte but the ones that open or close a JSON string, array or object.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))


class _Guard(io.RawIOBase):
    """The decompressed bytes of a trace as they stream to the JSON parser, checked against the
    ``[limits]``: the decompressed size and ratio (a gzip bomb) and the nesting depth of the JSON
    (a parser's work per token grows with the depth), all without a copy of the data.

    The depth is counted a chunk at a time with C-speed byte operations: escaped backslashes and
    quotes are dropped, then everything but quotes and brackets, and numpy counts the brackets
    outside strings.
    """

    def __init__(self, inner: BinaryIO, counted: _Consumed, zipped: bool) -> None:
        lim = catalog.limits()
        self._inner, self._counted, self._zipped = inner, counted, zipped
        self._max_bytes, self._ratio, self._floor = (
            lim["decompressed_bytes"],
            lim["decompressed_ratio"],
            lim["decompressed_floor_bytes"],
        )
        self._max_depth = int(lim["json_depth"])
        self._max_chars = int(lim["name_chars"])
        self._out = self._depth = self._quotes = self._open = 0
        self._carry = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._inner.readinto(b) or 0
        self._out += n
        if self._out > self._max_bytes:
            raise _LimitHit(
                catalog.over_limit(
                    "decompressed_bytes",
                    f"it decompresses to more than {self._max_bytes:.3g} bytes",
                )
            )
        if (
            self._zipped
            and self._out > self._floor
            and self._out > self._ratio * max(self._counted.consumed, 1)
        ):
            raise _LimitHit(
                catalog.over_limit(
                    "decompressed_ratio",
                    f"it decompresses to more than {self._ratio:g} times its size (a gzip bomb?)",
                )
            )
        if n:
            self._nesting(bytes(memoryview(b)[:n]))
        return n

    def _nesting(self, data: bytes) -> None:
        data = self._carry + data
        tail = len(data) - len(data.rstrip(b"\\"))  # a backslash run may go on in the next chunk
        self._carry, data = (data[-tail:], data[:-tail]) if tail else (b"", data)
        clean = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        self._strings(np.flatnonzero(np.frombuffer(clean, dtype=np.uint8) == ord('"')), len(clean))
        marks = clean.translate(None, _NOT_STRUCTURE)
        if not marks:
            return
        a = np.frombuffer(marks, dtype=np.uint8)
        quote = a == ord('"')
        outside = (np.cumsum(quote) + self._quotes) % 2 == 0
        step = (outside & ((a == ord("[")) | (a == ord("{")))).astype(np.int64) - (
            outside & ((a == ord("]")) | (a == ord("}")))
        )
        depth = self._depth + np.cumsum(step)
        if depth.max() > self._max_depth:
            raise _LimitHit(
                catalog.over_limit(
                    "json_depth", f"its JSON nests deeper than {self._max_depth} levels"
                )
            )
        self._depth, self._quotes = int(depth[-1]), (self._quotes + int(quote.sum())) % 2

    def _strings(self, quotes: np.ndarray, size: int) -> None:
        """Check the length of the JSON strings of a chunk (``quotes``: its unescaped quotes) and of
        the one still open from the chunks before: the parser's work on one string grows faster than
        its length."""
        bounds = np.concatenate([[-1 - self._open], quotes]) if self._quotes else quotes
        closed = bounds[1::2][: len(bounds) // 2] - bounds[0::2][: len(bounds) // 2] - 1
        self._open = size - int(bounds[-1]) - 1 if len(bounds) % 2 else 0
        longest = max(int(closed.max()) if len(closed) else 0, self._open)
        if longest > self._max_chars:
            raise _LimitHit(
                catalog.over_limit(
                    "name_chars", f"a JSON string has more than {self._max_chars} characters"
                )
            )


@contextlib.contextmanager
def _open_trace(
    path: Path, progress: Callable[[int], Callable[..., None]] | None
) -> Iterator[BinaryIO]:
    """The decompressed bytes of a Kineto trace, plain or gzipped; read errors become InputError."""
    advance = progress(path.stat().st_size) if progress is not None else None
    with path.open("rb") as raw:
        zipped = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        counted = io.BufferedReader(_Counted(raw, advance), _READ_BYTES)
        try:
            consumed = _Consumed(
                counted
            )  # the ratio is of the bytes gzip consumed, not of what the buffer read ahead
            yield io.BufferedReader(
                _Guard(gzip.GzipFile(fileobj=consumed) if zipped else consumed, consumed, zipped),
                _JSON_BYTES,
            )
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(
                f"truncated or damaged gzip file ({exc}); copy or save the trace again", path
            ) from None
        except OSError as exc:
            raise InputError(f"cannot read ({exc}); copy the trace again", path) from None


def _gpu_names(path: Path) -> dict[int, str]:
    """GPU names by device from the ``deviceProperties`` of a Kineto trace, wherever the key is:
    the head first (Kineto writes it before ``traceEvents``), else one more streamed pass over the
    whole trace (most traces we met have it after ``traceEvents``: 6 of 8), which builds no event
    and stays within the streaming read's memory bound."""

    with _open_trace(path, None) as fh:
        head = fh.read(_HEAD_BYTES)
    names = _device_properties(io.BytesIO(head))
    if not names and len(head) == _HEAD_BYTES:
        with _open_trace(path, None) as fh:
            names = _device_properties(fh)
    return names


def _device_properties(fh: BinaryIO) -> dict[int, str]:
    """The ``{id: name}`` of the ``deviceProperties`` items of a Kineto JSON stream; what cannot
    be read (the head ends mid-document, a damaged file: the main scan says so) names none."""
    import ijson

    names: dict[int, str] = {}
    with contextlib.suppress(ijson.JSONError, InputError):
        for prop in ijson.items(fh, "deviceProperties.item", use_float=True, buf_size=_JSON_BYTES):
            with contextlib.suppress(
                TypeError, ValueError, OverflowError
            ):  # an id that is no device number names none
                if isinstance(prop, dict) and "id" in prop and prop.get("name"):
                    names[int(prop["id"])] = str(prop["name"])[:256]
    return names


class _KinetoScan:
    """Columns of the Kineto events kept, filled one streamed event at a time.

    Numbers go to ``array('d')`` columns (8 bytes a value, NaN when absent) and strings to codes
    into one table of distinct strings, so what is kept costs no Python object per event.
    """

    KERNEL = (
        "name",
        "thread",
        "ts",
        "dur",
        "device",
        "stream",
        "correlation",
        "external",
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        "comm",
    )
    LAUNCH = ("thread", "ts", "correlation")
    RANGE = ("thread", "ts", "dur", "name", "external")
    TRANSFER = ("name", "ts", "dur", "device", "bytes")

    def __init__(self, shapes: bool = False, graphs: bool = False) -> None:
        self.shapes = shapes
        # CUDA graphs (issue 52): each runtime call's name and the kernel it launches (its args'
        # ``kernel``), as string codes (NaN for none)
        self.graphs = graphs
        # distinct (Input Dims, Input type, Concrete Inputs) of the cpu_op events, by their text
        self.signatures: dict[str, int] = {}
        self.signature_values: list[tuple[Any, Any, Any]] = []
        self.with_shapes = False  # a cpu_op carries Input Dims
        self.strings: dict[Any, int] = {}
        self.name_chars = int(catalog.limits()["name_chars"])
        self.threads: dict[Any, int] = {}
        self.events = 0
        self.kernel = {c: array("d") for c in self.KERNEL}
        self.launch = {
            c: array("d") for c in (*self.LAUNCH, *(("call", "kernel") if graphs else ()))
        }
        self.op = {c: array("d") for c in (*self.RANGE, *(("shape",) if shapes else ()))}
        self.scope = {c: array("d") for c in self.RANGE}
        self.gpu_scope = {c: array("d") for c in self.RANGE}
        self.transfer = {c: array("d") for c in self.TRANSFER}
        # collective kernels' metadata (PyTorch >= 2.1 puts it in an NCCL/RCCL kernel's args):
        # (collective, in nelems, out nelems, group size, dtype); a kernel's ``comm`` indexes it
        self.comms: list[tuple[Any, Any, Any, Any, Any]] = []

    def add(self, e: dict) -> None:
        """File one event (a dict of the trace's ``traceEvents``) under its category, or drop it."""
        self.events += 1
        cat = e.get("cat")
        if cat in _KERNEL:
            self._kernel(e, e.get("args") or {})
        elif cat in _OP:
            self._range(self.op, e)
            if self.shapes:
                self._shape(e.get("args") or {})
            elif not self.with_shapes:
                self.with_shapes = "Input Dims" in (e.get("args") or {})
        elif cat in _LAUNCH:
            args = e.get("args") or {}
            self._launch(e, args.get("correlation", _NAN))
            if self.graphs:
                self.launch["call"].append(self._name(e))
                kernel = args.get("kernel")
                self.launch["kernel"].append(
                    self._name({"name": kernel}) if isinstance(kernel, str) else _NAN
                )
        elif cat == _FLOW:
            if e.get("ph") == "s":  # the flow from a launch call to its kernel starts at the call
                self._launch(e, e.get("id", _NAN))
                if self.graphs:
                    self.launch["call"].append(_NAN)
                    self.launch["kernel"].append(_NAN)
        elif cat in _SCOPE or (cat == _PYTHON and _is_module(e.get("name"))):
            self._range(self.scope, e)
        elif cat == _GPU_SCOPE:
            self._range(self.gpu_scope, e)
        elif cat in _TRANSFER:
            self._transfer(e, e.get("args") or {})

    def _transfer(self, e: dict, args: dict) -> None:
        col = self.transfer
        col["name"].append(self._name(e))
        for key in ("ts", "dur"):
            col[key].append(e.get(key, _NAN))
        device = args.get("device", e.get("pid"))
        col["device"].append(device if isinstance(device, (int, float)) else _NAN)
        size = args.get("bytes")
        col["bytes"].append(size if isinstance(size, (int, float)) else _NAN)

    def _launch(self, e: dict, correlation: Any) -> None:
        col = self.launch
        col["thread"].append(
            self.threads.setdefault((e.get("pid"), e.get("tid")), len(self.threads))
        )
        col["ts"].append(e.get("ts", _NAN))
        col["correlation"].append(correlation)

    def _kernel(self, e: dict, args: dict) -> None:
        col = self.kernel
        col["name"].append(self._name(e))
        col["thread"].append(
            self.threads.setdefault((e.get("pid"), e.get("tid")), len(self.threads))
        )
        for key, arg in (("ts", "ts"), ("dur", "dur")):
            col[key].append(e.get(arg, _NAN))
        for key, arg in (
            ("stream", "stream"),
            ("correlation", "correlation"),
            ("external", "External id"),
        ):
            col[key].append(args.get(arg, _NAN))
        device = args.get("device", e.get("pid"))  # Kineto's GPU rows: pid is the device
        col["device"].append(device if isinstance(device, (int, float)) else _NAN)
        for kind in ("grid", "block"):
            dims = args.get(kind)
            dims = dims if isinstance(dims, list) and len(dims) == 3 else _NO_DIMS
            for axis, value in zip("xyz", dims):
                col[f"{kind}_{axis}"].append(value)
        coll = args.get("Collective name")
        if isinstance(coll, str):
            self.comms.append(
                (
                    coll[: self.name_chars],
                    *(_number(args.get(k)) for k in ("In msg nelems", "Out msg nelems")),
                    _number(args.get("Group size")),
                    str(args.get("dtype", ""))[:64],
                )
            )
            col["comm"].append(len(self.comms) - 1)
        else:
            col["comm"].append(_NAN)

    def _shape(self, args: dict) -> None:
        """The code of a cpu_op's shapes in :attr:`signature_values` (NaN without
        ``Input Dims``)."""
        dims = args.get("Input Dims")
        if dims is None:
            self.op["shape"].append(_NAN)
            return
        value = (dims, args.get("Input type"), args.get("Concrete Inputs"))
        key = repr(value)
        code = self.signatures.get(key)
        if code is None:
            code = self.signatures[key] = len(self.signature_values)
            self.signature_values.append(value)
        self.op["shape"].append(code)

    def _range(self, col: dict[str, array], e: dict) -> None:
        col["thread"].append(
            self.threads.setdefault((e.get("pid"), e.get("tid")), len(self.threads))
        )
        col["ts"].append(e.get("ts", _NAN))
        col["dur"].append(e.get("dur", _NAN))
        col["name"].append(self._name(e))
        col["external"].append((e.get("args") or {}).get("External id", _NAN))

    def _name(self, e: dict) -> int:
        """The index of the event's name in :attr:`strings`: text (a missing name is ``''``, a
        number its text), at most ``[limits] name_chars`` long."""
        name = e.get("name")
        name = "" if name is None else name if isinstance(name, str) else str(name)[:64]
        if len(name) > self.name_chars:
            raise _LimitHit(
                catalog.over_limit("name_chars", f"an event name has {len(name)} characters")
            )
        return self.strings.setdefault(name, len(self.strings))

    def frame(self, kind: str) -> pd.DataFrame:
        """One kind of event (``kernel``, ``launch``, ``op``, ``scope``, ``gpu_scope``,
        ``transfer``) as a frame of float64 columns (names as strings)."""
        out = pd.DataFrame(
            {
                c: np.frombuffer(a, dtype=np.float64) if len(a) else np.empty(0)
                for c, a in getattr(self, kind).items()
            }
        )
        if "name" in out:
            table = np.array(list(self.strings), dtype=object)
            out["name"] = (
                table[out["name"].to_numpy(dtype=np.int64)] if len(out) else pd.Series(dtype=object)
            )
        return out


def _number(value: Any) -> float:
    """A trace's number as a float (NaN for anything else: a string, a bool, a list)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _NAN
    return float(value)


def _is_module(name: object) -> bool:
    """A ``python_function`` event that is a module scope (``nn.Module: Linear_0``
    or ``## name ##``)."""
    return isinstance(name, str) and (
        name.startswith("nn.Module: ") or (name.startswith("## ") and name.endswith(" ##"))
    )


def _scan_kineto(
    path: Path,
    progress: Callable[[int], Callable[..., None]] | None,
    shapes: bool = False,
    graphs: bool = False,
    kernels: bool = True,
) -> _KinetoScan:
    """Stream the ``traceEvents`` of a Kineto trace into a :class:`_KinetoScan` (with the
    operators' shapes when ``shapes``, the runtime calls' names and kernels when ``graphs``);
    InputError without kernel events when ``kernels`` (a graph's capture may have none)."""
    import ijson

    scan = _KinetoScan(shapes, graphs)
    with _open_trace(path, progress) as fh:
        try:
            add = scan.add
            for event in ijson.items(fh, "traceEvents.item", use_float=True, buf_size=_JSON_BYTES):
                add(event)
        except ijson.JSONError as exc:
            raise InputError(
                f"not valid JSON, truncated or damaged ({str(exc).splitlines()[0][:80]}); save the"
                " trace again",
                path,
            ) from None
        except (AttributeError, TypeError, ValueError) as exc:
            raise InputError(
                f"an event of traceEvents is not a Chrome trace event ({exc}); pass a PyTorch"
                " profiler trace",
                path,
            ) from None
    if scan.events == 0:
        raise InputError("no traceEvents: not a PyTorch profiler (Kineto) trace", path)
    if kernels and not len(scan.kernel["ts"]):
        raise InputError(
            "the trace has no kernel events; profile with ProfilerActivity.CUDA in torch.profiler's"
            " activities",
            path,
        )
    return scan


def _read_kineto(
    path: Path, progress: Callable[[int], Callable[..., None]] | None
) -> tuple[pd.DataFrame, dict[int, str]]:
    """The launches of every device of a Kineto trace, with their op and scope, and the
    GPU names by device."""
    scan = _scan_kineto(path, progress)
    launch = (
        scan.frame("launch")
        .dropna(subset=["correlation"])
        .drop_duplicates("correlation")
        .rename(columns={"ts": "launch_ts"})
    )
    k = (
        scan.frame("kernel")
        .rename(columns={"thread": "gpu_thread"})
        .merge(launch, on="correlation", how="left")
    )
    op, scope, gpu_scope = (_ranges(scan.frame(kind)) for kind in ("op", "scope", "gpu_scope"))
    queries = pd.DataFrame({"tid": k["thread"], "start": k["launch_ts"]})
    k["op"] = _enclosing(op, queries, paths=False)[0]
    _op_by_external_id(k, op, queries)
    cpu_side = _enclosing(scope, queries)[1]
    gpu_side = _enclosing(gpu_scope, pd.DataFrame({"tid": k["gpu_thread"], "start": k["ts"]}))[1]
    k["scope"] = np.where(pd.isna(cpu_side), gpu_side, cpu_side)
    base = np.nanmin(k["ts"].to_numpy())
    out = k.assign(
        kernel_name=k["name"],
        start_s=(k["ts"] - base) * 1e-6,
        duration_s=k["dur"] * 1e-6,
        nvtx=pd.NA,
    )
    out.attrs["shapes"] = scan.with_shapes
    return out, _gpu_names(path)


#: How to record the shapes analytic work needs (the error of a trace without them).
RECORD_SHAPES = "torch.profiler.profile(record_shapes=True)"


class NoShapesError(InputError):
    """A Kineto trace recorded without operator shapes (no ``Input Dims``)."""


def read_operator_launches(
    path: str | Path,
    formula_ops: frozenset[str],
    device: int | None = None,
    progress: Callable[[int], Callable[..., None]] | None = None,
    absorbs: Mapping[str, frozenset[str]] | None = None,
    transfers: bool = False,
    captures: Sequence[Path] = (),
) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[Any, Any, Any]]]:
    """The kernels of one device of a Kineto trace, each tied to the PyTorch operator whose
    analytic work it does (issue 41).

    A kernel belongs to the innermost ``cpu_op`` open on its launching thread at its launch whose
    name is in ``formula_ops`` (so ``aten::linear -> aten::addmm`` is the addmm's), else to the
    innermost ``cpu_op`` (an operator without a formula); a kernel without a launch call in the
    trace is placed at the start of the ``cpu_op`` of its ``External id``. A kernel of an operator
    nested in one that ``absorbs`` it is that one's (the bias ``aten::add_`` inside
    ``aten::_convolution``: the convolution's formula counts the bias).

    Parameters
    ----------
    path : str or Path
        A PyTorch profiler trace (``.json``, ``.json.gz``) recorded with shapes.
    formula_ops : frozenset of str
        Operator names that have a formula (``metrics/operators.toml``).
    device : int, optional
        CUDA device (default: the only one with kernels).
    progress : callable, optional
        Progress-bar factory, advanced by the bytes read.
    absorbs : mapping of str to frozenset of str, optional
        Operator -> the operators whose kernels it takes when they run inside it
        (:attr:`ncuroof.catalog.OperatorCatalog.absorbs`).
    transfers : bool, default False
        Also the device's copies and memsets (``gpu_memcpy``, ``gpu_memset``) as rows after the
        kernels: ``transfer`` names their kind (``memcpy HtoD``, ``memcpy DtoH``, ``memcpy DtoD``,
        ``memset``; empty for a kernel), ``bytes`` their size [B], ``op_row`` -1; ``span_s`` and
        ``busy_s`` then count them too. Collective kernels whose args carry PyTorch's metadata
        (NCCL/RCCL, PyTorch 2.1+) add :data:`COMM_COLUMNS`: the collective's name, its in and out
        element counts, group size and dtype (c10's name).
    captures : sequence of Path
        Traces of the CUDA/HIP graph captures this trace replays (``--capture``): each replayed
        kernel gets the operator and shapes of the captured launch it matches
        (:mod:`ncuroof.parser.graphs`); ``attrs`` ``graph_kernels`` and ``graph_matched`` count
        them. The trace itself may then lack shapes.

    Returns
    -------
    (DataFrame, DataFrame, list)
        Launches: ``kernel_name``, ``start_s`` and ``duration_s`` [s], grid and block (as
        :data:`ncuroof.schema.TIMELINE_LAUNCH`, for kernel keys), ``op_row`` (row of the
        operators frame, -1 when no operator); ``attrs`` ``path``, ``device``, ``gpu_name``,
        ``devices``, ``span_s``, ``busy_s``. Operators: ``name`` and ``shape`` (index into the
        list, -1 without ``Input Dims``), one row per cpu_op event. The list: the distinct
        ``(Input Dims, Input type, Concrete Inputs)``.

    Raises
    ------
    InputError
        Not a Kineto trace, no kernel events, no ``Input Dims`` on any operator (recorded without
        shapes: the message says how to record them), a device to choose.
    """
    path = Path(path)
    scan = _scan_with_shapes(path, progress, graphs=bool(captures))
    k = _kernels_with_launches(scan)
    gpus = _gpu_names(path)
    devices = sorted(int(d) for d in k["device"].dropna().unique())
    chosen = _choose_device(devices, gpus, device, None, path)
    k = k[(k["device"] == chosen).to_numpy()].reset_index(drop=True)
    _durations_a_gpu_can_have(k["dur"].to_numpy(dtype=float, na_value=np.nan) * 1e-6, path)
    op, values = scan.frame("op"), scan.signature_values
    moved = _transfers(scan.frame("transfer"), chosen) if transfers else None
    graph_corr = (
        _graphs.graph_correlations(scan.frame("launch"), list(scan.strings)) if captures else set()
    )
    comms = scan.comms
    del scan
    rows = _operator_rows(k, op, formula_ops, absorbs or {})
    replayed = None
    if captures:
        rows, op, values, replayed = _with_captures(
            k, rows, (op, values), graph_corr, captures, (formula_ops, absorbs or {})
        )
    out = _with_comms(_operator_launch_frame(k, rows, path), k["comm"], comms)
    if replayed is not None:
        out.attrs.update(graph_kernels=replayed[0], graph_matched=replayed[1])
    if moved is not None:
        out = _with_transfers(out, moved, float(k["ts"].min()) * 1e-6 if len(k) else 0.0)
    out.attrs.update(
        path=path_text(path), device=chosen, gpu_name=gpus.get(chosen), devices=devices
    )
    return out, _operator_table(op), values


def _with_captures(
    k: pd.DataFrame,
    rows: np.ndarray,
    ops: tuple[pd.DataFrame, list[tuple[Any, Any, Any]]],
    graph_corr: set[float],
    captures: Sequence[Path],
    rules: tuple[frozenset[str], Mapping[str, frozenset[str]]],
) -> tuple[np.ndarray, pd.DataFrame, list[tuple[Any, Any, Any]], tuple[int, int]]:
    """``rows`` with the graph-replayed kernels of ``k`` given the operator rows of the captured
    launches they match, the operators and shapes of the capture traces appended to ``ops``, and
    (replayed kernels, matched)."""
    op, values = ops[0], list(ops[1])
    found: list[pd.DataFrame] = []
    captured_rows: list[np.ndarray] = []
    for cpath in captures:
        cscan = _scan_with_shapes(Path(cpath), None, graphs=True, kernels=False)
        cap = _graphs.captured_launches(
            cscan.frame("launch"), cscan.frame("kernel"), list(cscan.strings)
        )
        cop = cscan.frame("op")
        crow = _operator_rows(cap, cop, *rules)
        cap["graph"] += sum(int(f["graph"].max()) + 1 for f in found if len(f))
        captured_rows.append(np.where(crow >= 0, crow + len(op), -1))
        cop = cop.assign(shape=cop["shape"] + len(values))
        op, values = pd.concat([op, cop], ignore_index=True), values + cscan.signature_values
        found.append(cap)
    cap = pd.concat(found, ignore_index=True)
    replay, n, matched = _graphs.replayed_rows(k, graph_corr, cap, np.concatenate(captured_rows))
    return np.where(replay >= 0, replay, rows), op, values, (n, matched)


def _kernels_with_launches(scan: _KinetoScan) -> pd.DataFrame:
    """The kernel events of ``scan``, each with its launch call's ``launch_ts`` and
    ``launch_thread`` (joined on ``correlation``; NaN for a kernel without one)."""
    launch = scan.frame("launch").dropna(subset=["correlation"]).drop_duplicates("correlation")
    return scan.frame("kernel").merge(
        launch.rename(columns={"ts": "launch_ts", "thread": "launch_thread"}),
        on="correlation",
        how="left",
    )


def _operator_table(op: pd.DataFrame) -> pd.DataFrame:
    """The operators of :func:`read_operator_launches`: ``name``, ``shape`` (-1 without one)."""
    return pd.DataFrame(
        {
            "name": op["name"].astype(object),
            "shape": op["shape"].fillna(-1).to_numpy(dtype=np.int64),
        }
    )


def _scan_with_shapes(
    path: Path,
    progress: Callable[[int], Callable[..., None]] | None,
    graphs: bool = False,
    kernels: bool = True,
) -> _KinetoScan:
    """The scan of the Kineto trace ``path`` with its operator shapes (:func:`_scan_kineto`; with
    ``graphs`` the runtime calls' names and kernels, a trace of graph replays may lack shapes and
    with ``kernels`` False kernel events); InputError for another format or a limit hit,
    :class:`NoShapesError` without ``Input Dims``."""
    if _sniff(path) != "kineto":
        raise InputError(
            "analytic work needs a PyTorch profiler trace (.json, .json.gz) recorded with"
            f" {RECORD_SHAPES}",
            path,
        )
    try:
        scan = _scan_kineto(path, progress, shapes=True, graphs=graphs, kernels=kernels)
    except _LimitHit as exc:
        raise InputError(f"cannot be read within ncuroof's limits: {exc}", path) from None
    if not scan.signature_values and not (graphs and kernels):
        raise NoShapesError(
            f"the trace has no operator shapes (no cpu_op carries 'Input Dims'); record them with"
            f" {RECORD_SHAPES}",
            path,
        )
    return scan


def _operator_launch_frame(k: pd.DataFrame, rows: np.ndarray, path: Path) -> pd.DataFrame:
    """The launches of :func:`read_operator_launches` from the kernel events ``k`` of one device
    (Kineto µs to s) and their operator rows; ``attrs`` ``span_s`` and ``busy_s``."""
    start, dur = k["ts"].to_numpy(float) * 1e-6, k["dur"].to_numpy(float) * 1e-6
    if not (np.isfinite(start).all() and np.isfinite(dur).all() and (dur >= 0).all()):
        raise InputError(
            "kernel events without a start or with a negative duration; re-export the trace", path
        )
    t0 = float(start.min()) if len(start) else 0.0
    out = pd.DataFrame(
        {
            "kernel_name": k["name"].astype(object),
            "start_s": start - t0,
            "duration_s": dur,
            **{f"{d}_{a}": _whole(k[f"{d}_{a}"]) for d in ("grid", "block") for a in "xyz"},
            "nvtx": pd.NA,
            "op_row": rows,
        }
    )
    end = start + dur
    out.attrs = {
        "span_s": float(end.max() - t0) if len(start) else 0.0,
        "busy_s": busy_time(start, end),
    }
    return out


#: The collective kernels' columns of :func:`read_operator_launches` (their args' metadata).
COMM_COLUMNS = ("collective", "comm_in_nelems", "comm_out_nelems", "comm_group_size", "comm_dtype")


def _with_comms(launches: pd.DataFrame, index: pd.Series, comms: list[tuple]) -> pd.DataFrame:
    """The launches with :data:`COMM_COLUMNS` (None/NaN for a kernel that is no collective),
    when any kernel carries collective metadata; else as they are."""
    at = index.to_numpy(float)
    has = np.isfinite(at)
    if not has.any():
        return launches
    rows = [comms[int(i)] if ok else (None, _NAN, _NAN, _NAN, None) for i, ok in zip(at, has)]
    table = pd.DataFrame(rows, columns=list(COMM_COLUMNS), index=launches.index)
    return pd.concat([launches, table], axis=1).__finalize__(launches)


_MEMCPY = re.compile(r"^Memcpy (\w+)")


def _transfers(events: pd.DataFrame, device: int) -> pd.DataFrame:
    """The copies and memsets of ``device``: kind (``memcpy HtoD``, ..., ``memset``), start and
    duration [s] (Kineto µs), bytes."""
    e = events[(events["device"] == device).to_numpy()]
    e = e[np.isfinite(e["ts"].to_numpy(float)) & (e["dur"].to_numpy(float) >= 0)]
    kind = [
        "memset"
        if str(n).startswith("Memset")
        else f"memcpy {m.group(1)}"
        if (m := _MEMCPY.match(str(n)))
        else "memcpy"
        for n in e["name"]
    ]
    return pd.DataFrame(
        {
            "transfer": kind,
            "start": e["ts"].to_numpy(float) * 1e-6,
            "duration_s": e["dur"].to_numpy(float) * 1e-6,
            "bytes": e["bytes"].to_numpy(float),
        }
    )


def _with_transfers(launches: pd.DataFrame, moved: pd.DataFrame, t0: float) -> pd.DataFrame:
    """The kernel launches followed by the copies and memsets ``moved`` (``transfer``, ``bytes``
    columns; ``op_row`` -1), times from the first of either, ``span_s`` and ``busy_s`` over both."""
    first = min(t0, float(moved["start"].min())) if len(moved) else t0
    kernels = launches.assign(start_s=launches["start_s"] + (t0 - first), transfer="", bytes=np.nan)
    rows = pd.DataFrame(
        {
            "kernel_name": moved["transfer"].astype(object),
            "start_s": moved["start"] - first,
            "duration_s": moved["duration_s"],
            "nvtx": pd.NA,
            "op_row": np.full(len(moved), -1, dtype=np.int64),
            "transfer": moved["transfer"],
            "bytes": moved["bytes"],
        }
    )
    out = pd.concat([kernels, rows], ignore_index=True) if len(rows) else kernels
    for c in (c for c in launches.columns if c.startswith(("grid_", "block_"))):
        out[c] = out[c].astype(launches[c].dtype)
    start, end = (
        out["start_s"].to_numpy(float),
        (out["start_s"] + out["duration_s"]).to_numpy(float),
    )
    out.attrs = {
        **launches.attrs,
        "span_s": float(end.max()) if len(out) else 0.0,
        "busy_s": busy_time(start, end),
    }
    return out


def _whole(col: pd.Series) -> pd.Series:
    """A float column as Int64: values that are no whole number below 2**53 missing."""
    v = col.to_numpy(dtype=float)
    ok = np.isfinite(v) & (np.abs(v) < 2.0**53)
    ok[ok] = v[ok] == np.round(v[ok])
    return pd.Series(np.where(ok, v, np.nan)).astype("Int64")


def _operator_rows(
    k: pd.DataFrame,
    op: pd.DataFrame,
    formula_ops: frozenset[str],
    absorbs: Mapping[str, frozenset[str]],
) -> np.ndarray:
    """Per kernel, the row of ``op`` whose work it does: the innermost open operator with a
    formula (or the innermost open one that ``absorbs`` it), else the innermost open operator, else
    -1."""
    queries = pd.DataFrame({"tid": k["launch_thread"], "start": k["launch_ts"]})
    lost = (k["launch_ts"].isna() & (k["external"] != k["correlation"])).to_numpy()
    if lost.any():  # placed at the start of the cpu_op of its External id
        first = (
            op.reset_index()
            .dropna(subset=["external"])
            .drop_duplicates("external")
            .set_index("external")
        )
        ext = k.loc[lost, "external"]
        queries.loc[lost, "tid"] = ext.map(first["thread"]).to_numpy()
        queries.loc[lost, "start"] = ext.map(first["ts"]).to_numpy()
    ranges = op.assign(
        tid=op["thread"], start=op["ts"], end=op["ts"] + op["dur"], label=np.arange(len(op))
    )
    inner = _enclosing(ranges, queries, paths=False)[0]
    formula = _enclosing(ranges[op["name"].isin(formula_ops).to_numpy()], queries, paths=False)[0]
    if absorbs:
        formula = _absorbed(
            formula,
            _enclosing(ranges[op["name"].isin(list(absorbs)).to_numpy()], queries, paths=False)[0],
            op["name"].to_numpy(dtype=object),
            absorbs,
        )
    chosen = np.where(pd.isna(formula), inner, formula)
    return pd.Series(chosen, dtype=object).fillna(-1).to_numpy(dtype=np.int64)


def _absorbed(
    formula: np.ndarray, outer: np.ndarray, names: np.ndarray, absorbs: Mapping[str, frozenset[str]]
) -> np.ndarray:
    """``formula`` (each kernel's operator row, NaN for none) with the rows of absorbed operators
    replaced by the absorbing one open around them (``outer``: the innermost absorbing operator
    open at each launch)."""
    out = formula.copy()
    both = np.flatnonzero(~pd.isna(formula) & ~pd.isna(outer))
    pairs = [(o, a) for o, taken in absorbs.items() for a in taken]
    found = pd.MultiIndex.from_arrays(
        [names[outer[both].astype(np.int64)], names[formula[both].astype(np.int64)]]
    )
    take = both[found.isin(pairs)]
    out[take] = outer[take]
    return out


def _ranges(events: pd.DataFrame) -> pd.DataFrame:
    """Profiler events as the ranges of :func:`_enclosing` (``tid``, ``start``,
    ``end``, ``label``)."""
    return events.assign(
        tid=events["thread"],
        start=events["ts"],
        end=events["ts"] + events["dur"],
        label=events["name"],
    )


def _op_by_external_id(k: pd.DataFrame, op: pd.DataFrame, queries: pd.DataFrame) -> None:
    """For kernels whose launch call is not in the trace, the ``cpu_op`` of the same ``External id``
    (and the scope query at that op's start). Skipped where the kernel's External id is its
    correlation: such traces number runtime calls, not operators, with it."""
    lost = (k["op"].isna() & k["launch_ts"].isna() & (k["external"] != k["correlation"])).to_numpy()
    if not lost.any():
        return
    by_ext = op.dropna(subset=["external"]).drop_duplicates("external").set_index("external")
    ext = k.loc[lost, "external"]
    k.loc[lost, "op"] = ext.map(by_ext["name"])
    queries.loc[lost, "tid"] = ext.map(by_ext["tid"])
    queries.loc[lost, "start"] = ext.map(by_ext["start"])


# --- ranges open at a launch -------------------------------------------------------------------


def _enclosing(
    ranges: pd.DataFrame, queries: pd.DataFrame, paths: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """For each query (a thread and a time), the innermost range of that thread open then and the
    path of all of them, outermost first, joined by ``' > '``.

    Parameters
    ----------
    ranges : DataFrame
        Columns ``tid``, ``start``, ``end`` (one time unit) and ``label``; ranges of one thread nest
        (push/pop ranges, a thread's profiler events).
    queries : DataFrame
        Columns ``tid`` and ``start``; rows with a missing value get no range.
    paths : bool, default True
        Also build the paths (not needed for the innermost range alone).

    Returns
    -------
    (ndarray, ndarray) of object, each of the length of ``queries``
        Innermost label and path; None where no range is open. A range contains the times from its
        start to its end, both included. One sweep over the events sorted by thread and time.
    """
    ok = queries["tid"].notna().to_numpy() & queries["start"].notna().to_numpy()
    qpos = np.flatnonzero(ok)
    inner, path = (
        np.full(len(queries), None, dtype=object),
        np.full(len(queries), None, dtype=object),
    )
    r = ranges.dropna(subset=["tid", "start", "end"])
    if not len(qpos) or r.empty:
        return inner, path
    order, events = _events(r, queries, qpos)
    _sweep(order, events, r["label"].to_numpy(dtype=object), (inner, path), paths)
    return inner, path


def _events(
    r: pd.DataFrame, queries: pd.DataFrame, qpos: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The ranges ``r`` and the queries at ``qpos`` as one list of events: their order (by thread,
    time, a range before a query at the same time, the longer range first) and the columns thread,
    start, end, is-a-query and index (into ``r``'s rows or into the queries)."""
    n = len(r)
    tid = np.concatenate(
        [r["tid"].to_numpy(dtype=np.float64), queries["tid"].to_numpy(dtype=np.float64)[qpos]]
    )
    start = np.concatenate(
        [r["start"].to_numpy(dtype=np.float64), queries["start"].to_numpy(dtype=np.float64)[qpos]]
    )
    end = np.concatenate([r["end"].to_numpy(dtype=np.float64), np.zeros(len(qpos))])
    is_query = np.concatenate([np.zeros(n, dtype=bool), np.ones(len(qpos), dtype=bool)])
    ref = np.concatenate([np.arange(n), qpos])
    order = np.lexsort((-end, is_query, start, tid))
    return order, (tid, start, end, is_query, ref)


def _sweep(
    order: np.ndarray,
    events: tuple[np.ndarray, ...],
    labels: np.ndarray,
    out: tuple[np.ndarray, np.ndarray],
    paths: bool,
) -> None:
    """Walk the :func:`_events` in ``order``, keeping each thread's open ranges, and fill ``out``
    (innermost label, path) at each query; _LimitHit past [limits] ``range_depth``."""
    inner, path = out
    max_depth = int(catalog.limits()["range_depth"])
    ends: list[float] = []
    stack: list[int] = []  # the open ranges, outermost first, as indices of ``labels``
    # each range's enclosing range: paths are built only when asked
    parent = np.full(len(labels), -1, dtype=np.int64)
    built: dict[int, Any] = {}
    current = None
    for g, s, e, q, j in _in_order(order, events):
        if g != current:
            ends, stack, current = [], [], g
        while ends and ends[-1] < s:
            ends.pop(), stack.pop()
        if q:
            if stack:
                inner[j] = labels[stack[-1]]
                path[j] = _path(stack[-1], labels, parent, built) if paths else None
            continue
        parent[j] = stack[-1] if stack else -1
        ends.append(e), stack.append(j)
        if len(stack) > max_depth:
            raise _LimitHit(
                catalog.over_limit(
                    "range_depth", f"a thread has more than {max_depth} ranges open at once"
                )
            )


def _path(node: int, labels: np.ndarray, parent: np.ndarray, built: dict[int, Any]) -> Any:
    """The path of range ``node``, outermost first, joined by ``' > '``: built from the parent links
    when first asked for (memory of the paths asked for, not of every level of every open range)."""
    if node not in built:
        chain = []
        at = node
        while at >= 0:
            chain.append(labels[at])
            at = int(parent[at])
        built[node] = (
            chain[0]
            if len(chain) == 1
            else _PATH_SEP.join("" if x is None else str(x) for x in reversed(chain))
        )
    return built[node]


def _in_order(order: np.ndarray, columns: tuple[np.ndarray, ...]) -> Iterator[tuple]:
    """The rows of ``columns`` in ``order`` as tuples of Python values, converted a block at a time
    (a whole column as Python objects would cost more memory than the trace's events)."""
    for lo in range(0, len(order), _SWEEP_ROWS):
        block = order[lo : lo + _SWEEP_ROWS]
        yield from zip(*(c[block].tolist() for c in columns))
