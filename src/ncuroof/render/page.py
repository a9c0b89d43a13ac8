"""Outputs: the summary table and the self-contained HTML page (an output folder is written by
:func:`ncuroof.output.folder.write_outputs`)."""

from __future__ import annotations

import functools
import io
import json
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from .. import fmt
from .._lazy import LazyModule
from ..catalog import Catalog, GpuCatalog, precision_title
from ..errors import OutputError
from ..model.diagnose import verdict_text
from ..model.summary import FOCUS_SHARE, kernel_summary
from ..schema import cell_text, to_text, work_unit
from . import figure, provenance

jinja2, go = (
    LazyModule("jinja2"),
    LazyModule("plotly.graph_objects"),
)  # imported when a page is written

__all__ = [
    "summarize",
    "summary_text",
    "summary_cells",
    "hidden_line",
    "console_text",
    "name_width",
    "TERMINAL_BOUND_STYLES",
    "roof_text",
    "render_html",
    "render_image",
    "render_page",
    "render_fragment",
    "html_table",
    "PLOTLYJS",
    "IMAGE_FORMATS",
]

#: How a page gets plotly.js (``--plotlyjs``): its ``plotlyjs`` argument of :func:`render_html` and
#: :func:`render_page`; embedded, the page opens offline, linked from the CDN it is smaller.
PLOTLYJS: dict[str, str | bool] = {"embed": True, "cdn": "cdn"}
#: The formats of :func:`render_image` (``--image``).
IMAGE_FORMATS = ("png", "svg")


def summarize(
    kernels: pd.DataFrame,
    points: pd.DataFrame,
    top: int = 10,
    catalog: Catalog | None = None,
    gpus: GpuCatalog | None = None,
) -> pd.DataFrame:
    """The ``top`` kernels by total time (:func:`ncuroof.model.summary.kernel_summary`).

    Parameters
    ----------
    kernels, points : DataFrame
        The classified launch table and its points.
    top : int, default 10
        Number of kernels to keep.
    catalog, gpus : Catalog, GpuCatalog, optional
        The catalogs the diagnosis reads; :func:`ncuroof.catalog.load` and
        :func:`ncuroof.catalog.load_gpus` when not given.

    Returns
    -------
    DataFrame
        The first ``top`` rows of :func:`ncuroof.model.summary.kernel_summary`: ``kernel_name``,
        ``launches``, ``time_s`` [s], ``time_share``, ``precision`` (most FLOPs), ``bound`` (of
        most of the time), ``level`` and ``roof_fraction`` (the binding level's aggregate dot;
        NaN when that precision has no roof, as for tensor work estimated from SASS opcodes),
        ``time_at_roof_s``, ``saving_s`` [s], ``saving_share``, ..., and the diagnosis columns of
        :func:`ncuroof.model.diagnose.diagnose_kernels` (``diagnosis``, ``evidence``,
        ``advice``, ``flags``).
    """
    from .. import catalog as _catalog
    from ..model import diagnose

    summ = diagnose.diagnose_kernels(
        kernel_summary(kernels, points),
        kernels,
        catalog if catalog is not None else _catalog.load(),
        gpus if gpus is not None else _catalog.load_gpus(),
    )
    return summ.head(top).reset_index(drop=True)


def name_width(width: int, others: int = 66) -> int:
    """Characters a kernel name may take in a terminal table ``width`` columns wide: what the
    ``others`` columns of the other cells leave at their narrowest, between 16 and 50."""
    return max(16, min(50, int(width) - others))


#: The summary table's columns: header, justification, and the narrowest terminal that shows
#: it (narrower terminals leave it out: the kernel, its time, share, diagnosis and % of the roof
#: always stay; every column is in launches.csv and on the page).
_SUMMARY_COLUMNS = (
    ("kernel", "left", 0),
    ("launches", "right", 110),
    ("time", "right", 90),
    ("share", "right", 0),
    ("precision", "left", 100),
    ("diagnosis", "left", 0),
    ("% of roof", "right", 0),
    ("% achievable", "right", 120),
    ("at roof", "right", 110),
    ("saving", "right", 0),
)


def hidden_line(hidden: list[str], width: int, where: str) -> str:
    """The line a table narrower than its columns prints under itself: what it left out and how
    to see it (``""`` when nothing was)."""
    if not hidden:
        return ""
    line = (
        f"left out at {width} columns: {', '.join(hidden)} (a wider terminal, COLUMNS=120, shows"
        f" them; {where} has every column)"
    )
    return fmt.wrap(line, width) + "\n"


