"""The ``ncuroof`` command line: a thin click layer over :mod:`ncuroof.api`.

Every user error is printed as one line on stderr and exits with code 2; no traceback. A defect
exits with :data:`INTERNAL_ERROR` (3), never with 1, the code of a failed compare gate.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from . import __version__, fmt, products
from .collector.ncu import collectable
from .errors import NcuNotFoundError, NcuroofError
from .model.analysis import OPTION_BOUNDS, TRAFFIC_CHOICES, AnalysisOptions
from .model.ceilings import FLOP_ROOFS, parse_peak
from .model.phases import BY_OPERATOR, parse_group_by
from .model.summary import KEY_CHOICES
from .parser import READERS
from .parser.tables_io import FORMATS, use_returning_pool
from .render.page import IMAGE_FORMATS, PLOTLYJS
from .runs.fleet import FLEET_MIN_INPUTS
from .schema import LEVELS

__all__ = ["main", "cli", "INTERNAL_ERROR"]

#: The exit code of an internal error (a defect): never 1, which says "the gate failed: slower".
INTERNAL_ERROR = 3
_EXIT_CODES = (
    "Exit codes: 0 done; 1 compare's gate failed (a kernel got slower; doctor: a check failed);"
    " 2 bad input or usage (one line on stderr naming the file and what to do), or a gate that"
    f" cannot judge; {INTERNAL_ERROR} internal error (a defect: please report it)."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXIT_CODES)
@click.version_option(__version__, prog_name="ncuroof")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
def cli(verbose: int) -> None:
    """Roofline analysis of NVIDIA Nsight Compute (ncu) profiles."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    for handler in logging.getLogger().handlers:
        handler.setFormatter(_PrintableFormatter("%(levelname)s %(name)s: %(message)s"))


class _PrintableFormatter(logging.Formatter):
    """Log records with their control characters visible (:func:`ncuroof.fmt.printable`)."""

    def format(self, record: logging.LogRecord) -> str:
        return fmt.printable(super().format(record))


def _echo(text: str, err: bool = False, nl: bool = True, one_line: bool = False) -> None:
    """Print through click with every control character made visible
    (:func:`ncuroof.fmt.printable`): text from inputs (names, paths, messages) never reaches the
    terminal raw. ``one_line`` escapes newlines and tabs too (an error or a warning is one line)."""
    click.echo(fmt.printable(text, layout=not one_line), err=err, nl=nl)


def _ranged(name: str, kind: type) -> click.ParamType:
    """The click range of an option from :data:`OPTION_BOUNDS` (declared once, with MCP's)."""
    low, high, open_low = OPTION_BOUNDS[name]
    if kind is int:
        return click.IntRange(int(low), None if high is None else int(high), min_open=open_low)
    return click.FloatRange(low, high, min_open=open_low)


def _terminal_options(f):  # noqa: ANN001, ANN202 - a click decorator
    """``--color/--no-color``, ``--open`` and ``--markdown FILE`` of the commands that print a
    summary (analyze, profile, compare), kept in the click context for :func:`_show`."""

    def keep(name: str):  # noqa: ANN202 - a click callback factory
        def callback(ctx: click.Context, param: click.Parameter, value: object) -> object:
            ctx.meta[f"ncuroof-{name}"] = value
            return value

        return callback

    f = click.option(
        "--markdown",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        expose_value=False,
        callback=keep("markdown"),
        help=(
            "Also write a Markdown summary (verdict, top kernels, gate, link to the page) to FILE,"
            ' for a pull-request comment; --markdown "$GITHUB_STEP_SUMMARY" appends to GitHub\'s'
            " job summary."
        ),
    )(f)
    f = click.option(
        "--open",
        "open_page",
        is_flag=True,
        expose_value=False,
        callback=keep("open"),
        help="Open the page in the default web browser once it is written.",
    )(f)
    return click.option(
        "--color/--no-color",
        default=None,
        expose_value=False,
        callback=keep("color"),
        help="Colours in the table (default: on a terminal, unless NO_COLOR is set).",
    )(f)


