"""The one reading gate: every file ncuroof opens, inputs and option files alike, is checked here
before it is opened.

A path must name a regular file (a FIFO blocks ``open`` until someone writes, a device such as
``/dev/zero`` or ``/dev/urandom`` never ends; a symbolic link is judged by what it points to), and
a file read whole must be no larger than its limit in ``metrics/thresholds.toml`` ``[limits]``,
read with that bound so that a file growing while it is read cannot pass it either.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..catalog import limits, over_limit
from ..errors import InputError

__all__ = ["regular_file", "read_bounded"]


def regular_file(path: str | Path, fix: str) -> Path:
    """``path`` as a Path when it names an existing regular file, checked without opening it.

    Parameters
    ----------
    path : path
        The file.
    fix : str
        What to pass instead, for the message (``"pass a .ncu-rep report or an ncu CSV export"``).

    Raises
    ------
    InputError
        One line naming the file: missing, a directory, or not a regular file (FIFO, socket,
        device, a link to one).
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("no such file; check the path", path) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or exc}); {fix}", path) from None
    if stat.S_ISDIR(mode):
        raise InputError(f"is a directory; {fix}", path)
    if not stat.S_ISREG(mode):
        raise InputError(f"is not a regular file (a FIFO, socket or device); {fix}", path)
    return path


def read_bounded(path: str | Path, fix: str, limit: str) -> bytes:
    """The bytes of a small file read whole (an option file: ``--pair-file``, ``--expect``), after
    :func:`regular_file`, at most ``[limits].<limit>`` bytes.

    Raises
    ------
    InputError
        As :func:`regular_file`, or when the file is larger than the limit (said with the limit's
        name and how to raise it) or cannot be read.
    """
    path = regular_file(path, fix)
    most = int(limits()[limit])
    try:
        with open(path, "rb") as f:
            data = f.read(most + 1)
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or exc}); {fix}", path) from None
    if len(data) > most:
        raise InputError(over_limit(limit, f"holds more than {most:,} bytes"), path)
    return data