def summary_cells(r: Any) -> dict[str, str]:
    """One kernel summary row's cells as text, by header, unescaped: the terminal table, the
    Markdown summary and the notebook view each show them (and escape them) their own way."""
    absent = fmt.num(r.time_s) == 0  # not in the production timeline: no time to save either
    return {
        "kernel": str(r.kernel_label),
        "launches": str(r.launches),
        "time": fmt.kernel_time(r.time_s),
        "share": fmt.pct(r.time_share, 1) if r.time_s else "-",
        "precision": precision_title(r.precision) if r.precision else "-",
        "diagnosis": verdict_text(getattr(r, "diagnosis", ""), getattr(r, "limiter", ""))
        or r.bound,
        "% of roof": fmt.pct(r.roof_fraction, 1),
        "% achievable": fmt.pct(getattr(r, "achievable_roof_fraction", float("nan")), 1),
        "at roof": "-" if absent else fmt.time(r.time_at_roof_s),
        "saving": "-" if absent else fmt.pct(r.saving_share, 1),
    }


def summary_text(summary: pd.DataFrame, width: int = 120, color: bool = False) -> str:
    """Render the summary as a rich table (plain text when not a terminal).

    Parameters
    ----------
    summary : DataFrame
        From :func:`summarize`.
    width : int, default 120
        Console width (the terminal's): the table fits in it, kernel names shortened by
        :func:`ncuroof.fmt.shorten_names` to :func:`name_width`, the columns a narrow terminal
        has no room for left out (:data:`_SUMMARY_COLUMNS`: name, share, diagnosis, % of roof and
        saving stay at any width) and named in a line under it, the other cells wrapped by rich.
    color : bool, default False
        ANSI colours (the diagnosis in its bound's colour, :data:`TERMINAL_BOUND_STYLES`); the
        caller decides (``--color``, ``NO_COLOR``, a terminal).

    Returns
    -------
    str
    """
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Top kernels by GPU time")
    ach = _has_achievable(summary)
    wanted = [(c, j, n) for c, j, n in _SUMMARY_COLUMNS if ach or c != "% achievable"]
    cols = [(c, just) for c, just, narrowest in wanted if width >= narrowest]
    hidden = [c for c, _, narrowest in wanted if width < narrowest]
    for col, just in cols:
        table.add_column(col, justify=just, no_wrap=col == "kernel")  # type: ignore[arg-type]
    names = fmt.shorten_names(
        [fmt.printable(x, layout=False) for x in summary["kernel_label"]], name_width(width)
    )
    for name, r in zip(names, summary.itertuples(index=False)):
        cells: dict[str, Any] = summary_cells(r)
        cells["kernel"] = name
        cells["diagnosis"] = Text(cells["diagnosis"], style=TERMINAL_BOUND_STYLES.get(r.bound, ""))
        table.add_row(*(cells[c] for c, _ in cols))
    return console_text(table, width, color) + hidden_line(hidden, width, "kernels.csv")


#: The terminal colour of each bound (rich style names), as on the page (memory blue, compute
#: red, latency purple).
TERMINAL_BOUND_STYLES = {"memory": "blue", "compute": "red", "latency": "magenta"}


def console_text(renderable: Any, width: int, color: bool = False) -> str:
    """``renderable`` (a rich table) as text ``width`` columns wide, with ANSI colours only when
    ``color``; markup off (names are text)."""
    from rich.console import Console

    buf = io.StringIO()
    Console(
        file=buf,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        markup=False,
        highlight=False,
    ).print(renderable)
    return buf.getvalue()


#: The launch table of the roofline page lists at most this many launches (the longest).
MAX_LAUNCH_ROWS = 2000
#: Kernels listed beside the chart and described below it.
TOP_ON_PAGE = 5


