"""The terminal renderer: what ``ncuroof analyze``, ``profile`` and ``compare`` print.

The CLI parses options, calls :mod:`ncuroof.api` and prints what these functions return; the
words and numbers live here, formatted by :mod:`ncuroof.fmt`.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from .. import fmt
from . import provenance
from .compare import compare_cells
from .page import console_text, hidden_line, name_width, summary_text

__all__ = [
    "analysis_text",
    "compare_text",
    "gate_text",
    "series_text",
    "profile_text",
    "terminal_width",
    "use_color",
]

#: Columns assumed when the output is not a terminal and ``COLUMNS`` is not set (a log, a pipe).
DEFAULT_WIDTH = 120
#: Narrowest layout drawn: below it tables are drawn this wide (and wrap in the terminal).
MIN_WIDTH = 60


def terminal_width() -> int:
    """Columns to lay text out in: ``COLUMNS`` when set, else the terminal's width when stdout is
    one, else :data:`DEFAULT_WIDTH`; never below :data:`MIN_WIDTH`."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def use_color(choice: bool | None) -> bool:
    """Whether to print ANSI colours: ``--color`` (True) or ``--no-color`` (False) when given,
    else only on a terminal and when ``NO_COLOR`` is unset or empty (no-color.org)."""
    if choice is not None:
        return choice
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def _lines(lines: list[str], width: int) -> list[str]:
    """Each line made printable and wrapped to ``width`` (:func:`ncuroof.fmt.wrap`)."""
    return [fmt.wrap(fmt.printable(line, layout=False), width) for line in lines]


def _findings(result: Any) -> list[str]:
    """Advice and flags of the top kernels, the what-if projection, roofs,
    caveats, failed launches."""
    k = result.launches
    ipts = getattr(result, "instruction_points", None)
    evidence = provenance.evidence_note(k, ipts is not None and len(ipts) > 0)
    lead, tail = result.view_lines
    lines = list(lead)
    for r in result.summary.head(3).itertuples(index=False):
        if r.advice:
            lines.append(f"{r.kernel_label}: {r.evidence}. Try: {r.advice}")
        if r.speed_of_light_note:
            lines.append(f"{r.kernel_label}: {r.speed_of_light_note}")
        # the flags' sentences, not their codes (issue 50; codes stay in --json and the tables);
        # missing metrics are said once, by the note, in the report's own terms
        flags = "; ".join(t for c, t in r.flags if not (evidence and c == "missing_metrics"))
        if flags:
            lines.append(f"{r.kernel_label}: check: {flags}")
    lines += tail
    lines.append(f"roofs: {provenance.roof_sources(k)}")
    lines.append(f"read by: {provenance.readers(k)}")
    limits = provenance.csv_limits(k, result.analysis.inputs)
    if limits:
        lines.append(f"note: {limits}")
    failed = k[k["status"] == "failed_measurement"]
    lines += [
        f"launch {r.launch_id} ({r.kernel_name}): measurement failed in ncu; kept in launches.csv,"
        " not plotted"
        for r in failed.itertuples(index=False)
    ]
    lines += [
        f"launch {r.launch_id} ({r.kernel_name}): damaged record in the input, see its notes in"
        " launches.csv; not plotted"
        for r in k[k["status"] == "corrupt_record"].head(5).itertuples(index=False)
    ]
    if evidence:
        lines.append(f"{evidence} See launches.csv 'notes' for what each launch lacks.")
    return lines


