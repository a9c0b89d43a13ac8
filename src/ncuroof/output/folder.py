"""Writing an output folder whole or not at all, with its manifest.

Every folder ncuroof writes gets a :data:`~ncuroof.parser.saved.MANIFEST` listing the files it
wrote (:func:`manifest_text`); a later run replaces or removes only those, and reads back only
those (:func:`ncuroof.parser.saved.read_manifest`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .._lazy import LazyModule
from .._version import __version__
from ..errors import InputError, OutputError
from ..parser.saved import MANIFEST, read_manifest

pa = LazyModule("pyarrow")  # its error type, when a writer failed

__all__ = ["write_outputs", "manifest_text"]


def manifest_text(names: Sequence[str]) -> str:
    """The :data:`MANIFEST` of an output folder holding ``names``, as JSON text."""
    return (
        json.dumps({"written_by": f"ncuroof {__version__}", "files": sorted(names)}, indent=1)
        + "\n"
    )


def write_outputs(
    outdir: Path,
    files: dict[str, str | bytes | Callable[[Path], None]],
    inputs: Sequence[Path] = (),
) -> None:
    """Write ``files`` into ``outdir`` whole or not at all, as one unit with its manifest.

    Everything is written into a hidden staging directory first (beside a new ``outdir``, inside
    an existing one). A new ``outdir`` is the staging directory renamed. In an existing one, the
    files of the previous run (those its :data:`~ncuroof.parser.saved.MANIFEST` lists) are
    moved aside, the new ones moved in, then the old ones removed: a stale output of an earlier
    run (``launches.parquet`` after a CSV-only rerun, ``phases.csv``, ...) does not stay beside the
    new ones, and a failure puts the previous run back. Files the manifest does not list are
    never touched. SIGTERM and SIGHUP while writing clean up like Ctrl-C (KeyboardInterrupt).

    Parameters
    ----------
    outdir : Path
        Output directory (created if missing; its parent must exist or be creatable).
    files : dict of str to str, bytes or callable
        File name to content, or to a writer called with the path to create (a Parquet dataset
        directory, :func:`ncuroof.output.tables.dataset_writer`).
    inputs : sequence of Path, optional
        The input files (and saved folders) of the run: refused when one is among the files
        written or replaced.

    Raises
    ------
    InputError
        If an input is among the files this run writes or replaces
        (``analyze dir/launches.csv -o dir``).
    OutputError
        If a file to write exists and no manifest says ncuroof wrote it, or the directory or a file
        cannot be written. Any other exception is re-raised after the staging directory is removed.
    """
    outdir = Path(outdir)
    with _one_writer(outdir):
        old = _previous(outdir)
        _check_targets(outdir, list(files), old, inputs)
        _remove_debris(outdir)
        _write_staged(outdir, files, old)


#: Seconds a run waits for another ncuroof run writing the same folder before it is refused.
WAIT_FOR_WRITER_S = 120.0


@contextlib.contextmanager
def _one_writer(outdir: Path) -> Iterator[None]:
    """Hold the lock of ``outdir`` (``fcntl.flock`` on ``.<name>.ncuroof-lock`` beside it, removed
    on release): a second run into the same folder waits for the first, up to
    :data:`WAIT_FOR_WRITER_S`, then is refused in one line (issue 53: two runs into one ``-o``
    left a ``roofs.csv`` the manifest did not list). Where the lock cannot be made (a read-only
    parent), the write itself says why."""
    import fcntl
    import time

    lock = outdir.parent / f".{outdir.name or 'ncuroof'}.ncuroof-lock"
    with contextlib.suppress(OSError):
        outdir.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + WAIT_FOR_WRITER_S
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield  # no lock here: _staging reports the unwritable place
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino  # not unlinked by its last holder
        except OSError:
            same = None
        if same:
            break
        os.close(fd)
        if same is None and time.monotonic() > deadline:
            raise OutputError(
                f"another ncuroof run has been writing it for {WAIT_FOR_WRITER_S:g} s; wait for it"
                " or choose another -o",
                outdir,
            )
        time.sleep(0.05)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _remove_debris(outdir: Path) -> None:
    """Remove the staging folders (``.<name>.new.*``) a killed run left in or beside ``outdir``:
    with the folder's lock held no other run is writing them (issue 53)."""
    prefix = f".{outdir.name or 'ncuroof'}.new."
    for where in (outdir, outdir.parent):
        with contextlib.suppress(OSError):
            for entry in where.iterdir():
                if entry.name.startswith(prefix) and entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)