@functools.cache
def _env() -> jinja2.Environment:
    """The Jinja2 environment of ``ncuroof/render/templates`` (HTML escaped unless marked safe)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("ncuroof.render", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def _kept_flags(flags: Any, hide: str | None = None) -> list[tuple[str, str]]:
    """The ``(code, text)`` pairs of a flags cell but those with code ``hide`` (none when the cell
    is missing)."""
    pairs = flags if isinstance(flags, (list, tuple)) else []
    return [(code, text) for code, text in pairs if code != hide]


def _flag_texts(flags: Any, hide: str | None = None) -> str:
    """The texts of a flags cell, ``; ``-joined, but those with code ``hide``."""
    return "; ".join(text for _, text in _kept_flags(flags, hide))


def _verdict(r: Any) -> str:
    text = verdict_text(getattr(r, "diagnosis", ""), getattr(r, "limiter", ""))
    return text or f"{r.bound} bound"


def _header(
    kernels: pd.DataFrame, summ: pd.DataFrame, meta: dict[str, Any], basis: dict[str, Any] | None
) -> dict[str, Any]:
    """The line above the chart: GPU, total GPU time (ncu's), launches and kernels; the time
    basis with a timeline."""
    gpu = meta.get("GPU") or ", ".join(
        str(d) for d in kernels.get("device_name", pd.Series(dtype=object)).dropna().unique()
    )
    return dict(
        gpu=gpu,
        total_time=fmt.time(float(np.nansum(kernels["time_s"].to_numpy(float)))),
        launches=fmt.count(len(kernels), "launch"),
        kernels=fmt.count(len(summ), "kernel"),
        basis=basis["text"] if basis else "",
    )


def _has_role(fig: go.Figure, role: str) -> bool:
    """Whether ``fig`` has a trace of ``meta.role`` ``role`` with data."""
    return any(
        isinstance(t.meta, dict) and t.meta.get("role") == role and t.x is not None and len(t.x)
        for t in fig.data
    )


def _has_achievable(summ: pd.DataFrame) -> bool:
    """Whether some kernel has a fraction of an achievable roof (``achievable_roof_fraction``)."""
    return "achievable_roof_fraction" in summ.columns and bool(
        np.isfinite(summ["achievable_roof_fraction"].to_numpy(float)).any()
    )


def roof_text(peak_fraction: Any, achievable_fraction: Any = None) -> str:
    """A kernel's fraction of its roof, and of its achievable roof beside it when it has one.

    Parameters
    ----------
    peak_fraction : float
        Achieved over the attainable peak roof at the binding point (``roof_fraction``) [1].
    achievable_fraction : float, optional
        Achieved over the attainable achievable roof (``achievable_roof_fraction``) [1]; NaN or
        None when no achievable roof applies.

    Returns
    -------
    str
        ``'82% of roof'`` or ``'82% of roof (93% of achievable)'`` (:func:`ncuroof.fmt.pct`);
        empty without a finite ``peak_fraction``.
    """
    if not np.isfinite(fmt.num(peak_fraction)):
        return ""
    text = f"{fmt.pct(peak_fraction)} of roof"
    ach = fmt.num(achievable_fraction) if achievable_fraction is not None else float("nan")
    return text + (f" ({fmt.pct(ach)} of achievable)" if np.isfinite(ach) else "")


def _side_top(summ: pd.DataFrame, top: int) -> list[dict[str, Any]]:
    """The top kernels beside the chart, each with its dot colour (none without a dot) and its
    fraction of the roof (of the achievable roof beside it)."""
    return [
        dict(
            color=figure.kernel_color(i) if r.precision else None,
            label=r.kernel_label,
            demangled=r.kernel_demangled or "",
            share=fmt.pct(r.time_share, 1),
            time=fmt.time(r.time_s),
            verdict=_verdict(r),
            roof=roof_text(r.roof_fraction, getattr(r, "achievable_roof_fraction", None)),
        )
        for i, r in enumerate(summ.head(top).itertuples(index=False))
    ]


def _focus(summ: pd.DataFrame, focus: float) -> dict[str, Any]:
    """What the chart leaves out: the kernels outside the focus set (``summ.in_focus``), and those
    in it without a dot (no precision)."""
    kept = int(summ["in_focus"].sum())
    left = summ[~summ["in_focus"].astype(bool)]
    # the share they do make up, not the --focus target (issue 50: "the 4 kernels that make up
    # 95 % of GPU time" were 100 % of it)
    shown = float(summ.loc[summ["in_focus"].astype(bool), "time_share"].sum())
    undrawn = int((summ["in_focus"].astype(bool) & (summ["precision"].astype(str) == "")).sum())
    return dict(
        kept=fmt.count(kept, "kernel"),
        make=fmt.agree(kept, "makes", "make"),
        share=fmt.pct(shown if np.isfinite(shown) and shown > 0 else focus),
        undrawn=(
            f"{undrawn} of them {fmt.agree(undrawn, 'has', 'have')} no roofline point (no FLOP work"
            " or traffic)"
            if undrawn
            else ""
        ),
        left=fmt.count(len(left), "kernel") if len(left) else "",
        left_share=fmt.pct(left["time_share"].sum(), 1),
        them=fmt.agree(len(left), "it", "them"),
        **{"is": fmt.agree(len(left))},
        left_drawn=bool((left["precision"].astype(str) != "").any()),
    )


def _saving(summ: pd.DataFrame, total: float) -> dict[str, Any] | None:
    """The time saved if every kernel ran at its roof (None when no kernel has a saving)."""
    saving = summ["saving_s"].to_numpy(float)
    have = np.isfinite(saving)
    if not have.any() or total <= 0:
        return None
    s, missing = float(saving[have].sum()), int((~have).sum())
    return dict(
        total=fmt.time(s),
        share=fmt.pct(s / total, 1),
        left=fmt.time(total - s),
        missing=(
            f"{fmt.count(missing, 'kernel')} {fmt.agree(missing, 'has', 'have')}" if missing else ""
        ),
        counted=fmt.agree(missing),
    )


def _items(summ: pd.DataFrame, top: int, hide: str | None) -> list[dict[str, Any]]:
    """The top kernels described below the chart: share, diagnosis with its numbers, advice,
    saving, flags (but those with code ``hide``, said once for the whole page)."""
    items = []
    for r in summ.head(top).itertuples(index=False):
        finite = bool(np.isfinite(r.saving_s))
        items.append(
            dict(
                label=r.kernel_label,
                demangled=r.kernel_demangled or "",
                share=fmt.pct(r.time_share, 1),
                time=fmt.time(r.time_s),
                launches=fmt.count(int(r.launches), "launch"),
                verdict=_verdict(r),
                evidence=getattr(r, "evidence", "") or "",
                advice=getattr(r, "advice", "") or "",
                at_roof=fmt.time(r.time_at_roof_s),
                saving=fmt.time(r.saving_s) if finite else "",
                saving_share=fmt.pct(r.saving_share, 1),
                flags=_flag_texts(getattr(r, "flags", ""), hide),
            )
        )
    return items


def _savings(
    summ: pd.DataFrame, total: float, top: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The largest savings per kernel and per kernel family (function name,
    instantiations together)."""
    by_saving = (
        summ[np.isfinite(summ["saving_s"].to_numpy(float))]
        .sort_values("saving_s", ascending=False)
        .head(top)
    )
    if len(by_saving) <= 1 or total <= 0:
        return [], []
    kernels = [
        dict(
            label=r.kernel_label,
            saving=fmt.time(r.saving_s),
            share=fmt.pct(r.saving_share, 1),
            time=fmt.time(r.time_s),
            at_roof=fmt.time(r.time_at_roof_s),
        )
        for r in by_saving.itertuples(index=False)
    ]
    fam = summ.groupby("kernel_name").agg(
        n=("kernel_key", "size"), saving_s=("saving_s", lambda x: x.sum(min_count=1))
    )
    fam = (
        fam[(fam["n"] > 1) & np.isfinite(fam["saving_s"].to_numpy(float))]
        .sort_values("saving_s", ascending=False)
        .head(top)
    )
    families = [
        dict(
            name=name, n=int(r.n), saving=fmt.time(r.saving_s), share=fmt.pct(r.saving_s / total, 1)
        )
        for name, r in fam.iterrows()
    ]
    return kernels, families


#: Columns of the launch table on the roofline page: (column, header, kind of :func:`html_table`).
_KERNEL_COLUMNS = [
    ("kernel_label", "kernel", "name"),
    ("launches", "launches", "int"),
    ("time_s", "time", "time"),
    ("time_share", "share", "pct"),
    ("precision", "precision", "text"),
    ("bound", "bound", "text"),
    ("level", "binding level", "text"),
    ("ai_flop_per_byte", "AI [FLOP/B]", "num"),
    ("flop_per_s", "FLOP/s", "si"),
    ("roof_fraction", "% of roof", "pct"),
    ("time_at_roof_s", "time at roof", "time"),
    ("saving_s", "saving", "time"),
    ("saving_share", "saving share", "pct"),
    ("diagnosis", "diagnosis", "text"),
    ("flags", "flags", "text"),
    ("in_focus", "on chart", "text"),
]
#: Columns of the launch table: (column, header).
_LAUNCH_COLUMNS = [
    ("launch_id", "launch"),
    ("kernel_name", "kernel"),
    ("time_s", "time [s]"),
    ("fp64_flop", "FP64 FLOP"),
    ("fp32_flop", "FP32 FLOP"),
    ("fp16_flop", "FP16 FLOP"),
    ("tensor_flop", "tensor FLOP (OP for integer)"),
    ("dram_bytes", "DRAM B"),
    ("l2_bytes", "L2 B"),
    ("l1_bytes", "L1 B"),
    ("time_at_roof_s", "time at roof [s]"),
    ("bound", "bound"),
    ("diagnosis", "diagnosis"),
    ("flags", "flags"),
    ("status", "status"),
    ("notes", "notes"),
]


def _column(summ: pd.DataFrame, name: str) -> list[object]:
    """Column ``name`` of ``summ`` as a list; '' on every row where the table lacks it (a table
    written before the column existed)."""
    return list(summ[name]) if name in summ.columns else [""] * len(summ)


def _kernel_table(summ: pd.DataFrame, hide: str | None = None) -> str:
    """The sortable kernels table, one row per kernel with its dot colour (flags with code
    ``hide`` left out)."""
    cols = list(_KERNEL_COLUMNS)
    view = summ.assign(
        diagnosis=[
            verdict_text(d, lim) for d, lim in zip(summ["diagnosis"], _column(summ, "limiter"))
        ],
        flags=[cell_text("flags", _kept_flags(f, hide)) for f in summ["flags"]],
        precision=[precision_title(p) if p else "" for p in summ["precision"]],
        level=[lv.upper() for lv in summ["level"]],
        in_focus=np.where(summ["in_focus"], "yes", "no"),
    )
    if "profiled_time_s" in summ.columns and not summ["profiled_time_s"].equals(
        summ["time_s"]
    ):  # production basis (--timeline)
        cols[2:4] = [
            ("time_s", "production time", "time"),
            ("time_share", "production share", "pct"),
            ("profiled_time_s", "ncu time", "time"),
        ]
    if any(
        work_unit(str(p)) == "OP" for p in summ["precision"].dropna().unique()
    ):  # integer tensor work: operations, not FLOP
        cols = [
            (
                c,
                {"AI [FLOP/B]": "AI [FLOP/B; OP/B integer]", "FLOP/s": "FLOP/s (OP/s integer)"}.get(
                    t, t
                ),
                k,
            )
            for c, t, k in cols
        ]
    if _has_achievable(summ):
        cols.insert(
            cols.index(("roof_fraction", "% of roof", "pct")) + 1,
            ("achievable_roof_fraction", "% of achievable roof", "pct"),
        )
    if "expected_flop" in summ.columns and summ["expected_flop"].notna().any():
        view["useful_ai"] = summ["expected_flop"] / summ["expected_dram_bytes"]
        cols.insert(
            [c for c, _, _ in cols].index("flop_per_s"),
            ("useful_ai", "useful AI [FLOP/B] (--expect)", "num"),
        )
    return html_table(
        view,
        [(c, t) for c, t, _ in cols],
        title_col="kernel_demangled",
        kinds={c: k for c, _, k in cols},
        swatches=[figure.kernel_color(i) if p else None for i, p in enumerate(summ["precision"])],
    )


def _launch_table(kernels: pd.DataFrame, hide: str | None = None) -> tuple[str, str]:
    """The table of the longest launches (flags with code ``hide`` left out) and its title."""
    # The order of the time column alone, then only the rows shown taken (sorting the whole table
    # copies every column).
    order = pd.Series(kernels["time_s"].to_numpy(), copy=False).sort_values(
        ascending=False, na_position="last", kind="stable"
    )
    longest = kernels.take(order.index.to_numpy()[:MAX_LAUNCH_ROWS])
    longest = longest.assign(flags=[_kept_flags(f, hide) for f in longest["flags"]])
    n = len(kernels)
    title = (
        f"Every launch ({n})"
        if n <= MAX_LAUNCH_ROWS
        else f"The {MAX_LAUNCH_ROWS} longest of {n} launches (all of them are in launches.csv)"
    )
    return html_table(to_text(longest), _LAUNCH_COLUMNS, title_col="kernel_demangled"), title


def _kernels_json(summ: pd.DataFrame, hide: str | None = None) -> str:
    """Per kernel (in colour order) what the details panel shows; a dot's ``kid`` customdata
    column indexes it."""
    rows = [
        {
            "name": r.kernel_label,
            "demangled": r.kernel_demangled or "",
            "nvtx": r.nvtx_range or "",
            "bound": r.bound,
            "launches": int(r.launches),
            "saving_s": float(r.saving_s) if np.isfinite(r.saving_s) else None,
            "diagnosis": verdict_text(getattr(r, "diagnosis", ""), getattr(r, "limiter", "")),
            "advice": getattr(r, "advice", "") or "",
            "flags": _flag_texts(getattr(r, "flags", ""), hide),
        }
        for r in summ.itertuples(index=False)
    ]
    # Escape '<' so a kernel name can never close the script element.
    return json.dumps(rows).replace("<", "\\u003c")


def render_html(
    fig: go.Figure,
    kernels: pd.DataFrame,
    meta: dict[str, Any],
    plotlyjs: str | bool = True,
    summary: pd.DataFrame | None = None,
    points: pd.DataFrame | None = None,
    focus: float = FOCUS_SHARE,
    top: int = TOP_ON_PAGE,
    extra: str = "",
    basis: dict[str, Any] | None = None,
) -> str:
    """The self-contained roofline page (``templates/roofline.html.j2``): header line, view
    controls, the chart with the top kernels and hover details beside it, ``extra`` under it; then
    the summary, the kernels and launch tables and the input's facts.

    Parameters
    ----------
    fig, kernels : Figure, DataFrame
        From :func:`ncuroof.render.figure.plot_roofline` (its view contract drives the controls);
        the classified launch table (one row per launch).
    meta, plotlyjs : dict, True or 'cdn'
        Facts about the input (``GPU`` in the header; empty values left out); True embeds plotly.js
        (opens offline), ``'cdn'`` links it.
    summary, points : DataFrame, optional
        :func:`summarize` of the data, all kernels, in ``fig``'s order (kernel colours follow it);
        else computed from ``kernels`` and ``points``.
    focus, top, extra, basis
        The share of GPU time of the summary's ``in_focus``; kernels listed beside the chart; HTML
        under the chart (:func:`page_sections`); with a production timeline
        (:func:`ncuroof.views.timeline.time_basis`), ``total_s``, the time the shares and savings
        are of, and ``text``, the header's sentence on it.

    Returns
    -------
    str
        A complete HTML document.
    """
    summ = _page_summary(kernels, summary, points)
    note = provenance.evidence_note(kernels, _has_role(fig, "instruction_dots"))  # None: metrics
    plot_div = fig.to_html(
        full_html=False,
        include_plotlyjs=plotlyjs,
        div_id="roofline",
        config={"displaylogo": False, "responsive": True},
    )
    return (
        _env()
        .get_template("roofline.html.j2")
        .render(
            title="ncuroof roofline",
            **_header(kernels, summ, meta, basis),
            plot=Markup(plot_div),
            **_sections(kernels, summ, basis, top, focus, note),
            facts=meta,
            extra=Markup(extra),
        )
    )


def _page_summary(
    kernels: pd.DataFrame, summary: pd.DataFrame | None, points: pd.DataFrame | None
) -> pd.DataFrame:
    """The summary the page lists (:func:`summarize` of ``kernels`` when not given), with the
    diagnosis columns (empty when it has none)."""
    if summary is None:
        summary = summarize(
            kernels,
            points if points is not None else pd.DataFrame(columns=["level"]),
            top=len(kernels),
        )
    summ = summary.reset_index(drop=True)
    if "diagnosis" not in summ.columns:
        summ = summ.assign(diagnosis="", evidence="", advice="", flags=[[]] * len(summ))
    return summ


def _sections(
    kernels: pd.DataFrame,
    summ: pd.DataFrame,
    basis: dict[str, Any] | None,
    top: int,
    focus: float,
    note: str | None,
) -> dict[str, Any]:
    """The template's context for the top kernels, the summary and the tables; shares and savings
    of the timeline's kernel time (``basis``) or the launches'."""
    total = (
        float(basis["total_s"]) if basis else float(np.nansum(kernels["time_s"].to_numpy(float)))
    )
    hide = "missing_metrics" if note else None  # said once, by the note, in the report's own terms
    launch_table, launches_title = _launch_table(kernels, hide)
    by_saving, families = _savings(summ, total, top)
    return dict(
        top=_side_top(summ, top),
        focus=_focus(summ, focus) if (summ["precision"].astype(str) != "").any() else None,
        saving=_saving(summ, total),
        missing_metrics=note,
        items=_items(summ, top, hide),
        by_saving=by_saving,
        families=families,
        kernel_table=Markup(_kernel_table(summ, hide)),
        launch_table=Markup(launch_table),
        launches_title=launches_title,
        kernels_json=Markup(_kernels_json(summ, hide)),
        sort_js=Markup(_asset("sort.js")),
        roofline_js=Markup(_asset("roofline.js")),
    )


def render_image(fig: go.Figure, fmt: str, width: int = 1400, height: int = 800) -> bytes:
    """The figure's current view as a PNG or SVG image, through plotly's export (kaleido).

    Parameters
    ----------
    fig : Figure
        The chart.
    fmt : {'png', 'svg'}
        Image format.
    width, height : int
        Size in CSS pixels (PNG at scale 2).

    Returns
    -------
    bytes

    Raises
    ------
    OutputError
        When kaleido is not installed or finds no Chrome/Chromium to render with.
    """
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"image format must be {' or '.join(IMAGE_FORMATS)}, not {fmt!r}")
    try:
        import kaleido  # noqa: F401
    except ImportError as exc:
        raise OutputError(
            "--image needs kaleido: pip install 'ncuroof[image]' (and a Chrome or Chromium"
            " browser)",
            f"roofline.{fmt}",
        ) from exc
    try:
        return fig.to_image(format=fmt, width=width, height=height, scale=2 if fmt == "png" else 1)
    except Exception as exc:  # kaleido raises its own types for a missing or failing browser
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OutputError(
            f"image export failed ({first}); install Chrome or Chromium (Debian: apt install"
            " chromium) or set BROWSER_PATH",
            f"roofline.{fmt}",
        ) from exc


