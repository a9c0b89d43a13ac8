"""What the commands share: printing (control characters made visible), the terminal options
(``--color``, ``--open``, ``--markdown``), the summary of an analysis, stdout kept for
``--json``."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import fmt

if TYPE_CHECKING:
    from ..api import AnalysisResult
    from ..model.analysis import Analysis

__all__ = [
    "echo",
    "terminal_options",
    "show",
    "JSON_HELP",
    "stdout_to_stderr",
    "warn",
    "show_analysis",
]


def echo(text: str, err: bool = False, nl: bool = True, one_line: bool = False) -> None:
    """Print through click with every control character made visible
    (:func:`ncuroof.fmt.printable`): text from inputs (names, paths, messages) never reaches the
    terminal raw. ``one_line`` escapes newlines and tabs too (an error or a warning is one line)."""
    click.echo(fmt.printable(text, layout=not one_line), err=err, nl=nl)


def terminal_options(f):  # noqa: ANN001, ANN202 - a click decorator
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


def show(table_text: object, markdown: object, page: Path | None) -> None:
    """Print a summary through :func:`ncuroof.render.text` (laid out for this terminal, coloured
    as ``--color`` says), write ``--markdown`` and ``--open`` the page. ``table_text`` and
    ``markdown`` are ``(width, color) -> str`` and ``() -> str``."""
    from ..render import markdown as md
    from ..render import text

    meta = click.get_current_context().meta
    color = text.use_color(meta.get("ncuroof-color"))
    out = table_text(text.terminal_width(), color)  # type: ignore[operator]
    if color:  # made printable by the renderer, colours kept
        click.echo(out, nl=False, color=True)
    else:
        echo(out, nl=False)
    if meta.get("ncuroof-markdown") is not None:
        written = md.write_markdown(markdown(), meta["ncuroof-markdown"])  # type: ignore[operator]
        echo(f"wrote {written}", err=True)
    if meta.get("ncuroof-open") and page is not None and page.is_file():
        import webbrowser

        if not webbrowser.open(page.resolve().as_uri()):
            echo(f"warning: no web browser to open {page}", err=True, one_line=True)


JSON_HELP = (
    "Print one JSON document on stdout (ncuroof/schemas/{kind}.schema.json) instead of the summary;"
    " messages stay on stderr, the other outputs are still written."
)


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool):  # noqa: ANN202 - a context manager
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


def warn(analysis: Analysis) -> None:
    """The production timeline's warnings (another GPU than the report's, ...) on stderr."""
    for w in analysis.production.warnings if analysis.production is not None else ():
        echo(f"warning: {w}", err=True, one_line=True)


def show_analysis(result: AnalysisResult, quiet: bool) -> None:
    """The summary of an analysis (:func:`_show`), its Markdown and its page."""
    from ..render import markdown as md
    from ..render import text

    page = result.outdir / "roofline.html" if result.outdir is not None else None
    title = ", ".join(p.name for p in result.analysis.inputs) if result.analysis.inputs else ""
    show(
        lambda width, color: text.analysis_text(result, quiet, width, color),
        lambda: md.analysis_markdown(result, title),
        page,
    )
