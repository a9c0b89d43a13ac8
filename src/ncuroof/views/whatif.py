"""The what-if view (``--what-if GPU``): each kernel's FLOPs and DRAM bytes projected onto another
GPU's datasheet roofs (``whatif.csv``, :func:`ncuroof.model.diagnose.what_if`), a line per kernel in
the terminal summary."""

from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..model import diagnose
from ..model.analysis import Analysis
from ..schema import WHATIF
from .base import Option, Request, View

__all__ = ["VIEW", "WHAT_IF"]

#: ``--what-if``: a ``metrics/gpus.toml`` id.
WHAT_IF = Option(
    "what_if",
    "Project each kernel's FLOPs and DRAM bytes onto another GPU's datasheet roofs"
    " (metrics/gpus.toml): which kernels change bound, time at the roof there (whatif.csv).",
    str | None,
    metavar="GPU",
)


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    """InputError for a GPU that is not in the catalog."""
    if req["what_if"] is None:
        return None
    target = a.gpus.by_name(req["what_if"])
    if target is None:
        raise InputError(a.gpus.unknown("--what-if", req["what_if"]))
    return diagnose.what_if(a.summary, a.launches, target, a.gpus)


def _lines(t: pd.DataFrame, a: Analysis) -> list[str]:
    return [f"what-if {r.kernel_label}: {r.change}" for r in t.itertuples(index=False)]


VIEW = View("whatif", WHATIF, _build, option=WHAT_IF, lines=_lines)