_KINDS = {
    "int": lambda v: f"{v:.0f}",
    "num": lambda v: f"{v:.4g}",
    "pct": lambda v: fmt.pct(v, 1),
    "time": fmt.time,
    "si": fmt.si,
}


def html_table(
    df: pd.DataFrame,
    cols: list[tuple[str, str]],
    title_col: str | None = None,
    kinds: dict[str, str] | None = None,
    swatches: list[str] | None = None,
    row_classes: list[str] | None = None,
    pairs: dict[str, str] | None = None,
) -> str:
    """A sortable HTML table of ``df``'s columns ``cols`` (name, header), from
    ``templates/table.html.j2`` (its rows built here, a column at a time: a page's tables have
    thousands of cells).

    Parameters
    ----------
    df, cols : DataFrame, list of (column, header)
        The rows; the columns to show, in order.
    title_col : str, optional
        Column giving the ``kernel_name``/``kernel_label`` cells a tooltip (the demangled name).
    kinds : dict, optional
        Per column: ``text``, ``name`` (text, ellipsised), ``int``, ``num`` (4 significant
        digits, the default for numbers), ``pct`` (fraction shown in percent), ``time``
        (seconds with a unit), ``si`` (SI prefix); see :mod:`ncuroof.fmt`.
    swatches : list of str or None, optional
        A colour per row (None: no dot), drawn as a dot before the first cell's text.
    row_classes : list of str, optional
        A CSS class per row (``''``: none), e.g. ``imbalanced`` (``templates/page.css``).
    pairs : dict, optional
        Shown column -> the column written before it in the same cell, ``before → after`` (a
        comparison's two runs in one column; ``-`` for a missing side, one text when two texts
        are equal); the cell sorts by the shown column's value.

    Returns
    -------
    str
        ``<table class="sortable">``: numeric cells carry their raw value in ``data-v`` for
        sorting (empty when missing); text is escaped.
    """
    kinds = kinds or {}
    text_cols = {
        c
        for c in [c for c, _ in cols] + list((pairs or {}).values())
        if kinds.get(c) in ("text", "name")
        or (c not in kinds and not pd.api.types.is_numeric_dtype(df[c]))
    }
    head = [dict(cls="l" if c in text_cols else "", text=t) for c, t in cols]

    def column(c: str) -> tuple[list[str], list[str]]:
        if c in text_cols:
            titles = df[title_col] if title_col and c in ("kernel_name", "kernel_label") else None
            return _text_cells(df[c], kinds.get(c) == "name", titles)
        return _number_cells(df[c], _KINDS.get(kinds.get(c, "num"), _KINDS["num"]))

    cells = [column(c) for c, _ in cols]
    for i, (c, _) in enumerate(cols):
        if c in (pairs or {}):
            opens, after = cells[i]
            cells[i] = opens, _paired(column(pairs[c])[1], after, c in text_cols)
    return (
        _env()
        .get_template("table.html.j2")
        .render(head=head, body=Markup(_table_rows(cells, swatches, row_classes)))
    )


