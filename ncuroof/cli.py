"""The ``ncuroof`` command line: a thin click layer over :mod:`ncuroof.api`.

Every user error is printed as one line on stderr and exits with code 2; no traceback.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from . import __version__
from .errors import NcuNotFoundError, NcuroofError

__all__ = ["main", "cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ncuroof")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
def cli(verbose: int) -> None:
    """Roofline analysis of NVIDIA Nsight Compute (ncu) profiles."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def _peaks(kind: str):  # noqa: ANN202 - click callback factory
    """A click callback turning repeated ``[NAME=]VALUE`` options into ``{name: SI value}``."""
    from .ceilings import parse_peak
    from .schema import LEVELS, PRECISIONS

    allowed, default = ((*PRECISIONS, "tensor"), "*") if kind == "flops" else (LEVELS, "dram")

    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, float]:
        out = {}
        for v in values:
            try:
                name, value = parse_peak(v, allowed, default)
            except ValueError as exc:
                raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc
            out[name] = value
        return out

    return callback


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=True))
@click.option("-o", "--outdir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output directory (default: <input stem>.ncuroof/ next to the first input).")
@click.option("--traffic", type=click.Choice(["ncu", "nersc"]), default="ncu", show_default=True,
              help="Traffic definition preferred for L1/L2: ncu's charts, or NERSC's lts__t_bytes/l1tex__t_bytes.")
@click.option("--plotlyjs", type=click.Choice(["embed", "cdn"]), default="embed", show_default=True,
              help="Embed plotly.js in roofline.html (works offline) or link it from the CDN (smaller file).")
@click.option("--top", type=click.IntRange(1), default=10, show_default=True, help="Kernels in the summary table.")
@click.option("--stack", is_flag=True,
              help="Inputs are unrelated runs: stack them. Default: several inputs are files of one run, merged launch by launch.")
@click.option("--gpu", metavar="NAME", default=None,
              help="Datasheet entry for roofs the input lacks (e.g. a10g, v100-sxm2; see metrics/gpus.toml). "
                   "Default: matched on the device name.")
@click.option("--peak-flops", "peak_flops", metavar="[PREC=]VALUE", multiple=True, callback=_peaks("flops"),
              help="Compute roof in FLOP/s, e.g. 19.5T or fp64=9.7e12 (PREC: fp64, fp32, fp16, tensor; bare = all). Repeatable.")
@click.option("--peak-bandwidth", "peak_bandwidth", metavar="[LEVEL=]VALUE", multiple=True, callback=_peaks("bandwidth"),
              help="Bandwidth roof in B/s, e.g. 900G or l2=3T (LEVEL: dram, l2, l1; bare = dram). Repeatable.")
@click.option("--focus", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True,
              help="The chart shows the fewest kernels making up this share of GPU time (the page can show the rest).")
@click.option("--image", type=click.Choice(["png", "svg"]), default=None,
              help="Also write roofline.png/.svg through plotly's image export (needs kaleido and Chrome/Chromium).")
@click.option("--what-if", "what_if", metavar="GPU", default=None,
              help="Project each kernel's FLOPs and DRAM bytes onto another GPU's datasheet roofs (metrics/gpus.toml): "
                   "which kernels change bound, time at the roof there (whatif.csv).")
