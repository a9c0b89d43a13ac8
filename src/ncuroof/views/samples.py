"""The PM sampling view (issue 51): the sampled counters of each sampled launch over time
(``samples.csv``) and its ramp, plateau and tail (``sample_phases.csv``), written when a report
holds ``PmSampling`` series; on the page a timeline of the sampled throughputs against their peaks
and a trail of each launch's phase dots, in time order, on the DRAM roofline.

The tables come from :mod:`ncuroof.model.samples` (the analysis reads the series of the sampled
launches once, :attr:`ncuroof.model.analysis.Analysis.samples`).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from .._lazy import LazyModule
from ..model.analysis import Analysis
from ..render.viewcontract import Chart
from ..schema import SAMPLE_PHASES, SAMPLES
from .base import Request, View
from .phases import phase_chart

go = LazyModule("plotly.graph_objects")  # imported when a chart is drawn

__all__ = ["VIEW", "PHASES_VIEW", "timeline_chart", "trail_chart", "MAX_TIMELINES"]

#: Sampled launches drawn on the timeline (the longest; the page shows every trace of the chart it
#: shows, so a few keep it readable; samples.csv has every launch).
MAX_TIMELINES = 4

#: The timeline's series: column, label, colour. ``dram_bytes_per_s`` is drawn over the launch's
#: DRAM peak (its roof at 1).
_LINES = (
    ("dram_of_peak", "DRAM bytes / DRAM peak", "#d62728"),
    ("dram_frac", "DRAM throughput (busiest sub-unit)", "#ff9896"),
    ("l2_frac", "L2 throughput", "#2ca02c"),
    ("sm_active_frac", "SMs active", "#1f77b4"),
    ("issue_frac", "instruction issue", "#9467bd"),
    ("tensor_active_frac", "tensor pipe active", "#8c564b"),
)


def _samples(a: Analysis, req: Request) -> pd.DataFrame | None:
    return a.samples if a.samples is not None and len(a.samples) else None


def _phases(a: Analysis, req: Request) -> pd.DataFrame | None:
    return a.sample_phases if a.sample_phases is not None and len(a.sample_phases) else None


def _shown(samples: pd.DataFrame, launches: pd.DataFrame) -> list[tuple[str, int]]:
    """(source, launch_id) of the longest sampled launches, at most :data:`MAX_TIMELINES`."""
    keys = samples[["source", "launch_id"]].drop_duplicates().astype(object)
    t = keys.merge(launches[["source", "launch_id", "time_s"]].astype(object), how="left")
    t = t.sort_values("time_s", ascending=False, kind="stable").head(MAX_TIMELINES)
    return list(zip(t["source"], t["launch_id"]))


def _launch_lines(s: pd.DataFrame, peak: float, name: str, first: bool) -> list[go.Scatter]:
    """One launch's sampled fractions of peak over time (µs), the first launch shown."""
    s = s.assign(dram_of_peak=s["dram_bytes_per_s"] / peak if peak > 0 else np.nan)
    x = s["time_s"].to_numpy(float) * 1e6
    out = []
    for col, label, color in _LINES:
        y = s[col].to_numpy(float)
        if not np.isfinite(y).any():
            continue
        out.append(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                line=dict(color=color, width=1.5, shape="hv"),
                name=f"{name}: {label}",
                legendgroup=name,
                visible=True if first else "legendonly",
                hovertemplate=f"{html.escape(label)} %{{y:.0%}} at %{{x:.1f}} µs<extra></extra>",
                meta=dict(role="sample_line"),
            )
        )
    return out


def _phase_marks(p: pd.DataFrame, name: str, first: bool) -> list[go.Scatter]:
    """A vertical line at the start of each phase but the first, named by the phase."""
    return [
        go.Scatter(
            x=[r.start_s * 1e6] * 2,
            y=[0, 1.05],
            mode="lines+text",
            text=["", r.phase],
            textposition="top right",
            line=dict(color="#777", width=1, dash="dot"),
            name=f"{name}: {r.phase} from {r.start_s * 1e6:.1f} µs",
            legendgroup=name,
            showlegend=False,
            visible=True if first else "legendonly",
            hoverinfo="skip",
            meta=dict(role="sample_phase_mark"),
        )
        for r in p.iloc[1:].itertuples()
    ]