def _show(table_text: object, markdown: object, page: Path | None) -> None:
    """Print a summary through :func:`ncuroof.render.text` (laid out for this terminal, coloured
    as ``--color`` says), write ``--markdown`` and ``--open`` the page. ``table_text`` and
    ``markdown`` are ``(width, color) -> str`` and ``() -> str``."""
    from .render import markdown as md
    from .render import text

    meta = click.get_current_context().meta
    color = text.use_color(meta.get("ncuroof-color"))
    out = table_text(text.terminal_width(), color)  # type: ignore[operator]
    if color:  # made printable by the renderer, colours kept
        click.echo(out, nl=False, color=True)
    else:
        _echo(out, nl=False)
    if meta.get("ncuroof-markdown") is not None:
        written = md.write_markdown(markdown(), meta["ncuroof-markdown"])  # type: ignore[operator]
        _echo(f"wrote {written}", err=True)
    if meta.get("ncuroof-open") and page is not None and page.is_file():
        import webbrowser

        if not webbrowser.open(page.resolve().as_uri()):
            _echo(f"warning: no web browser to open {page}", err=True, one_line=True)


def _peaks(kind: str):  # noqa: ANN202 - click callback factory
    """A click callback turning repeated ``[NAME=]VALUE`` options into ``{name: SI value}``."""
    allowed, default = (FLOP_ROOFS, "*") if kind == "flops" else (LEVELS, "dram")

    def callback(
        ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
    ) -> dict[str, float]:
        out = {}
        for v in values:
            try:
                name, value = parse_peak(v, allowed, default)
            except ValueError as exc:
                raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc
            out[name] = value
        return out

    return callback


_MATCH_HELP = (
    "What one kernel is: kernel (the demangled name: template instantiations stay apart), config"
    " (also grid and block), nvtx (also the NVTX range path), launch (each launch apart; compare"
    " pairs the k-th launches)."
)


_JSON_HELP = (
    "Print one JSON document on stdout (ncuroof/schemas/{kind}.schema.json) instead of the summary;"
    " messages stay on stderr, the other outputs are still written."
)


_DEFAULT = AnalysisOptions()

#: How the inputs are read: the L1/L2 traffic definition, merged or stacked, the datasheet entry.
_READING_OPTIONS = [
    click.option(
        "--traffic",
        type=click.Choice(TRAFFIC_CHOICES),
        default=_DEFAULT.traffic,
        show_default=True,
        help=(
            "Traffic definition preferred for L1/L2: ncu's charts, or NERSC's"
            " lts__t_bytes/l1tex__t_bytes."
        ),
    ),
    click.option(
        "--stack",
        is_flag=True,
        help=(
            "Inputs are unrelated runs: stack them. Default: several inputs are files "
            "of one run, merged launch by launch."
        ),
    ),
    click.option(
        "--gpu",
        metavar="NAME",
        default=None,
        help=(
            "Datasheet entry for roofs the input lacks (e.g. a10g, v100-sxm2; see"
            " metrics/gpus.toml). Default: matched on the device name."
        ),
    ),
]

#: Roofs given by hand: peak and achievable compute and bandwidth.
_ROOF_OPTIONS = [
    click.option(
        "--peak-flops",
        "peak_flops",
        metavar="[PREC=]VALUE",
        multiple=True,
        callback=_peaks("flops"),
        help=(
            f"Compute roof in FLOP/s, e.g. 19.5T or fp64=9.7e12 (PREC: {', '.join(FLOP_ROOFS)};"
            " bare = all). Repeatable."
        ),
    ),
    click.option(
        "--peak-bandwidth",
        "peak_bandwidth",
        metavar="[LEVEL=]VALUE",
        multiple=True,
        callback=_peaks("bandwidth"),
        help=(
            f"Bandwidth roof in B/s, e.g. 900G or l2=3T (LEVEL: {', '.join(LEVELS)}; bare ="
            " dram). Repeatable."
        ),
    ),
    click.option(
        "--achievable-flops",
        "achievable_flops",
        metavar="[PREC=]VALUE",
        multiple=True,
        callback=_peaks("flops"),
        help=(
            "Achievable compute roof in FLOP/s (what a benchmark sustained), same syntax as"
            " --peak-flops: drawn and reported beside the peak roof, replacing"
            " metrics/gpus.toml's published measurements. Repeatable."
        ),
    ),
    click.option(
        "--achievable-bandwidth",
        "achievable_bandwidth",
        metavar="[LEVEL=]VALUE",
        multiple=True,
        callback=_peaks("bandwidth"),
        help=(
            "Achievable bandwidth roof in B/s (e.g. a STREAM copy), same syntax as"
            " --peak-bandwidth, beside the peak roof. Repeatable."
        ),
    ),
]

