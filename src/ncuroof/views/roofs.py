"""The roofs view (``--roofs``): every roof of every launch, peak and achievable, with its value,
source, SM clock and confidence (``roofs.csv``, :func:`ncuroof.model.roofs.roof_table`)."""

from __future__ import annotations

import pandas as pd

from ..model import roofs as _roofs
from ..model.analysis import Analysis
from ..schema import ROOFS
from .base import Option, Request, View

__all__ = ["VIEW", "ROOFS_OPTION"]

#: ``--roofs``.
ROOFS_OPTION = Option(
    "roofs",
    "Also write roofs.csv: every roof of every launch (peak and achievable), its value, source"
    " (report, datasheet, measured, user), SM clock and confidence.",
    bool,
    False,
    is_flag=True,
)


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    return _roofs.roof_table(a.launches, a.gpus) if req["roofs"] else None


VIEW = View("roofs", ROOFS, _build, option=ROOFS_OPTION, in_document=False)