def _paired(before: list[str], after: list[str], text: bool) -> list[str]:
    """The ``before → after`` texts of :func:`html_table`'s paired cells (escaped texts in)."""
    out = []
    for b, a in zip(before, after):
        if not (b or a):
            out.append("")
        elif text and b == a:
            out.append(a)
        else:
            out.append(f"{b or '-'} → {a or '-'}")
    return out


def _table_rows(
    cells: list[tuple[list[str], list[str]]],
    swatches: list[str] | None,
    row_classes: list[str] | None,
) -> str:
    """The ``<tr>`` rows of :func:`html_table` from its columns' cells (per column the opening
    ``<td>`` tags and the escaped texts), a swatch before the first cell's text where ``swatches``
    has a colour; no rows without columns."""
    if not cells:
        return ""
    first_open, first_text = cells[0]
    first_text = list(first_text)
    for i, color in enumerate((swatches or [])[: len(first_text)]):
        if color:
            first_text[i] = (
                f'<span class="swatch" style="background:{_escape(color)}"></span> '
                + (first_text[i])
            )
    columns = [[*zip(first_open, first_text)], *(zip(o, t) for o, t in cells[1:])]
    tds = ["".join(f"{o}{t}</td>" for o, t in row) for row in zip(*columns)]
    classes = row_classes or [""] * len(tds)
    return "".join(
        f'<tr class="{_escape(classes[i])}">{r}</tr>' if classes[i] else f"<tr>{r}</tr>"
        for i, r in enumerate(tds)
    )