#: Which kernels: expected work, what one kernel is, the chart's focus.
_KERNEL_OPTIONS = [
    click.option(
        "--expect",
        "expect",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        metavar="FILE",
        help=(
            "TOML (or YAML) of expected FLOPs and DRAM bytes per kernel-name pattern, formulas"
            " of named sizes: useful vs measured intensity, and flags where the counted work"
            " differs."
        ),
    ),
    click.option(
        "--match",
        "match",
        type=click.Choice([*KEY_CHOICES, "name"]),
        default=_DEFAULT.match,
        show_default=True,
        help=_MATCH_HELP + " 'name' is the old spelling of 'kernel'.",
    ),
    click.option(
        "--focus",
        type=_ranged("focus", float),
        default=_DEFAULT.focus,
        show_default=True,
        help=(
            "The chart shows the fewest kernels making up this share of GPU time (the page can"
            " show the rest)."
        ),
    ),
]

#: Where the numbers come from: the .ncu-rep reader and the production timeline.
_SOURCE_OPTIONS = [
    click.option(
        "--reader",
        type=click.Choice(READERS),
        default=_DEFAULT.reader,
        show_default=True,
        help=(
            ".ncu-rep reader: ncuroof's own decoder (fast), NVIDIA's ncu_report module, or the"
            " decoder checked against ncu_report on a sample, with ncu_report for whatever it"
            " does not know or reads differently (auto)."
        ),
    ),
    click.option(
        "--timeline",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        metavar="TRACE",
        help=(
            "Production timeline of the run: a PyTorch profiler trace (.json, .json.gz) or an"
            " Nsight Systems export (.sqlite, .nsys-rep). Shares, focus, savings and the top"
            " kernels follow its kernel time; writes timeline.csv (production vs profiled time"
            " per kernel, kernels ncu did not profile)."
        ),
    ),
    click.option(
        "--device",
        type=_ranged("device", int),
        default=None,
        metavar="N",
        help=(
            "The timeline's CUDA device (default: the only one with kernels, else the report's"
            " GPU)."
        ),
    ),
]


def _apply(*groups: list):  # noqa: ANN202 - click decorator factory
    """A decorator applying the click options of ``groups`` in order (the first listed
    first in --help)."""

    def decorate(f):  # noqa: ANN001, ANN202 - click decorator
        for option in reversed([o for group in groups for o in group]):
            f = option(f)
        return f

    return decorate


def analysis_options(f):  # noqa: ANN001, ANN201 - click decorator
    """The options of :class:`ncuroof.model.analysis.AnalysisOptions`, shared by every
    command that analyzes."""
    return _apply(_READING_OPTIONS, _ROOF_OPTIONS, _KERNEL_OPTIONS, _SOURCE_OPTIONS)(f)


def _options(kw: dict) -> AnalysisOptions:
    """Pop the :func:`analysis_options` values out of a command's keyword arguments."""
    match = kw.pop("match")
    try:
        return AnalysisOptions(
            traffic=kw.pop("traffic"),
            stack=kw.pop("stack"),
            gpu=kw.pop("gpu"),
            peak_flops=kw.pop("peak_flops") or None,
            peak_bandwidth=kw.pop("peak_bandwidth") or None,
            achievable_flops=kw.pop("achievable_flops") or None,
            achievable_bandwidth=kw.pop("achievable_bandwidth") or None,
            expect=kw.pop("expect"),
            match="kernel" if match == "name" else match,
            focus=kw.pop("focus"),
            reader=kw.pop("reader"),
            timeline=kw.pop("timeline"),
            device=kw.pop("device"),
        )
    except ValueError as exc:  # a combination of options that click does not check alone
        raise click.UsageError(str(exc)) from exc


