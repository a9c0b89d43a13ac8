"""Run NVIDIA's ``ncu_report`` where its abort cannot take ncuroof down: in a worker process.

``ncu_report``'s C++ decoder aborts the process (SIGABRT) on some damaged payloads that pass the
framing checks. :func:`read_launches` runs :mod:`._ncu_worker` as a child interpreter (only the
standard library and ``ncu_report`` are imported there, so it starts in tens of milliseconds),
streams its launches back and turns an abort or a failure into a one-line
:class:`~ncuroof.errors.ReportFormatError` naming the file and how far the read got.
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import MissingModuleError, ReportFormatError

__all__ = ["read_launches", "missing_module", "WORKER"]

#: The worker script, run by path.
WORKER = Path(__file__).with_name("_ncu_worker.py")
# Run the worker by path (its directory, which holds csv.py, is not put on sys.path) and without the
# current directory ``python -c`` puts first (absent under PYTHONSAFEPATH), keeping PYTHONPATH
# (ncu's extras/python is often put there).
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
        From :func:`ncuroof.parser.ncu_rep.check_records`, to name the byte range of the
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