def _escape(text: Any) -> str:
    """``text`` as HTML text, as :func:`markupsafe.escape` (Jinja's autoescape) writes it, without
    making a :class:`~markupsafe.Markup` for each cell."""
    if hasattr(text, "__html__"):
        return str(text.__html__())
    return (
        str(text)
        .replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def _escape_all(texts: list[str]) -> list[str]:
    """Each of ``texts`` through :func:`_escape`, each distinct text once; ``texts`` itself when
    none holds a character to escape (one scan: numbers' texts seldom do)."""
    joined = "".join(texts)
    if not any(c in joined for c in "&<>'\""):
        return texts
    done = {t: _escape(t) for t in dict.fromkeys(texts)}
    return [done[t] for t in texts]


def _number_cells(values: pd.Series, shown: Any) -> tuple[list[str], list[str]]:
    """The opening tags (the raw value in ``data-v``, empty when missing) and texts of a numeric
    column's cells."""
    f = pd.to_numeric(values, errors="coerce").to_numpy(float)
    finite = np.isfinite(f).tolist()
    opens = [
        f'<td data-v="{x!r}">' if ok else '<td data-v="">' for x, ok in zip(f.tolist(), finite)
    ]
    return opens, _escape_all([shown(x) if ok else "" for x, ok in zip(f.tolist(), finite)])


def _text_cells(
    values: pd.Series, name: bool, titles: pd.Series | None
) -> tuple[list[str], list[str]]:
    """The opening tags (class, the tooltip ``titles`` where given and not empty) and escaped texts
    of a text column's cells; each distinct text escaped once."""
    cls = "l name" if name else "l"
    text = values.astype(object).where(values.notna(), "").astype(str).tolist()
    if titles is None:
        opens = [f'<td class="{cls}">'] * len(text)
    else:
        tips = [str(t) if t else "" for t in titles.astype(str).tolist()]  # None: no tooltip
        opens = [
            f'<td class="{cls}" title="{tip}">' if tip else f'<td class="{cls}">'
            for tip in _escape_all(tips)
        ]
    return opens, _escape_all(text)


def render_fragment(template: str, **context: Any) -> str:
    """A part of a page from a template of ``ncuroof/render/templates`` (text escaped unless it is
    :class:`markupsafe.Markup`); :func:`page_sections` renders
    its sections with it.

    Parameters
    ----------
    template : str
        File name in ``ncuroof/render/templates``, e.g. ``ranks.html.j2``.
    **context
        The template's variables (all required: a missing one raises
        :class:`jinja2.UndefinedError`).

    Returns
    -------
    str
    """
    return _env().get_template(template).render(**context)


def _asset(name: str) -> str:
    """The text of a script in ``ncuroof/render/assets``."""
    return resources.files("ncuroof.render").joinpath("assets", name).read_text(encoding="utf-8")


def render_page(
    title: str,
    fig: go.Figure,
    meta: dict[str, Any],
    table_title: str,
    table: str,
    plotlyjs: str | bool = True,
) -> str:
    """A self-contained HTML document (template ``templates/page.html.j2``): title, facts, the
    figure, then a table.

    Parameters
    ----------
    title : str
        Page title and heading.
    fig : Figure
        The chart.
    meta : dict
        Facts (empty values are left out).
    table_title : str
        Heading of the table.
    table : str
        From :func:`html_table`.
    plotlyjs : True or 'cdn', default True
        True embeds plotly.js (opens offline); ``'cdn'`` links it.

    Returns
    -------
    str
    """
    plot_div = fig.to_html(
        full_html=False, include_plotlyjs=plotlyjs, config={"displaylogo": False}
    )
    return (
        _env()
        .get_template("page.html.j2")
        .render(
            title=title,
            facts=meta,
            plot=Markup(plot_div),
            table_title=table_title,
            table=Markup(table),
            sort_js=Markup(_asset("sort.js")),
        )
    )


def page_sections(summary: pd.DataFrame, products: str = "") -> str:
    """The sections the page adds under the chart (template ``views.html.j2``).

    Parameters
    ----------
    summary : DataFrame
        The kernel summary (``kernel_key``, ``kernel_label``, ``speed_of_light_note``).
    products : str
        HTML of the views' sections (:func:`ncuroof.views.sections`: the production
        timeline's :func:`timeline_section`, a multi-rank run's :func:`rank_section`), put first.

    Returns
    -------
    str
        HTML: ``products``, then the "Speed of light" notes, one per kernel whose roofline and unit
        bounds differ by more than 2x (longest first); empty when there is neither.
    """
    return products + render_fragment("views.html.j2", notes=_notes(summary))


def _notes(summary: pd.DataFrame) -> list[dict[str, str]]:
    """Per kernel with a ``speed_of_light_note`` (:func:`ncuroof.model.summary.kernel_summary`), in
    summary order: ``label`` and ``note``."""
    return [
        {"label": r.kernel_label, "note": r.speed_of_light_note}
        for r in summary.itertuples(index=False)
        if r.speed_of_light_note
    ]


def labels_by_key(summary: pd.DataFrame) -> pd.Series:
    """``kernel_key`` -> ``kernel_label`` of the summary, to name kernels as the page does."""
    if "kernel_label" not in summary.columns:
        return pd.Series(dtype=object)
    return summary.set_index("kernel_key")["kernel_label"]