def _group_by(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check ``--group-by``: :data:`ncuroof.model.phases.BY_OPERATOR` or
    :func:`ncuroof.model.phases.parse_group_by`."""
    if value is not None and value != BY_OPERATOR:
        try:
            parse_group_by(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc
    return value


def _csv_choice(allowed: tuple[str, ...]):  # noqa: ANN202 - click callback factory
    """A click callback reading a comma-separated subset of ``allowed``."""

    def callback(
        ctx: click.Context, param: click.Parameter, value: str | None
    ) -> tuple[str, ...] | None:
        if value is None:
            return None
        items = tuple(v.strip().lower() for v in value.split(",") if v.strip())
        bad = [v for v in items if v not in allowed]
        if bad or not items:
            raise click.BadParameter(
                f"{','.join(bad) or value!r}: choose from {','.join(allowed)}", ctx=ctx, param=param
            )
        return items

    return callback


def _csv_metavar(allowed: tuple[str, ...]) -> str:
    """``csv[,parquet]``: how a :func:`_csv_choice` option is written."""
    return f"{allowed[0]}[,{','.join(allowed[1:])}]"


#: What ``profile --precisions`` and ``--levels`` can collect (``metrics/collect.toml``).
_COLLECTABLE = collectable()


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=True))
@click.option(
    "-o",
    "--outdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output directory (default: <input stem>.ncuroof/ next to the first input).",
)
@analysis_options
@click.option(
    "--plotlyjs",
    type=click.Choice(list(PLOTLYJS)),
    default="embed",
    show_default=True,
    help="Embed plotly.js in roofline.html (works offline) or link it from the CDN (smaller file).",
)
@click.option(
    "--top",
    type=_ranged("top", int),
    default=10,
    show_default=True,
    help="Kernels in the summary table.",
)
@click.option(
    "--image",
    type=click.Choice(IMAGE_FORMATS),
    default=None,
    help=(
        "Also write roofline.png/.svg through plotly's image export (needs kaleido and"
        " Chrome/Chromium)."
    ),
)
@click.option(
    "--what-if",
    "what_if",
    metavar="GPU",
    default=None,
    help=(
        "Project each kernel's FLOPs and DRAM bytes onto another GPU's datasheet roofs"
        " (metrics/gpus.toml): which kernels change bound, time at the roof there (whatif.csv)."
    ),
)
@click.option(
    "--roofs",
    is_flag=True,
    help=(
        "Also write roofs.csv: every roof of every launch (peak and achievable), its value, source"
        " (report, datasheet, measured, user), SM clock and confidence."
    ),
)
@click.option(
    "--format",
    "formats",
    callback=_csv_choice(FORMATS),
    default="csv",
    show_default=True,
    metavar=_csv_metavar(FORMATS),
    help=(
        "Table formats: kernels/points as CSV and/or Parquet (schema dtypes, units and inputs in"
        " its metadata)."
    ),
)
@click.option(
    "--scheduler",
    metavar="tcp://HOST:PORT",
    default=None,
    help=(
        "With --stack or --ranks: analyze each input as a task on this dask scheduler's workers"
        f" (they must see the inputs). Default: stacks of {FLEET_MIN_INPUTS} or more inputs run on"
        " a local dask cluster of this machine's cores."
    ),
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="Worker processes of the local dask cluster (default: the cores).",
)
@click.option(
    "--ranks/--no-ranks",
    "ranks",
    default=None,
    help=(
        "Inputs are one report per MPI rank of one run: merge them into each kernel's spread over"
        " ranks (ranks.csv, load-imbalance flag). Default: recognised from file names differing in"
        " one number and distinct processes."
    ),
)
@click.option(
    "--group-by",
    "group_by",
    metavar=f"nvtx[:DEPTH]|{BY_OPERATOR}",
    default=None,
    callback=_group_by,
    help=(
        "Also aggregate launches by NVTX range path (its first DEPTH ranges): phases.csv with"
        " time, FLOPs, bytes, AI, bound and time at the roof per phase; launches outside every"
        f" range are the phase 'no range'. {BY_OPERATOR}: one dot per PyTorch operator of the"
        " --timeline trace (ops.csv)."
    ),
)
@click.option(
    "--fp32-matmul",
    "fp32_matmul",
    type=click.Choice(["fp32", "tf32"]),
    default="fp32",
    show_default=True,
    help=(
        "A PyTorch trace with shapes (analyzed alone, or as --timeline): the roof of FP32"
        " matmul-class operators, FP32 or TF32 tensor cores (the trace does not say whether"
        " torch.backends.cuda.matmul.allow_tf32 was set; PyTorch's default is off)."
    ),
)
@_terminal_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP.format(kind="analyze"))
def analyze(
    inputs: tuple[Path, ...],
    outdir: Path | None,
    plotlyjs: str,
    top: int,
    image: str | None,
    what_if: str | None,
    formats: tuple[str, ...],
    scheduler: str | None,
    workers: int | None,
    ranks: bool | None,
    group_by: str | None,
    roofs: bool,
    quiet: bool,
    as_json: bool = False,
    fp32_matmul: str = "fp32",
    **kw: object,
) -> None:
    """Analyze ncu reports (.ncu-rep) or CSV exports: write kernels.csv,
    points.csv and roofline.html.

    Several INPUTS are files of one ncu run (e.g. a time/DRAM run and a FLOP run, or a raw export
    and its session page) and are merged launch by launch; pass --stack for unrelated runs. A
    stack of many reports is a fleet: each report is analyzed alone on dask, a report that fails
    is listed (stderr, failures.csv) without stopping the others, and the exit code is 0 when at
    least one report was analyzed (2 when none). With --ranks (one report per MPI rank) ranks.csv
    gives each kernel's spread over ranks.
    """
    from . import api

    if len(inputs) == 1 and api.is_trace(inputs[0]) and kw.get("timeline") is None:
        where = {"gpu": kw.get("gpu"), "device": kw.get("device")}  # --device: the trace's
        _analyze_trace(
            inputs[0], outdir, where, fp32_matmul, formats, PLOTLYJS[plotlyjs], quiet, as_json
        )
        return
    with _stdout_to_stderr(as_json):
        result = api.analyze(
            list(inputs),
            outdir=outdir,
            options=_options(kw),
            plotlyjs=PLOTLYJS[plotlyjs],
            top=top,
            progress=not quiet,
            image=image,
            what_if=what_if,
            formats=formats,
            scheduler=scheduler,
            ranks=ranks,
            workers=workers,
            group_by=group_by,
            roofs=roofs,
            fp32_matmul=fp32_matmul,
        )
    _print_analysis(result, as_json, quiet)


def _analyze_trace(
    path: Path,
    outdir: Path | None,
    where: dict[str, Any],
    fp32_matmul: str,
    formats: tuple[str, ...],
    plotlyjs: str | bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """``ncuroof analyze trace.json.gz``: a PyTorch trace alone, operators with analytic work
    (issue 41); the summary or the JSON document on stdout."""
    from . import api

    with _stdout_to_stderr(as_json):
        result = api.analyze_trace(
            path,
            outdir,
            gpu=where["gpu"],
            device=where["device"],
            fp32_matmul=fp32_matmul,
            formats=formats,
            plotlyjs=plotlyjs,
            progress=not quiet,
        )
    if as_json:
        from .render import json_doc

        click.echo(json_doc.dumps(json_doc.trace_document(result)), nl=False)
        return
    from .render import analytic, text

    width = text.terminal_width()
    head = "" if quiet else analytic.summary_text(result.operators, result.gpu.name, width=width)
    _echo(f"{head}wrote {result.outdir}/ ({', '.join(result.files)})")


def _print_analysis(
    result: "AnalysisResult",  # noqa: F821, UP037 - imported lazily
    as_json: bool,
    quiet: bool,
) -> None:
    """A fleet's failures and the timeline's warnings on stderr, then the JSON
    document or the summary."""
    for r in result.failures.itertuples(index=False) if result.failures is not None else ():
        _echo(f"ncuroof: error: {r.error}", err=True, one_line=True)
    _warn(result.analysis)
    if as_json:
        from .render import json_doc

        document = json_doc.analysis_document(
            result.analysis,
            result.outdir,
            list(result.files),
            result.failures,
            products.in_document(result.products),
        )
        click.echo(json_doc.dumps(document), nl=False)
        return
    _show_analysis(result, quiet)


def _show_analysis(result: "AnalysisResult", quiet: bool) -> None:  # noqa: F821, UP037
    """The summary of an analysis (:func:`_show`), its Markdown and its page."""
    from .render import markdown as md
    from .render import text

    page = result.outdir / "roofline.html" if result.outdir is not None else None
    title = ", ".join(p.name for p in result.analysis.inputs) if result.analysis.inputs else ""
    _show(
        lambda width, color: text.analysis_text(result, quiet, width, color),
        lambda: md.analysis_markdown(result, title),
        page,
    )


@contextlib.contextmanager
def _stdout_to_stderr(enabled: bool):  # noqa: ANN202 - a context manager
    """While analyzing for ``--json``: whatever anything prints to stdout (Python or a child
    process) goes to stderr."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no file descriptors to move (an embedding host): Python's own stdout only
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _warn(analysis: "Analysis") -> None:  # noqa: F821, UP037 - imported lazily
    """The production timeline's warnings (another GPU than the report's, ...) on stderr."""
    for w in analysis.production.warnings if analysis.production is not None else ():
        _echo(f"warning: {w}", err=True, one_line=True)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help=(
        "Report to write (default: <program> here). A name without .ncu-rep/.ncu-repz gets the"
        " suffix this ncu writes by default (.ncu-repz from ncu 2026.3)."
    ),
)
@click.option("--force", is_flag=True, help="Overwrite an existing report.")
@click.option(
    "--levels",
    callback=_csv_choice(_COLLECTABLE["level"]),
    default=None,
    metavar=_csv_metavar(_COLLECTABLE["level"]),
    help=(
        "Collect only these memory levels with an explicit metric list (fewer replay passes)"
        " instead of --set roofline."
    ),
)
@click.option(
    "--precisions",
    callback=_csv_choice(_COLLECTABLE["precision"]),
    default=None,
    metavar=_csv_metavar(_COLLECTABLE["precision"]),
    help="Collect only these precisions with an explicit metric list instead of --set roofline.",
)
@click.option(
    "--cc",
    metavar="MAJOR.MINOR",
    default=None,
    help="GPU compute capability for --levels/--precisions (default: nvidia-smi).",
)
@click.option(
    "-k", "--kernel-name", default=None, help="ncu --kernel-name: a name or regex:<expr>."
)
@click.option(
    "--kernel-name-base", type=click.Choice(["function", "demangled", "mangled"]), default=None
)
@click.option("--kernel-id", default=None, help="ncu --kernel-id context:stream:name:invocation.")
@click.option(
    "-s", "--launch-skip", type=_ranged("launch_skip", int), default=None, help="ncu --launch-skip."
)
@click.option(
    "-c",
    "--launch-count",
    type=_ranged("launch_count", int),
    default=None,
    help="ncu --launch-count.",
)
@click.option("--nvtx-include", multiple=True, help="ncu --nvtx-include (repeatable).")
@click.option("--nvtx-exclude", multiple=True, help="ncu --nvtx-exclude (repeatable).")
@click.option("--target-processes", type=click.Choice(["all", "application-only"]), default=None)
@click.option(
    "--replay-mode",
    type=click.Choice(["kernel", "application", "range", "app-range"]),
    default=None,
)
@click.option(
    "--clock-control",
    type=click.Choice(["base", "none", "reset", "boost", "force-boost"]),
    default=None,
    help=(
        "ncu --clock-control (ncu's default: base, clocks locked below boost; boost and force-boost"
        " from ncu 2026.1; ncuroof doctor prints what this ncu takes)."
    ),
)
@click.option(
    "--cache-control",
    type=click.Choice(["all", "none"]),
    default=None,
    help="ncu --cache-control (default all: flushed).",
)
@click.option(
    "--ncu",
    "ncu_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The ncu executable to use.",
)
@click.option(
    "--ncu-arg", "ncu_args", multiple=True, help="More ncu arguments, passed verbatim (repeatable)."
)
@click.option(
    "--outdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Analysis output directory (default: <report stem>.ncuroof/).",
)
@analysis_options
@click.option("--no-analyze", is_flag=True, help="Only collect the report.")
@_terminal_options
@click.option("-q", "--quiet", is_flag=True, help="No ncu progress and no summary table.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def profile(
    output: Path | None,
    ncu_path: Path | None,
    ncu_args: tuple[str, ...],
    outdir: Path | None,
    no_analyze: bool,
    quiet: bool,
    cmd: tuple[str, ...],
    **fields: object,
) -> None:
    """Run CMD under ncu with the roofline metrics, keep the report, then analyze it.

    Usage: ncuroof profile [OPTIONS] -- ./app args. The report is kept only when ncu and the
    program succeed; <report>.ncuroof.json records the ncu command, version, clock and cache
    control and the replay passes.
    """
    from . import api
    from .render import text

    # Only the separator goes: a "--" of the program's own arguments is passed on.
    cmd = cmd[1:] if cmd and cmd[0] == "--" else cmd
    options = _options(fields)
    echo = (lambda line: None) if quiet else (lambda line: _echo(line, err=True))
    res = api.profile_run(list(cmd), output, ncu=ncu_path, echo=echo, extra=ncu_args, **fields)
    _echo(text.profile_text(res))
    if no_analyze:
        return
    result = api.analyze([res.report], outdir=outdir, options=options, progress=not quiet)
    _warn(result.analysis)
    _show_analysis(result, quiet)


