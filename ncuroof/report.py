"""Outputs: the summary table, the self-contained HTML page, and writing an output directory
whole or not at all."""

from __future__ import annotations

import html
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .errors import OutputError
from .plot import precision_title

__all__ = ["summarize", "summary_text", "render_html", "render_page", "html_table", "write_outputs"]


def summarize(kernels: pd.DataFrame, points: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """Aggregate launches per kernel name and keep the ``top`` by total time.

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
        Columns ``kernel_name, launches, time_s`` (sum), ``time_share`` (0-1 of all measured
        time), ``precision`` (the one with most FLOPs), ``bound`` (the most frequent),
        ``roof_fraction`` (time-weighted over launches, at each launch's binding level: the
        lowest attainable roof of its main precision; NaN when that precision has no roof, as
        for tensor work estimated from SASS opcodes), sorted by ``time_s``.
    """
    k = kernels.copy()
    total = float(np.nansum(k["time_s"]))
    best = pd.DataFrame(columns=["source", "launch_id", "precision", "roof_fraction"])
    if len(points):
        main = points.loc[points.groupby(["source", "launch_id"])["flop"].idxmax(), ["source", "launch_id", "precision"]]
        p = points.merge(main, on=["source", "launch_id", "precision"])
        roofed = p[np.isfinite(p["roof_flop_per_s"].to_numpy(float))]
        best = main.merge(
            roofed.loc[roofed.groupby(["source", "launch_id"])["roof_flop_per_s"].idxmin(), ["source", "launch_id", "roof_fraction"]]
            if len(roofed) else pd.DataFrame(columns=["source", "launch_id", "roof_fraction"]),
            on=["source", "launch_id"], how="left")
    k = k.merge(best, on=["source", "launch_id"], how="left")
    k["w"] = k["time_s"] * k["roof_fraction"]
    rows = []
    for name, g in k.groupby("kernel_name", sort=False):
        t = float(g["time_s"].sum(min_count=1))
        tw = g.loc[g["roof_fraction"].notna(), "time_s"].sum()
        rows.append({
            "kernel_name": name,
            "launches": len(g),
            "time_s": t,
            "time_share": t / total if total > 0 else np.nan,
            "precision": g["precision"].dropna().mode().iloc[0] if g["precision"].notna().any() else "",
            "bound": g["bound"].mode().iloc[0],
            "roof_fraction": float(g["w"].sum() / tw) if tw > 0 else np.nan,
        })
    out = pd.DataFrame(rows, columns=["kernel_name", "launches", "time_s", "time_share", "precision", "bound", "roof_fraction"])
    return out.sort_values("time_s", ascending=False, na_position="last").head(top).reset_index(drop=True)


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
                      ("precision", "left"), ("bound", "left"), ("% of roof", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in summary.itertuples(index=False):
        name = r.kernel_name if len(r.kernel_name) <= 60 else r.kernel_name[:57] + "..."
        table.add_row(name, str(r.launches), _fmt_time(r.time_s), _pct(r.time_share),
                      precision_title(r.precision) if r.precision else "-", r.bound, _pct(r.roof_fraction))
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; position: sticky; top: 0; }
td.l, th.l { text-align: left; }
.meta { color: #555; font-size: 14px; }
.note { color: #8a4b00; }
"""


def render_html(fig: go.Figure, kernels: pd.DataFrame, meta: dict[str, Any], plotlyjs: str | bool = True) -> str:
    """Build the self-contained HTML page: header, roofline, kernels table.

    Parameters
    ----------
    fig : Figure
        From :func:`ncuroof.plot.plot_roofline`.
    kernels : DataFrame
        The classified kernels table (one table row per launch).
    meta : dict
        Header facts: ``inputs``, ``devices``, ``ncu_versions``, ``note``.
    plotlyjs : True or 'cdn', default True
        True embeds plotly.js (opens offline); ``'cdn'`` links it.

    Returns
    -------
    str
        A complete HTML document.
    """
    cols = [("launch_id", "launch"), ("kernel_name", "kernel"), ("time_s", "time [s]"), ("fp64_flop", "FP64 FLOP"),
            ("fp32_flop", "FP32 FLOP"), ("fp16_flop", "FP16 FLOP"), ("tensor_flop", "tensor FLOP"), ("dram_bytes", "DRAM B"),
            ("l2_bytes", "L2 B"), ("l1_bytes", "L1 B"), ("bound", "bound"), ("status", "status"), ("notes", "notes")]
    return render_page("ncuroof roofline", fig, meta, "Kernel launches", html_table(kernels, cols, title_col="kernel_demangled"), plotlyjs)


def html_table(df: pd.DataFrame, cols: list[tuple[str, str]], title_col: str | None = None) -> str:
    """An HTML table of ``df``'s columns ``cols`` (name, header); floats to 4 significant digits,
    text left-aligned and escaped; ``title_col`` gives each row's first text cell a tooltip."""
    text_cols = {c for c, _ in cols if not pd.api.types.is_numeric_dtype(df[c])}
    head = "".join(f'<th class="{"l" if c in text_cols else ""}">{html.escape(t)}</th>' for c, t in cols)
    body = []
    for r in df.itertuples(index=False):
        cells = []
        for c, _ in cols:
            v = getattr(r, c)
            if c not in text_cols:
                f = float(v) if v is not None and v is not pd.NA else np.nan
                cells.append(f"<td>{'' if not np.isfinite(f) else f'{f:.4g}'}</td>")
            else:
                text = "" if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else str(v)
                title = f' title="{html.escape(str(getattr(r, title_col)))}"' if title_col and c == "kernel_name" else ""
                cells.append(f'<td class="l"{title}>{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


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
    facts = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in meta.items() if v)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><ul class='meta'>{facts}</ul>{plot}"
        f"<h2>{html.escape(table_title)}</h2>{table}</body></html>"
    )


def write_outputs(outdir: Path, files: dict[str, str | bytes]) -> None:
    """Write ``files`` into ``outdir`` whole or not at all.

    Everything is written into a temporary directory beside ``outdir`` first; if ``outdir``
    does not exist the temporary directory is renamed to it, else each file is moved in with an
    atomic rename. A failure leaves no partial files.

    Parameters
    ----------
    outdir : Path
        Output directory (created if missing; its parent must exist or be creatable).
    files : dict of str to str or bytes
        File name to content.

    Raises
    ------
    OutputError
        If the directory or a file cannot be written.
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
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(tmp / name, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as f:
                f.write(content)
        if not outdir.exists():
            os.rename(tmp, outdir)
            os.chmod(outdir, 0o777 & ~_umask())
        else:
            for name in files:
                os.replace(tmp / name, outdir / name)
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write the output ({exc.strerror}); choose a writable -o", outdir) from exc


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
