"""``ncuroof analyze``: ncu reports, CSV exports or a PyTorch trace with shapes, analyzed and
written.

Its options are generated: the analysis options (:data:`ncuroof.views.options.ANALYSIS`) and every
view's option (:func:`ncuroof.views.view_options`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import views
from ..render.page import IMAGE_FORMATS, PLOTLYJS
from ..runs.fleet import FLEET_MIN_INPUTS
from ..views.options import TOP
from .common import JSON_HELP, echo, show_analysis, stdout_to_stderr, terminal_options, warn
from .options import (
    analysis_options,
    analysis_values,
    click_option,
    click_options,
    formats_option,
    plotlyjs_option,
)

if TYPE_CHECKING:
    from ..api import AnalysisResult

__all__ = ["analyze", "make_command"]


_OUTPUT_OPTIONS = [
    plotlyjs_option("roofline.html"),
    click_option(TOP),
    click.option(
        "--image",
        type=click.Choice(IMAGE_FORMATS),
        default=None,
        help=(
            "Also write roofline.png/.svg through plotly's image export (needs kaleido and"
            " Chrome/Chromium)."
        ),
    ),
    formats_option(
        "Table formats: the tables as CSV and/or Parquet (schema dtypes, units and inputs in its"
        " metadata)."
    ),
    click.option(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        default=None,
        help=(
            "With --stack or --ranks: analyze each input as a task on this dask scheduler's"
            f" workers (they must see the inputs). Default: stacks of {FLEET_MIN_INPUTS} or more"
            " inputs run on a local dask cluster of this machine's cores."
        ),
    ),
    click.option(
        "--workers",
        type=click.IntRange(1),
        default=None,
        help="Worker processes of the local dask cluster (default: the cores).",
    ),
]


def make_command() -> click.Command:
    """The ``analyze`` command with the options of the views of :data:`ncuroof.views.REGISTRY`
    now (a view added to the registry is an option here)."""
    f = _analyze
    for option in reversed(
        [
            click.argument(
                "inputs", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=True)
            ),
            click.option(
                "-o",
                "--outdir",
                type=click.Path(path_type=Path, file_okay=False),
                default=None,
                help="Output directory (default: <input stem>.ncuroof/ next to the first input).",
            ),
            analysis_options,
            *_OUTPUT_OPTIONS,
            click_options(views.view_options()),
            terminal_options,
            click.option(
                "-q", "--quiet", is_flag=True, help="No progress bar and no summary table."
            ),
            click.option("--json", "as_json", is_flag=True, help=JSON_HELP.format(kind="analyze")),
            click.option(
                "--capture",
                "captures",
                multiple=True,
                type=click.Path(path_type=Path, dir_okay=False),
                help=(
                    "A PyTorch trace of the CUDA/HIP graph captures the analyzed trace replays"
                    " (vLLM, SGLang; repeatable): each replayed kernel gets the operator and shapes"
                    " that captured it."
                ),
            ),
        ]
    ):
        f = option(f)
    return click.command(name="analyze")(f)


def _analyze(
    inputs: tuple[Path, ...],
    outdir: Path | None,
    plotlyjs: str,
    top: int,
    image: str | None,
    formats: tuple[str, ...],
    scheduler: str | None,
    workers: int | None,
    quiet: bool,
    as_json: bool = False,
    captures: tuple[Path, ...] = (),
    **kw: Any,
) -> None:
    """Analyze ncu reports (.ncu-rep) or CSV exports: write launches.csv (one row per launch),
    kernels.csv (one row per kernel), points.csv and roofline.html.

    Several INPUTS are files of one ncu run (e.g. a time/DRAM run and a FLOP run, or a raw export
    and its session page) and are merged launch by launch; pass --stack for unrelated runs. A
    stack of many reports is a fleet: each report is analyzed alone on dask, a report that fails
    is listed (stderr, failures.csv) without stopping the others, and the exit code is 0 when at
    least one report was analyzed (2 when none). With --ranks (one report per MPI rank) ranks.csv
    gives each kernel's spread over ranks.
    """
    from .. import api

    asked = views.view_values(kw)
    if len(inputs) == 1 and api.is_trace(inputs[0]) and kw.get("timeline") is None:
        # --device: the trace's; --capture: its graphs' captures
        where = {"gpu": kw.get("gpu"), "device": kw.get("device"), "captures": captures}
        _analyze_trace(
            inputs[0],
            outdir,
            where,
            asked["fp32_matmul"],
            formats,
            PLOTLYJS[plotlyjs],
            quiet,
            as_json,
        )
        return
    if captures:
        raise click.UsageError("--capture goes with one PyTorch trace analyzed alone")
    with stdout_to_stderr(as_json):
        result = api.analyze(
            list(inputs),
            outdir=outdir,
            write=True,
            options=analysis_values(kw),
            plotlyjs=PLOTLYJS[plotlyjs],
            top=top,
            progress=not quiet,
            image=image,
            formats=formats,
            scheduler=scheduler,
            workers=workers,
            **asked,
        )
    _print_analysis(result, as_json, quiet)


analyze = make_command()


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
    from .. import api

    with stdout_to_stderr(as_json):
        result = api.analyze_trace(
            path,
            outdir,
            write=True,
            gpu=where["gpu"],
            device=where["device"],
            fp32_matmul=fp32_matmul,
            captures=where["captures"],
            formats=formats,
            plotlyjs=plotlyjs,
            progress=not quiet,
        )
    if as_json:
        from ..render import json_doc

        click.echo(json_doc.dumps(json_doc.trace_document(result)), nl=False)
        return
    from ..render import analytic, text

    width = text.terminal_width()
    head = (
        ""
        if quiet
        else analytic.summary_text(
            result.operators, result.gpu.name, width=width, attrs=result.attrs
        )
    )
    echo(f"{head}wrote {result.outdir}/ ({', '.join(result.files)})")


def _print_analysis(
    result: AnalysisResult,
    as_json: bool,
    quiet: bool,
) -> None:
    """A fleet's failures and the timeline's warnings on stderr, then the JSON
    document or the summary."""
    for r in result.failures.itertuples(index=False) if result.failures is not None else ():
        echo(f"ncuroof: error: {r.error}", err=True, one_line=True)
    warn(result.analysis)
    if as_json:
        from ..render import json_doc

        document = json_doc.analysis_document(
            result.analysis,
            result.outdir,
            list(result.files),
            result.failures,
            views.in_document(result.tables),
        )
        click.echo(json_doc.dumps(document), nl=False)
        return
    show_analysis(result, quiet)