@cli.command()
def doctor() -> None:
    """Check this machine for profiling: ncu and its version, a visible GPU, counter permissions.

    Exit 0 when everything needed is there, 1 when a check failed, 2 when ncu is missing.
    """
    from .collector import ncu as collector
    from .render import text

    checks = collector.doctor()
    _echo(text.doctor_text(checks), nl=False)
    if any(c.name == "ncu" and c.ok is False for c in checks):
        raise NcuNotFoundError("ncu not found or unusable; see the fix above")
    if any(c.ok is False for c in checks):
        sys.exit(1)


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


@cli.command(name="compare", epilog=_GATE_EPILOG)
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
@click.option(
    "--fail-if-slower",
    "fail_pct",
    type=_ranged("fail_if_slower_pct", float),
    default=None,
    metavar="PCT",
    help=(
        "CI gate: exit 1 when a matched kernel's time (or the matched kernels' total) grew by more"
        " than PCT percent, listing each; kernels in one run only are listed with their time (see"
        " the exit codes below)."
    ),
)
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
@click.option(
    "--format",
    "formats",
    callback=_csv_choice(FORMATS),
    default="csv",
    show_default=True,
    metavar=_csv_metavar(FORMATS),
    help=(
        "Formats of the compare table: compare.csv and/or compare.parquet (schema dtypes and"
        " units)."
    ),
)
@click.option("--plotlyjs", type=click.Choice(list(PLOTLYJS)), default="embed", show_default=True)
@click.option(
    "--top", type=_ranged("top", int), default=10, show_default=True, help="Kernels in the summary."
)
@_terminal_options
@click.option("-q", "--quiet", is_flag=True, help="No summary table.")
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP.format(kind="compare"))
def compare_cmd(
    runs: tuple[Path, ...],
    outdir: Path | None,
    strict: bool,
    fail_pct: float | None,
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
    from . import api

    runs = _runs_to_compare(runs)
    _check_gate_options(fail_pct, fail_on_new, fail_on_gone, allow_unmatched)
    if len(runs) > 2:
        two_only = strict or fail_pct is not None or as_json
        _compare_series(runs, outdir, two_only, pairs, pair_file, formats, plotlyjs, top, quiet, kw)
        return
    before, after = runs
    with _stdout_to_stderr(as_json):
        result = api.compare_runs(
            before,
            after,
            outdir=outdir,
            options=_options(kw),
            strict=strict,
            progress=not quiet,
            plotlyjs=PLOTLYJS[plotlyjs],
            pairs=pairs,
            pair_file=pair_file,
            fail_if_slower=fail_pct,
            fail_on_new=fail_on_new,
            fail_on_gone=fail_on_gone,
            allow_unmatched=allow_unmatched,
            formats=formats,
        )
    _print_comparison(result, before, after, fail_pct, as_json, top, quiet)


def _runs_to_compare(runs: tuple[Path, ...]) -> tuple[Path, ...]:
    """The runs of ``compare``: those given, or the runs in one directory that is
    no analyze output."""
    from . import api

    if (
        len(runs) == 1
        and runs[0].is_dir()
        and not (runs[0] / "kernels.csv").exists()
        and not (runs[0] / "kernels.parquet").exists()
    ):
        runs = tuple(api.runs_in(runs[0]))
    if len(runs) < 2:
        raise click.UsageError(
            "compare needs BEFORE AFTER, more runs in order, or a directory of runs"
        )
    return runs


def _check_gate_options(
    fail_pct: float | None, fail_on_new: bool, fail_on_gone: bool, allow_unmatched: bool
) -> None:
    """Refuse the options that shape the gate without the gate (``--fail-if-slower``)."""
    if fail_pct is None and (fail_on_new or fail_on_gone or allow_unmatched):
        raise click.UsageError(
            "--fail-on-new, --fail-on-gone and --allow-unmatched shape the gate: add"
            " --fail-if-slower P"
        )


def _print_comparison(
    result: "CompareResult",  # noqa: F821, UP037 - imported lazily
    before: Path,
    after: Path,
    fail_pct: float | None,
    as_json: bool,
    top: int,
    quiet: bool,
) -> None:
    """Warnings on stderr, the JSON document or the summary, then the gate's
    verdict and exit code."""
    from .render import text

    for w in result.warnings:
        _echo(f"warning: {w}", err=True, one_line=True)
    if as_json:
        from .render import json_doc

        click.echo(
            json_doc.dumps(json_doc.compare_document(result, [before], [after], fail_pct)), nl=False
        )
    else:
        from .render import markdown as md

        _show(
            lambda width, color: text.compare_text(result, top, quiet, width, color),
            lambda: md.compare_markdown(result, top),
            result.outdir / "compare.html" if result.outdir is not None else None,
        )
    if result.gate is not None:
        _echo(text.gate_text(result.gate, text.terminal_width()), err=True, nl=False)
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
    from . import api
    from .render import text

    if two_only:
        raise click.UsageError(
            "--fail-if-slower, --strict and --json compare two runs; pass BEFORE AFTER"
        )
    series = api.compare_series(
        list(runs),
        outdir=outdir,
        options=_options(kw),
        progress=not quiet,
        plotlyjs=PLOTLYJS[plotlyjs],
        pairs=pairs,
        pair_file=pair_file,
        formats=formats,
    )
    for w in series.warnings:
        _echo(f"warning: {w}", err=True, one_line=True)
    _echo(text.series_text(series, top, quiet), nl=False)


@cli.command(name="mcp")
@click.option(
    "--outdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help=(
        "The only directory the tools may write into (analyze/compare with write=true, profile's"
        " reports). Default: the server writes nothing."
    ),
)
@click.option(
    "--allow-profile",
    is_flag=True,
    help="Offer the profile tool, which runs ncu on a command the client gives (needs --outdir).",
)
def mcp_cmd(outdir: Path | None, allow_profile: bool) -> None:
    """Serve analyze, compare, explain and list_gpus to an MCP client (an agent) over stdio.

    The tools return the documents of --json. Needs the MCP SDK: pip install 'ncuroof[mcp]'.
    """
    from . import mcp_server

    mcp_server.serve(outdir, allow_profile)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``ncuroof`` console script."""
    use_returning_pool()
    try:
        cli.main(args=argv, prog_name="ncuroof", standalone_mode=False)
    except click.exceptions.Abort:
        _echo("ncuroof: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        buf = io.StringIO()
        exc.show(file=buf)
        _echo(buf.getvalue(), err=True, nl=False)
        sys.exit(exc.exit_code)
    except NcuroofError as exc:
        _echo(f"ncuroof: error: {exc}", err=True, one_line=True)
        sys.exit(exc.exit_code)
    except (
        MemoryError,
        RecursionError,
    ) as exc:  # an input too large or too deep for this machine: its limits are input's
        need = (
            "more memory than this machine gives"
            if isinstance(exc, MemoryError)
            else "deeper nesting than Python allows"
        )
        _echo(
            f"ncuroof: error: the input needs {need} ({type(exc).__name__}); check that it is the"
            " file you meant, or run on a larger machine",
            err=True,
            one_line=True,
        )
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - last resort: a defect, reported in one line
        if os.environ.get("NCUROOF_DEBUG"):
            raise
        _echo(
            f"ncuroof: internal error: {type(exc).__name__}: {exc} (set NCUROOF_DEBUG=1 for the"
            " traceback and please report it)",
            err=True,
            one_line=True,
        )
        sys.exit(INTERNAL_ERROR)
    sys.exit(0)
