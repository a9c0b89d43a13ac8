"""Outputs: the summary table, the self-contained HTML page, and writing an output directory
whole or not at all."""

from __future__ import annotations

import html
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa

from .diagnose import CLASSES as DIAGNOSIS_TEXT
from .errors import OutputError
from .plot import KERNEL_COLORS, OTHER_COLOR, _si, precision_title
from .schema import to_text
from .summary import kernel_summary

__all__ = ["summarize", "summary_text", "render_html", "render_image", "render_page", "html_table", "write_outputs"]


def summarize(kernels: pd.DataFrame, points: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """The ``top`` kernels by total time (:func:`ncuroof.summary.kernel_summary`).

    Parameters
    ----------
    kernels : DataFrame
        The classified kernels table.
    points : DataFrame
        Its points table.
    top : int, default 10
        Number of kernels to keep.

    Returns
    -------
    DataFrame
        The first ``top`` rows of :func:`ncuroof.summary.kernel_summary`: ``kernel_name``,
        ``launches``, ``time_s`` [s], ``time_share``, ``precision`` (most FLOPs), ``bound`` (of
        most of the time), ``level`` and ``roof_fraction`` (the binding level's aggregate dot;
        NaN when that precision has no roof, as for tensor work estimated from SASS opcodes),
        ``time_at_roof_s``, ``saving_s`` [s], ``saving_share``, ..., and the diagnosis columns of
        :func:`ncuroof.diagnose.diagnose_kernels` (``diagnosis``, ``evidence``, ``advice``, ``flags``).
    """
    from . import catalog, diagnose

    summ = diagnose.diagnose_kernels(kernel_summary(kernels, points), kernels, catalog.load(), catalog.load_gpus())
    return to_text(summ.head(top).reset_index(drop=True))


def _fmt_time(t: float) -> str:
    if not np.isfinite(t):
        return "n/a"
    for f, u in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if t >= f:
            return f"{t / f:.3g} {u}"
    return f"{t * 1e9:.3g} ns"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if np.isfinite(x) else "n/a"


def summary_text(summary: pd.DataFrame, width: int = 120) -> str:
    """Render the summary as a rich table (plain text when not a terminal).

    Parameters
    ----------
    summary : DataFrame
        From :func:`summarize`.
    width : int, default 120
        Console width.

    Returns
    -------
    str
    """
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Top kernels by GPU time")
    for col, just in (("kernel", "left"), ("launches", "right"), ("time", "right"), ("share", "right"),
                      ("precision", "left"), ("diagnosis", "left"), ("% of roof", "right"), ("at roof", "right"),
                      ("saving", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in summary.itertuples(index=False):
        name = r.kernel_label if len(r.kernel_label) <= 50 else r.kernel_label[:47] + "..."
        table.add_row(name, str(r.launches), _fmt_time(r.time_s), _pct(r.time_share),
                      precision_title(r.precision) if r.precision else "-",
                      DIAGNOSIS_TEXT.get(getattr(r, "diagnosis", ""), r.bound), _pct(r.roof_fraction),
                      _fmt_time(r.time_at_roof_s), _pct(r.saving_share))
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


#: The launch table of the roofline page lists at most this many launches (the longest).
MAX_LAUNCH_ROWS = 2000

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; position: sticky; top: 0; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[data-dir="asc"]::after { content: " \\25B2"; }
table.sortable th[data-dir="desc"]::after { content: " \\25BC"; }
td.l, th.l { text-align: left; }
td.name { max-width: 38em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.meta { color: #555; font-size: 14px; }
.note { color: #8a4b00; }
.summary { font-size: 15px; line-height: 1.45; }
.summary li { margin-bottom: 0.2em; }
#controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.6em; align-items: center; margin: 0.8em 0;
            padding: 0.5em 0.8em; background: #f6f6f6; border-radius: 6px; font-size: 14px; }
#controls label { margin-right: 0.5em; }
#controls:empty { display: none; }
#details { min-height: 4.2em; max-height: 9em; overflow: auto; font-size: 13px; color: #333; border-left: 3px solid #ccc; padding: 0.2em 0.8em; margin: 0.4em 0 1em; }
#details .name { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 50%; vertical-align: -0.1em; }
"""


def _summary_html(summ: pd.DataFrame, kernels: pd.DataFrame, fig: go.Figure, top: int = 5) -> str:
    """The text above the chart: total time, what the chart shows, the top kernels and savings."""
    total = float(np.nansum(kernels["time_s"].to_numpy(float)))
    n_launch, n_kern = len(kernels), len(summ)
    parts = [f"<p>Total GPU time <b>{_fmt_time(total)}</b> in {n_launch} launch{'es' if n_launch != 1 else ''} "
             f"of {n_kern} kernel{'s' if n_kern != 1 else ''}.</p>"]
    focus = (fig.layout.meta or {}).get("focus") or {}
    if focus:
        kept, left = focus.get("kept", n_kern), focus.get("left_out", 0)
        text = (f"The chart shows the {kept} kernel{'s' if kept != 1 else ''} that make up "
                f"{100 * focus.get('share', 1):.0f}% of GPU time")
        text += (f"; {left} kernel{'s' if left != 1 else ''} ({_pct(focus.get('left_out_share', 0.0))} of the time) "
                 "are left out (tick the box above the chart to show them)." if left else ".")
        parts.append(f"<p>{text}</p>")
    saving = summ["saving_s"].to_numpy(float)
    have = np.isfinite(saving)
    if have.any() and total > 0:
        s = float(saving[have].sum())
        missing = int((~have).sum())
        parts.append(
            f"<p>If every kernel ran at its roof the GPU time would drop by <b>{_fmt_time(s)}</b> ({_pct(s / total)}), "
            f"to {_fmt_time(total - s)}"
            + (f"; {missing} kernel{'s have' if missing != 1 else ' has'} no roofline point or roof and are not counted" if missing else "")
            + ". Time at the roof is max(FLOPs / compute roof, bytes / bandwidth roof) over every precision and level.</p>")
    none = bool((kernels["status"] == "no_roofline_metrics").all())
    if none:
        parts.append("<p class='note'>No launch has roofline metrics (FLOP counters and memory traffic): the verdicts below "
                     "come from ncu's SpeedOfLight throughputs alone. Collect them with <code>ncuroof profile -- ./app</code> "
                     "(ncu <code>--set roofline</code>).</p>")
    items = []
    for r in summ.head(top).itertuples(index=False):
        items.append(_kernel_item(r, hide="missing_metrics" if none else None))
    if items:
        parts.append(f"<p>Top kernels by time, what limits them and what to try:</p><ol>{''.join(items)}</ol>")
    by_saving = summ[np.isfinite(summ["saving_s"].to_numpy(float))].sort_values("saving_s", ascending=False).head(top)
    if len(by_saving) > 1 and total > 0:
        rows = "".join(f"<li><b>{html.escape(r.kernel_label)}</b>: {_fmt_time(r.saving_s)} ({_pct(r.saving_share)} of GPU time; "
                       f"{_fmt_time(r.time_s)} now, {_fmt_time(r.time_at_roof_s)} at its roof)</li>"
                       for r in by_saving.itertuples(index=False))
        parts.append(f"<p>Largest savings if one kernel reached its roof (Amdahl: the rest unchanged):</p><ol>{rows}</ol>")
        fam = summ.groupby("kernel_name").agg(n=("kernel_key", "size"), saving_s=("saving_s", lambda x: x.sum(min_count=1)),
                                              time_s=("time_s", "sum"))
        fam = fam[(fam["n"] > 1) & np.isfinite(fam["saving_s"].to_numpy(float))].sort_values("saving_s", ascending=False).head(top)
        if len(fam):
            rows = "".join(f"<li><b>{html.escape(name)}</b> ({r.n} instantiations): {_fmt_time(r.saving_s)} "
                           f"({_pct(r.saving_s / total)} of GPU time)</li>" for name, r in fam.iterrows())
            parts.append(f"<p>By kernel family (function name, template instantiations together):</p><ol>{rows}</ol>")
    return "<div class='summary'>" + "".join(parts) + "</div>"


def _kernel_item(r: Any, hide: str | None = None) -> str:
    """One kernel in the summary: share, diagnosis with its numbers, advice, saving, flags (but
    those starting with ``hide``, said once for the whole page)."""
    head = (f"{_pct(r.time_share)} of GPU time ({_fmt_time(r.time_s)}, {r.launches} launch{'es' if r.launches != 1 else ''}): "
            f"<b>{html.escape(DIAGNOSIS_TEXT.get(r.diagnosis, r.diagnosis))}</b>")
    body = [html.escape(r.evidence)] if r.evidence else []
    if r.advice:
        body.append("<i>Try:</i> " + html.escape(r.advice))
    if np.isfinite(r.saving_s):
        body.append(f"At its roof {_fmt_time(r.time_at_roof_s)}: saves {_fmt_time(r.saving_s)} ({_pct(r.saving_share)} of GPU time).")
    flags = "; ".join(f for f in str(r.flags or "").split("; ") if f and not (hide and f.startswith(hide)))
    if flags:
        body.append(f"<span class='note'>Check: {html.escape(flags)}</span>")
    return (f"<li><b title='{html.escape(r.kernel_demangled or '')}'>{html.escape(r.kernel_label)}</b>, {head}<br>"
            + "<br>".join(body) + "</li>")


def _kernels_json(summ: pd.DataFrame) -> str:
    rows = [{"name": r.kernel_label, "demangled": r.kernel_demangled or "", "nvtx": r.nvtx_range or "", "bound": r.bound,
             "launches": int(r.launches), "saving_s": float(r.saving_s) if np.isfinite(r.saving_s) else None,
             "diagnosis": DIAGNOSIS_TEXT.get(getattr(r, "diagnosis", ""), ""), "advice": getattr(r, "advice", "") or "",
             "flags": getattr(r, "flags", "") or ""}
            for r in summ.itertuples(index=False)]
    # Escape '<' so a kernel name can never close the script element.
    return json.dumps(rows).replace("<", "\\u003c")


def render_html(fig: go.Figure, kernels: pd.DataFrame, meta: dict[str, Any], plotlyjs: str | bool = True,
                summary: pd.DataFrame | None = None, points: pd.DataFrame | None = None, extra: tuple[str, str] = ("", "")) -> str:
    """Build the self-contained roofline page: header, summary, controls, chart, tables.

    Parameters
    ----------
    fig : Figure
        From :func:`ncuroof.plot.plot_roofline`.
    kernels : DataFrame
        The classified kernels table (one row per launch).
    meta : dict
        Header facts (``inputs``, ``GPU``, ``ncu version``, ``clocks``, ``roofs``, ...; empty
        values are left out).
    plotlyjs : True or 'cdn', default True
        True embeds plotly.js (opens offline); ``'cdn'`` links it.
    summary : DataFrame, optional
        :func:`ncuroof.summary.kernel_summary` of the same data, in the same order as the one
        ``fig`` was drawn from (kernel colours follow it); computed from ``kernels`` and
        ``points`` when not given.
    points : DataFrame, optional
        The points table, needed only when ``summary`` is not given.
    extra : (str, str), optional
        HTML put before and after the main chart (:func:`ncuroof.views.page_sections`: the view
        control, the phase and instruction-roofline charts, the speed-of-light notes).

    Returns
    -------
    str
        A complete HTML document. Its script reads the figure's trace ``meta`` to switch views,
        shows the full demangled name of the hovered dot below the chart and sorts the tables.
    """
    if summary is None:
        summary = summarize(kernels, points if points is not None else pd.DataFrame(columns=["level"]), top=len(kernels))
    summ = summary.reset_index(drop=True)
    swatch = [f'<span class="swatch" style="background:{KERNEL_COLORS[i] if i < len(KERNEL_COLORS) else OTHER_COLOR}"></span>'
              for i in range(len(summ))]
    kcols = [("kernel_label", "kernel", "name"), ("launches", "launches", "int"), ("time_s", "time", "time"),
             ("time_share", "share", "pct"), ("precision", "precision", "text"), ("bound", "bound", "text"),
             ("level", "binding level", "text"), ("ai_flop_per_byte", "AI [FLOP/B]", "num"), ("flop_per_s", "FLOP/s", "si"),
             ("roof_fraction", "% of roof", "pct"), ("time_at_roof_s", "time at roof", "time"), ("saving_s", "saving", "time"),
             ("saving_share", "saving share", "pct"), ("diagnosis", "diagnosis", "text"), ("flags", "flags", "text"),
             ("in_focus", "on chart", "text")]
    if "diagnosis" not in summ.columns:
        summ = summ.assign(diagnosis="", evidence="", advice="", flags="")
    view = summ.assign(diagnosis=[DIAGNOSIS_TEXT.get(d, d) for d in summ["diagnosis"]],
                       precision=[precision_title(p) if p else "" for p in summ["precision"]],
                       level=[lv.upper() for lv in summ["level"]], in_focus=np.where(summ["in_focus"], "yes", "no"))
    if "expected_flop" in summ.columns and summ["expected_flop"].notna().any():
        view["useful_ai"] = summ["expected_flop"] / summ["expected_dram_bytes"]
        kcols.insert(8, ("useful_ai", "useful AI [FLOP/B] (--expect)", "num"))
    ktable = html_table(view, [(c, t) for c, t, _ in kcols], title_col="kernel_demangled",
                        kinds={c: k for c, _, k in kcols}, lead=swatch)
    lcols = [("launch_id", "launch"), ("kernel_name", "kernel"), ("time_s", "time [s]"), ("fp64_flop", "FP64 FLOP"),
             ("fp32_flop", "FP32 FLOP"), ("fp16_flop", "FP16 FLOP"), ("tensor_flop", "tensor FLOP"), ("dram_bytes", "DRAM B"),
             ("l2_bytes", "L2 B"), ("l1_bytes", "L1 B"), ("time_at_roof_s", "time at roof [s]"), ("bound", "bound"),
             ("diagnosis", "diagnosis"), ("flags", "flags"), ("status", "status"), ("notes", "notes")]
    longest = kernels.sort_values("time_s", ascending=False, na_position="last", kind="stable").head(MAX_LAUNCH_ROWS)
    ltable = html_table(longest, lcols, title_col="kernel_demangled")
    launches_title = (f"Every launch ({len(kernels)})" if len(kernels) <= MAX_LAUNCH_ROWS else
                      f"The {MAX_LAUNCH_ROWS} longest of {len(kernels)} launches (all of them are in kernels.csv)")
    plot = fig.to_html(full_html=False, include_plotlyjs=plotlyjs, div_id="roofline",
                       config={"displaylogo": False, "responsive": True})
    body = (
        _summary_html(summ, kernels, fig)
        + extra[0] + "<div id='controls'></div>" + plot + extra[1]
        + "<div id='details'>Hover over a dot: its full demangled name, NVTX range and numbers appear here.</div>"
        + f"<h2>Kernels</h2><p class='meta'>One row per kernel name, launches aggregated. Click a column to sort.</p>{ktable}"
        + f"<details><summary>{launches_title}</summary>{ltable}</details>"
        + f"<script type='application/json' id='ncuroof-kernels'>{_kernels_json(summ)}</script>"
        + f"<script>{_asset('sort.js')}</script><script>{_asset('roofline.js')}</script>"
    )
    return _document("ncuroof roofline", meta, body)


_KINDS = {"int": lambda v: f"{v:.0f}", "num": lambda v: f"{v:.4g}", "pct": _pct, "time": _fmt_time,
          "si": lambda v: _si(v, "")}


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
    if fmt not in ("png", "svg"):
        raise ValueError(f"image format must be png or svg, not {fmt!r}")
    try:
        import kaleido  # noqa: F401
    except ImportError as exc:
        raise OutputError("--image needs kaleido: pip install 'ncuroof[image]' (and a Chrome or Chromium browser)",
                          f"roofline.{fmt}") from exc
    try:
        return fig.to_image(format=fmt, width=width, height=height, scale=2 if fmt == "png" else 1)
    except Exception as exc:  # kaleido raises its own types for a missing or failing browser
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OutputError(f"image export failed ({first}); install Chrome or Chromium (Debian: apt install chromium) "
                          "or set BROWSER_PATH", f"roofline.{fmt}") from exc


def html_table(df: pd.DataFrame, cols: list[tuple[str, str]], title_col: str | None = None,
               kinds: dict[str, str] | None = None, lead: list[str] | None = None) -> str:
    """A sortable HTML table of ``df``'s columns ``cols`` (name, header).

    Parameters
    ----------
    df : DataFrame
        The rows.
    cols : list of (column, header)
        Columns to show, in order.
    title_col : str, optional
        Column giving the ``kernel_name`` cells a tooltip (the demangled name).
    kinds : dict, optional
        Per column: ``text``, ``name`` (text, ellipsised), ``int``, ``num`` (4 significant
        digits, the default for numbers), ``pct`` (fraction shown in percent), ``time``
        (seconds with a unit), ``si`` (SI prefix).
    lead : list of str, optional
        Raw HTML put before each row's first cell's text (a colour swatch).

    Returns
    -------
    str
        ``<table class="sortable">``: numeric cells carry their raw value in ``data-v`` for
        sorting; text is escaped.
    """
    kinds = kinds or {}
    text_cols = {c for c, _ in cols if kinds.get(c) in ("text", "name") or (c not in kinds and not pd.api.types.is_numeric_dtype(df[c]))}
    head = "".join(f'<th class="{"l" if c in text_cols else ""}">{html.escape(t)}</th>' for c, t in cols)
    body = []
    for i, r in enumerate(df.itertuples(index=False)):
        cells = []
        for j, (c, _) in enumerate(cols):
            v = getattr(r, c)
            pre = lead[i] + " " if lead is not None and j == 0 else ""
            if c not in text_cols:
                f = float(v) if v is not None and v is not pd.NA else np.nan
                shown = "" if not np.isfinite(f) else _KINDS.get(kinds.get(c, "num"), _KINDS["num"])(f)
                cells.append(f'<td data-v="{"" if not np.isfinite(f) else repr(f)}">{pre}{shown}</td>')
            else:
                text = "" if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else str(v)
                title = f' title="{html.escape(str(getattr(r, title_col)))}"' if title_col and c in ("kernel_name", "kernel_label") else ""
                cls = "l name" if kinds.get(c) == "name" else "l"
                cells.append(f'<td class="{cls}"{title}>{pre}{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _asset(name: str) -> str:
    """The text of a script in ``ncuroof/assets``."""
    return resources.files("ncuroof").joinpath("assets", name).read_text(encoding="utf-8")


def _document(title: str, meta: dict[str, Any], body: str) -> str:
    facts = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in meta.items() if v)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><ul class='meta'>{facts}</ul>{body}</body></html>"
    )


def render_page(title: str, fig: go.Figure, meta: dict[str, Any], table_title: str, table: str,
                plotlyjs: str | bool = True) -> str:
    """A self-contained HTML document: title, header facts, the figure, then a table.

    Parameters
    ----------
    title : str
        Page title and heading.
    fig : Figure
        The chart.
    meta : dict
        Header facts (empty values are left out).
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
    plot = fig.to_html(full_html=False, include_plotlyjs=plotlyjs, config={"displaylogo": False})
    return _document(title, meta, f"{plot}<h2>{html.escape(table_title)}</h2>{table}<script>{_asset('sort.js')}</script>")


def write_outputs(outdir: Path, files: dict[str, str | bytes | Callable[[Path], None]]) -> None:
    """Write ``files`` into ``outdir`` whole or not at all.

    Everything is written into a temporary directory beside ``outdir`` first; if ``outdir``
    does not exist the temporary directory is renamed to it, else each file is moved in with an
    atomic rename (a directory entry replaces the old directory of that name). A failure leaves
    no partial files.

    Parameters
    ----------
    outdir : Path
        Output directory (created if missing; its parent must exist or be creatable).
    files : dict of str to str, bytes or callable
        File name to content, or to a writer called with the path to create (a Parquet dataset
        directory, :func:`ncuroof.tables_io.dataset_writer`).

    Raises
    ------
    OutputError
        If the directory or a file cannot be written. Any other exception is re-raised after
        the temporary directory is removed.
    """
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise OutputError("exists and is not a directory; choose another -o", outdir)
    try:
        outdir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
    except OSError as exc:
        raise OutputError(f"cannot create the output directory ({exc.strerror}); choose a writable -o", outdir) from exc
    try:
        for name, content in files.items():
            if callable(content):
                content(tmp / name)
                continue
            mode = "wb" if isinstance(content, bytes) else "w"
            # Text that cannot be UTF-8 (lone surrogates from a damaged name) is written as U+FFFD.
            with open(tmp / name, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": "", "errors": "replace"})) as f:
                f.write(content)
        if not outdir.exists():
            os.rename(tmp, outdir)
            os.chmod(outdir, 0o777 & ~_umask())
        else:
            for name in files:
                if (outdir / name).is_dir() and not (outdir / name).is_symlink():
                    shutil.rmtree(outdir / name)
                os.replace(tmp / name, outdir / name)
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException as exc:  # noqa: BLE001 - whatever fails (disk, Arrow, encoding, Ctrl-C), leave no partial files
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, (OSError, pa.ArrowException)):
            raise OutputError(f"cannot write the output ({getattr(exc, 'strerror', None) or exc}); choose a writable -o", outdir) from exc
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