def _write_staged(
    outdir: Path, files: dict[str, str | bytes | Callable[[Path], None]], old: list[str]
) -> None:
    """Stage ``files`` and swap them in (see :func:`write_outputs`)."""
    with _signals_interrupt():
        tmp = _staging(outdir)
        try:
            _write_files(tmp, {**files, MANIFEST: manifest_text(list(files))})
            if not outdir.exists():
                os.rename(tmp, outdir)
                os.chmod(outdir, 0o777 & ~_umask())
            else:
                _swap(outdir, tmp, [*files, MANIFEST], [*old, MANIFEST])
        # whatever fails (disk, Arrow, encoding, a signal), leave no partial files
        except BaseException as exc:  # noqa: BLE001
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, (OSError, pa.ArrowException)):
                raise _write_error(exc, outdir) from exc
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _previous(outdir: Path) -> list[str]:
    """The files an earlier run wrote in ``outdir`` (its manifest; none for a new folder);
    OutputError when ``outdir`` is a file or its manifest is not ncuroof's."""
    if outdir.exists() and not outdir.is_dir():
        raise OutputError("exists and is not a directory; choose another -o", outdir)
    try:
        return (read_manifest(outdir) or []) if outdir.is_dir() else []
    except InputError as exc:
        raise OutputError(f"{exc.message}, or choose another -o", exc.path) from exc


def _staging(outdir: Path) -> Path:
    """A new hidden staging directory inside an existing ``outdir``, else beside it."""
    try:
        stage_in = outdir if outdir.is_dir() else outdir.parent
        stage_in.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{outdir.name or 'ncuroof'}.new.", dir=stage_in))
    except OSError as exc:
        raise OutputError(
            f"cannot create the output directory ({exc.strerror}); choose a writable -o", outdir
        ) from exc


#: Errors that a writable output directory elsewhere avoids.
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT)


def _write_error(exc: BaseException, outdir: Path) -> OutputError:
    """The one-line error of a failed write (the previous files are kept)."""
    why = getattr(exc, "strerror", None) or exc
    denied = getattr(exc, "errno", None) in _DENIED
    advice = "choose a writable -o" if denied else "choose another -o"
    return OutputError(
        f"cannot write the output ({why}); the previous files are kept; {advice}", outdir
    )


def _check_targets(outdir: Path, new: list[str], old: list[str], inputs: Sequence[Path]) -> None:
    """Refuse an input among the files written or replaced, and a file to write that
    ncuroof did not write."""
    base = outdir.resolve()
    targets = {(base / n).resolve() for n in {*new, *old}}
    for p in inputs:
        rp = Path(p).resolve()
        if rp in targets or rp == base or any(t in rp.parents for t in targets):
            raise InputError(
                f"is an input and inside the output set of {outdir} (it would be replaced); choose"
                " another -o",
                p,
            )
    for name in new:
        if name not in old and os.path.lexists(outdir / name):
            raise OutputError(
                f"{name} exists and was not written by ncuroof (no {MANIFEST} lists it);"
                " move it away or choose another -o",
                outdir,
            )


def _swap(outdir: Path, tmp: Path, new: list[str], old: list[str]) -> None:
    """Move ``old`` files of ``outdir`` aside, ``new`` ones from ``tmp`` in; on failure put
    the old ones back."""
    aside = tmp / ".old"
    aside.mkdir()
    moved_old: list[str] = []
    moved_new: list[str] = []
    try:
        for name in dict.fromkeys(old):
            if os.path.lexists(outdir / name):
                os.rename(outdir / name, aside / name)
                moved_old.append(name)
        for name in new:
            os.rename(tmp / name, outdir / name)
            moved_new.append(name)
    except BaseException:
        for name in moved_new:
            _remove(outdir / name)
        for name in moved_old:
            os.rename(aside / name, outdir / name)
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt while writing (main thread only), so the
    staging directory is removed as on Ctrl-C; the previous handlers are restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    sigs = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {s: signal.signal(s, interrupt) for s in sigs}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _write_files(directory: Path, files: dict[str, str | bytes | Callable[[Path], None]]) -> None:
    """Write ``files`` into ``directory``; the writers (pyarrow's, which release the GIL) run on
    threads side by side, then the text and bytes are written."""
    writers = [(name, content) for name, content in files.items() if callable(content)]
    if writers:
        with ThreadPoolExecutor(max_workers=min(len(writers), os.cpu_count() or 1)) as pool:
            for done in [pool.submit(write, directory / name) for name, write in writers]:
                done.result()
    for name, content in files.items():
        if callable(content):
            continue
        mode = "wb" if isinstance(content, bytes) else "w"
        # Text that cannot be UTF-8 (lone surrogates from a damaged name) is written as U+FFFD.
        with open(
            directory / name,
            mode,
            **({} if mode == "wb" else {"encoding": "utf-8", "newline": "", "errors": "replace"}),
        ) as f:
            f.write(content)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
