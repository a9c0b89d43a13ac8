"""ncu CSV exports. Not implemented yet: reading CSV exports is its own piece of work (every
page and unit flavour ncu writes); until then such input is refused with a clear message."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..catalog import Catalog
from ..errors import InputError

__all__ = ["read_csv"]


def read_csv(path: Path, catalog: Catalog) -> pd.DataFrame:
    """Refuse CSV input for now.

    Raises
    ------
    InputError
        Always: ncu CSV exports are not supported in this version; analyze the ``.ncu-rep``.
    """
    raise InputError("ncu CSV exports are not supported yet by this version of ncuroof; analyze the .ncu-rep report instead", path)