def analysis_text(
    result: Any, quiet: bool = False, width: int = DEFAULT_WIDTH, color: bool = False
) -> str:
    """What ``analyze`` and ``profile`` print after the analysis.

    Parameters
    ----------
    result : ncuroof.api.AnalysisResult
        The analysis and the files written.
    quiet : bool, default False
        Only the line saying where the output went.
    width : int, default DEFAULT_WIDTH
        Columns (:func:`terminal_width`): the table fits, the other lines wrap.
    color : bool, default False
        ANSI colours in the table (:func:`use_color`).

    Returns
    -------
    str
        Lines ending in a newline, every control character from an input made visible
        (:func:`ncuroof.fmt.printable`): the summary table, advice and flags of the top kernels,
        the roof sources, caveats, then ``wrote DIR/ (files)``.
    """
    out = [] if quiet else [summary_text(result.summary, width, color).rstrip("\n")]
    out += _lines([] if quiet else _findings(result), width)
    if result.outdir is not None:
        out += _lines([f"wrote {result.outdir}/ ({', '.join(result.files)})"], width)
    return "".join(line + "\n" for line in out)


#: The terminal style of a comparison's status.
_STATUS_STYLES = {"slower": "red", "faster": "green", "only_before": "dim", "only_after": "dim"}


#: The comparison table's columns and the narrowest terminal that shows each (compare.csv and
#: the page have them all).
_COMPARE_COLUMNS = (
    ("kernel", 0),
    ("status", 0),
    ("time before", 100),
    ("time after", 100),
    ("speedup", 0),
    ("change", 0),
    ("level", 120),
    ("movement", 0),
)


def _compare_table(result: Any, top: int, width: int = DEFAULT_WIDTH, color: bool = False) -> str:
    from rich.table import Table
    from rich.text import Text

    from ..runs.compare import headline

    # the headline's parts a line each (``speedup ... ;`` / ``whole runs: ...``), wrapped
    title = "\n".join(
        _lines((headline(result.totals) + "; largest changes first").split("; "), width)
    )
    table = Table(title=title)
    cols = [c for c, narrowest in _COMPARE_COLUMNS if width >= narrowest]
    hidden = [c for c, narrowest in _COMPARE_COLUMNS if width < narrowest]
    for col in cols:
        table.add_column(col, no_wrap=col in ("kernel", "status"))
    head = result.table.head(top)
    names = fmt.shorten_names(
        [fmt.printable(x, layout=False) for x in head["kernel_label"]], name_width(width, 54)
    )
    for name, r in zip(names, head.itertuples(index=False)):
        if r.match not in ("name", "only_before", "only_after"):
            after = fmt.shorten_names([fmt.printable(r.kernel_name_after, layout=False)], 24)[0]
            name = Text(f"{name}\n(-> {after}, {r.match})")
        cells: dict[str, Any] = compare_cells(r)
        cells["kernel"] = name
        cells["status"] = Text(cells["status"], style=_STATUS_STYLES.get(cells["status"], ""))
        table.add_row(*(cells[c] for c in cols))
    return console_text(table, width, color) + hidden_line(hidden, width, "compare.csv")


def compare_text(
    result: Any, top: int = 10, quiet: bool = False, width: int = DEFAULT_WIDTH, color: bool = False
) -> str:
    """What ``compare`` prints: the largest changes under the headline (speedup over matched
    kernels, both runs' totals), the after run's share of time per bound, the output.

    Parameters
    ----------
    result : ncuroof.api.CompareResult
        The comparison.
    top : int, default 10
        Kernels in the table.
    quiet : bool, default False
        Only the line saying where the output went.
    width : int, default DEFAULT_WIDTH
        Columns (:func:`terminal_width`).
    color : bool, default False
        ANSI colours in the table (:func:`use_color`).

    Returns
    -------
    str
        Lines ending in a newline, control characters from inputs made visible.
    """
    out = ""
    if not quiet:
        tot = result.totals
        out += _compare_table(result, top, width, color)
        shares = ", ".join(
            f"{b} {fmt.pct(tot[f'share_{b}'], 1)}"
            for b in ("memory", "compute", "latency", "unknown")
        )
        out += "".join(
            f"{line}\n" for line in _lines([f"after, share of GPU time: {shares}"], width)
        )
    if result.outdir is not None:
        out += _lines([f"wrote {result.outdir}/ ({', '.join(result.files)})"], width)[0] + "\n"
    return out


