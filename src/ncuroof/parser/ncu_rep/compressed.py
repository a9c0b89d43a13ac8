"""Compressed Nsight Compute reports (``.ncu-repz``, ncu's default from 2026.3),
opened as ``.ncu-rep``.

A ``.ncu-repz`` is the ``.ncu-rep`` byte stream compressed with zstd (RFC 8878): one frame or
several, with or without their content size, skippable frames anywhere, as NVIDIA's ``ncu_report``
2026.x accepts. What a file is follows from its first bytes, never its name: ``NVR\\0`` is a report
as it is, the zstd magic (or a skippable frame's) a compressed one. A compressed report is
first read forward from its stream, with no copy (:mod:`.source`); wherever that path stops,
:func:`uncompressed` streams a
compressed report into a temporary file (``$TMPDIR``), deleted after the read, which both readers
then memory-map as they map a ``.ncu-rep``: the decompressed report is never held in memory, and
the same block walk, decoder and sample check read it. It is written from one reused buffer; when
the read ends its name goes at once and a thread closes its last descriptor (the kernel frees its
pages then, while the analysis goes on).

Before anything is decompressed, :func:`frames` walks the frame and block headers (RFC 8878 section
3.1): a stream that ends inside a frame is truncated (one line naming the byte, nothing written),
and the content sizes the frames declare are checked against the limits of ``[compressed]`` in
``metrics/thresholds.toml`` (a zstd bomb); while decompressing, the bytes actually written are held
to the same limits. The binding is ``zstandard`` (python-zstandard): maintained since 2016, wheels
for every host ncuroof runs on (Linux x86-64 and aarch64, macOS, Windows) and every Python from
3.9, a streaming reader that bounds each read's output. (``compression.zstd`` is in the standard
library only from Python 3.14, and its backport would be a second package doing the same.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import struct
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ...catalog import Catalog
from ...errors import InputError, MissingModuleError, NcuroofError, ReportFormatError
from .framing import MAGIC

__all__ = [
    "ZSTD_MAGIC",
    "is_compressed",
    "Frames",
    "frames",
    "uncompressed",
    "limit_bytes",
    "CHUNK",
    "Decompressing",
]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_SKIPPABLE, _SKIPPABLE_MASK = 0x184D2A50, 0xFFFFFFF0
#: Bytes read or written at a time while decompressing: the buffer stays in a core's L2 cache
#: between the decompressor and the write (4 MiB cost 2x the CPU of 1 MiB or 256 KiB).
CHUNK = 1 << 20
_DEFAULTS = {"max_bytes": 64 << 30, "max_ratio": 4096.0, "ratio_from_bytes": 1 << 30}
_RAISE = "raise [compressed] max_bytes, max_ratio in metrics/thresholds.toml if it is a real report"


def is_compressed(head: bytes) -> bool:
    """Whether ``head`` (a file's first 4 bytes or more) starts a zstd frame or
    a skippable frame."""
    return head[:4] == ZSTD_MAGIC or (
        len(head) >= 4 and struct.unpack_from("<I", head)[0] & _SKIPPABLE_MASK == _SKIPPABLE
    )


@dataclass(frozen=True)
class Frames:
    """What :func:`frames` finds: zstd frames, skippable frames, and the decompressed size the zstd
    frames declare (None when one of them does not say)."""

    count: int
    skippable: int
    declared: int | None


def _truncated(path: Path, size: int) -> ReportFormatError:
    return ReportFormatError(
        f"the compressed report is truncated at byte {size}: copy it again", path
    )


def _frame_header(f: BinaryIO, at: int, size: int, path: Path) -> tuple[int | None, bool]:
    """The content size (None if absent) and checksum flag of the zstd frame whose
    magic ends at ``at``."""
    desc = f.read(1)
    if not desc:
        raise _truncated(path, size)
    d = desc[0]
    if d & 0x08:
        raise ReportFormatError(
            f"is not a valid compressed report: the zstd frame at byte {at - 4} has a reserved bit"
            " set; copy it again",
            path,
        )
    single, fcs_flag = bool(d & 0x20), d >> 6
    did = (0, 1, 2, 4)[d & 3]
    fcs = (1 if single else 0, 2, 4, 8)[fcs_flag]
    rest = f.read((0 if single else 1) + did + fcs)
    if len(rest) < (0 if single else 1) + did + fcs:
        raise _truncated(path, size)
    if not fcs:
        return None, bool(d & 0x04)
    value = int.from_bytes(rest[len(rest) - fcs :], "little")
    return value + (256 if fcs == 2 else 0), bool(d & 0x04)


def _blocks_end(f: BinaryIO, size: int, path: Path) -> None:
    """Skip the blocks of one zstd frame (positioned after its header): RFC 8878 3.1.1.2."""
    while True:
        raw = f.read(3)
        if len(raw) < 3:
            raise _truncated(path, size)
        header = int.from_bytes(raw, "little")
        last, kind, length = header & 1, (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ReportFormatError(
                f"is not a valid compressed report: a zstd block at byte {f.tell() - 3} is of a"
                " reserved type; copy it again",
                path,
            )
        step = 1 if kind == 1 else length
        if f.tell() + step > size:
            raise _truncated(path, size)
        f.seek(step, 1)
        if last:
            return


def frames(path: Path) -> Frames:
    """Walk the frames of a compressed report without decompressing it.

    Parameters
    ----------
    path : Path
        A file starting with a zstd or skippable frame (:func:`is_compressed`).

    Returns
    -------
    Frames

    Raises
    ------
    ReportFormatError
        When the stream ends inside a frame ("truncated at byte N", N the file's size) or holds
        something that is no frame.
    """
    size = path.stat().st_size
    count = skippable = 0
    declared: int | None = 0
    with path.open("rb") as f:
        while f.tell() < size:
            at = f.tell()
            magic = f.read(4)
            if len(magic) < 4:
                raise _truncated(path, size)
            if is_compressed(magic) and magic != ZSTD_MAGIC:
                length = f.read(4)
                if len(length) < 4 or at + 8 + struct.unpack("<I", length)[0] > size:
                    raise _truncated(path, size)
                f.seek(struct.unpack("<I", length)[0], 1)
                skippable += 1
                continue
            if magic != ZSTD_MAGIC:
                raise ReportFormatError(
                    f"is not a valid compressed report: byte {at} starts no zstd frame; copy it"
                    " again",
                    path,
                )
            content, checksum = _frame_header(f, at + 4, size, path)
            _blocks_end(f, size, path)
            if checksum and f.tell() + 4 > size:
                raise _truncated(path, size)
            f.seek(4 if checksum else 0, 1)
            count += 1
            declared = None if content is None or declared is None else declared + content
    if not count:
        raise ReportFormatError(
            "holds no zstd frame, only skippable ones: it is no compressed report; copy it again",
            path,
        )
    return Frames(count, skippable, declared)


def limit_bytes(catalog: Catalog, compressed: int) -> int:
    """The most bytes a compressed report of ``compressed`` bytes may decompress to: ``max_bytes``,
    and beyond ``ratio_from_bytes`` at most ``max_ratio`` times ``compressed`` (``[compressed]`` of
    ``metrics/thresholds.toml``)."""
    lim = {**_DEFAULTS, **catalog.thresholds.get("compressed", {})}
    return int(min(lim["max_bytes"], max(lim["ratio_from_bytes"], lim["max_ratio"] * compressed)))


def _bomb(path: Path, what: str, limit: int, compressed: int) -> ReportFormatError:
    return ReportFormatError(
        f"the compressed report {what} but {compressed:,} compressed bytes may make at most"
        f" {limit:,} (a zstd bomb or a damaged file?); {_RAISE}",
        path,
    )


def _zstandard(path: Path) -> Any:
    """The ``zstandard`` module, or the error that says how to install it."""
    try:
        import zstandard
    except ImportError as exc:
        raise MissingModuleError(
            "reading a compressed .ncu-repz needs the zstandard package: pip install zstandard",
            path,
        ) from exc
    return zstandard


def _no_room(path: Path, out: Path, what: str) -> InputError:
    return InputError(
        f"no room to decompress it in {out.parent.parent} ({what}): free some space or point"
        " TMPDIR elsewhere",
        path,
    )


class Decompressing:
    """The decompressed bytes of the compressed report ``path`` (open as ``src``, at its start),
    read into a caller's buffer: ``readinto`` raises :class:`~ncuroof.errors.ReportFormatError`
    for a corrupt stream, naming the compressed byte it had read to."""

    def __init__(self, path: Path, src: BinaryIO) -> None:
        zstandard = _zstandard(path)
        self.path, self.src, self._error = path, src, zstandard.ZstdError
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            src, read_size=CHUNK, read_across_frames=True
        )

    def readinto(self, buffer: bytearray) -> int:
        """Decompress into ``buffer``; the bytes made (0 at the end)."""
        try:
            return self._reader.readinto(buffer)
        except self._error as exc:
            raise ReportFormatError(
                f"the compressed report is corrupt near byte {self.src.tell()} ({exc}): copy it"
                " again",
                self.path,
            ) from exc


def _decompress(path: Path, fd: int, limit: int, out: Path) -> None:
    """Stream ``path`` into ``out`` (open as ``fd``), at most ``limit`` bytes, each read's output
    into one reused buffer of :data:`CHUNK` bytes (a new bytes object per read cost 2 s more of
    page faults on 3.5 GB)."""
    written, compressed = 0, path.stat().st_size
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    with path.open("rb") as src:
        reader = Decompressing(path, src)
        while True:
            n = reader.readinto(buffer)
            if not n:
                break
            if written + n > limit:
                raise _bomb(path, f"decompresses to more than {limit:,} bytes", limit, compressed)
            _write_all(fd, view[:n], path, out, written)
            written += n


def _write_all(fd: int, data: memoryview, path: Path, out: Path, written: int) -> None:
    """Write ``data`` whole to ``fd`` (``out``), ``written`` bytes already there."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        raise _no_room(path, out, f"{written:,} bytes written so far") from exc


def _discard(fd: int, tmp: Path) -> None:
    """Remove the directory ``tmp`` and the file in it open as ``fd``: the names at once; where a
    file can be removed while open (POSIX), the last descriptor is closed by a thread, since
    the kernel frees the file's pages then and may wait for their writeback (0.4-1.7 s for 3.5 GB,
    0.15 s of it CPU). The interpreter waits for that thread before it exits."""
    posix = os.name != "nt"
    try:
        if not posix:
            os.close(fd)
        shutil.rmtree(tmp)
    finally:
        if posix:
            try:
                threading.Thread(target=os.close, args=(fd,), name="ncuroof-repz-free").start()
            except RuntimeError:  # no new thread while the interpreter shuts down
                os.close(fd)


@contextlib.contextmanager
def _scratch() -> Iterator[tuple[Path, int]]:
    """A new file ``report.ncu-rep`` in a new private directory of ``$TMPDIR``, and its descriptor
    open for reading and writing; both removed when the block ends (:func:`_discard`)."""
    tmp = Path(tempfile.mkdtemp(prefix="ncuroof-repz-"))
    out = tmp / "report.ncu-rep"
    try:
        fd = os.open(out, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        yield out, fd
    finally:
        _discard(fd, tmp)


def _renamed(exc: NcuroofError, tmp: Path, path: Path) -> NcuroofError:
    """``exc`` about the decompressed copy ``tmp``, said about the compressed report ``path``."""
    message = exc.message.replace(str(tmp), str(path)).replace(tmp.name, path.name)
    new = type(exc)(message, path if exc.path in (None, tmp) else exc.path)
    new.__cause__ = exc.__cause__
    return new


@contextlib.contextmanager
def uncompressed(path: Path, catalog: Catalog) -> Iterator[Path]:
    """The report at ``path`` as an uncompressed ``.ncu-rep`` for the duration of the block.

    Parameters
    ----------
    path : Path
        A report, compressed (``.ncu-repz``) or not, whatever its name.
    catalog : Catalog
        ``[compressed]`` limits of ``metrics/thresholds.toml`` (:func:`limit_bytes`).

    Yields
    ------
    Path
        ``path`` itself when it does not start with a zstd frame; else a temporary
        ``report.ncu-rep`` holding its decompressed bytes, deleted when the block ends. An
        :class:`~ncuroof.errors.NcuroofError` raised inside the block about that file names
        ``path`` instead.

    Raises
    ------
    ReportFormatError
        A truncated or corrupt stream, or one that declares or makes more than the limits allow.
    InputError
        No room for the decompressed report in the temporary directory, or a zstd stream that
        holds something else than a report.
    MissingModuleError
        When ``zstandard`` is not installed.
    """
    with path.open("rb") as f:
        head = f.read(8)
    if not is_compressed(head):
        yield path
        return
    found = frames(path)
    compressed = path.stat().st_size
    limit = limit_bytes(catalog, compressed)
    if found.declared is not None and found.declared > limit:
        raise _bomb(path, f"declares {found.declared:,} decompressed bytes", limit, compressed)
    with _scratch() as (out, fd):
        if found.declared is not None and found.declared > shutil.disk_usage(out.parent).free:
            raise InputError(
                f"no room to decompress it in {out.parent.parent}: it needs {found.declared:,}"
                " bytes; free some space or point TMPDIR elsewhere",
                path,
            )
        _decompress(path, fd, limit, out)
        os.lseek(fd, 0, os.SEEK_SET)
        if os.read(fd, 4) != MAGIC:
            raise InputError(
                "is zstd-compressed but holds no Nsight Compute report (its decompressed bytes"
                " do not start with NVR\\0); pass a .ncu-rep/.ncu-repz report or an ncu CSV"
                " export",
                path,
            )
        try:
            yield out
        except NcuroofError as exc:
            raise _renamed(exc, out, path) from exc.__cause__
