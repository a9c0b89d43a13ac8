"""``ncuroof compare``: two runs (or more, in order), kernels matched, the dots' moves, the CI
gate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..render.page import PLOTLYJS
from ..views.options import FAIL_IF_SLOWER, TOP
from .common import JSON_HELP, echo, show, stdout_to_stderr, terminal_options
from .options import (
    analysis_options,
    analysis_values,
    click_option,
    formats_option,
    plotlyjs_option,
)

if TYPE_CHECKING:
    from ..api import CompareResult

__all__ = ["compare_cmd"]


def _pair(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> list[tuple[str, str]]:
    """``--pair OLD=NEW`` (repeatable) as ``[(OLD, NEW)]``."""
    out = []
    for v in values:
        old, sep, new = v.partition("=")
        if not sep or not old or not new:
            raise click.BadParameter(
                f"{v!r} is not OLD=NEW (a kernel of each run: name, demangled name or"
                " regex:PATTERN)",
                ctx=ctx,
                param=param,
            )
        out.append((old, new))
    return out


_GATE_EPILOG = """\b
Exit codes: 0 the comparison was written (and the gate, if set, passed);
1 the gate failed (a matched kernel, or the matched kernels' total, slower
by more than PCT %; a kernel in one run only with --fail-on-new/--fail-on-gone;
an unpaired kernel whose likely partner is slower, unless --allow-unmatched);
2 bad input, or the gate cannot judge (a run without kernels, no kernel in
both runs, a matched kernel with a duration in one run only, no matched
kernel with durations in both: unknown is not fast).
"""


@click.command(name="compare", epilog=_GATE_EPILOG)
@click.argument(
    "runs",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
    metavar="BEFORE AFTER [RUN]...",
)
@click.option(
    "-o",
    "--outdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help=(
        "Output directory (default: <after stem>.compare/ next to AFTER; <last stem>.trail/ for"
        " more runs)."
    ),
)
@analysis_options
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse (exit 2) when the runs differ in GPU, ncu version, clocks or metric set.",
)
@click_option(FAIL_IF_SLOWER)
@click.option(
    "--fail-on-new", is_flag=True, help="With --fail-if-slower: also fail on kernels only in AFTER."
)
@click.option(
    "--fail-on-gone",
    is_flag=True,
    help="With --fail-if-slower: also fail on kernels only in BEFORE.",
)
@click.option(
    "--allow-unmatched",
    is_flag=True,
    help=(
        "With --fail-if-slower: do not fail on an unpaired kernel whose likely partner in the other"
        " run is slower (it is still listed)."
    ),
)
@click.option(
    "--pair",
    "pairs",
    multiple=True,
    callback=_pair,
    metavar="OLD=NEW",
    help=(
        "Pair a renamed kernel by hand (repeatable): each side a kernel_name, demangled name or"
        " regex:PATTERN naming one kernel of its run. Paired kernels are matched in every table and"
        " in the gate."
    ),
)
@click.option(
    "--pair-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help='TOML file of pairs: [[pair]] tables with before = "OLD" and after = "NEW".',
)
@formats_option(
    "Formats of the compare table: compare.csv and/or compare.parquet (schema dtypes and units)."
)
@plotlyjs_option("compare.html")
@click_option(TOP)
@terminal_options
@click.option("-q", "--quiet", is_flag=True, help="No summary table.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP.format(kind="compare"))
def compare_cmd(
    runs: tuple[Path, ...],
    outdir: Path | None,
    strict: bool,
    fail_if_slower_pct: float | None,
    fail_on_new: bool,
    fail_on_gone: bool,
    allow_unmatched: bool,
    pairs: list[tuple[str, str]],
    pair_file: Path | None,
    formats: tuple[str, ...],
    plotlyjs: str,
    top: int,
    quiet: bool,
    as_json: bool = False,
    **kw: object,
) -> None:
    """Compare two runs (reports, CSV exports or analyze output directories): did the dot move,
    did the work change?

    Both runs are analyzed with the same options; kernels are matched by --match (and --pair).
    Writes compare.csv (one row per kernel of either run: speedup, work per precision and
    traffic per level before and after, what changed, AI and roof fraction at one named level,
    bound, movement) and compare.html (both runs' roofs on one log-log roofline, an arrow per
    kernel from before to after). The headline speedup is over matched kernels, beside both
    runs' totals.

    Three or more runs (or one directory of runs, in name order) give each kernel's trail
    through them: trail.csv (one row per kernel and run: time, speedups, work, AI and roof
    fraction at one level) and trail.html (one roofline, each kernel's trail numbered by run).
    """
    from .. import api

    runs = _runs_to_compare(runs)
    _check_gate_options(fail_if_slower_pct, fail_on_new, fail_on_gone, allow_unmatched)
    if len(runs) == 2 and all(api.is_trace(r) for r in runs):
        gate = (fail_if_slower_pct, fail_on_new, fail_on_gone)
        _compare_traces(runs, outdir, gate, formats, top, quiet, kw)
        return
    if len(runs) > 2:
        two_only = strict or fail_if_slower_pct is not None or as_json
        _compare_series(runs, outdir, two_only, pairs, pair_file, formats, plotlyjs, top, quiet, kw)
        return
    before, after = runs
    with stdout_to_stderr(as_json):
        result = api.compare_runs(
            before,
            after,
            outdir=outdir,
            write=True,
            options=analysis_values(kw),
            strict=strict,
            progress=not quiet,
            plotlyjs=PLOTLYJS[plotlyjs],
            pairs=pairs,
            pair_file=pair_file,
            fail_if_slower=fail_if_slower_pct,
            fail_on_new=fail_on_new,
            fail_on_gone=fail_on_gone,
            allow_unmatched=allow_unmatched,
            formats=formats,
        )
    _print_comparison(result, before, after, fail_if_slower_pct, as_json, top, quiet)


def _compare_traces(
    runs: tuple[Path, ...],
    outdir: Path | None,
    gate: tuple[float | None, bool, bool],
    formats: tuple[str, ...],
    top: int,
    quiet: bool,
    kw: dict[str, object],
) -> None:
    """Two PyTorch traces (issue 52): operators matched by name and shapes, the headline and the
    largest changes, the gate's verdict and exit code."""
    from .. import api
    from ..render import text

    pct, on_new, on_gone = gate
    result = api.compare_traces(
        runs[0],
        runs[1],
        outdir,
        gpu=kw.get("gpu"),  # type: ignore[arg-type]
        device=kw.get("device"),  # type: ignore[arg-type]
        fail_if_slower=pct,
        fail_on_new=on_new,
        fail_on_gone=on_gone,
        write=True,
        formats=formats,
    )
    if not quiet:
        echo(text.trace_compare_text(result.table, result.totals, top, text.terminal_width()))
    echo(f"wrote {result.outdir}/ ({', '.join(result.files)})")
    if result.gate is not None:
        echo(text.gate_text(result.gate, text.terminal_width()), err=True, nl=False)
        if result.gate.exit_code:
            sys.exit(result.gate.exit_code)


def _runs_to_compare(runs: tuple[Path, ...]) -> tuple[Path, ...]:
    """The runs of ``compare``: those given, or the runs in one directory that is
    no analyze output."""
    from .. import api
    from ..parser.saved import saved_launches

    if len(runs) == 1 and runs[0].is_dir() and saved_launches(runs[0]) is None:
        runs = tuple(api.runs_in(runs[0]))
    if len(runs) < 2:
        raise click.UsageError(
            "compare needs BEFORE AFTER, more runs in order, or a directory of runs"
        )
    return runs


def _check_gate_options(
    fail_if_slower_pct: float | None, fail_on_new: bool, fail_on_gone: bool, allow_unmatched: bool
) -> None:
    """Refuse the options that shape the gate without the gate (``--fail-if-slower``)."""
    if fail_if_slower_pct is None and (fail_on_new or fail_on_gone or allow_unmatched):
        raise click.UsageError(
            "--fail-on-new, --fail-on-gone and --allow-unmatched shape the gate: add"
            " --fail-if-slower P"
        )


def _print_comparison(
    result: "CompareResult",  # noqa: F821, UP037 - imported lazily
    before: Path,
    after: Path,
    fail_if_slower_pct: float | None,
    as_json: bool,
    top: int,
    quiet: bool,
) -> None:
    """Warnings on stderr, the JSON document or the summary, then the gate's
    verdict and exit code."""
    from ..render import text

    for w in result.warnings:
        echo(f"warning: {w}", err=True, one_line=True)
    if as_json:
        from ..render import json_doc

        click.echo(
            json_doc.dumps(
                json_doc.compare_document(result, [before], [after], fail_if_slower_pct)
            ),
            nl=False,
        )
    else:
        from ..render import markdown as md

        show(
            lambda width, color: text.compare_text(result, top, quiet, width, color),
            lambda: md.compare_markdown(result, top),
            result.outdir / "compare.html" if result.outdir is not None else None,
        )
    if result.gate is not None:
        echo(text.gate_text(result.gate, text.terminal_width()), err=True, nl=False)
        if result.gate.exit_code:
            sys.exit(result.gate.exit_code)


def _compare_series(
    runs: tuple[Path, ...],
    outdir: Path | None,
    two_only: bool,
    pairs: list[tuple[str, str]],
    pair_file: Path | None,
    formats: tuple[str, ...],
    plotlyjs: str,
    top: int,
    quiet: bool,
    kw: dict[str, object],
) -> None:
    """``compare`` of three or more runs: each kernel's trail
    (:func:`ncuroof.api.compare_series`)."""
    from .. import api
    from ..render import text

    if two_only:
        raise click.UsageError(
            "--fail-if-slower, --strict and --json compare two runs; pass BEFORE AFTER"
        )
    series = api.compare_series(
        list(runs),
        outdir=outdir,
        write=True,
        options=analysis_values(kw),
        progress=not quiet,
        plotlyjs=PLOTLYJS[plotlyjs],
        pairs=pairs,
        pair_file=pair_file,
        formats=formats,
    )
    for w in series.warnings:
        echo(f"warning: {w}", err=True, one_line=True)
    echo(text.series_text(series, top, quiet), nl=False)