@click.option("--expect", "expect", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="FILE",
              help="TOML (or YAML) of expected FLOPs and DRAM bytes per kernel-name pattern, formulas of named sizes: "
                   "useful vs measured intensity, and flags where the counted work differs.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
def analyze(inputs: tuple[Path, ...], outdir: Path | None, traffic: str, plotlyjs: str, top: int, stack: bool,
            gpu: str | None, peak_flops: dict[str, float], peak_bandwidth: dict[str, float], focus: float,
            image: str | None, what_if: str | None, expect: Path | None, quiet: bool) -> None:
    """Analyze ncu reports (.ncu-rep) or CSV exports: write kernels.csv, points.csv and roofline.html.

    Several INPUTS are files of one ncu run (e.g. a time/DRAM run and a FLOP run, or a raw export
    and its session page) and are merged launch by launch; pass --stack for unrelated runs.
    """
    from . import api

    result = api.analyze(list(inputs), outdir=outdir, traffic=traffic, plotlyjs=True if plotlyjs == "embed" else "cdn",
                         top=top, progress=not quiet, stack=stack, gpu=gpu, peak_flops=peak_flops,
                         peak_bandwidth=peak_bandwidth, focus=focus, image=image, what_if=what_if,
                         expect=expect)
    _print_analysis(result, list(inputs), quiet)


def _print_analysis(result, inputs: list[Path], quiet: bool) -> None:  # noqa: ANN001 - api.AnalysisResult
    """What analyze and profile print after the analysis: summary, roofs, caveats, the output."""
    from . import api
    from .report import summary_text

    k = result.kernels
    if not quiet:
        click.echo(summary_text(result.summary), nl=False)
        for r in result.summary.head(3).itertuples(index=False):
            if r.advice:
                click.echo(f"{r.kernel_label}: {r.evidence}. Try: {r.advice}")
            if r.flags:
                click.echo(f"{r.kernel_label}: check: {r.flags}")
        if result.what_if is not None and len(result.what_if):
            for r in result.what_if.itertuples(index=False):
                click.echo(f"what-if {r.kernel_label}: {r.change}")
        click.echo(f"roofs: {api.roof_sources(k)}")
        limits = api.csv_limits(k, inputs)
        if limits:
            click.echo(f"note: {limits}")
        failed = k[k["status"] == "failed_measurement"]
        for r in failed.itertuples(index=False):
            click.echo(f"launch {r.launch_id} ({r.kernel_name}): measurement failed in ncu; kept in kernels.csv, not plotted")
        for r in k[k["status"] == "corrupt_record"].head(5).itertuples(index=False):
            click.echo(f"launch {r.launch_id} ({r.kernel_name}): damaged record in the input, see its notes in kernels.csv; not plotted")
        if result.missing_metrics:
            click.echo(
                "No launch has roofline metrics (FLOP counters and memory traffic); the table above shows time and "
                "SpeedOfLight throughputs only. Collect them with: ncu --set roofline -o report ./app "
                "(or --set full). See kernels.csv 'notes' for what each launch lacks."
            )
    click.echo(f"wrote {result.outdir}/ ({', '.join(result.files)})")


_CHOICE_LEVELS = ("dram", "l2", "l1")
_CHOICE_PRECISIONS = ("fp64", "fp32", "fp16", "tensor")


def _csv_choice(allowed: tuple[str, ...]):  # noqa: ANN202 - click callback factory
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        items = tuple(v.strip().lower() for v in value.split(",") if v.strip())
        bad = [v for v in items if v not in allowed]
        if bad or not items:
            raise click.BadParameter(f"{','.join(bad) or value!r}: choose from {','.join(allowed)}", ctx=ctx, param=param)
        return items

    return callback


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Report to write (default: <program>.ncu-rep here; .ncu-rep is appended when missing).")
@click.option("--force", is_flag=True, help="Overwrite an existing report.")
@click.option("--levels", callback=_csv_choice(_CHOICE_LEVELS), default=None, metavar="dram[,l2,l1]",
              help="Collect only these memory levels with an explicit metric list (fewer replay passes) instead of --set roofline.")
@click.option("--precisions", callback=_csv_choice(_CHOICE_PRECISIONS), default=None, metavar="fp32[,fp64,fp16,tensor]",
              help="Collect only these precisions with an explicit metric list instead of --set roofline.")
@click.option("--cc", metavar="MAJOR.MINOR", default=None, help="GPU compute capability for --levels/--precisions (default: nvidia-smi).")
@click.option("-k", "--kernel-name", default=None, help="ncu --kernel-name: a name or regex:<expr>.")
@click.option("--kernel-name-base", type=click.Choice(["function", "demangled", "mangled"]), default=None)
@click.option("--kernel-id", default=None, help="ncu --kernel-id context:stream:name:invocation.")
@click.option("-s", "--launch-skip", type=click.IntRange(0), default=None, help="ncu --launch-skip.")
@click.option("-c", "--launch-count", type=click.IntRange(1), default=None, help="ncu --launch-count.")
@click.option("--nvtx-include", multiple=True, help="ncu --nvtx-include (repeatable).")
@click.option("--nvtx-exclude", multiple=True, help="ncu --nvtx-exclude (repeatable).")
@click.option("--target-processes", type=click.Choice(["all", "application-only"]), default=None)
@click.option("--replay-mode", type=click.Choice(["kernel", "application", "range", "app-range"]), default=None)
@click.option("--clock-control", type=click.Choice(["base", "none", "reset"]), default=None,
              help="ncu --clock-control (ncu's default: base, clocks locked below boost).")
@click.option("--cache-control", type=click.Choice(["all", "none"]), default=None, help="ncu --cache-control (default all: flushed).")
@click.option("--ncu", "ncu_path", type=click.Path(path_type=Path, dir_okay=False), default=None, help="The ncu executable to use.")
@click.option("--ncu-arg", "ncu_args", multiple=True, help="More ncu arguments, passed verbatim (repeatable).")
@click.option("--outdir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Analysis output directory (default: <report stem>.ncuroof/).")
@click.option("--no-analyze", is_flag=True, help="Only collect the report.")
@click.option("-q", "--quiet", is_flag=True, help="No ncu progress and no summary table.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def profile(output: Path | None, force: bool, levels: tuple[str, ...] | None, precisions: tuple[str, ...] | None,
            cc: str | None, kernel_name: str | None, kernel_name_base: str | None, kernel_id: str | None,
            launch_skip: int | None, launch_count: int | None, nvtx_include: tuple[str, ...], nvtx_exclude: tuple[str, ...],
            target_processes: str | None, replay_mode: str | None, clock_control: str | None, cache_control: str | None,
            ncu_path: Path | None, ncu_args: tuple[str, ...], outdir: Path | None, no_analyze: bool, quiet: bool,
            cmd: tuple[str, ...]) -> None:
    """Run CMD under ncu with the roofline metrics, keep the report, then analyze it.

    Usage: ncuroof profile [OPTIONS] -- ./app args. The report is kept only when ncu and the
    program succeed; <report>.ncuroof.json records the ncu command, version, clock and cache
    control and the replay passes.
    """
    from . import api, collector

    cmd = tuple(c for c in cmd if c != "--") if cmd and cmd[0] == "--" else cmd
    opts = collector.ProfileOptions(
        output=output if output is not None else Path(Path(cmd[0]).name + ".ncu-rep"), force=force, levels=levels,
        precisions=precisions, cc=cc, kernel_name=kernel_name, kernel_name_base=kernel_name_base, kernel_id=kernel_id,
        launch_skip=launch_skip, launch_count=launch_count, nvtx_include=nvtx_include, nvtx_exclude=nvtx_exclude,
        target_processes=target_processes, replay_mode=replay_mode, clock_control=clock_control,
        cache_control=cache_control, extra=ncu_args)
    if levels is not None or precisions is not None:
        click.echo("collecting the roofline of " + ", ".join(levels or _CHOICE_LEVELS) + " for "
                   + ", ".join(precisions or ("fp32", "fp64")) + " with an explicit metric list", err=True)
    res = collector.run_profile(list(cmd), opts, ncu=ncu_path, echo=(lambda line: None) if quiet else None)
    if res.metrics:
        click.echo(f"metrics ({len(res.metrics)}): {','.join(res.metrics)}", err=True)
    passes = sorted(set(res.passes.values()))
    click.echo(f"report: {res.report} (ncu {res.ncu_version}; {len(res.passes)} kernel launch(es) profiled"
               + (f", {'/'.join(map(str, passes))} replay passes each" if passes else "") + ")")
    if no_analyze:
        return
    result = api.analyze([res.report], outdir=outdir, progress=not quiet)
    _print_analysis(result, [res.report], quiet)


@cli.command()
def doctor() -> None:
    """Check this machine for profiling: ncu and its version, a visible GPU, counter permissions.

    Exit 0 when everything needed is there, 1 when a check failed, 2 when ncu is missing.
    """
    from . import collector

    checks = collector.doctor()
    for c in checks:
        mark = {True: "ok  ", False: "FAIL", None: "?   "}[c.ok]
        click.echo(f"{mark} {c.name}: {c.detail}")
        if c.fix and c.ok is not True:
            click.echo(f"     fix: {c.fix}")
    if any(c.name == "ncu" and c.ok is False for c in checks):
        raise NcuNotFoundError("ncu not found or unusable; see the fix above")
    if any(c.ok is False for c in checks):
        sys.exit(1)


@cli.command(name="compare")
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option("-o", "--outdir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output directory (default: <after stem>.compare/ next to AFTER).")
@click.option("--match", "match_by", type=click.Choice(["name", "launch"]), default="name", show_default=True,
              help="name: aggregate launches per kernel name; launch: pair launches in order within a name.")
@click.option("--gpu", metavar="NAME", default=None, help="Datasheet entry for roofs the inputs lack (see analyze).")
@click.option("--strict", is_flag=True, help="Refuse (exit 2) when the runs differ in GPU, ncu version, clocks or metric set.")
@click.option("--fail-if-slower", "fail_pct", type=click.FloatRange(min=0), default=None, metavar="PCT",
              help="Exit 1 when a kernel's time (or the total) grew by more than PCT percent, listing each.")
@click.option("--plotlyjs", type=click.Choice(["embed", "cdn"]), default="embed", show_default=True)
@click.option("--top", type=click.IntRange(1), default=10, show_default=True, help="Kernels in the summary.")
@click.option("-q", "--quiet", is_flag=True, help="No summary table.")
def compare_cmd(before: Path, after: Path, outdir: Path | None, match_by: str, gpu: str | None, strict: bool,
                fail_pct: float | None, plotlyjs: str, top: int, quiet: bool) -> None:
    """Compare two runs (reports, CSV exports or analyze output directories): did the dot move?

    Writes compare.csv (one row per matched kernel: speedup, AI and roof fraction before and
    after, bound, movement) and compare.html (both runs on one roofline, an arrow per kernel).
    """
    from . import api
    from .report import _fmt_time, _pct

    result = api.compare_runs(before, after, outdir=outdir, by_launch=match_by == "launch", gpu=gpu, strict=strict,
                         plotlyjs=True if plotlyjs == "embed" else "cdn")
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    t, tot = result.table, result.totals
    if not quiet:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"GPU time {_fmt_time(tot['time_s_before'])} -> {_fmt_time(tot['time_s_after'])} "
                            f"(speedup {tot['speedup']:.3g}x); largest changes first")
        for col in ("kernel", "status", "time before", "time after", "speedup", "bound after", "movement"):
            table.add_column(col)
        for r in t.head(top).itertuples(index=False):
            name = r.kernel_name if len(r.kernel_name) <= 50 else r.kernel_name[:47] + "..."
            if r.match not in ("name", "only_before", "only_after"):
                name += f" (-> {r.kernel_name_after}, {r.match})"
            table.add_row(name, r.status, _fmt_time(r.time_s_before) if r.launches_before else "-",
                          _fmt_time(r.time_s_after) if r.launches_after else "-",
                          f"{r.speedup:.3g}x" if r.speedup == r.speedup else "-", r.bound_after or "-", r.movement or "-")
        Console(width=140, force_terminal=False, color_system=None).print(table)
        click.echo("after, share of GPU time: " + ", ".join(f"{b} {_pct(tot[f'share_{b}'])}" for b in ("memory", "compute", "latency", "unknown")))
    click.echo(f"wrote {result.outdir}/ (compare.csv, compare.html)")
    if fail_pct is not None:
        limit = 1 + fail_pct / 100
        slower = t[(t["status"] == "matched") & (t["time_s_after"] > limit * t["time_s_before"])]
        total_slower = tot["time_s_after"] > limit * tot["time_s_before"]
        for r in slower.itertuples(index=False):
            click.echo(f"slower: {r.kernel_name}: {_fmt_time(r.time_s_before)} -> {_fmt_time(r.time_s_after)} "
                       f"(+{100 * (r.time_s_after / r.time_s_before - 1):.1f}%)", err=True)
        if total_slower:
            click.echo(f"slower: total GPU time {_fmt_time(tot['time_s_before'])} -> {_fmt_time(tot['time_s_after'])}", err=True)
        if len(slower) or total_slower:
            click.echo(f"ncuroof: {len(slower)} kernels{' and the total' if total_slower else ''} slower by more than {fail_pct:g}%", err=True)
            sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``ncuroof`` console script."""
    try:
        cli.main(args=argv, prog_name="ncuroof", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("ncuroof: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except NcuroofError as exc:
        click.echo(f"ncuroof: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - last resort: a defect, reported in one line
        if os.environ.get("NCUROOF_DEBUG"):
            raise
        click.echo(f"ncuroof: internal error: {type(exc).__name__}: {exc} (set NCUROOF_DEBUG=1 for the traceback "
                   "and please report it)", err=True)
        sys.exit(1)
    sys.exit(0)