def timeline_chart(samples: pd.DataFrame, phases: pd.DataFrame, a: Analysis) -> Chart | None:
    """The sampled throughputs of the longest sampled launches against their peaks (1 = the roof).

    Parameters
    ----------
    samples, phases : DataFrame
        :data:`ncuroof.schema.SAMPLES` and :data:`ncuroof.schema.SAMPLE_PHASES`.
    a : Analysis
        The launch table (names, durations, DRAM peaks).

    Returns
    -------
    Chart or None
        ``id`` ``samples``: per launch (the longest first and shown, the others in the legend) a
        step line per sampled family in fractions of its peak over time [µs], DRAM bytes over the
        launch's ``peak_dram_bytes_per_s``, dotted lines where the plateau and the tail start, and
        the roof (1) as a dashed line; None without samples.
    """
    shown = _shown(samples, a.launches)
    if not shown:
        return None
    by = a.launches.set_index(["source", "launch_id"])
    traces = [
        go.Scatter(
            x=[0, float(samples["time_s"].max()) * 1e6],
            y=[1, 1],
            mode="lines",
            line=dict(color="#333", dash="dash", width=1),
            name="peak (the roof)",
            hoverinfo="skip",
            meta=dict(role="sample_roof"),
        )
    ]
    for i, key in enumerate(shown):
        s = samples[(samples["source"] == key[0]) & (samples["launch_id"] == key[1])]
        p = phases[(phases["source"] == key[0]) & (phases["launch_id"] == key[1])]
        row = by.loc[key]
        name = f"#{key[1]} {html.escape(str(row['kernel_name'])[:40])}"
        peak = float(row["peak_dram_bytes_per_s"])
        traces += _launch_lines(s, peak, name, i == 0) + _phase_marks(p, name, i == 0)
    return Chart(
        "samples",
        "PM sampling timeline",
        traces,
        layout={
            "title.text": "Inside the kernel over time: sampled throughput, fraction of peak",
            "xaxis.title.text": "time since the launch's first sample [µs]",
            "yaxis.title.text": "fraction of peak",
            "xaxis.type": "linear",  # time and fractions (zeros included) on linear axes
            "yaxis.type": "linear",
        },
    )


def trail_chart(phases: pd.DataFrame, a: Analysis) -> Chart | None:
    """Each sampled launch's ramp, plateau and tail as dots on the DRAM roofline, joined in time
    order (:func:`ncuroof.views.phases.phase_chart`, one dot per phase with its share of the
    launch's FLOPs and DRAM bytes); None when no phase has both."""
    d = phases.assign(
        phase=phases["kernel_name"].astype(str).str[:30]
        + " #"
        + phases["launch_id"].astype(str)
        + " "
        + phases["phase"].astype(str),
        launches=1.0,
        time_s=phases["duration_s"],
        time_at_roof_s=np.nan,
        bound="sampled",
    )
    d = d[(d["flop"] > 0) & (d["dram_bytes"] > 0)]
    if not len(d):
        return None
    chart = phase_chart(d, a.points, a.summary, "sample_phases", "PM sampling phases")
    for trace in chart.traces:  # roles of their own: the NVTX phases' are phase_dots, phase_roof
        role = trace.meta.get("role", "")
        trace.meta = {**trace.meta, "role": f"sample_{role}"}
    for (_, lid), g in d.groupby(["source", "launch_id"], sort=False, observed=True):
        chart.traces.append(
            go.Scatter(
                x=g["dram_ai_flop_per_byte"],
                y=g["flop_per_s"],
                mode="lines",
                line=dict(color="#9467bd", width=1),
                name=f"#{lid} trail in time order",
                hoverinfo="skip",
                meta=dict(role="sample_trail", when={"precision": "main"}),
            )
        )
    return chart


VIEW = View(
    "samples",
    SAMPLES,
    _samples,
    chart=lambda t, a: timeline_chart(t, a.sample_phases, a),
    empty_written=False,
)
PHASES_VIEW = View(
    "sample_phases",
    SAMPLE_PHASES,
    _phases,
    chart=trail_chart,
    empty_written=False,
)
