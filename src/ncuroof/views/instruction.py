"""The instruction roofline view (Ding & Williams, PMBS 2019): one dot per (launch, level) in warp
instructions per 32 B transaction, under the issue roof and one wall per level
(``instruction_points.csv``, written when a launch has the instruction counters; a chart of the
page's chart control following its levels control)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from .._lazy import LazyModule
from ..model.analysis import Analysis
from ..model.instruction_roofline import instruction_points
from ..render.figure import (
    LEVEL_COLORS,
    MAX_LAUNCH_DOTS,
    customdata_fields,
    log_range,
    longest_launches,
    time_weighted,
)
from ..render.viewcontract import Chart
from ..schema import INSTRUCTION_POINTS, LEVELS
from .base import Request, View

go = LazyModule("plotly.graph_objects")  # imported when a chart is drawn

__all__ = ["VIEW", "instruction_chart", "INSTRUCTION_CUSTOMDATA"]


def _build(a: Analysis, req: Request) -> pd.DataFrame:
    sector = a.catalog.instruction.sector_bytes if a.catalog.instruction else 32.0
    return instruction_points(a.launches, sector)


def _chart(t: pd.DataFrame, a: Analysis) -> Chart | None:
    """The instruction roofline of the longest launches (as many as the roofline's launch dots)."""
    shown = longest_launches(t, a.launches, MAX_LAUNCH_DOTS)
    return instruction_chart(shown) if len(shown) else None


def _issue_roof(ipts: pd.DataFrame) -> tuple[float, str]:
    """The chart's issue roof: time-weighted over the points that have one, and its source
    (``report``, ``datasheet`` or both joined by ``+``; empty when no point has a roof)."""
    peak = time_weighted(ipts["peak_warp_inst_per_s"], ipts["time_s"])
    have = ipts[np.isfinite(ipts["peak_warp_inst_per_s"].to_numpy(float))]
    return peak, "+".join(sorted(set(have["peak_warp_inst_source"].fillna("").astype(str)) - {""}))


def _instruction_roofs(
    xs: np.ndarray, peak: float, source: str, walls: dict[str, float]
) -> list[Any]:
    """The issue roof (flat, labelled with its source) and each level's wall up to its elbow
    (beyond the chart's x range when there is no issue roof); levels without a wall get none."""
    traces: list[Any] = []
    if np.isfinite(peak):
        label = f"issue roof {fmt.si(peak)} warp inst/s ({source or 'unknown source'}"
        label += ": SMs × 4 schedulers × boost clock)" if source == "datasheet" else ")"
        traces.append(
            go.Scatter(
                x=[xs[0], xs[-1]],
                y=[peak, peak],
                mode="lines+text",
                text=["", label],
                textposition="top left",
                line=dict(color="#444", width=2),
                name=label,
                hoverinfo="skip",
                meta=dict(role="instruction_roof", level="issue", source=source),
            )
        )
    for lv in [lv for lv in LEVELS if np.isfinite(walls.get(lv, np.nan)) and walls[lv] > 0]:
        top = peak if np.isfinite(peak) else xs[-1] * walls[lv]
        x_end = top / walls[lv]
        traces.append(
            go.Scatter(
                x=[xs[0], x_end],
                y=[xs[0] * walls[lv], top],
                mode="lines",
                line=dict(color=LEVEL_COLORS[lv], width=1.5),
                name=f"{lv.upper()} wall {fmt.si(walls[lv], 'sector/s')}",
                hoverinfo="skip",
                meta=dict(role="instruction_roof", level=lv, when={"levels": lv}),
            )
        )
    return traces


#: Columns of an instruction dot's ``customdata``, in order (its hover template names
#: them; numbers only).
INSTRUCTION_CUSTOMDATA = ("launch_id", "roof_fraction")


def _instruction_note(levels: list[str], peak: float, walls: dict[str, float]) -> str:
    """What the instruction roofline cannot draw, and why (empty when it draws every roof)."""
    missing = []
    if not np.isfinite(peak):
        missing.append(
            "no issue roof: the report has no SM count and clock, and no metrics/gpus.toml entry"
            " matched (use --gpu)"
        )
    lacking = [
        lv.upper() for lv in levels if not (np.isfinite(walls.get(lv, np.nan)) and walls[lv] > 0)
    ]
    if lacking:
        missing.append(
            f"no {'/'.join(lacking)} wall: no bandwidth roof for"
            f" {'that level' if len(lacking) == 1 else 'those levels'}"
        )
    return "; ".join(missing)


def instruction_chart(ipts: pd.DataFrame) -> Chart:
    """The instruction roofline [DING]: one dot per (launch, level), the issue roof
    and one wall per level.

    Parameters
    ----------
    ipts : DataFrame
        :func:`ncuroof.model.instruction_roofline.instruction_points`.

    Returns
    -------
    Chart
        ``id`` ``instructions``, following the levels control. Log-log: x warp instructions per
        32 B transaction, y warp instructions per second. The issue roof (time-weighted over the
        points; from the report or, labelled, the datasheet) and a wall per level with a known
        transaction rate, up to its elbow; the title says which of them cannot be drawn and why.
        Traces: ``meta.role`` ``instruction_roof`` (``meta.level`` ``issue`` or the level) and
        ``instruction_dots``; ``meta.when`` their level. Only drawn traces are in the legend.
    """
    peak, source = _issue_roof(ipts)
    walls = {
        lv: time_weighted(g["peak_transactions_per_s"], g["time_s"])
        for lv, g in ipts.groupby("level", sort=False)
    }
    levels = [lv for lv in LEVELS if lv in walls]
    elbows = [peak / w for w in walls.values() if np.isfinite(peak) and np.isfinite(w) and w > 0]
    xs = log_range(ipts["inst_per_transaction"].to_numpy(float), elbows)
    traces = _instruction_roofs(xs, peak, source, walls)
    traces += [_instruction_dots(ipts[ipts["level"] == lv], lv) for lv in levels]
    note = _instruction_note(levels, peak, walls)
    return Chart(
        "instructions",
        "Instruction roofline",
        traces,
        fields=("levels",),
        layout={
            "title.text": (
                "Instruction roofline (Ding & Williams, PMBS 2019): warp instructions per second"
                + (f"<br><sup>{html.escape(note)}</sup>" if note else "")
            ),
            "xaxis.title.text": "instruction intensity [warp instructions per 32 B transaction]",
            "yaxis.title.text": "warp instructions / s",
        },
    )


def _instruction_dots(g: pd.DataFrame, lv: str) -> go.Scatter:
    """The instruction points of one level, hover from :data:`INSTRUCTION_CUSTOMDATA`."""
    hover = customdata_fields(
        f"%{{text}} (launch %{{@launch_id:.0f}}) {lv.upper()}<br>%{{x:.4g}} inst/sector,"
        " %{y:.3s} warp inst/s, %{@roof_fraction:.1%} of roof,"
        " %{hovertext}-bound<extra></extra>",
        INSTRUCTION_CUSTOMDATA,
    )
    return go.Scatter(
        x=g["inst_per_transaction"],
        y=g["warp_inst_per_s"],
        mode="markers",
        name=f"{lv.upper()} points",
        marker=dict(color=LEVEL_COLORS[lv], size=9, line=dict(width=1, color="#333")),
        text=g["kernel_name"].astype(str).map(html.escape),
        hovertext=g["bound"].replace("", "unknown"),
        customdata=g[list(INSTRUCTION_CUSTOMDATA)].to_numpy(float),
        hovertemplate=hover,
        meta=dict(role="instruction_dots", level=lv, when={"levels": lv}),
    )


VIEW = View(
    "instruction_points",
    INSTRUCTION_POINTS,
    _build,
    chart=_chart,
    empty_written=False,
    in_document=False,
)
