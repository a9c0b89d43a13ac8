"""Read ncu CSV exports into the raw table, whatever page, layout and units ncu wrote.

Flavours, told apart by content, never by file name:

``details``
    Long: one row per launch × metric, columns ``ID, Process ID, …, Kernel Name, [Kernel Time,]
    Context, Stream, [Block Size, Grid Size, Device, CC,] Section Name, Metric Name, Metric Unit,
    Metric Value[, Rule Name, …]`` (``ncu --csv``, ``--page details``). ncu ≤ 2020 writes
    ``Kernel Time`` and no launch geometry, device or CC. ``Metric Name`` holds ncu metric names
    (``--metrics``) or the human labels of the sections (``Duration``); labels that name one metric
    unambiguously are mapped through ``metrics/csv.toml``, the others are counted and ignored.
``raw``
    Wide: one row per launch, one column per metric, then a second header row of units
    (``--page raw``).
``session``
    ``--page session``: device attributes and the ncu version, no launches. It is read by
    :func:`read_session` and only completes other inputs of the same run.

Every value is converted to ncu base units (``metrics/csv.toml``): auto-scaled units (``Kbyte``,
``usecond``, ``Ghz``, ``Gbyte/s``) are scaled; an unknown unit on a metric ncuroof reads is
refused. ``n/a`` is missing (NaN, named in the launch's ``input_notes``), never 0. Thousands
separators, quoted numbers, a UTF-8 BOM and lines that are not CSV rows (the profiled program's
output, ``==PROF==``/``==WARNING==``/``==ERROR==``) before or between the rows are handled; ncu's
own warnings and errors are kept in ``input_notes``.

A details page whose launch IDs repeat across process IDs holds the exports of several ncu runs of
the same launches written one after the other (the NERSC/GENE two-run workflow in one file): each
process's rows are read as one file and the runs joined as the files of one run are
(:func:`ncuroof.parser.merge.merge`). A launch ID repeated within one process is refused.
"""

from __future__ import annotations

import contextlib
import csv
import io
import mmap
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from ..catalog import Catalog, CsvRules, limits, load_csv_rules, over_limit
from ..errors import InputError, ReportFormatError
from ..fmt import path_text
from ..schema import NA_NOTE  # the words of the na_metrics note (ncuroof.schema.NOTE_CODES)
from .merge import merge

__all__ = ["read_csv", "read_session", "sniff", "function_name", "Session"]

_BOM = b"\xef\xbb\xbf"
_HEADER = re.compile(rb'^(?:\xef\xbb\xbf)?"ID","Process ID",', re.MULTILINE)
_NOISE_LINE = re.compile(rb'\n[^"\r\n]')
_NCU_MESSAGE = re.compile(rb"^==(WARNING|ERROR)== ?(.*)$", re.MULTILINE)
_METRIC_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(__|\.)[A-Za-z0-9_.\[\]]*$")
_META = {
    "ID": "launch_id",
    "Kernel Name": "kernel_demangled",
    "Block Size": "block",
    "Grid Size": "grid",
    "CC": "cc",
}
#: What ncu writes in a cell for a value it does not have: ``n/a`` (not provided by this GPU),
#: ``no data`` (ncu 2024.1's raw export of a derived metric whose inputs were not collected),
#: ``-nan``/``nan`` (a failed measurement, e.g. an H800 report's gpu__time_duration.sum). Each is a
#: missing value with a note on its launch, never a refused file.
_NA = ("n/a", "N/A", "no data", "nan", "NaN", "-nan", "-NaN", "+nan")
_SESSION_FIRST = (
    b"Launch Settings",
    b"Session Info",
    b'"Launch Attribute"',
    b'"Session Attribute"',
)
_SUMMARY_HEADER = re.compile(
    rb'^(?:\xef\xbb\xbf)?"Kernel Name",.*"(Invocations|Average|Minimum)"', re.MULTILINE
)
# "1,234.5 (inst0: 600; inst1: 634.5)": the aggregate value, then instance values
# (ncu --print-metric-instances values|details).
_WITH_INSTANCES = re.compile(r"^\s*([-+]?[0-9][0-9,]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?)\s+\(.*\)\s*$")
_INSTANCE = re.compile(
    r"\s*([^;:()]+?):\s*([-+]?[0-9][0-9,]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?)\s*(?:;|$)"
)
#: The note on a launch whose opcode tables were exported as totals only.
NO_INSTANCES_NOTE = (
    "exported without metric instances: the work counted from SASS opcodes (FP16 on recent ncu,"
    " tensor MMAs without ops-path metrics) is unknown (export with ncu --import REPORT --csv"
    " --page raw --print-metric-instances details)"
)