def explain_text(doc: dict[str, Any], width: int = DEFAULT_WIDTH, most: int = 5) -> str:
    """One kernel explained (:func:`ncuroof.render.json_doc.explain_document`): its time and share,
    the binding dot against its roof, the verdict with evidence and advice, the speed of light,
    then up to ``most`` launches, longest first, with their verdicts, notes and flags."""
    k = doc["kernel"]
    p = fmt.printable
    lines = [
        f"{p(k['kernel_label'])}: {fmt.count(int(k['launches']), 'launch')},"
        f" {fmt.time(k['time_s'])} ({fmt.pct(k['time_share'])} of the time) on"
        f" {p(k.get('device_name') or '?')}",
        f"  {k['bound']}-bound at {str(k.get('level') or '?').upper()} in"
        f" {p(k.get('precision') or '?')}: AI {fmt.g(k.get('ai_flop_per_byte'))} FLOP/B against a"
        f" ridge of {fmt.g(k.get('ridge_flop_per_byte'))}, {fmt.si(k.get('flop_per_s'), 'FLOP/s')}"
        f" = {fmt.pct(k.get('roof_fraction'))} of the roof; at the roof"
        f" {fmt.time(k.get('time_at_roof_s'))}, saving {fmt.time(k.get('saving_s'))}",
        f"  diagnosis: {p(k.get('diagnosis') or '')}",
    ]
    for label in ("evidence", "advice"):
        if k.get(label):
            lines.append(f"  {label}: {p(k[label])}")
    if k.get("speed_of_light_note"):  # "speed of light: ..."
        lines.append(f"  {p(k['speed_of_light_note'])}")
    for flag in k.get("flags") or []:
        lines.append(f"  flag: {p(flag)}")
    launches = sorted(doc["launches"], key=lambda r: -(r.get("time_s") or 0.0))
    for r in launches[:most]:
        lines.append(
            f"  launch {r['launch_id']}: {fmt.time(r.get('time_s'))}, {r.get('bound')}, "
            f"{fmt.pct(r.get('roof_fraction'))} of the roof"
        )
        for note in (r.get("notes") or [])[:3]:
            lines.append(f"    {p(note)}")
    if len(launches) > most:
        lines.append(f"  ... {len(launches) - most} more launches (--json lists every one)")
    return "".join(fmt.wrap(line, width, "      ") + "\n" for line in lines)


def trace_compare_text(
    table: Any, totals: dict[str, float], top: int = 10, width: int = DEFAULT_WIDTH
) -> str:
    """Two traces compared (:func:`ncuroof.runs.trace_compare.join_operators`): the headline, then
    the operators whose time changed most, one line each."""
    from ..runs.compare import headline

    lines = [headline(totals).replace("kernel", "operator")]
    moved = table.assign(change=table["time_delta_s"].abs()).sort_values(
        "change", ascending=False, kind="stable"
    )
    for r in moved.head(top).itertuples(index=False):
        name = fmt.printable(r.kernel_label, layout=False)
        if r.status == "matched":
            what = (
                f"{fmt.time(r.time_s_before)} -> {fmt.time(r.time_s_after)} ({fmt.g(r.speedup)}x)"
            )
        else:
            side = "before" if r.status == "only_before" else "after"
            what = f"{side} only, {fmt.time(getattr(r, f'time_s_{side}'))}"
        lines.append(f"  {name}: {what}")
    return "".join(fmt.wrap(line, width, "      ") + "\n" for line in lines)


