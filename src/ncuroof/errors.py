"""Exceptions raised by ncuroof.

Every error a user can cause (a missing or corrupt input, a report without the needed metrics,
an output directory that cannot be written) is an :class:`NcuroofError`. Its message is one line
that names the file and says what to do; the command line prints it and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "NcuroofError",
    "InputError",
    "ReportFormatError",
    "MissingModuleError",
    "OutputError",
    "ProfileError",
    "NcuNotFoundError",
]


class NcuroofError(Exception):
    """Base class of all user-facing ncuroof errors.

    Parameters
    ----------
    message : str
        What went wrong and what to do, in one line.
    path : str or Path, optional
        The file the error is about; it is put in front of the message.
    """

    exit_code = 2

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.message = message
        super().__init__(f"{path}: {message}" if path is not None else message)

    def __reduce__(self) -> tuple[type, tuple[str, Path | None]]:
        """Pickle as (message, path): an error raised in a worker process arrives whole."""
        return type(self), (self.message, self.path)


class InputError(NcuroofError):
    """An input file is missing, unreadable or not what its name says."""


class ReportFormatError(InputError):
    """A ``.ncu-rep`` file is corrupt or truncated."""


class MissingModuleError(NcuroofError):
    """An optional module (``ncu_report``) needed for this input is not installed."""


class OutputError(NcuroofError):
    """An output file or directory cannot be written."""


class ProfileError(NcuroofError):
    """ncu or the profiled program failed, or the report cannot be written; no report was kept."""


class NcuNotFoundError(NcuroofError):
    """No usable ``ncu`` executable was found."""