@dataclass
class Session:
    """What a session-page export says about the run: device name, CC, ncu version, attributes."""

    device_name: str | None = None
    cc: str | None = None
    ncu_version: str | None = None
    attributes: dict[str, float] = field(default_factory=dict)


def sniff(path: Path) -> str:
    """Tell which ncu CSV page ``path`` holds.

    Parameters
    ----------
    path : Path
        An existing file.

    Returns
    -------
    str
        ``'details'``, ``'raw'`` or ``'session'``.

    Raises
    ------
    InputError
        If the file is empty or has no ncu CSV header (``"ID","Process ID",...``).
    """
    with path.open("rb") as f:
        if path.stat().st_size == 0:
            raise InputError(
                "is empty; export again with ncu --import REPORT --csv --page raw > FILE.csv", path
            )
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            start = mm[:64].lstrip(_BOM).lstrip()
            if start.startswith(_SESSION_FIRST):
                return "session"
            m = _HEADER.search(mm)  # type: ignore[call-overload]
            if m is None and _SUMMARY_HEADER.search(mm) is not None:  # type: ignore[call-overload]
                raise InputError(
                    "is an ncu --print-summary export (aggregated per kernel, no launches); ncuroof"
                    " needs one row per launch: export again without --print-summary (--page"
                    " details or --page raw)",
                    path,
                )
            if m is None:
                raise _no_header(mm, path)
            end = mm.find(b"\n", m.start())
            if end < 0 and mm.find(b"\r", m.start()) >= 0:
                raise _cr_only(path)
            header = _cells(
                mm[m.start() : end if end >= 0 else len(mm)]
                .decode("utf-8", "replace")
                .lstrip("\ufeff")
            )
    return "details" if "Metric Name" in header and "Metric Value" in header else "raw"


def _cr_only(path: Path) -> InputError:
    return InputError(
        "has CR-only line ends (classic Mac OS); convert them to LF (tr '\\r' '\\n' < FILE >"
        " FIXED.csv) or export it again",
        path,
    )


_OUT_OF_ORDER = re.compile(rb'^(?:\xef\xbb\xbf)?(?=")[^\r\n]*"Process ID"[^\r\n]*$', re.MULTILINE)


def _no_header(mm: Any, path: Path) -> InputError:
    """The error for a file without ncu's header row: another encoding, CR-only line ends,
    columns out of order, or not an export."""
    if mm[:2] in (b"\xff\xfe", b"\xfe\xff") or mm[:4096].count(b"\x00") > 64:
        return InputError(
            "is UTF-16 encoded; ncu writes UTF-8: convert it (iconv -f UTF-16 -t UTF-8 FILE >"
            " FIXED.csv) or export it again",
            path,
        )
    if mm.find(b"\n", 0, 1 << 16) < 0 and mm.find(b"\r", 0, 1 << 16) >= 0:
        return _cr_only(path)
    for m in _OUT_OF_ORDER.finditer(mm):
        cells = _cells(m.group(0).decode("utf-8", "replace").lstrip("\ufeff"))
        if "ID" in cells and "Process ID" in cells:
            return InputError(
                f'has its columns out of order: ncu writes "ID","Process ID" first, this header'
                f" starts "
                f"{', '.join(repr(c) for c in cells[:3])}; export it again (ncu --import REPORT"
                " --csv ...) instead of "
                "editing the columns",
                path,
            )
    return InputError(
        'is not an ncu CSV export: no header row starting "ID","Process ID"; export one with '
        "ncu --import REPORT --csv --page raw (or --page details)",
        path,
    )


