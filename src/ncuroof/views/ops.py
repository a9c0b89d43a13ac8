"""The PyTorch operators view (``--group-by op`` with a PyTorch profiler trace as ``--timeline``):
launches aggregated by the operator that launched them (``ops.csv``), one dot per operator on a
chart of the page's chart control (the NVTX phases' chart,
:func:`ncuroof.views.phases.phase_chart`).
"""

from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..model import production as _production
from ..model.analysis import Analysis
from ..model.phases import BY_OPERATOR
from ..render.viewcontract import Chart
from ..schema import OPS
from .base import Request, View
from .phases import phase_chart

__all__ = ["VIEW"]


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    """:func:`ncuroof.model.production.op_table`; InputError without a PyTorch profiler trace."""
    if req["group_by"] != BY_OPERATOR:
        return None
    if a.production is None or a.production.format != "kineto":
        raise InputError(
            "--group-by op needs the PyTorch profiler trace of the run (--timeline trace.json or"
            " .json.gz): it names the operator that launched each kernel"
        )
    return _production.op_table(a.launches, a.production)


def _chart(t: pd.DataFrame, a: Analysis) -> Chart | None:
    if not len(t):
        return None
    ops = t.rename(columns={"op": "phase"})
    return phase_chart(ops, a.points, a.summary, "ops", "PyTorch operators")


#: Asked for by the phases view's ``--group-by`` (``op``).
VIEW = View("ops", OPS, _build, chart=_chart)
