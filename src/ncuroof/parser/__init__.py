"""Turn ncu output files into the raw table (:mod:`ncuroof.schema`).

One reader per format, chosen from the file's content and name: ``.ncu-rep`` reports through our
own decoder (:mod:`.ncu_rep.decode`), or NVIDIA's ``ncu_report`` (:mod:`.ncu_rep.reference`: the
reference, used for anything the decoder was not verified on), ncu CSV exports (:mod:`.csv`). A
compressed report (``.ncu-repz``, zstd) is read forward from its stream (:mod:`.ncu_rep.source`),
or, where that path stops, decompressed into a temporary file first and read the same way
(:mod:`.ncu_rep.compressed`). Several files of
one run (the NERSC/GENE workflow: time and DRAM bytes from one ncu run, FLOP counts from another)
are merged launch by launch (:mod:`.merge`); a session-page CSV completes the others with the
device name and ncu version.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..catalog import Catalog
from ..errors import InputError, MissingModuleError, NcuroofError, ReportFormatError
from ..fmt import path_text
from ..schema import validate_raw
from .csv import Session, read_csv, read_session, sniff
from .files import regular_file
from .merge import apply_session, merge
from .ncu_rep import (
    LEARNED,
    MAGIC,
    EarlySample,
    PayloadError,
    UnsupportedReport,
    against_ncu_report,
    check_rates,
    is_compressed,
    read_ncu_rep,
    read_nvr,
    streamable,
    uncompressed,
)
from .validate import check_values


def have_ncu_report() -> bool:
    """Whether NVIDIA's ``ncu_report`` can be imported here (wheels for Linux x86-64 and aarch64,
    macOS 13+ and Windows; not every host)."""
    try:
        return importlib.util.find_spec("ncu_report") is not None
    except (ImportError, ValueError):
        return False


__all__ = [
    "read",
    "read_many",
    "check_reader",
    "read_ncu_rep",
    "read_nvr",
    "read_csv",
    "read_session",
    "merge",
    "READERS",
]

READERS = ("auto", "fast", "ncu_report")
_log = logging.getLogger(__name__)

#: How ``ncu_report`` reads a whole report into the raw table (:func:`read_ncu_rep`'s signature).
Whole = Callable[[Path, Catalog, Any], pd.DataFrame]


class _Declined(Exception):
    """A compressed report read forward needs ``ncu_report`` on the whole report: it is read from a
    decompressed copy instead (:func:`_streamed`)."""


def _ncu_report(path: Path, catalog: Catalog, progress: Any) -> pd.DataFrame:
    """The :data:`Whole` of a report: :func:`read_ncu_rep`."""
    return read_ncu_rep(path, catalog, progress)


def _decline(path: Path, catalog: Catalog, progress: Any) -> pd.DataFrame:
    """The :data:`Whole` of a compressed report read forward: declined (:class:`_Declined`)."""
    raise _Declined(path)


_TEXT_SUFFIXES = (".csv", ".txt", ".log")


def _check_path(path: Path) -> None:
    regular_file(path, "pass a .ncu-rep report or an ncu CSV export")


def _is_report(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise InputError(
            f"cannot be read ({exc.strerror or exc}); pass a .ncu-rep report or an ncu CSV export",
            path,
        ) from None
    if path.suffix in (".ncu-rep", ".ncu-repz") or head == MAGIC or is_compressed(head):
        return True
    if path.suffix.lower() in _TEXT_SUFFIXES:
        return False
    raise InputError("unknown input type; pass a .ncu-rep report or an ncu CSV export (.csv)", path)


def check_reader(reader: str) -> None:
    """Raise ValueError unless ``reader`` is one of :data:`READERS`."""
    if reader not in READERS:
        raise ValueError(f"reader must be one of {', '.join(READERS)}, not {reader!r}")


def _read_report(
    path: Path, catalog: Catalog, progress: Any, reader: str, whole: Whole = _ncu_report
) -> pd.DataFrame:
    """A ``.ncu-rep`` through the chosen reader, its ``reader`` column saying which and why.

    ``auto`` reads with the decoder, then checks it against ``ncu_report`` on a sample
    (:func:`.ncu_rep.verify.against_ncu_report`) wherever that is installed, and reads the whole
    report with ``ncu_report`` when the decoder meets something it was not verified on, when a
    launch does not decode as it knows results (a damaged report only if ``ncu_report`` fails on it
    too), or when the sample differs. Decoded tables are checked for counts and rates that disagree
    on the duration (:func:`.ncu_rep.verify.check_rates`). ``whole`` is how ``ncu_report`` reads
    the whole report (:func:`_streamed` declines instead).
    """
    if reader == "ncu_report":
        return _by(read_ncu_rep(path, catalog, progress), "ncu_report (--reader ncu_report)")
    # the decoder checks framing and launch records in its one pass (issue 14);
    # read_ncu_rep checks them first
    blocks: list[Any] = []
    early: list[EarlySample] = []  # the sample check's first part, read while the report decodes

    def planned(total: int, firsts: list[int]) -> None:
        if reader == "auto" and have_ncu_report():
            early.append(EarlySample(path, catalog, blocks, total, firsts))

    try:
        return _decoded_report(path, catalog, progress, reader, blocks, planned, early, whole)
    finally:
        for sample in early:
            sample.result()  # its worker done and its files removed, whatever happened here


def _decoded_report(
    path: Path,
    catalog: Catalog,
    progress: Any,
    reader: str,
    blocks: list[Any],
    planned: Any,
    early: list[EarlySample],
    whole: Whole = _ncu_report,
) -> pd.DataFrame:
    """:func:`_read_report` through the decoder (``reader`` 'fast' or 'auto')."""
    try:
        df = read_nvr(path, catalog, progress, blocks=blocks, planned=planned)
    except UnsupportedReport as exc:
        if reader == "fast":
            raise ReportFormatError(
                f"the built-in reader does not know this report ({exc}); read it with --reader"
                " ncu_report",
                path,
            ) from exc
        return _by(
            _fallback(
                path,
                catalog,
                progress,
                f"the built-in reader does not know this report ({exc})",
                whole,
            ),
            f"ncu_report (the built-in decoder does not know this report: {exc})",
        )
    except PayloadError as exc:
        if reader == "fast" or not have_ncu_report():
            raise
        return _by(
            _second_opinion(path, catalog, progress, exc, whole),
            f"ncu_report (the built-in decoder could not decode it: {exc.message})",
        )
    learned = df.attrs.get(LEARNED, [])
    if reader == "fast" or not have_ncu_report():
        why = "--reader fast" if reader == "fast" else "ncu_report is not installed on this host"
        return _by(
            check_rates(df, catalog),
            f"ncuroof decoder, not verified against ncu_report ({why}); counts checked against"
            " rates",
        )
    sample = early[0] if early else None
    return _verified(path, df, catalog, progress, learned, blocks, sample, whole)


def _verified(
    path: Path,
    df: pd.DataFrame,
    catalog: Catalog,
    progress: Any,
    learned: list[int],
    blocks: list[Any],
    early: EarlySample | None = None,
    whole: Whole = _ncu_report,
) -> pd.DataFrame:
    """The decoder's table checked against ``ncu_report`` on a sample, or ``ncu_report``'s table
    where they differ. Where ``ncu_report`` cannot read the sample cut from the report, it reads the
    report itself; where it cannot read that either, the decoder's table stays, said unverified
    (one reader reading a report is no reason to refuse it). ``blocks``: the report's blocks as the
    decoder recorded them (the sample is cut without walking the report again); ``early``: the
    part of the sample read while the report was decoded."""
    try:
        verdict = against_ncu_report(path, df, catalog, learned, blocks, early=early)
    except NcuroofError as exc:
        try:
            return _by(
                whole(path, catalog, progress),
                f"ncu_report (the sample check against it could not run: {exc.message})",
            )
        except NcuroofError as theirs:
            return _by(
                check_rates(df, catalog),
                "ncuroof decoder, not verified: ncu_report cannot read this report"
                f" ({theirs.message}); counts checked against rates",
            )
    if verdict.difference:
        return _by(
            whole(path, catalog, progress),
            f"ncu_report (the built-in decoder differed from it: {verdict.difference})",
        )
    return _by(
        check_rates(df, catalog),
        f"ncuroof decoder, verified against ncu_report on {verdict.launches} of {len(df)} launches",
    )


def _by(df: pd.DataFrame, text: str) -> pd.DataFrame:
    df["reader"] = text
    return df


def _fallback(
    path: Path, catalog: Catalog, progress: Any, why: str, whole: Whole = _ncu_report
) -> pd.DataFrame:
    """The report through ``ncu_report``, or a missing-module error saying ``why`` it was needed."""
    try:
        return whole(path, catalog, progress)
    except MissingModuleError as missing:
        raise MissingModuleError(f"{why}; {missing.message}", path) from missing


def _second_opinion(
    path: Path, catalog: Catalog, progress: Any, exc: PayloadError, whole: Whole = _ncu_report
) -> pd.DataFrame:
    """The report through ``ncu_report`` after the decoder failed on a launch; damaged only if
    ``ncu_report`` fails too (then the decoder's error, which names the block and launch)."""
    try:
        return whole(path, catalog, progress)
    except ReportFormatError as theirs:
        raise ReportFormatError(
            f"{exc.message.split(': the report is damaged or')[0]}, and ncu_report cannot read it"
            f" either ({theirs.message}): the report is damaged; re-run ncu or copy the report"
            " again",
            path,
        ) from exc


def read(
    path: str | Path, catalog: Catalog, progress: Any = None, reader: str = "auto"
) -> pd.DataFrame:
    """Read one ncu output file into the raw table.

    Parameters
    ----------
    path : str or Path
        A ``.ncu-rep``/``.ncu-repz`` report (compressed or not, told by its first bytes) or an ncu
        CSV export (details or raw page).
    catalog : Catalog
        The metric catalog (which metrics to keep).
    progress : callable, optional
        Progress-bar factory, see :func:`read_ncu_rep`.
    reader : {'auto', 'fast', 'ncu_report'}, default 'auto'
        How ``.ncu-rep`` files are read: our decoder (:func:`read_nvr`, 'fast'), NVIDIA's
        ``ncu_report`` ('ncu_report'), or the decoder with ``ncu_report`` for what it was not
        verified on (an unknown format version or value kind; 'auto'). Both give the same
        table; a ``.ncu-repz`` is read by either from its decompressed bytes.

    Returns
    -------
    DataFrame
        The validated raw table, one row per launch; values that cannot be physical are NaN and
        their launches marked damaged (:func:`ncuroof.parser.validate.check_values`).

    Raises
    ------
    InputError
        For a missing, empty, corrupt or unsupported file, or a session-page CSV alone
        (see :mod:`ncuroof.errors`).
    ReportFormatError
        For a damaged report (naming the block and launch), or one the decoder does not know
        with ``reader='fast'``.
    MissingModuleError
        When ``ncu_report`` is needed (``reader='ncu_report'``, or a report the decoder does
        not know) and not installed.
    ValueError
        For an unknown ``reader``.
    """
    check_reader(reader)
    path = Path(path)
    _check_path(path)
    if _is_report(path):
        df = _streamed(path, catalog, progress, reader)
        if df is None:
            with uncompressed(path, catalog) as report:
                df = _read_report(report, catalog, progress, reader)
            if report != path:
                df["source"] = path_text(path)
    else:
        df = _by(read_csv(path, catalog), "ncuroof CSV reader")
    return validate_raw(check_values(df, catalog), path_text(path))


def _streamed(path: Path, catalog: Catalog, progress: Any, reader: str) -> pd.DataFrame | None:
    """A compressed report read by the decoder forward from its stream (:mod:`.ncu_rep.source`: its
    size declared by its frames or counted by one pass of decompression, no decompressed copy
    written), sample check included; None where that does not give the table, so that it is read
    from a decompressed copy as before (the same table, and the same errors): an uncompressed file,
    ``--reader ncu_report``, a report ``ncu_report`` must read whole (one the decoder does not know,
    a launch it cannot decode, a sample that differs), any error (a damaged report's message is the
    copy's), a read behind the stream's window."""
    if reader == "ncu_report" or streamable(path, catalog) is None:
        return None
    try:
        return _read_report(path, catalog, progress, reader, whole=_decline)
    # _Declined, Backward, an NcuroofError, or a defect of this path: whatever stops it, the
    # decompressed copy is read as it always was
    except Exception as exc:  # noqa: BLE001
        _log.info("%s: read from a decompressed copy (%s)", path, exc)
        return None


def _read_each(
    paths: Sequence[str | Path], catalog: Catalog, progress: Any, reader: str
) -> tuple[list[pd.DataFrame], list[tuple[Path, Session]]]:
    """The raw table of each file that has launches (:func:`read`), and the session pages."""
    tables: list[pd.DataFrame] = []
    sessions: list[tuple[Path, Session]] = []
    for p in (Path(x) for x in paths):
        _check_path(p)
        if not _is_report(p) and sniff(p) == "session":
            sessions.append((p, read_session(p)))
        else:
            tables.append(read(p, catalog, progress, reader))
    return tables, sessions


def read_many(
    paths: Sequence[str | Path],
    catalog: Catalog,
    progress: Any = None,
    stack: bool = False,
    reader: str = "auto",
) -> pd.DataFrame:
    """Read several files into one raw table: merged as one run, or stacked.

    Parameters
    ----------
    paths : list of str or Path
        Reports and CSV exports. Session-page CSVs add the device name, CC and ncu version to
        the launches of the other files.
    catalog : Catalog
        The metric catalog.
    progress : callable, optional
        Progress-bar factory for ``.ncu-rep`` reading.
    stack : bool, default False
        False: the files are parts of one run and are merged launch by launch
        (:func:`ncuroof.parser.merge.merge`). True: unrelated inputs, stacked (the ``source``
        column tells them apart).
    reader : {'auto', 'fast', 'ncu_report'}, default 'auto'
        How ``.ncu-rep`` files are read, see :func:`read`.

    Returns
    -------
    DataFrame
        The validated raw table.

    Raises
    ------
    InputError
        Bad input (see :func:`read`), only session pages, launches that do not line up, or a
        session page for another device.
    ValueError
        For an unknown ``reader``.
    """
    tables, sessions = _read_each(paths, catalog, progress, reader)  # each read() checks reader
    if not tables:
        where = sessions[0][0] if sessions else None
        raise InputError(
            "no kernel launches to analyze: a session page only describes the run; "
            "pass the raw or details export (or the .ncu-rep) with it",
            where,
        )
    if len(tables) == 1 and not sessions:  # validated by read(), as it is
        return tables[0]
    raw = (
        tables[0]
        if len(tables) == 1
        else (pd.concat(tables, ignore_index=True) if stack else merge(tables))
    )
    for p, session in sessions:
        raw = apply_session(raw, session, p)
    return validate_raw(raw, " + ".join(path_text(p) for p in paths))
