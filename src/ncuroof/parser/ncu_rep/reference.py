"""Read Nsight Compute ``.ncu-rep`` reports through NVIDIA's ``ncu_report`` module, the reference,
in a worker process where its abort cannot take ncuroof down.

``ncu_report`` (PyPI ``ncu-report``) reads reports without a GPU, but it reads a truncated report
silently as one with fewer launches, and a repeated or reordered block as more launches, so
:func:`check_records` first walks the report once with the decoder's block walker
(:func:`.framing.plan`): framing, every launch record through the
:class:`~.framing.LaunchLedger`, and the ncu version, which ``ncu_report``
does not expose.

``ncu_report``'s C++ decoder aborts the process (SIGABRT) on some damaged payloads that pass the
framing checks. :func:`read_launches` runs :mod:`._ncu_worker` as a child interpreter (only the
standard library and ``ncu_report`` are imported there, so it starts in tens of milliseconds),
streams its launches back and turns an abort or a failure into a one-line
:class:`~ncuroof.errors.ReportFormatError` naming the file and how far the read got.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import pickle
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from ...catalog import Catalog
from ...errors import InputError, MissingModuleError, ReportFormatError
from ...schema import DAMAGED
from .framing import LaunchLedger, Plan, ResultRecord, check_file, plan, walk
from .rows import held_text, launch_frame, launch_row

__all__ = [
    "read_ncu_rep",
    "check_records",
    "read_launches",
    "missing_module",
    "DAMAGED_TEXT",
    "WORKER",
]

#: The worker script, run by path.
WORKER = Path(__file__).with_name("_ncu_worker.py")
# Run the worker by path (its directory, which holds protobuf.py, is not put on sys.path) and
# without the current directory ``python -c`` puts first (absent under PYTHONSAFEPATH), keeping
# PYTHONPATH (ncu's extras/python is often put there).
_BOOT = (
    "import runpy, sys; sys.path[:1] = [p for p in sys.path[:1] if p]; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def missing_module(path: Path) -> MissingModuleError:
    """The error for a machine without NVIDIA's ``ncu_report`` module: how to get it,
    or the CSV route."""
    return MissingModuleError(
        "reading .ncu-rep needs NVIDIA's ncu_report module (pip install ncu-report; wheels for"
        " Linux x86-64 and aarch64, macOS 13+ and Windows); install it, or export the data with"
        f" ncu --import {path.name} --csv --page raw --print-units base > {path.stem}.csv and"
        " analyze that CSV",
        path,
    )


def _stderr_line(err: Any) -> str:
    err.seek(0)
    lines = [ln.strip() for ln in err.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    useful = [ln for ln in lines if "Check failed" in ln or "Error" in ln] or lines
    if not useful:
        return ""
    text = useful[-1]
    if "] " in text and "Check failed" in text:
        text = text.split("] ", 1)[1]
    return text[:200].strip()


def _where(n_read: int, total: int | None, records: list[Any] | None) -> str:
    if total is None:
        return "while loading it"
    where = f"at launch {n_read} of {total}"
    if records is not None and n_read < len(records):
        r = records[n_read]
        where += f" (bytes {r.start}-{r.end})"
    return where


def _collect(
    proc: subprocess.Popen[bytes], spec: bytes, progress: Any
) -> tuple[list[dict[str, Any]], int | None, str | None, str | None]:
    """Send the spec, read the worker's frames to the end: (rows, total, error, missing)."""
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(spec)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    rows: list[dict[str, Any]] = []
    total = error = missing = advance = None
    with proc.stdout:
        while True:
            try:
                kind, value = pickle.load(proc.stdout)
            except (EOFError, pickle.UnpicklingError, ValueError):
                return rows, total, error, missing
            if kind == "row":
                rows.append(value)
                if advance is not None:
                    advance()
            elif kind == "total":
                total = value
                advance = progress(total) if progress is not None else None
            elif kind == "missing":
                missing = value
            else:
                error = value


def read_launches(
    path: Path, spec: dict[str, Any], progress: Any = None, records: list[Any] | None = None
) -> list[dict[str, Any]]:
    """Read every launch of a report through ``ncu_report`` in a worker process.

    Parameters
    ----------
    path : Path
        A framing-checked ``.ncu-rep`` (or ``.ncu-repz``).
    spec : dict
        What to keep: ``wanted`` (metric names), ``ops_prefix``/``ops_suffixes`` (tensor-path
        metrics), ``instanced`` (each opcode metric and the regex of the opcodes kept), see
        :mod:`._ncu_worker`.
    progress : callable, optional
        ``progress(total)`` returns a callable advanced once per launch.
    records : list of ResultRecord, optional
        From :func:`.reference.check_records`, to name the byte range of the
        launch being decoded when the decoder aborts.

    Returns
    -------
    list of dict
        One dict per launch: ``range_id``, ``launch_id``, ``kernel_name``, ``kernel_demangled``,
        ``nvtx_range``, ``_damaged_text`` (a name held bytes that are not UTF-8) and metric values.

    Raises
    ------
    ReportFormatError
        If ``ncu_report`` cannot load the report, aborts (a signal) or fails while decoding it.
    MissingModuleError
        If ``ncu_report`` cannot be imported.
    """
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(WORKER), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        try:
            rows, total, error, missing = _collect(proc, json.dumps(spec).encode(), progress)
        except BaseException:  # Ctrl-C or a failing progress bar: the worker does not outlive it
            proc.kill()
            raise
        finally:
            proc.wait()
        if missing is not None:
            raise missing_module(path)
        if error is not None:
            raise ReportFormatError(
                f"ncu_report could not read it ({error}); re-run ncu or re-export the report", path
            )
        _check_exit(proc.returncode, err, path, _where(len(rows), total, records))
    return rows


def _check_exit(code: int, err: Any, path: Path, where: str) -> None:
    """ReportFormatError when the worker died of a signal (the decoder aborted) or failed: ``err``
    is its stderr file, ``where`` the launch it was at (:func:`_where`)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        detail = _stderr_line(err)
        raise ReportFormatError(
            f"has a damaged launch record: NVIDIA's ncu_report decoder aborted ({name})"
            f" {where}{': ' + detail if detail else ''}; copy the"
            " report again or re-run ncu",
            path,
        )
    if code != 0:
        raise ReportFormatError(
            f"ncu_report failed {where} ({_stderr_line(err)}); re-run ncu or re-export the report",
            path,
        )


def check_records(path: Path) -> Plan:
    """Framing, file header and launch records of a ``.ncu-rep`` checked, before
    ``ncu_report`` reads it.

    One walk over the blocks (:func:`.framing.plan` with a
    :class:`~.framing.LaunchLedger`): no truncated report, damaged block, duplicated
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
