"""Deprecated location of :mod:`ncuroof.model.analysis` (moved in the stage layout, issue 22).

``from ncuroof.analysis import AnalysisOptions, build`` keeps working with a
:class:`DeprecationWarning`; import from :mod:`ncuroof.model.analysis` instead.
"""

from __future__ import annotations

import warnings
from typing import Any

from .model import analysis as _analysis


def __getattr__(name: str) -> Any:
    """Every name of :mod:`ncuroof.model.analysis`, with a :class:`DeprecationWarning`."""
    value = getattr(_analysis, name)
    warnings.warn(
        "ncuroof.analysis moved to ncuroof.model.analysis; import it from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return value