def gate_text(gate: Any, width: int = DEFAULT_WIDTH) -> str:
    """What the CI gate prints on stderr: its notes, failures and what it could not
    judge, then the verdict.

    Parameters
    ----------
    gate : ncuroof.runs.compare.Gate
    width : int, default DEFAULT_WIDTH
        Columns the lines wrap at (:func:`terminal_width`).

    Returns
    -------
    str
        Lines ending in a newline; the last says ``ncuroof: gate passed``, ``failed`` (with the
        count) or ``cannot judge``.
    """
    lines = [*gate.notes, *gate.failures, *gate.unknown]
    if gate.verdict == "fail":
        lines.append(
            f"ncuroof: gate failed: {fmt.count(len(gate.failures), 'finding')} at --fail-if-slower"
            f" {gate.threshold_pct:g} ({gate.headline})"
        )
    elif gate.verdict == "unknown":
        lines.append(
            f"ncuroof: error: the gate cannot judge ({fmt.count(len(gate.unknown), 'line')} above):"
            " unknown is not fast"
        )
    else:
        lines.append(
            f"ncuroof: gate passed at --fail-if-slower {gate.threshold_pct:g} ({gate.headline})"
        )
    return "".join(line + "\n" for line in _lines(lines, width))


def series_text(result: Any, top: int = 10, quiet: bool = False) -> str:
    """What ``compare`` prints for several runs: each kernel's time through the runs
    (longest last time first).

    Parameters
    ----------
    result : ncuroof.api.SeriesResult
    top : int, default 10
        Kernels listed.
    quiet : bool, default False
        Only the line saying where the output went.

    Returns
    -------
    str
        ``name: 1.2 ms -> - -> 0.8 ms (1.50x its first)`` lines (``-``: not in that run), then
        ``wrote DIR/ (files)``.
    """
    out = []
    if not quiet:
        t = result.table
        n = len(result.names)
        out.append(
            f"{n} runs: " + " -> ".join(f"{i + 1}. {name}" for i, name in enumerate(result.names))
        )
        last = t.groupby("trail")["time_s"].last().sort_values(ascending=False, na_position="last")
        for tid in last.index[:top]:
            rows = t[t["trail"] == tid].set_index("run")
            times = [fmt.time(rows.at[i, "time_s"]) if i in rows.index else "-" for i in range(n)]
            sp = rows["speedup_vs_first"].iat[-1]
            out.append(
                f"{rows['kernel_label'].iat[-1]}: {' -> '.join(times)}"
                + (f" ({sp:.2f}x its first)" if len(rows) > 1 and sp == sp else "")
            )
    if result.outdir is not None:
        out.append(f"wrote {result.outdir}/ ({', '.join(result.files)})")
    return "".join(line + "\n" for line in out)


def profile_text(res: Any) -> str:
    """The line ``profile`` prints when ncu is done: the report, ncu's version, launches and passes.

    Parameters
    ----------
    res : ncuroof.collector.ncu.ProfileResult
        From :func:`ncuroof.api.profile_run`.

    Returns
    -------
    str
        One line (two with an explicit metric list: the metrics collected), no final newline.
    """
    passes = sorted(set(res.passes.values()))
    metrics = (
        f"explicit metric list ({len(res.metrics)}): {','.join(res.metrics)}\n"
        if res.metrics
        else ""
    )
    return metrics + (
        f"report: {res.report} (ncu {res.ncu_version};"
        f" {fmt.count(len(res.passes), 'kernel launch', 'kernel launches')} profiled"
        + (f", {'/'.join(map(str, passes))} replay passes each" if passes else "")
        + ")"
    )


def doctor_text(checks: list[Any]) -> str:
    """What ``doctor`` prints: a line per check (``ok``, ``FAIL`` or ``?``), then its fix
    when it did not pass.

    Parameters
    ----------
    checks : list of ncuroof.collector.ncu.Check
        From :func:`ncuroof.collector.ncu.doctor`.

    Returns
    -------
    str
        The lines, each ending in a newline.
    """
    out = []
    for c in checks:
        mark = {True: "ok  ", False: "FAIL", None: "?   "}[c.ok]
        out.append(f"{mark} {c.name}: {c.detail}")
        if c.fix and c.ok is not True:
            out.append(f"     fix: {c.fix}")
    return "".join(line + "\n" for line in out)
