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
from .errors import NcuroofError

__all__ = ["main", "cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ncuroof")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
def cli(verbose: int) -> None:
    """Roofline analysis of NVIDIA Nsight Compute (ncu) profiles."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=True))
@click.option("-o", "--outdir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output directory (default: <input stem>.ncuroof/ next to the first input).")
@click.option("--traffic", type=click.Choice(["ncu", "nersc"]), default="ncu", show_default=True,
              help="Traffic definition preferred for L1/L2: ncu's charts, or NERSC's lts__t_bytes/l1tex__t_bytes.")
@click.option("--plotlyjs", type=click.Choice(["embed", "cdn"]), default="embed", show_default=True,
              help="Embed plotly.js in roofline.html (works offline) or link it from the CDN (smaller file).")
@click.option("--top", type=click.IntRange(1), default=10, show_default=True, help="Kernels in the summary table.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
def analyze(inputs: tuple[Path, ...], outdir: Path | None, traffic: str, plotlyjs: str, top: int, quiet: bool) -> None:
    """Analyze ncu reports (.ncu-rep) or CSV exports: write kernels.csv, points.csv and roofline.html."""
    from . import api
    from .report import summary_text

    result = api.analyze(list(inputs), outdir=outdir, traffic=traffic, plotlyjs=True if plotlyjs == "embed" else "cdn",
                         top=top, progress=not quiet)
    k = result.kernels
    if not quiet:
        click.echo(summary_text(result.summary), nl=False)
        failed = k[k["status"] == "failed_measurement"]
        for r in failed.itertuples(index=False):
            click.echo(f"launch {r.launch_id} ({r.kernel_name}): measurement failed in ncu; kept in kernels.csv, not plotted")
        if result.missing_metrics:
            click.echo(
                "No launch has roofline metrics (FLOP counters and memory traffic); the table above shows time and "
                "SpeedOfLight throughputs only. Collect them with: ncu --set roofline -o report ./app "
                "(or --set full). See kernels.csv 'notes' for what each launch lacks."
            )
    click.echo(f"wrote {result.outdir}/ (kernels.csv, points.csv, roofline.html)")


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
