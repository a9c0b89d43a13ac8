"""The ``ncuroof`` command line: a thin click layer over :mod:`ncuroof.api`, one module per command
(:mod:`~ncuroof.cli.analyze`, :mod:`~ncuroof.cli.profile`, :mod:`~ncuroof.cli.compare`,
:mod:`~ncuroof.cli.serve`, :mod:`~ncuroof.cli.gpus`); their options generated from the
declarations of :mod:`ncuroof.views` (:mod:`~ncuroof.cli.options`).

Every user error is printed as one line on stderr and exits with code 2; no traceback. A defect
exits with :data:`INTERNAL_ERROR` (3), never with 1, the code of a failed compare gate.
"""

from __future__ import annotations

import io
import logging
import os
import sys

import click

from .. import __version__, fmt
from .._rlimit import address_space_limit
from ..errors import NcuroofError
from .common import echo

__all__ = ["main", "cli", "INTERNAL_ERROR"]

#: The exit code of an internal error (a defect): never 1, which says "the gate failed: slower".
INTERNAL_ERROR = 3

_EXIT_CODES = (
    "Exit codes: 0 done; 1 compare's gate failed (a kernel got slower; doctor: a check failed);"
    " 2 bad input or usage (one line on stderr naming the file and what to do), or a gate that"
    f" cannot judge; {INTERNAL_ERROR} internal error (a defect: please report it)."
)


#: The commands: name -> (module of ncuroof.cli, its attribute, the line ``ncuroof --help`` shows),
#: imported when run or asked for (issue 54: ``ncuroof --help`` imports no pandas, numpy or
#: pyarrow; a command module imports the analysis).
_COMMANDS = {
    "analyze": (
        "analyze",
        "analyze",
        "Analyze ncu reports, CSV exports or a PyTorch trace: tables and a roofline page",
    ),
    "compare": (
        "compare",
        "compare_cmd",
        "Compare two runs (or more, in order): what moved, what got slower; a CI gate",
    ),
    "doctor": ("profile", "doctor", "Can this machine profile? ncu, the GPU, counter permission"),
    "explain": ("explain", "explain_cmd", "One kernel's numbers, evidence, advice and launches"),
    "list-gpus": ("gpus", "list_gpus", "The datasheet GPUs: the ids --gpu and --what-if take"),
    "mcp": ("serve", "mcp_cmd", "Serve the analysis to agents over the Model Context Protocol"),
    "profile": (
        "profile",
        "profile",
        "Run a program under ncu with the roofline metrics, keep the report, analyze it",
    ),
}


class _LazyGroup(click.Group):
    """A group whose commands are imported when one runs or shows its help; ``ncuroof --help``
    lists them from :data:`_COMMANDS` alone."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in _COMMANDS:
            return None
        import importlib

        module, attr, _ = _COMMANDS[name]
        if name != "list-gpus":
            from ..parser.memory import use_returning_pool

            use_returning_pool()  # the analysis's memory pool (ncuroof.parser.memory)
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, short.split(": ")[0].rstrip(".")) for name, (_, _, short) in _COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EXIT_CODES,
)
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


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``ncuroof`` console script."""
    try:
        cli.main(args=argv, prog_name="ncuroof", standalone_mode=False)
    except click.exceptions.Abort:
        echo("ncuroof: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        buf = io.StringIO()
        exc.show(file=buf)
        echo(buf.getvalue() + _elsewhere(exc), err=True, nl=False)
        sys.exit(exc.exit_code)
    except NcuroofError as exc:
        echo(f"ncuroof: error: {exc}", err=True, one_line=True)
        sys.exit(exc.exit_code)
    except (
        MemoryError,
        RecursionError,
    ) as exc:  # an input too large or too deep for this machine: its limits are input's
        need = (
            f"more memory than {_memory_limit_text()}"
            if isinstance(exc, MemoryError)
            else "deeper nesting than Python allows"
        )
        echo(
            f"ncuroof: error: the input needs {need} ({type(exc).__name__}); check that it is the"
            " file you meant, or run on a larger machine",
            err=True,
            one_line=True,
        )
        sys.exit(2)
    except ImportError as exc:
        if not _mapping_failed(exc) or os.environ.get("NCUROOF_DEBUG"):
            _internal(exc)
        # under ulimit -v a library cannot even be mapped in (issue 53)
        echo(
            f"ncuroof: error: loading its libraries needs more memory than {_memory_limit_text()}"
            " (a shared library could not be mapped); raise the limit",
            err=True,
            one_line=True,
        )
        sys.exit(2)
    except RuntimeError as exc:
        if "can't start new thread" not in str(exc) or os.environ.get("NCUROOF_DEBUG"):
            _internal(exc)
        # a memory limit (ulimit -v) leaves no room for a thread's stack (issue 53)
        echo(
            "ncuroof: error: no memory for another thread under this process's limits (ulimit -v);"
            " raise the limit, or use fewer workers (--workers 1)",
            err=True,
            one_line=True,
        )
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - last resort: a defect, reported in one line
        _internal(exc)
    sys.exit(0)


def _mapping_failed(exc: ImportError) -> bool:
    """An ImportError of a shared library the system could not map into memory (the loader's
    words under a memory limit), not a missing module."""
    text = str(exc).lower()
    return "failed to map segment" in text or "cannot allocate memory" in text


def _memory_limit_text() -> str:
    """``this machine gives``, or the virtual-memory limit of this process (``ulimit -v``)."""
    limit = address_space_limit()
    if limit is None:
        return "this machine gives"
    return f"this process's limit allows (ulimit -v {limit // 1024} kB: raise it)"


def _internal(exc: BaseException) -> None:
    """Report a defect in one line and exit :data:`INTERNAL_ERROR` (the traceback with
    NCUROOF_DEBUG=1)."""
    if os.environ.get("NCUROOF_DEBUG"):
        raise exc
    echo(
        f"ncuroof: internal error: {type(exc).__name__}: {exc} (set NCUROOF_DEBUG=1 for the"
        " traceback and please report it)",
        err=True,
        one_line=True,
    )
    sys.exit(INTERNAL_ERROR)


def _elsewhere(exc: click.ClickException) -> str:
    """For an option this command lacks and click found nothing close to (``analyze
    --fial-if-slower``): the line naming the other commands' options close to it, else ``""``."""
    import difflib

    if not isinstance(exc, click.NoSuchOption) or exc.possibilities:
        return ""
    owners: dict[str, str] = {}
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        for param in command.params if command is not None else []:
            for opt in getattr(param, "opts", []):
                owners.setdefault(opt, name)
    close = difflib.get_close_matches(exc.option_name, list(owners), 3, 0.75)
    if not close:
        return ""
    where = "; ".join(f"{opt} is an option of ncuroof {owners[opt]}" for opt in close)
    return f"Did you mean another command? {where}\n"