class _RowLines(io.RawIOBase):
    """A binary stream of the lines of ``f`` from ``offset`` that are CSV rows (start with a
    quote), with the lines that continue a quoted cell of the row before (ncu's details page
    quotes rule messages of several lines, such as a rule's Python traceback)."""

    def __init__(self, f: IO[bytes], offset: int) -> None:
        f.seek(offset)
        self._lines: Iterator[bytes] = iter(f)
        self._buf = b""
        self._pos = 0
        self._open = False  # inside a quoted cell: an odd number of quotes so far in this row

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        # Lines are joined once per read and handed out from a position: each byte is copied a
        # fixed number of times (slicing off the rest at each read copied it again: quadratic).
        if self._pos >= len(self._buf):
            parts, size = [], 0
            while size < len(b):
                line = next(self._lines, None)
                if line is None:
                    break
                if self._open or line.startswith(b'"'):
                    parts.append(line)
                    size += len(line)
                    self._open ^= line.count(b'"') % 2 == 1
            self._buf, self._pos = b"".join(parts), 0
        n = min(len(b), len(self._buf) - self._pos)
        b[:n] = memoryview(self._buf)[self._pos : self._pos + n]
        self._pos += n
        return n


def _longest_line(mm: Any, offset: int) -> int:
    """The length in bytes of the longest line of ``mm`` from ``offset``, counted 16 MiB
    at a time in numpy."""
    longest, line_start, block = 0, offset, 1 << 24
    for lo in range(offset, len(mm), block):
        ends = (
            np.flatnonzero(
                np.frombuffer(mm, dtype=np.uint8, count=min(block, len(mm) - lo), offset=lo) == 10
            )
            + lo
        )
        if len(ends):
            longest = max(
                longest, int(ends[0] - line_start), int(np.diff(ends).max()) if len(ends) > 1 else 0
            )
            line_start = int(ends[-1])
    return max(longest, len(mm) - line_start)


def _open_rows(path: Path, usecols: Any) -> pd.DataFrame:
    """Read the CSV table of an export from its header row on, as strings,
    skipping non-row lines."""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        m = _HEADER.search(mm)  # type: ignore[call-overload]
        assert m is not None  # sniff() checked
        offset = m.start() + (3 if mm[m.start() : m.start() + 3] == _BOM else 0)
        noisy = _NOISE_LINE.search(mm, offset) is not None  # type: ignore[call-overload]
        end = mm.find(b"\n", offset)
        header = mm[offset : end if end >= 0 else len(mm)]
        stop = len(mm)
        while stop > offset and mm[stop - 1] in b"\r\n":
            stop -= 1
        last = mm[max(offset, mm.rfind(b"\n", offset, stop) + 1) : stop]
        first_end = mm.find(b"\n", end + 1) if end >= 0 else -1
        first = mm[end + 1 : first_end if first_end >= 0 else stop] if end >= 0 else b""
        limit = limits()["csv_line_bytes"]
        if _longest_line(mm, offset) > limit:
            raise InputError(
                over_limit("csv_line_bytes", f"a line is longer than {int(limit):,} bytes"), path
            )
    # ncu 2024.1's details page ends each metric row with a comma, without the rule columns of the
    # header: a row is short only against the first row, not against the header.
    cells = min(_cell_count(header), _cell_count(first.rstrip(b"\r")) or _cell_count(header))
    if last.startswith(b'"') and (not last.endswith((b'"', b'",')) or _cell_count(last) < cells):
        raise ReportFormatError(
            "ends in the middle of a row: the export is truncated; export it again", path
        )
    kwargs: dict[str, Any] = {
        "dtype": str,
        "keep_default_na": False,
        "usecols": usecols,
        "encoding": "utf-8",
        "encoding_errors": "replace",
        "skip_blank_lines": True,
    }
    try:
        with path.open("rb") as f:
            if noisy:
                return pd.read_csv(io.BufferedReader(_RowLines(f, offset), 1 << 20), **kwargs)
            f.seek(offset)
            return pd.read_csv(f, **kwargs)
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(
            f"is not a well-formed ncu CSV export ({str(exc).splitlines()[0]}); export it again",
            path,
        ) from exc


def _cell_count(line: bytes) -> int:
    return len(_cells(line.decode("utf-8", "replace").rstrip("\r")))


def _rows(text: str) -> list[list[str]]:
    """The CSV rows of ``text``, with cells of any length: kernel names of deep expression templates
    exceed the csv module's default field limit (128 KiB). The limit (one for the whole process) is
    only ever raised, to the length of the text, never lowered again: readers on other threads (dask
    workers) never see it drop under a field they are reading."""
    if csv.field_size_limit() <= len(text):
        csv.field_size_limit(len(text) + 1)
    return list(csv.reader(io.StringIO(text)))


def _cells(line: str) -> list[str]:
    """The cells of one CSV line (see :func:`_rows`)."""
    return next(iter(_rows(line)), [])


