"""The Markdown summary (``--markdown FILE``): what a pull-request comment or GitHub's
``$GITHUB_STEP_SUMMARY`` shows of an ``analyze`` or a ``compare``: the verdict, the top kernels
as a Markdown table, the gate, and where the page is.

Every cell from an input goes through :func:`ncuroof.fmt.markdown_cell` (control characters
visible, ``|`` and other markup escaped), so a kernel name cannot break the table.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .. import fmt
from ..errors import OutputError
from ..model.diagnose import verdict_text
from .compare import compare_cells
from .page import summary_cells

__all__ = [
    "analysis_markdown",
    "compare_markdown",
    "write_markdown",
    "analysis_rows",
    "compare_rows",
    "MARKER",
]

#: The first line of every summary ncuroof writes: a file beginning with it may be replaced.
MARKER = "<!-- ncuroof summary -->"
#: Kernels in the table.
TOP = 10


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table; numbers right-aligned (header cells ending in ``>``)."""
    align = ["---:" if h.endswith(">") else "---" for h in header]
    names = [h.rstrip(">") for h in header]
    return [
        "| " + " | ".join(names) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def _link(outdir: Path | None, files: Any, name: str) -> str:
    """``[name](path)`` of an output file written into ``outdir`` (``files``: the names
    written), else ``''``."""
    if outdir is None or name not in (files or ()):
        return ""
    path = (Path(outdir) / name).as_posix().replace(" ", "%20")
    return f"[{fmt.markdown_cell(name)}]({path})"


def _verdict(summary: Any) -> str:
    """One sentence: how the GPU time splits over bounds and what limits the largest kernel."""
    shares = summary.groupby("bound", observed=True)["time_share"].sum()
    split = ", ".join(
        f"{fmt.pct(v, 0)} {b}-bound" for b, v in shares.sort_values(ascending=False).items() if v
    )
    if not len(summary):
        return "No kernel launch was analyzed."
    top = summary.iloc[0]
    what = verdict_text(top.get("diagnosis", ""), top.get("limiter", "")) or f"{top['bound']} bound"
    return (
        f"GPU time: {split or 'n/a'} (top {fmt.count(len(summary), 'kernel')}). Largest:"
        f" {fmt.markdown_cell(top['kernel_label'])}, {fmt.pct(top['time_share'], 1)} of the"
        f" time, {fmt.markdown_cell(what)} at {fmt.pct(top['roof_fraction'], 1)} of its roof."
    )


#: The columns of the Markdown and notebook tables (``>``: a number, right-aligned), from
#: :func:`ncuroof.render.page.summary_cells` and :func:`ncuroof.render.compare.compare_cells`.
_SUMMARY = (
    "kernel",
    "launches>",
    "time>",
    "share>",
    "precision",
    "diagnosis",
    "% of roof>",
    "saving>",
)
_COMPARE = ("kernel", "status", "time before>", "time after>", "speedup>", "change")


def _rows(frame: Any, cells: Any, header: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """The header and the text cells of ``frame``'s rows (``cells(row)`` by header)."""
    names = [h.rstrip(">") for h in header]
    each = (cells(r) for r in frame.itertuples(index=False))
    return list(header), [[c[n] for n in names] for c in each]


def analysis_rows(summary: Any) -> tuple[list[str], list[list[str]]]:
    """Header and text cells of the top kernels, unescaped: the Markdown summary and the
    notebook view escape them each for their own format."""
    return _rows(summary, summary_cells, _SUMMARY)


def compare_rows(table: Any) -> tuple[list[str], list[list[str]]]:
    """Header and text cells of the largest changes of a comparison (:func:`analysis_rows`)."""
    return _rows(table, compare_cells, _COMPARE)


def analysis_markdown(result: Any, title: str = "") -> str:
    """The Markdown summary of an analysis.

    Parameters
    ----------
    result : ncuroof.api.AnalysisResult
        Its ``summary`` (:data:`ncuroof.schema.KERNEL_SUMMARY` columns: ``kernel_label``,
        ``launches``, ``time_s`` [s], ``time_share``, ``precision``, ``bound``, ``diagnosis``,
        ``roof_fraction``, ``saving_share``), ``outdir`` and ``files``.
    title : str, optional
        What was analyzed (the report's name).

    Returns
    -------
    str
        :data:`MARKER`, a heading, the verdict, a table of the top kernels and a link to the page.
    """
    s = result.summary.head(TOP)
    header, rows = analysis_rows(s)
    page = _link(result.outdir, result.files, "roofline.html")
    return "\n".join(
        [
            MARKER,
            f"## ncuroof roofline{': ' + fmt.markdown_cell(title) if title else ''}",
            "",
            _verdict(s),
            "",
            *_table(header, [[fmt.markdown_cell(c) for c in r] for r in rows]),
            "",
            *([f"Page: {page}", ""] if page else []),
        ]
    )


def _gate_line(gate: Any) -> str:
    """The gate's verdict in words, with its threshold and why."""
    if gate is None:
        return "Gate: not asked for (`--fail-if-slower PCT`)."
    word = {"pass": "passed", "fail": "**failed**", "unknown": "**cannot judge**"}[gate.verdict]
    why = [*gate.failures, *gate.unknown]
    return f"Gate: {word} at --fail-if-slower {gate.threshold_pct:g}" + (
        "".join(f"\n- {fmt.markdown_cell(w)}" for w in why) if why else "."
    )


def compare_markdown(result: Any, top: int = TOP) -> str:
    """The Markdown summary of a comparison of two runs.

    Parameters
    ----------
    result : ncuroof.api.CompareResult
        Its ``totals`` (the headline), ``table`` (:data:`ncuroof.schema.COMPARE`: ``kernel_label``,
        ``status``, ``time_s_before``/``_after`` [s], ``speedup``, ``change``), ``gate``,
        ``outdir`` and ``files``.
    top : int, default TOP
        Kernels in the table (largest changes first).

    Returns
    -------
    str
        :data:`MARKER`, a heading, the headline, the gate, a table and a link to the page.
    """
    from ..runs.compare import headline

    header, rows = compare_rows(result.table.head(top))
    page = _link(result.outdir, result.files, "compare.html")
    return "\n".join(
        [
            MARKER,
            "## ncuroof compare",
            "",
            fmt.markdown_cell(headline(result.totals)) + ".",
            "",
            _gate_line(result.gate),
            "",
            *_table(header, [[fmt.markdown_cell(c) for c in r] for r in rows]),
            "",
            *([f"Page: {page}", ""] if page else []),
        ]
    )


def write_markdown(text: str, path: Path | str) -> Path:
    """Write a Markdown summary to ``path``, whole or not at all.

    GitHub's step summary (``path`` is ``$GITHUB_STEP_SUMMARY``) is appended to, as every step of
    a job adds to it. Any other file is replaced through a temporary file in its folder, and only
    when it is new or begins with :data:`MARKER` (a summary ncuroof wrote): a file of someone
    else's is never written over.

    Raises
    ------
    OutputError
        If ``path`` is a folder, or a file that ncuroof did not write, or cannot be written.
    """
    path = Path(path)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    try:
        if step and path.resolve() == Path(step).resolve():
            with path.open("a", encoding="utf-8") as f:
                f.write(text + "\n")
            return path
        if path.is_dir() or (path.exists() and not _ours(path)):
            what = "is a folder" if path.is_dir() else "exists and was not written by ncuroof"
            raise OutputError(f"{path}: {what}; give --markdown a new file name")
        fd, tmp = tempfile.mkstemp(prefix=".ncuroof-", suffix=".md", dir=path.parent or ".")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the Markdown summary ({exc.strerror})") from None
    return path


def _ours(path: Path) -> bool:
    """Whether a regular file begins with :data:`MARKER` (its first bytes only)."""
    if not path.is_file():
        return False
    with path.open("rb") as f:
        return f.read(len(MARKER)) == MARKER.encode()
