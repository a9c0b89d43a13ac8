"""The analytic operators view (issue 41): with a PyTorch trace recorded with shapes as
``--timeline``, each operator's analytic (useful) work beside ncu's counted work
(``operators.csv``, :func:`ncuroof.model.production.operator_work`) and a section of the page. The
trace alone is analyzed by :func:`ncuroof.api.analyze_trace` with this view's option."""

from __future__ import annotations

import pandas as pd

from ..model import production as _production
from ..model.analysis import Analysis
from ..render import analytic as analytic_page
from ..schema import ANALYTIC_OPS
from .base import Option, Request, View

__all__ = ["VIEW", "FP32_MATMUL"]

#: ``--fp32-matmul``: the roof of FP32 matmul-class operators.
FP32_MATMUL = Option(
    "fp32_matmul",
    "A PyTorch trace with shapes (analyzed alone, or as --timeline): the roof of FP32 matmul-class"
    " operators, FP32 or TF32 tensor cores (the trace does not say whether"
    " torch.backends.cuda.matmul.allow_tf32 was set; PyTorch's default is off).",
    str,
    "fp32",
    choices=("fp32", "tf32"),
    show_default=True,
)


def _build(a: Analysis, req: Request) -> pd.DataFrame | None:
    """None for a timeline that is no PyTorch trace, and without one."""
    if a.production is None or a.production.format != "kineto" or a.options.timeline is None:
        return None
    return _production.operator_work(a.launches, a.production, a.gpus, req["fp32_matmul"])


def _section(t: pd.DataFrame, a: Analysis) -> str:
    return analytic_page.section_html(t) if len(t) else ""


VIEW = View("operators", ANALYTIC_OPS, _build, option=FP32_MATMUL, section=_section)