def _ncu_messages(path: Path) -> list[str]:
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm.find(b"==WARNING==") < 0 and mm.find(b"==ERROR==") < 0:
            return []
        return [
            f"ncu {m.group(1).decode().lower()}: {m.group(2).decode('utf-8', 'replace').strip()}"
            for m in _NCU_MESSAGE.finditer(mm)
        ][:5]  # type: ignore[call-overload]


def function_name(demangled: str) -> str:
    """The bare function name of a demangled kernel signature, as ncu's ``function`` name base.

    ``"void gt::detail::kernel_assign_6<…>(…)"`` gives ``"kernel_assign_6"``;
    ``"basic(int, int, …)"`` gives ``"basic"``. Return type, namespaces, template arguments and
    parameters are dropped, at bracket depth 0.

    Parameters
    ----------
    demangled : str
        The ``Kernel Name`` of an ncu CSV export.

    Returns
    -------
    str
        The function name, or ``demangled`` unchanged when it has no recognisable shape.
    """
    s = demangled.strip()
    # Drop the parameter list: the last top-level (...) group at the end.
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    # Remove template arguments and anything inside brackets, at any depth.
    out, depth = [], 0
    for ch in s:
        if ch in "<([":
            depth += 1
        elif ch in ">)]" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip().split(" ")[-1].split("::")[-1]
    return name or demangled


def _numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Parse ncu-printed numbers; return (float values, mask of entries that were n/a or empty)."""
    try:  # fast path: plain numbers only, nothing missing (most raw-page columns)
        fast = pd.to_numeric(values, errors="raise").to_numpy(dtype=float)
        if not np.isnan(fast).any():
            return fast, np.zeros(len(values), dtype=bool)
    except (ValueError, TypeError):
        pass
    s = values.str.strip()
    s = s.str.replace(
        _WITH_INSTANCES, r"\1", regex=True
    )  # keep the aggregate of "value (instances)"
    na = s.isin(_NA) | (s == "")
    num = pd.to_numeric(s.str.replace(",", "", regex=False).where(~na), errors="coerce").to_numpy(
        dtype=float
    )
    bad = np.isnan(num) & ~na.to_numpy()
    if bad.any():
        raise ValueError(values[bad].iloc[0])
    return num, na.to_numpy()


def _wanted(name: str, catalog: Catalog) -> bool:
    return (
        name in catalog.scalar_metrics
        or name in catalog.instanced_metrics
        or catalog.is_tensor_path_metric(name)
    )


def _instances(cells: pd.Series, metric: str, keep: re.Pattern[str]) -> tuple[dict, bool]:
    """The ``<metric>[<instance>]`` columns of an instanced metric's cells (``"638208 (IMMA.16832.
    S8.S8.SAT: 110592; IADD3: 49536; ...)"``), for the instances ``keep`` matches, as the report
    reader gives them (``parser.ncu_rep.decode._opcodes``); and whether any cell held instances
    (False: the export printed totals only, or ``values`` without the opcodes). A launch without
    an instance has it 0."""
    columns: dict[str, np.ndarray] = {}
    listed = False
    for row, cell in enumerate(cells.to_numpy(dtype=object)):
        text = str(cell)
        if "(" not in text:
            continue
        for key, value in _INSTANCE.findall(text[text.index("(") + 1 : text.rindex(")")]):
            listed = True  # "values" mode prints the counts without the opcodes: not listed
            if keep.search(key.strip()):
                col = columns.setdefault(f"{metric}[{key.strip()}]", np.zeros(len(cells)))
                col[row] = float(value.replace(",", ""))
    return columns, listed


def _convert(path: Path, metric: str, unit: str, rules: CsvRules) -> float:
    f = rules.factor(unit)
    if f is None:
        raise InputError(
            f"unknown unit {unit!r} for {metric}; re-export with --print-units base, or report this"
            " unit",
            path,
        )
    return f


def _meta(first: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Metadata columns of the raw table from the first row of each launch."""
    try:
        ids = pd.to_numeric(first["ID"], errors="raise").astype("int64")
    except (ValueError, TypeError) as exc:
        raise InputError(
            f"has a non-integer launch ID ({exc}); is it an ncu CSV export?", path
        ) from exc
    out = pd.DataFrame({"source": path_text(path), "range_id": 0, "launch_id": ids.to_numpy()})
    demangled = first["Kernel Name"]
    longest = int(demangled.str.len().max()) if len(demangled) else 0
    if longest > limits()["name_chars"]:
        raise InputError(
            over_limit("name_chars", f"a kernel name has {longest:,} characters"), path
        )
    out["kernel_demangled"] = demangled.to_numpy(dtype=object)
    names = {d: function_name(d) for d in demangled.unique()}  # names repeat: parse each once
    out["kernel_name"] = demangled.map(names).to_numpy(dtype=object)
    out["nvtx_range"] = None
    out["device_name"] = None
    for col, name in (("CC", "cc"), ("Grid Size", "grid"), ("Block Size", "block")):
        out[name] = (
            first[col].replace("", None).to_numpy(dtype=object) if col in first.columns else None
        )
    out["ncu_version"] = None
    out["reader"] = None  # parser.read names it
    return out


