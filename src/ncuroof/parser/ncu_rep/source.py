"""A report opened for reading, compressed or not: a ``.ncu-rep``'s memory map, or a ``.ncu-repz``'s
decompressed bytes read forward from its zstd stream, with no decompressed copy anywhere.

The decoder (:mod:`.decode`), the block walk (:mod:`.framing`) and the sample cut (:mod:`.verify`)
read a report as a buffer sliced at byte offsets that only grow, pass after pass (the walk of
the block headers, then each slice's records, then the sampled blocks). :class:`Forward` gives
those slices of a compressed report's decompressed bytes by decompressing it from its start into
one window of at most :data:`WINDOW` bytes behind the furthest byte read: a pass costs one
decompression of the stream up to where it stops (no file written, no page allocated per byte: a
100,000-launch report is 3.5 GB decompressed, and writing it to a temporary file cost 4-8 s of
kernel time on the 2-core reference machine, against 0.3 s to decompress it). A read before the
window raises :class:`Backward`: the caller then reads the report from a decompressed copy
(:func:`.compressed.uncompressed`), as it reads every report this path declines.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ...catalog import Catalog
from ...errors import InputError, NcuroofError, ReportFormatError
from .compressed import CHUNK, Decompressing, frames, is_compressed, limit_bytes
from .framing import MAGIC, check_file

__all__ = [
    "Backward",
    "Forward",
    "WINDOW",
    "check_report",
    "decompressed_size",
    "open_report",
    "streamable",
]

#: Bytes a :class:`Forward` keeps behind the furthest byte read (a read may start that far back:
#: the walk reads a block's header again after its first bytes; a record is 35 kB).
WINDOW = 4 << 20


class Backward(Exception):
    """A read of bytes a :class:`Forward` no longer holds: read the report another way."""


class Forward:
    """The decompressed bytes of a compressed report, sliced as ``bytes`` like a memory map, at
    offsets that only grow but for at most :data:`WINDOW` bytes back.

    Parameters
    ----------
    path : Path
        The compressed report (for messages).
    size : int
        Its decompressed size (:func:`decompressed_size`): ``len()``.
    f : binary file
        The compressed report, open at its start.

    Raises
    ------
    Backward
        On a slice that starts before the window.
    ReportFormatError
        When the stream is corrupt, or makes fewer or more bytes than ``size``.
    """

    #: read block headers as the walk reads them through a descriptor (:class:`.framing._Headers`)
    sequential = True

    def __init__(self, path: Path, size: int, f: BinaryIO) -> None:
        self.path, self.size = path, size
        self._reader = Decompressing(path, f)
        self._buf = bytearray()
        self._base = 0  # the offset of _buf[0] in the decompressed bytes
        self._chunk = bytearray(CHUNK)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        start, stop, step = key.indices(self.size)
        if step != 1:
            raise TypeError("a Forward is sliced with step 1")
        if stop <= start:
            return b""
        if start < self._base:
            raise Backward(f"byte {start} is before the window at byte {self._base}")
        self._fill(start, stop)
        with memoryview(self._buf) as view:
            return bytes(view[start - self._base : stop - self._base])

    def _fill(self, start: int, stop: int) -> None:
        """Decompress until the window holds ``[start, stop)``; the bytes before ``start`` and more
        than :data:`WINDOW` behind the end are dropped once over :data:`WINDOW` of them are held
        (all of them when ``start`` is past the end)."""
        end = self._base + len(self._buf)
        if start >= end:  # nothing held is wanted: skip to start
            self._buf.clear()
            self._base = end
            while self._base + CHUNK <= start:
                self._base += self._more(keep=False)
        while self._base + len(self._buf) < stop:
            self._more(keep=True)
        drop = min(start, self._base + len(self._buf) - WINDOW) - self._base
        if drop > WINDOW:
            del self._buf[:drop]
            self._base += drop

    def _more(self, keep: bool) -> int:
        """Decompress the next chunk (kept in the window when ``keep``); its size."""
        n = self._reader.readinto(self._chunk)
        end = self._base + len(self._buf) + n
        if not n or end > self.size:
            raise ReportFormatError(
                f"the compressed report makes {'fewer' if not n else 'more'} bytes than the"
                f" {self.size:,} its frames declare: copy it again",
                self.path,
            )
        if keep:
            self._buf += memoryview(self._chunk)[:n]
        return n


def streamable(path: Path, catalog: Catalog) -> int | None:
    """The decompressed size of the compressed report ``path`` when it can be read forward
    (:class:`Forward`): the sum of its frames' content sizes, or, where one does not declare it,
    the bytes one pass of decompression makes; within the limits of
    :func:`.compressed.limit_bytes`. None for an uncompressed file, or a stream that
    does not frame well, exceeds the limits or is corrupt (its error is the decompressed copy's)."""
    with path.open("rb") as f:
        if not is_compressed(f.read(8)):
            return None
    limit = limit_bytes(catalog, path.stat().st_size)
    try:
        size = decompressed_size(path, limit)
    except NcuroofError:
        return None
    return size if size <= limit else None


def decompressed_size(path: Path, limit: int | None = None) -> int:
    """The bytes the compressed report ``path`` decompresses to: its frames' declared sizes, or
    counted by decompressing it (at most ``limit`` bytes plus one chunk; more: ``limit + 1``).
    Counted once per file and process (by path, size and modification time).

    Raises
    ------
    ReportFormatError
        When the stream does not frame well or is corrupt.
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _SIZES:
        return _SIZES[key]
    size = frames(path).declared
    if size is None:
        size = _counted(path, limit)
        if limit is not None and size > limit:  # stopped: not its size
            return size
    _SIZES[key] = size
    return size


#: Decompressed sizes counted in this process (:func:`decompressed_size`).
_SIZES: dict[tuple[str, int, int], int] = {}


def _counted(path: Path, limit: int | None) -> int:
    """The bytes one decompression of ``path`` makes, into one reused buffer (``limit + 1`` once
    over ``limit``)."""
    n, chunk = 0, bytearray(CHUNK)
    with path.open("rb") as f:
        reader = Decompressing(path, f)
        while True:
            got = reader.readinto(chunk)
            n += got
            if not got or (limit is not None and n > limit):
                return n if not got else limit + 1


@contextlib.contextmanager
def open_report(path: Path, size: int | None = None) -> Iterator[tuple[Any, int | None]]:
    """A report to read as a buffer: ``(memory map, file descriptor)`` of a ``.ncu-rep``, or
    ``(Forward, None)`` of a compressed report, of ``size`` decompressed bytes (default:
    :func:`decompressed_size`).

    Raises
    ------
    OSError
        When the file cannot be opened; ``ValueError`` when it is empty (checked before).
    """
    with path.open("rb") as f:
        head = f.read(8)
        f.seek(0)
        if is_compressed(head):
            yield Forward(path, size if size is not None else decompressed_size(path), f), None
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            yield mm, f.fileno()


def check_report(path: Path) -> None:
    """:func:`.framing.check_file` for a ``.ncu-rep``; for a compressed report, that
    its decompressed bytes start with ``NVR\\0``.

    Raises
    ------
    InputError, ReportFormatError
        As :func:`~.framing.check_file`; for a compressed report that holds no
        Nsight Compute report, InputError.
    """
    with path.open("rb") as f:
        compressed = is_compressed(f.read(8))
    if not compressed:
        check_file(path)
        return
    with open_report(path) as (data, _):
        if not len(data) or data[0:4] != MAGIC:
            raise InputError(
                "is zstd-compressed but holds no Nsight Compute report (its decompressed bytes"
                " do not start with NVR\\0); pass a .ncu-rep/.ncu-repz report or an ncu CSV"
                " export",
                path,
            )
