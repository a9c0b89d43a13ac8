"""Turn ncu output files into the raw table (:mod:`ncuroof.schema`).

One reader per format, chosen from the file's content and name: ``.ncu-rep``/``.ncu-repz``
reports through ``ncu_report`` (:mod:`.ncu_rep`), ncu CSV exports (:mod:`.csv`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..catalog import Catalog
from ..errors import InputError
from ..schema import validate_raw
from .ncu_rep import MAGIC, read_ncu_rep

__all__ = ["read", "read_ncu_rep"]


def read(path: str | Path, catalog: Catalog, progress: Any = None) -> pd.DataFrame:
    """Read one ncu output file into the raw table.

    Parameters
    ----------
    path : str or Path
        A ``.ncu-rep``/``.ncu-repz`` report or an ncu CSV export.
    catalog : Catalog
        The metric catalog (which metrics to keep).
    progress : callable, optional
        Progress-bar factory, see :func:`read_ncu_rep`.

    Returns
    -------
    DataFrame
        The validated raw table, one row per launch.

    Raises
    ------
    InputError
        For a missing, empty, corrupt or unsupported file (see :mod:`ncuroof.errors`).
    MissingModuleError
        For a ``.ncu-rep`` when ``ncu_report`` is not installed.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file; check the path", path)
    if path.is_dir():
        raise InputError("is a directory; pass a .ncu-rep report or an ncu CSV export", path)
    with path.open("rb") as f:
        head = f.read(4)
    if path.suffix in (".ncu-rep", ".ncu-repz") or head == MAGIC:
        df = read_ncu_rep(path, catalog, progress)
    elif path.suffix.lower() in (".csv", ".txt", ".log"):
        from .csv import read_csv

        df = read_csv(path, catalog)
    else:
        raise InputError("unknown input type; pass a .ncu-rep report or an ncu CSV export (.csv)", path)
    return validate_raw(df, str(path))