def _check_launch_rows(rows: pd.DataFrame, path: Path) -> None:
    """Refuse a details page whose launches are not each one contiguous block of distinct metrics.

    ncu writes a launch's metric rows together, each (section, metric) once: an ID that comes
    back after another launch's rows, or a metric repeated within one ID, means two launches
    share an ID (a damaged or joined export) and would be merged into one. A last launch with
    fewer rows than every earlier launch of its kernel means the export ends inside it.
    """
    ids = rows["ID"].to_numpy(dtype=object)
    if not len(ids):
        return
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    run_ids = pd.Series(ids[starts])
    repeated = run_ids[run_ids.duplicated()]
    key = [c for c in ("ID", "Section Name", "Metric Name") if c in rows.columns]
    twice = rows[rows.duplicated(key)]
    if len(repeated) or len(twice):
        launch = repeated.iloc[0] if len(repeated) else twice["ID"].iloc[0]
        pid = (
            f" in process {rows['Process ID'].iloc[0]}"
            if "Process ID" in rows.columns and rows["Process ID"].nunique() == 1
            else ""
        )
        raise InputError(
            f"launch ID {launch} is repeated{pid}: its rows appear twice (two launches share the"
            " ID); the export is damaged or joined from two exports: export it again from the"
            " report",
            path,
        )
    sizes = np.diff(np.r_[starts, len(ids)])
    kernels = rows["Kernel Name"].to_numpy(dtype=object)[starts]
    same = sizes[:-1][kernels[:-1] == kernels[-1]]
    if len(same) and sizes[-1] < same.min():
        raise ReportFormatError(
            f"ends inside launch {ids[-1]}: it has {sizes[-1]} metric rows, the other launches of"
            f" its kernel at least {same.min()}; the export is truncated: export it again",
            path,
        )


def _details_rows(path: Path) -> pd.DataFrame:
    """The metric rows of a details page; a repeated header row (two exports written into one file
    with ``cat``) is dropped."""
    cols = [
        "ID",
        "Process ID",
        "Kernel Name",
        "Block Size",
        "Grid Size",
        "CC",
        "Section Name",
        "Metric Name",
        "Metric Unit",
        "Metric Value",
    ]
    rows = _open_rows(path, lambda c: c in cols)
    for c in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"):
        if c not in rows.columns:
            raise InputError(
                f"details-page CSV without a {c!r} column; export it again with ncu --csv --page"
                " details",
                path,
            )
    header = rows["ID"].to_numpy(dtype=object) == "ID"
    if header.any():
        header &= np.logical_and.reduce([rows[c].to_numpy(dtype=object) == c for c in rows.columns])
    return rows[(rows["Metric Name"] != "") & ~header]


