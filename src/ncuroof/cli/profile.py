"""``ncuroof profile`` (run a program under ncu with the roofline metrics, then analyze the report)
and ``ncuroof doctor`` (can this machine profile?)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..collector.ncu import collectable
from ..errors import NcuNotFoundError
from ..views.options import LAUNCH_COUNT, LAUNCH_SKIP
from .common import echo, show_analysis, terminal_options, warn
from .options import analysis_options_but, analysis_values, click_option, csv_choice, csv_metavar

__all__ = ["profile", "doctor"]

#: What ``profile --precisions`` and ``--levels`` can collect (``metrics/collect.toml``).
_COLLECTABLE = collectable()


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
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
    callback=csv_choice(_COLLECTABLE["level"]),
    default=None,
    metavar=csv_metavar(_COLLECTABLE["level"]),
    help=(
        "Collect only these memory levels with an explicit metric list (fewer replay passes)"
        " instead of --set roofline."
    ),
)
@click.option(
    "--precisions",
    callback=csv_choice(_COLLECTABLE["precision"]),
    default=None,
    metavar=csv_metavar(_COLLECTABLE["precision"]),
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
@click_option(LAUNCH_SKIP)
@click_option(LAUNCH_COUNT)
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
    "--samples",
    is_flag=True,
    help=(
        "Also collect PM sampling (ncu's PmSampling sections, ncu 2024.1+): counters over time"
        " inside each kernel, written as samples.csv and sample_phases.csv (ramp, plateau, tail)."
    ),
)
@click.option(
    "--sample-interval",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="ncu --pm-sampling-interval with --samples: ns or cycles, as the GPU samples.",
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
@analysis_options_but("kernels")
@click.option("--no-analyze", is_flag=True, help="Only collect the report.")
@terminal_options
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
    from .. import api
    from ..render import text

    # Only the separator goes: a "--" of the program's own arguments is passed on.
    cmd = cmd[1:] if cmd and cmd[0] == "--" else cmd
    options = analysis_values(fields)
    say = (lambda line: None) if quiet else (lambda line: echo(line, err=True))
    res = api.profile_run(list(cmd), output, ncu=ncu_path, echo=say, extra=ncu_args, **fields)
    echo(text.profile_text(res))
    if no_analyze:
        return
    result = api.analyze(
        [res.report], outdir=outdir, options=options, progress=not quiet, write=True
    )
    warn(result.analysis)
    show_analysis(result, quiet)


@click.command()
def doctor() -> None:
    """Check this machine for profiling: ncu and its version, a visible GPU, counter permissions.

    Exit 0 when everything needed is there, 1 when a check failed, 2 when ncu is missing.
    """
    from ..collector import ncu as collector
    from ..render import text

    checks = collector.doctor()
    echo(text.doctor_text(checks), nl=False)
    if any(c.name == "ncu" and c.ok is False for c in checks):
        raise NcuNotFoundError("ncu not found or unusable; see the fix above")
    if any(c.ok is False for c in checks):
        sys.exit(1)