def _runs(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The ncu runs in a details page: one per process ID when launch IDs repeat across process IDs
    (the exports of two runs of the same launches written one after the other into one file, as the
    GENE authors fed their roofline script), else the whole page under the key ``''``."""
    pids = (
        rows["Process ID"].to_numpy(dtype=object)
        if "Process ID" in rows.columns
        else np.array([], dtype=object)
    )
    if not len(pids) or (pids == pids[0]).all():
        return {"": rows}
    pairs = rows[["Process ID", "ID"]].drop_duplicates()
    if not pairs["ID"].duplicated().any():  # one multi-process run: every launch ID once
        return {"": rows}
    return {str(pid): part for pid, part in rows.groupby("Process ID", sort=False)}


def _join(runs: dict[str, pd.DataFrame], path: Path) -> pd.DataFrame:
    """Join the raw tables of the runs of one file launch by launch, as the files of one run are
    joined (:func:`ncuroof.parser.merge.merge`); every launch says so in ``input_notes``."""
    tables = [raw.assign(source=f"{path} (process {pid})") for pid, raw in runs.items()]
    raw = merge(
        tables,
        advice=(
            "the processes of this file are not runs of the same launches: export each run to its "
            "own file (ncu --import REPORT --csv) and pass them with --stack"
        ),
    )
    raw["source"] = path_text(path)
    note = (
        f"{len(runs)} ncu runs of the same launches (processes {', '.join(runs)}) written one after"
        " the other into this file: joined launch by launch, each metric from the first run that"
        " has it (values the runs disagree on are named here and warned about)"
    )
    raw["input_notes"] = [
        f"{note}; {n}" if isinstance(n, str) and n else note for n in raw["input_notes"]
    ]
    return raw


def _chart_repeats(rows: pd.DataFrame, rules: CsvRules) -> pd.DataFrame:
    """``rows`` without the later copies of chart labels printed once per chart (``repeats`` in
    ``metrics/csv.toml``: "SM Frequency" of the FP32 and of the FP64 roofline of one section)."""
    if not rules.repeating or "Section Name" not in rows.columns:
        return rows
    pairs = list(
        zip(rows["Section Name"].to_numpy(dtype=object), rows["Metric Name"].to_numpy(dtype=object))
    )
    repeating = np.array([p in rules.repeating for p in pairs], dtype=bool)
    later = repeating & rows.duplicated(["ID", "Section Name", "Metric Name"]).to_numpy()
    return rows[~later]


def _read_details(
    rows: pd.DataFrame, path: Path, catalog: Catalog, rules: CsvRules, notes: list[str]
) -> pd.DataFrame:
    """The details page's rows (one per launch and metric) as one row per launch: its meta columns,
    a column per wanted ncu metric in SI units and ``_na`` naming the metrics it gave as n/a."""
    rows = _chart_repeats(rows, rules)
    _check_launch_rows(rows, path)
    rows = _name_metrics(rows, rules, notes)
    meta = _meta(rows.drop_duplicates("ID"), path)
    na_all = _na_metrics(rows)
    keep = rows[[isinstance(m, str) and _wanted(m, catalog) for m in rows["metric"]]]
    if keep.empty:
        meta["_na"] = na_all.reindex(meta["launch_id"]).to_numpy()
        return meta
    wide = _wide_values(keep, path, rules)
    meta = meta.set_index("launch_id", drop=False)
    meta = meta.join(wide, how="left")
    meta["_na"] = na_all.reindex(meta.index)
    return meta.reset_index(drop=True)


def _name_metrics(rows: pd.DataFrame, rules: CsvRules, notes: list[str]) -> pd.DataFrame:
    """``rows`` with ``metric`` (the ncu metric of a metric name or of a section label; None for
    labels that map to none, counted in ``notes``) and ``rank`` (1 for a label)."""
    names = rows["Metric Name"].to_numpy(dtype=object)
    sections = (
        rows["Section Name"].to_numpy(dtype=object)
        if "Section Name" in rows.columns
        else np.full(len(rows), "")
    )
    metric = np.empty(len(rows), dtype=object)
    label_rank = np.zeros(len(rows), dtype=np.int8)
    ignored: set[str] = set()
    for i, (sec, name) in enumerate(zip(sections, names)):
        if _METRIC_NAME.match(name):
            metric[i] = name
        elif (sec, name) in rules.labels:
            metric[i] = rules.labels[(sec, name)]
            label_rank[i] = 1
        else:
            metric[i] = None
            ignored.add(name)
    if ignored:
        notes.append(
            f"{len(ignored)} section labels not mapped to an ncu metric were ignored "
            f"(e.g. {', '.join(sorted(ignored)[:3])})"
        )
    return rows.assign(metric=metric, rank=label_rank)


def _na_metrics(rows: pd.DataFrame) -> pd.Series:
    """Per launch ID, the metrics given as n/a (comma-separated), read or not: the GPU did not
    provide them."""
    na_rows = rows[
        rows["Metric Value"].str.strip().isin(_NA)
        & rows["metric"].map(lambda m: isinstance(m, str))
    ]
    return na_rows.groupby(pd.to_numeric(na_rows["ID"]).astype("int64"))["metric"].apply(
        lambda m: ", ".join(sorted(set(m)))
    )


def _wide_values(keep: pd.DataFrame, path: Path, rules: CsvRules) -> pd.DataFrame:
    """The values of the metric rows ``keep`` in SI units, one row per launch ID, one column per
    metric; InputError on a value that is not a number."""
    first_metric = keep.drop_duplicates("Metric Unit").set_index("Metric Unit")["metric"]
    factor = {u: _convert(path, first_metric[u], u, rules) for u in first_metric.index}
    try:
        values, _ = _numbers(keep["Metric Value"])  # n/a were collected above, for every metric
    except ValueError as exc:
        bad = keep[keep["Metric Value"] == exc.args[0]].iloc[0]
        raise InputError(
            f"launch {bad['ID']}: {bad['metric']} has the non-numeric value {exc.args[0]!r}", path
        ) from exc
    # 1e308 Kbyte: inf, refused as not physical by validate.check_values
    with np.errstate(over="ignore"):
        values = values * keep["Metric Unit"].map(factor).to_numpy(dtype=float)
    long = pd.DataFrame(
        {
            "ID": pd.to_numeric(keep["ID"]).astype("int64").to_numpy(),
            "metric": keep["metric"].to_numpy(),
            "rank": keep["rank"].to_numpy(),
            "value": values,
        }
    )
    # A metric printed twice (a --metrics name and a section label for it): the metric name wins.
    long = long.sort_values(["ID", "metric", "rank"], kind="stable").drop_duplicates(
        ["ID", "metric"]
    )
    wide = long.pivot(index="ID", columns="metric", values="value")
    # one label, several metrics (the section's sm__ and smsp__ clocks)
    for metric, others in rules.also.items():
        for other in others:
            if metric in wide.columns and other not in wide.columns:
                wide[other] = wide[metric]
    return wide


def _read_raw(path: Path, catalog: Catalog, rules: CsvRules, notes: list[str]) -> pd.DataFrame:
    meta_cols = {
        "ID",
        "Kernel Name",
        "Block Size",
        "Grid Size",
        "CC",
        "device__attribute_display_name",
    }
    table = _open_rows(path, lambda c: c in meta_cols or _wanted(c, catalog))
    if "ID" not in table.columns or "Kernel Name" not in table.columns:
        raise InputError(
            "raw-page CSV without ID and Kernel Name columns; export it again with ncu --csv"
            " --page raw",
            path,
        )
    has_units = len(table) > 0 and table["ID"].iloc[0] == ""
    units = table.iloc[0] if has_units else pd.Series("", index=table.columns)
    data = table.iloc[1:] if has_units else table
    if not has_units:
        notes.append("raw page without a units row: values read as ncu base units")
    data = data[data["ID"] != ""]
    meta = _meta(data, path)
    if "device__attribute_display_name" in data.columns:
        meta["device_name"] = (
            data["device__attribute_display_name"].replace("", None).to_numpy(dtype=object)
        )
    metrics = [c for c in data.columns if c not in meta_cols]
    values, na_cols = _raw_values(data, metrics, units, path, rules)
    for col, keep in catalog.instanced_metrics.items():
        if col in data.columns:
            columns, listed = _instances(data[col], col, keep)
            values.update(columns)
            if not listed:
                # Totals only: without its instances the table would read as "no such opcode"
                # (zero work); without the table the work is unknown, as it is.
                values.pop(col, None)
                if NO_INSTANCES_NOTE not in notes:
                    notes.append(NO_INSTANCES_NOTE)
    # One concat, not a column at a time (pandas' "highly fragmented" PerformanceWarning).
    meta = pd.concat([meta, pd.DataFrame(values, index=meta.index)], axis=1)
    if na_cols:
        names = np.array(sorted(na_cols))
        mask = np.column_stack([na_cols[c] for c in names])
        meta["_na"] = [", ".join(names[row]) if row.any() else None for row in mask]
    return meta


def _raw_values(
    data: pd.DataFrame, cols: list[str], units: pd.Series, path: Path, rules: CsvRules
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The raw page's metric columns in ncu base units, and per column the mask of launches where
    ncu wrote no value (:data:`_NA`); InputError on a cell that is not a number."""
    values: dict[str, np.ndarray] = {}
    na_cols: dict[str, np.ndarray] = {}
    for col in cols:
        f = _convert(path, col, units[col], rules)
        try:
            numbers, na = _numbers(data[col])
        except ValueError as exc:
            raise InputError(f"{col} has the non-numeric value {exc.args[0]!r}", path) from exc
        with np.errstate(over="ignore"):  # see _read_details
            values[col] = numbers * f
        if na.any():
            na_cols[col] = na
    return values, na_cols


def read_session(path: str | Path) -> Session:
    """Read a session-page export (``ncu --import R --csv --page session``).

    Parameters
    ----------
    path : str or Path
        The session-page CSV.

    Returns
    -------
    Session
        Device name, CC, ncu version (``Nsight Compute Target``/``Version``) and numeric device
        attributes as ``device__attribute_<name>`` metric names.
    """
    path = Path(path)
    session = Session()
    text = path.read_bytes().decode("utf-8", "replace").lstrip("\ufeff")
    for row in _rows(text):
        if len(row) < 2:
            continue
        key, value = row[0], row[1]
        if key in ("Nsight Compute Target", "Version") and session.ncu_version is None:
            m = re.match(r"\d{4}\.\d+\.\d+(\.\d+)?", value)
            session.ncu_version = m.group(0) if m else None
        elif key == "display_name":
            session.device_name = value
        elif re.fullmatch(r"[a-z0-9_]+", key):
            with contextlib.suppress(ValueError):  # text attributes (names, modes) are not kept
                session.attributes[f"device__attribute_{key}"] = float(value.replace(",", ""))
    a = session.attributes
    if (
        "device__attribute_compute_capability_major" in a
        and "device__attribute_compute_capability_minor" in a
    ):
        session.cc = f"{int(a['device__attribute_compute_capability_major'])}.{int(a['device__attribute_compute_capability_minor'])}"  # noqa: E501
    return session


def read_csv(path: str | Path, catalog: Catalog, rules: CsvRules | None = None) -> pd.DataFrame:
    """Read a details- or raw-page ncu CSV export into the raw table.

    Parameters
    ----------
    path : str or Path
        The export (program output and ncu messages around the table are allowed).
    catalog : Catalog
        Says which metrics to keep (the same set the ``.ncu-rep`` reader reads).
    rules : CsvRules, optional
        Units and labels; default ``metrics/csv.toml``.

    Returns
    -------
    DataFrame
        The raw table of :mod:`ncuroof.schema`, one row per launch, metric values in ncu base
        units. ``kernel_demangled`` is the CSV's ``Kernel Name`` and ``kernel_name`` the bare
        function name (:func:`function_name`). ``input_notes`` names metrics that were ``n/a``,
        ignored section labels, ncu's own warnings and runs joined from one file (see the module).

    Raises
    ------
    InputError
        Not an ncu CSV export, a session page (no launches), a unit it does not know on a metric
        it reads, a non-numeric value, a non-integer launch ID, a launch ID repeated within one
        process, runs in one file whose launches do not line up.
    ReportFormatError
        The file ends inside a row (truncated).
    """
    path = Path(path)
    rules = rules or load_csv_rules()
    page = sniff(path)
    if page == "session":
        raise InputError(
            "is a session-page export with no kernel launches; pass it together with the raw or "
            "details export of the same run (it adds the device name and ncu version)",
            path,
        )
    messages = _ncu_messages(path)
    notes: list[str] = []
    if page == "raw":
        return _with_notes(_read_raw(path, catalog, rules, notes), notes + messages, path)
    tables: dict[str, pd.DataFrame] = {}
    for pid, rows in _runs(_details_rows(path)).items():
        notes = []
        tables[pid] = _with_notes(
            _read_details(rows, path, catalog, rules, notes), notes + messages, path
        )
    return _join(tables, path) if len(tables) > 1 else tables[""]


def _with_notes(raw: pd.DataFrame, notes: list[str], path: Path) -> pd.DataFrame:
    """``raw`` with its ``input_notes``: the launch's n/a metrics, then ``notes`` (common
    to all launches)."""
    if raw.empty:
        raise InputError(
            "holds no kernel launches; check ncu's --kernel-name/--launch-count filters", path
        )
    common = "; ".join(notes)
    na = raw.pop("_na") if "_na" in raw.columns else pd.Series(None, index=raw.index)
    raw["input_notes"] = [
        "; ".join(x for x in ((f"{NA_NOTE}: {m}" if isinstance(m, str) and m else ""), common) if x)
        or None
        for m in na
    ]
    return raw
